// Tenants (operator only): the tenants, a new one; a tenant's API keys,
// a new key (its secret shown once: seatd keeps only its hash) and
// revoking one after a confirmation. What the admin may not do is not
// offered (can.js).
import {createApiKey, createTenant, listApiKeys, listTenants, revokeApiKey} from '../api.js';
import {allows} from '../can.js';
import {confirm, field, formStatus, saved, showError} from '../form.js';
import {h, replace, table, when} from '../dom.js';

export function render(main, [tenantId], page) {
  if (tenantId) return tenant(main, tenantId, page);
  page.title('Tenants');
  const list = h('div', {id: 'tenants'}, h('p', {class: 'loading'}, 'Loading tenants…'));
  main.append(h('h1', {tabindex: -1}, 'Tenants'),
    h('p', {class: 'lead'}, 'Each tenant has its own licenses, keys and history; an API key administers its tenant only.'),
    list,
    allows('tenant.create') ? tenantForm(page, (t) => { location.hash = `#/tenants/${encodeURIComponent(t.id)}`; }) : null);
  (async () => {
    try {
      const all = [];
      let token = '';
      for (let i = 0; i < 10; i++) {
        const answer = await listTenants({pageSize: 1000, pageToken: token}, page.signal);
        all.push(...(answer.tenants || []));
        token = answer.nextPageToken;
        if (!token) break;
      }
      if (page.signal.aborted) return;
      replace(list, all.length === 0 ? h('p', {class: 'empty'}, 'No tenants.') : table('Tenants', ['Tenant', 'Name', 'Created', 'Quotas'],
        all.map((t) => h('tr', {dataset: {tenantId: t.id}},
          h('th', {scope: 'row'}, h('a', {href: `#/tenants/${encodeURIComponent(t.id)}`}, t.id)),
          h('td', {}, t.name || h('span', {class: 'none'}, '—')),
          h('td', {}, when(t.createTime)),
          h('td', {}, quotas(t.quotas)))), {class: 'tenants'}));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(list, box);
    }
  })();
  return null;
}

function quotas(q) {
  if (!q) return h('span', {class: 'none'}, 'none');
  const parts = [];
  if (Number(q.maxLicenses)) parts.push(`${q.maxLicenses} licenses`);
  if (Number(q.maxSeats)) parts.push(`${q.maxSeats} seats`);
  if (Number(q.maxApiKeys)) parts.push(`${q.maxApiKeys} API keys`);
  return parts.length ? parts.join(', ') : h('span', {class: 'none'}, 'none');
}

function tenantForm(page, onCreated) {
  const id = h('input', {type: 'text', required: true, autocomplete: 'off', spellcheck: 'false'});
  const name = h('input', {type: 'text', autocomplete: 'off'});
  const status = formStatus('tenant-status');
  const button = h('button', {type: 'submit', id: 'tenant-create'}, 'Create the tenant');
  const form = h('form', {id: 'tenant-form', class: 'card', novalidate: true},
    h('h2', {id: 'tenant-form-h'}, 'New tenant'),
    field({id: 'tenant-id', label: 'Id', control: id, apiField: 'tenant.id', help: 'Lower-case letters, digits and dashes, e.g. acme-corp. It cannot change.'}),
    field({id: 'tenant-name', label: 'Name', control: name, apiField: 'tenant.name'}),
    button, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      const answer = await createTenant({id: id.value.trim(), name: name.value.trim()});
      onCreated(answer.tenant);
    } catch (err) {
      showError(form, status, err, page);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// tenant is one tenant's page: its API keys.
function tenant(main, tenantId, page) {
  page.title(`Tenant ${tenantId}`);
  const keys = h('div', {id: 'api-keys'}, h('p', {class: 'loading'}, 'Loading API keys…'));
  const action = h('div', {id: 'api-key-action', 'aria-live': 'polite'});
  main.append(
    h('p', {class: 'crumbs'}, h('a', {href: '#/tenants'}, 'Tenants'), ' › ', h('span', {}, tenantId)),
    h('h1', {tabindex: -1}, 'Tenant ', h('code', {}, tenantId)),
    h('section', {'aria-labelledby': 'keys-h'}, h('h2', {id: 'keys-h'}, 'API keys'),
      h('p', {class: 'help'}, 'An API key administers this tenant: its licenses, policies and reports, over the API, seatctl or this console.'),
      action, keys),
    allows('apikey.create') ? keyForm(tenantId, page, () => load()) : null);

  async function load() {
    try {
      const answer = await listApiKeys(tenantId, page.signal);
      if (page.signal.aborted) return;
      const list = answer.apiKeys || [];
      replace(keys, list.length === 0 ? h('p', {class: 'empty'}, 'No API keys.') : table('API keys', ['Name', 'Key id', 'Created', 'State', 'Action'],
        list.map((k) => h('tr', {dataset: {apiKeyId: k.id, state: k.revokeTime ? 'revoked' : 'active'}},
          h('th', {scope: 'row'}, k.name || h('span', {class: 'none'}, '—')),
          h('td', {}, h('code', {}, k.id)),
          h('td', {}, when(k.createTime)),
          h('td', {}, k.revokeTime ? [h('span', {class: 'badge off'}, 'revoked'), ' ', when(k.revokeTime)] : h('span', {class: 'badge ok'}, 'active')),
          h('td', {}, !k.revokeTime && allows('apikey.revoke') ? h('button', {
            type: 'button', class: 'danger small', 'aria-label': `Revoke the API key ${k.name || k.id}`, onclick: () => revoke(k),
          }, 'Revoke') : null))), {class: 'api-keys'}));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(keys, box);
    }
  }

  async function revoke(k) {
    const yes = await confirm({id: 'apikey-revoke-dialog', title: 'Revoke this API key?', action: 'Revoke',
      body: [h('p', {}, `${k.name || k.id}: every call with it is refused from now on. This cannot be undone.`), h('p', {}, h('code', {}, k.id))]});
    if (!yes) return;
    try {
      const answer = await revokeApiKey(k.id);
      replace(action, saved(`API key ${answer.apiKey.name || answer.apiKey.id} (${answer.apiKey.id}) is revoked.`));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(action, box);
    }
    await load();
  }

  load();
  return null;
}

// keyForm makes an API key and shows its secret, once.
function keyForm(tenantId, page, onCreated) {
  const name = h('input', {type: 'text', required: true, autocomplete: 'off'});
  const status = formStatus('api-key-status');
  const button = h('button', {type: 'submit', id: 'api-key-create'}, 'Create the key');
  const form = h('form', {id: 'api-key-form', class: 'card', novalidate: true},
    h('h2', {id: 'api-key-form-h'}, 'New API key'),
    field({id: 'api-key-name', label: 'Name', control: name, apiField: 'name', help: 'Who or what uses it, e.g. "build farm".'}),
    button, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      const answer = await createApiKey(tenantId, name.value.trim());
      name.value = '';
      const secret = h('input', {type: 'text', id: 'api-key-secret', readonly: true, value: answer.secret, spellcheck: 'false',
        'aria-describedby': 'api-key-secret-help'});
      replace(status, h('div', {class: 'secret-box', role: 'status'},
        h('p', {class: 'ok'}, `Created ${answer.apiKey.name || answer.apiKey.id} (${answer.apiKey.id}).`),
        h('label', {for: 'api-key-secret'}, 'Its secret'),
        secret,
        h('p', {class: 'help', id: 'api-key-secret-help'},
          'Copy it now: it is shown this once, and seatd keeps only its hash. Send it as authorization: Bearer <secret>.')));
      secret.addEventListener('focus', () => secret.select());
      secret.focus();
      await onCreated();
    } catch (err) {
      showError(form, status, err, page);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}
