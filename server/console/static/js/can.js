// What the signed-in admin is offered: the one place that decides whether
// an action (a button, a form, a page in the navigation) is shown. Pages
// ask allows('license.delete') and leave out what it refuses; the API
// still decides every call (a refusal is shown in its words).
//
// Today the key can do everything the API lets a key do: the operator key
// every action, an API key every action of its tenant but the operator's
// (tenants and their keys, which the API refuses it). learn() finds which
// by asking the API once per key. Roles, when seatd has them, feed the
// same table through what learn() answers.
import {api, ApiError} from './api.js';

// ACTIONS names every action a page may offer, and what it needs: 'tenant'
// (any admin of the tenant) or 'operator'.
export const ACTIONS = {
  'license.create': 'tenant',
  'license.edit': 'tenant',
  'license.delete': 'tenant',
  'grant.create': 'tenant',
  'grant.edit': 'tenant',
  'grant.delete': 'tenant',
  'policy.set': 'tenant',
  'lease.revoke': 'tenant',
  'audit.read': 'tenant',
  'usage.export': 'tenant',
  'tenant.read': 'operator',
  'tenant.create': 'operator',
  'apikey.create': 'operator',
  'apikey.revoke': 'operator',
};

// grants is what the signed-in key may do: {key, tenant, operator}.
let grants = {key: null, tenant: false, operator: false};

// learn finds what key may do (once per key): every tenant action, and
// the operator's if the API lets it list tenants.
export async function learn(key) {
  if (grants.key === key) return grants;
  let operator = false;
  try {
    await api('GET', '/v1/admin/tenants?pageSize=1', {key});
    operator = true;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err;
  }
  grants = {key, tenant: true, operator};
  return grants;
}

// forget drops what was learnt (sign-out).
export function forget() {
  grants = {key: null, tenant: false, operator: false};
}

// allows says whether action is offered to the signed-in admin. An action
// not in ACTIONS is never offered (a typo hides a button, not a check).
export function allows(action) {
  const need = ACTIONS[action];
  return Boolean(need && grants[need]);
}
