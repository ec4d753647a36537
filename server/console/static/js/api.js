// The REST API, called with the signed-in key as the bearer header, or
// else with the single sign-on session's cookie and CSRF token (sso.js).
// An error answer becomes an ApiError that keeps the API's own words.
import {sso} from './sso.js';

const KEY = 'seatd.console.key';

// session keeps the key for this browser tab only (sessionStorage).
export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  set(key) { sessionStorage.setItem(KEY, key); },
  clear() { sessionStorage.removeItem(KEY); },
};

// gRPC status code names, for the numeric code of an error body.
const CODES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED',
  'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'];

// ApiError is a refused call: message is the API's message as it stated
// it; status the HTTP status; code the gRPC code name; reason the
// ErrorInfo reason; field the request field the refusal names (the
// BadRequest detail's field, or the ErrorInfo metadata's "field"), in the
// API's own path ("license.seats", "rules[2].count"), '' when none.
export class ApiError extends Error {
  constructor(status, body, text) {
    const message = (body && typeof body.message === 'string' && body.message) ||
      (status === 0 ? text : `HTTP ${status}: ${text || 'no answer body'}`);
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = body && Number.isInteger(body.code) ? (CODES[body.code] || String(body.code)) : '';
    const details = (body && Array.isArray(body.details)) ? body.details : [];
    const info = details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.ErrorInfo');
    this.reason = info ? info.reason : '';
    const bad = details.find((d) => d['@type'] === 'type.googleapis.com/google.rpc.BadRequest');
    const violation = bad && Array.isArray(bad.fieldViolations) ? bad.fieldViolations[0] : null;
    this.field = (violation && violation.field) || (info && info.metadata && info.metadata.field) || '';
  }

  get unauthenticated() { return this.status === 401; }
}

// api calls method path (a REST path with its query) and answers the
// decoded JSON body. key overrides the signed-in key (sign-in checks one
// before keeping it).
export async function api(method, path, {body, key, signal} = {}) {
  const headers = {Accept: 'application/json'};
  const k = key ?? session.key;
  if (k) headers.Authorization = `Bearer ${k}`;
  else if (sso.signedIn && method !== 'GET') headers['X-CSRF-Token'] = sso.csrfToken;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, {
      method, headers, signal, cache: 'no-store', credentials: k ? 'omit' : 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, null, `seatd did not answer (${err.message})`);
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) throw new ApiError(resp.status, data, text.trim());
  return data;
}

// query builds a path with its query string, leaving out empty values.
export function query(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const qs = q.toString();
  return qs ? `${path}?${qs}` : path;
}

const enc = encodeURIComponent;

// listLicenses reads every page of the tenant's licenses (at most 10 pages
// of 1000: a console page, not an export).
export async function listLicenses(signal) {
  const all = [];
  let token = '';
  for (let i = 0; i < 10; i++) {
    const page = await api('GET', query('/v1/admin/licenses', {pageSize: 1000, pageToken: token}), {signal});
    all.push(...(page.licenses || []));
    token = page.nextPageToken;
    if (!token) break;
  }
  return all;
}

export const getLicense = (id, signal) => api('GET', `/v1/admin/licenses/${enc(id)}`, {signal});
export const updateLicense = (id, fields) => api('PATCH', `/v1/admin/licenses/${enc(id)}`, {body: fields});
export const listLeases = (id, state, feature, signal) =>
  api('GET', query(`/v1/admin/licenses/${enc(id)}/leases`, {state, feature, pageSize: 1000}), {signal});
// activeLeases reads every page of a license's live leases, of every
// feature (at most 10 pages of 1000, as listLicenses).
export async function activeLeases(id, signal) {
  const all = [];
  let token = '';
  for (let i = 0; i < 10; i++) {
    const page = await api('GET', query(`/v1/admin/licenses/${enc(id)}/leases`,
      {state: 'LEASE_STATE_ACTIVE', pageSize: 1000, pageToken: token}), {signal});
    all.push(...(page.leases || []));
    token = page.nextPageToken;
    if (!token) break;
  }
  return all;
}
export const getPolicy = (id, signal) => api('GET', `/v1/admin/licenses/${enc(id)}/policy`, {signal});
export const listGroups = (signal) => api('GET', '/v1/admin/groups', {signal});
export const revokeLease = (id, reason) => api('POST', `/v1/admin/leases/${enc(id)}:revoke`, {body: {reason}});
export const cleanupStatus = (signal) => api('GET', '/v1/admin/cleanup', {signal});
export const usageReport = (params, signal) => api('GET', query('/v1/admin/reports/usage', params), {signal});
export const zombieReport = (params, signal) => api('GET', query('/v1/admin/reports/zombies', params), {signal});

// License changes. updateLicense sends only the fields given: over REST
// the fields present in the body are the update mask (a null clears a
// field, expiresAt: null is "never").
export const createLicense = (fields) => api('POST', '/v1/admin/licenses', {body: fields});
export const deleteLicense = (id) => api('DELETE', `/v1/admin/licenses/${enc(id)}`);
export const createGrant = (licenseId, fields) => api('POST', `/v1/admin/licenses/${enc(licenseId)}/grants`, {body: fields});
export const updateGrant = (licenseId, grantId, fields) =>
  api('PATCH', `/v1/admin/licenses/${enc(licenseId)}/grants/${enc(grantId)}`, {body: fields});
export const deleteGrant = (licenseId, grantId) => api('DELETE', `/v1/admin/licenses/${enc(licenseId)}/grants/${enc(grantId)}`);
export const setPolicy = (id, policy) => api('PUT', `/v1/admin/licenses/${enc(id)}/policy`, {body: policy});

// Tenants and their API keys (operator only).
export const listTenants = (params, signal) => api('GET', query('/v1/admin/tenants', params), {signal});
export const createTenant = (tenant) => api('POST', '/v1/admin/tenants', {body: tenant});
export const listApiKeys = (tenantId, signal) =>
  api('GET', query(`/v1/admin/tenants/${enc(tenantId)}/api-keys`, {pageSize: 1000}), {signal});
export const createApiKey = (tenantId, name) => api('POST', `/v1/admin/tenants/${enc(tenantId)}/api-keys`, {body: {name}});
export const revokeApiKey = (id) => api('POST', `/v1/admin/api-keys/${enc(id)}:revoke`, {body: {}});

// Webhooks (an admin's): a tenant's endpoints (tenantId '' is the
// caller's own tenant), their delivery log and replays.
export const listWebhooks = (tenantId, signal) => api('GET', query('/v1/admin/webhooks', {tenantId}), {signal});
export const createWebhook = (fields) => api('POST', '/v1/admin/webhooks', {body: fields});
export const deleteWebhook = (tenantId, id) => api('DELETE', query(`/v1/admin/webhooks/${enc(id)}`, {tenantId}));
export const setWebhookDisabled = (tenantId, id, disabled) =>
  api('POST', `/v1/admin/webhooks/${enc(id)}:setDisabled`, {body: {tenantId, disabled}});
export const webhookDeliveries = (tenantId, id, params, signal) =>
  api('GET', query(`/v1/admin/webhooks/${enc(id)}/deliveries`, {tenantId, ...params}), {signal});
export const replayDelivery = (tenantId, id) => api('POST', `/v1/admin/webhook-deliveries/${enc(id)}:replay`, {body: {tenantId}});

// The audit log, a page at a time (params: tenantId, pageSize, pageToken).
export const auditEvents = (params, signal) => api('GET', query('/v1/admin/audit-events', params), {signal});
