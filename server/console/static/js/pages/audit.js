// Audit log: the tenant's administrative and system actions, oldest first
// as the API pages them (ListAuditEvents), a page at a time: Next follows
// the API's page token, Previous goes back through the tokens seen. The
// operator chooses the tenant.
import {auditEvents} from '../api.js';
import {startWithTenants} from '../tenantpicker.js';
import {h, replace, table, when} from '../dom.js';

const PAGE_SIZE = 25;

export function render(main, _params, page) {
  page.title('Audit log');
  const body = h('div', {id: 'audit'}, h('p', {class: 'loading'}, 'Loading the audit log…'));
  const where = h('p', {class: 'updated', id: 'audit-page', 'aria-live': 'polite'});
  const prev = h('button', {type: 'button', class: 'quiet', id: 'audit-prev', disabled: true}, 'Previous page');
  const next = h('button', {type: 'button', class: 'quiet', id: 'audit-next', disabled: true}, 'Next page');
  const tenant = h('select', {id: 'audit-tenant'}, h('option', {value: ''}, 'default'));
  const tenantField = h('div', {class: 'field', hidden: true}, h('label', {for: 'audit-tenant'}, 'Tenant'), tenant);
  main.append(h('h1', {tabindex: -1}, 'Audit log'),
    h('p', {class: 'lead'}, `Who changed what, oldest first, ${PAGE_SIZE} entries a page.`),
    tenantField, where, body, h('div', {class: 'buttons pager'}, prev, next));

  // tokens[i] is the page token of page i (page 0: none).
  let tokens = [''];
  let at = 0;
  let nextToken = '';

  async function load() {
    prev.disabled = true;
    next.disabled = true;
    try {
      const answer = await auditEvents({tenantId: tenant.value, pageSize: PAGE_SIZE, pageToken: tokens[at]}, page.signal);
      if (page.signal.aborted) return;
      const events = answer.auditEvents || [];
      nextToken = answer.nextPageToken || '';
      replace(where, `Page ${at + 1}${nextToken ? '' : ' (the last)'}; entries ${at * PAGE_SIZE + (events.length ? 1 : 0)}–${at * PAGE_SIZE + events.length}.`);
      replace(body, events.length === 0 ? h('p', {class: 'empty'}, 'No entries.')
        : table('Audit log', ['When', 'Who', 'Action', 'On', 'Details'], events.map(row), {class: 'audit'}));
      prev.disabled = at === 0;
      next.disabled = !nextToken;
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(body, box);
      prev.disabled = at === 0;
    }
  }
  prev.addEventListener('click', () => { at -= 1; load(); });
  next.addEventListener('click', () => {
    tokens = tokens.slice(0, at + 1);
    tokens.push(nextToken);
    at += 1;
    load();
  });
  tenant.addEventListener('change', () => { tokens = ['']; at = 0; load(); });

  startWithTenants(page, tenant, tenantField, body, load);
  return null;
}

function row(e) {
  const details = Object.entries(e.details || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return h('tr', {dataset: {auditId: e.id, action: e.action}},
    h('td', {}, when(e.at)),
    h('td', {class: 'actor'}, h('code', {}, e.actor)),
    h('th', {scope: 'row', class: 'action'}, e.action),
    h('td', {class: 'resource'}, e.resource, e.resourceId ? [' ', h('code', {}, e.resourceId)] : null),
    h('td', {class: 'details'}, details.length === 0 ? h('span', {class: 'none'}, '—')
      : h('dl', {class: 'pairs'}, details.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))));
}
