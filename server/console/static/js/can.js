// What the signed-in admin is offered: the one place that decides whether
// an action (a button, a form, a page in the navigation) is shown. Pages
// ask allows('license.delete') and leave out what it refuses; the API
// still decides every call (a refusal is shown in its words).
//
// Each action needs a role (the server's matrix, server/grpcapi/authz.go):
// viewer < manager < admin, and the operator above tenants. A person signed
// in through single sign-on has the role their session names; an API key's
// role is not told to the console, so it is taken as admin (keys made
// before roles are) and the API refuses what a lesser key may not do.
// learn() finds whether the credential is the operator's by asking the API
// once per credential.
import {api, ApiError} from './api.js';

// ACTIONS names every action a page may offer, and the least role it
// needs: 'viewer', 'manager', 'admin' (of the tenant) or 'operator'.
export const ACTIONS = {
  'license.create': 'admin',
  'license.edit': 'admin',
  'license.delete': 'admin',
  'grant.create': 'admin',
  'grant.edit': 'admin',
  'grant.delete': 'admin',
  'policy.set': 'manager',
  'lease.revoke': 'manager',
  'audit.read': 'admin',
  // webhooks: every call is an admin's (server/grpcapi/authz.go)
  'webhook.read': 'admin',
  'webhook.create': 'admin',
  'webhook.edit': 'admin',
  'webhook.delete': 'admin',
  'webhook.replay': 'admin',
  'usage.export': 'viewer',
  'tenant.read': 'operator',
  'tenant.create': 'operator',
  'apikey.create': 'operator',
  'apikey.revoke': 'operator',
};

const RANK = {viewer: 1, manager: 2, admin: 3};

// SESSION stands for a single sign-on session where learn() takes a key.
export const SESSION = '(single sign-on)';

// grants is what the signed-in credential may do: {key, role, operator}.
let grants = {key: null, role: '', operator: false};

// learn finds what the credential (an API key, or a single sign-on
// session of the given role) may do, once per credential: its tenant's
// actions up to its role, and the operator's if the API lets it list
// tenants.
export async function learn(key, role = 'admin') {
  if (grants.key === key && grants.role === role) return grants;
  let operator = false;
  try {
    // a single sign-on session is sent as its cookie, as every call is
    await api('GET', '/v1/admin/tenants?pageSize=1', key === SESSION ? {} : {key});
    operator = true;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err;
  }
  grants = {key, role: RANK[role] ? role : 'viewer', operator};
  return grants;
}

// forget drops what was learnt (sign-out).
export function forget() {
  grants = {key: null, role: '', operator: false};
}

// allows says whether action is offered to the signed-in admin. An action
// not in ACTIONS is never offered (a typo hides a button, not a check).
export function allows(action) {
  const need = ACTIONS[action];
  if (!need) return false;
  if (grants.operator) return true;
  if (need === 'operator') return false;
  return (RANK[grants.role] || 0) >= RANK[need];
}
