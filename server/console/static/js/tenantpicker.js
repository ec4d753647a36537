// The operator's tenant picker (the audit log, webhooks): the operator
// chooses a tenant; a tenant's own admin is offered none.
import {listTenants} from './api.js';
import {allows} from './can.js';
import {h, replace} from './dom.js';

// offerTenants adds the tenants the operator may choose to select (whose
// first option is the default tenant) and shows field; it does nothing for
// a tenant's admin, and rejects as listTenants does.
export async function offerTenants(page, select, field) {
  if (!allows('tenant.read')) return;
  const answer = await listTenants({pageSize: 1000}, page.signal);
  const ids = (answer.tenants || []).map((t) => t.id).filter((id) => id !== 'default');
  select.append(...ids.map((id) => h('option', {value: id}, id)));
  field.hidden = false;
}

// startWithTenants offers the tenants (offerTenants), then runs load, the
// page's first fetch; if the tenants cannot be listed, the failure is shown
// in box instead.
export async function startWithTenants(page, select, field, box, load) {
  try {
    await offerTenants(page, select, field);
  } catch (err) {
    const failed = page.failed(err);
    if (failed) replace(box, failed);
    return;
  }
  await load();
}
