// Webhooks (an admin's, can.js): the tenant's endpoints; a new one (its
// secret shown once: lists never show it again); disabling, enabling and
// deleting one (after a confirmation); an endpoint's delivery log, newest
// first, a page at a time, and replaying a delivery (the same event, id
// and sequence sent again). The operator chooses the tenant. Everything
// the API answers is shown as text.
import {createWebhook, deleteWebhook, listWebhooks, replayDelivery, setWebhookDisabled, webhookDeliveries} from '../api.js';
import {allows} from '../can.js';
import {confirm, field, formStatus, saved, showError} from '../form.js';
import {startWithTenants} from '../tenantpicker.js';
import {h, replace, seconds, table, when} from '../dom.js';

const PAGE_SIZE = 25;

export function render(main, _params, page) {
  page.title('Webhooks');
  const list = h('div', {id: 'webhooks'}, h('p', {class: 'loading'}, 'Loading the endpoints…'));
  const action = h('div', {id: 'webhook-action', 'aria-live': 'polite'});
  const log = h('section', {id: 'webhook-log', 'aria-labelledby': 'webhook-log-h', hidden: true});
  const tenant = h('select', {id: 'webhook-tenant'}, h('option', {value: ''}, 'default'));
  const tenantField = h('div', {class: 'field', hidden: true}, h('label', {for: 'webhook-tenant'}, 'Tenant'), tenant);
  main.append(h('h1', {tabindex: -1}, 'Webhooks'),
    h('p', {class: 'lead'}, 'Endpoints the tenant\'s events are sent to, signed with the endpoint\'s secret (Standard Webhooks), and what was sent.'),
    tenantField, action, list,
    allows('webhook.create') ? createForm(page, () => tenant.value, (ep) => { load(); showLog(ep); }) : null,
    log);

  // shown is the endpoint whose delivery log is open, and its page tokens;
  // logStatus says what the last replay did (kept across reloads).
  const logStatus = h('div', {id: 'webhook-log-status', 'aria-live': 'polite'});
  let shown = null;
  let tokens = [''];
  let at = 0;

  async function load() {
    try {
      const answer = await listWebhooks(tenant.value, page.signal);
      if (page.signal.aborted) return;
      const eps = answer.endpoints || [];
      replace(list, eps.length === 0 ? h('p', {class: 'empty'}, 'No endpoints.')
        : table('Webhook endpoints', ['URL', 'Events', 'Description', 'State', 'Created', 'Actions'], eps.map(row), {class: 'webhooks'}));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(list, box);
    }
  }

  function row(ep) {
    const label = ep.description || ep.url;
    return h('tr', {dataset: {endpointId: ep.id, state: ep.disabled ? 'disabled' : 'enabled'}},
      h('th', {scope: 'row', class: 'url'}, h('code', {}, ep.url)),
      h('td', {class: 'types'}, (ep.types || []).length ? (ep.types || []).join(', ') : h('span', {class: 'none'}, 'every type')),
      h('td', {}, ep.description || h('span', {class: 'none'}, '—')),
      h('td', {class: 'state'}, ep.disabled
        ? [h('span', {class: 'badge off'}, 'disabled'), ep.disabledReason ? [' ', ep.disabledReason] : null]
        : h('span', {class: 'badge ok'}, 'enabled')),
      h('td', {}, when(ep.createdAt)),
      h('td', {class: 'actions'},
        h('button', {type: 'button', class: 'quiet small', 'aria-label': `Delivery log of ${label}`, onclick: () => showLog(ep)}, 'Deliveries'),
        allows('webhook.edit') ? [' ', h('button', {
          type: 'button', class: 'quiet small', 'aria-label': `${ep.disabled ? 'Enable' : 'Disable'} ${label}`,
          onclick: () => toggle(ep),
        }, ep.disabled ? 'Enable' : 'Disable')] : null,
        allows('webhook.delete') ? [' ', h('button', {
          type: 'button', class: 'danger small', 'aria-label': `Delete ${label}`, onclick: () => remove(ep),
        }, 'Delete')] : null));
  }

  async function toggle(ep) {
    try {
      const answer = await setWebhookDisabled(tenant.value, ep.id, !ep.disabled);
      replace(action, saved(`${answer.endpoint.url} is ${answer.endpoint.disabled ? 'disabled: it is sent nothing' : 'enabled'}.`));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(action, box);
    }
    await load();
  }

  async function remove(ep) {
    const yes = await confirm({id: 'webhook-delete-dialog', title: 'Delete this endpoint?', action: 'Delete',
      body: [h('p', {}, `${ep.url}: it is sent nothing more, and its delivery log goes with it. This cannot be undone.`), h('p', {}, h('code', {}, ep.id))]});
    if (!yes) return;
    try {
      await deleteWebhook(tenant.value, ep.id);
      replace(action, saved(`Deleted ${ep.url} (${ep.id}).`));
      if (shown && shown.id === ep.id) {
        shown = null;
        log.hidden = true;
      }
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(action, box);
    }
    await load();
  }

  function showLog(ep) {
    shown = ep;
    tokens = [''];
    at = 0;
    log.hidden = false;
    replace(logStatus);
    loadLog();
  }

  async function loadLog() {
    const ep = shown;
    const body = h('div', {id: 'webhook-deliveries'}, h('p', {class: 'loading'}, 'Loading the delivery log…'));
    const status = logStatus;
    const where = h('p', {class: 'updated', id: 'webhook-log-page'});
    const prev = h('button', {type: 'button', class: 'quiet', id: 'webhook-log-prev', disabled: at === 0}, 'Previous page');
    const next = h('button', {type: 'button', class: 'quiet', id: 'webhook-log-next', disabled: true}, 'Next page');
    const again = h('button', {type: 'button', class: 'quiet', id: 'webhook-log-reload'}, 'Reload');
    replace(log, h('h2', {id: 'webhook-log-h'}, 'Delivery log of ', h('code', {}, ep.url)),
      h('p', {class: 'help'}, 'Newest first. A delivery is retried with backoff until its endpoint answers 2xx or the retry window ends; a replay sends it again with the same id and sequence.'),
      status, where, body, h('div', {class: 'buttons pager'}, prev, next, again));
    prev.addEventListener('click', () => { at -= 1; loadLog(); });
    again.addEventListener('click', () => loadLog());
    try {
      const answer = await webhookDeliveries(tenant.value, ep.id, {pageSize: PAGE_SIZE, pageToken: tokens[at]}, page.signal);
      if (page.signal.aborted || shown !== ep) return;
      const ds = answer.deliveries || [];
      const token = answer.nextPageToken || '';
      replace(where, `Page ${at + 1}${token ? '' : ' (the last)'}.`);
      replace(body, ds.length === 0 ? h('p', {class: 'empty'}, 'No deliveries yet.')
        : table('Deliveries', ['Event', 'Sequence', 'State', 'Attempts', 'Last answer', 'Last attempt', 'Next attempt', 'Action'],
          ds.map((d) => delivery(d, status)), {class: 'deliveries'}));
      next.disabled = !token;
      next.addEventListener('click', () => {
        tokens = tokens.slice(0, at + 1);
        tokens.push(token);
        at += 1;
        loadLog();
      });
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(body, box);
    }
  }

  function delivery(d, status) {
    const latency = d.lastLatency ? ` in ${Math.round(seconds(d.lastLatency) * 1000)} ms` : '';
    const answer = d.lastStatus ? `${d.lastStatus}${latency}` : (d.lastError ? '' : '—');
    return h('tr', {dataset: {deliveryId: d.id, state: d.state, eventType: d.eventType}},
      h('th', {scope: 'row'}, d.eventType, h('br'), h('code', {class: 'event-id'}, d.eventId)),
      h('td', {}, String(d.sequence ?? '')),
      h('td', {}, h('span', {class: `badge ${d.state === 'delivered' ? 'ok' : d.state === 'failed' ? 'bad' : 'off'}`}, d.state)),
      h('td', {}, String(d.attempts || 0)),
      h('td', {class: 'last-answer'}, answer, d.lastError ? [answer ? ': ' : '', d.lastError] : null),
      h('td', {}, when(d.lastAttemptAt)),
      h('td', {}, d.state === 'pending' ? when(d.nextAttemptAt) : h('span', {class: 'none'}, '—')),
      h('td', {}, allows('webhook.replay') && d.state !== 'pending' ? h('button', {
        type: 'button', class: 'quiet small', 'aria-label': `Replay ${d.eventType} ${d.eventId}`,
        onclick: async () => {
          try {
            const re = await replayDelivery(tenant.value, d.id);
            replace(status, saved(`${re.delivery.eventType} ${re.delivery.eventId} is sent again.`));
          } catch (err) {
            const box = page.failed(err);
            if (box) replace(status, box);
          }
          await loadLog();
        },
      }, 'Replay') : null));
  }

  tenant.addEventListener('change', () => {
    shown = null;
    log.hidden = true;
    replace(action);
    load();
  });

  startWithTenants(page, tenant, tenantField, list, load);
  return null;
}

// createForm registers an endpoint and shows its secret, once.
function createForm(page, tenantOf, onCreated) {
  const url = h('input', {type: 'text', inputmode: 'url', required: true, autocomplete: 'off', spellcheck: 'false'});
  const types = h('input', {type: 'text', autocomplete: 'off', spellcheck: 'false'});
  const description = h('input', {type: 'text', autocomplete: 'off'});
  const status = formStatus('webhook-status');
  const button = h('button', {type: 'submit', id: 'webhook-create'}, 'Add the endpoint');
  const form = h('form', {id: 'webhook-form', class: 'card', novalidate: true},
    h('h2', {id: 'webhook-form-h'}, 'New endpoint'),
    field({id: 'webhook-url', label: 'URL', control: url, apiField: 'endpoint.url', help: 'An https URL on a public address (the receiver of the requests).'}),
    field({id: 'webhook-types', label: 'Event types', control: types, apiField: 'endpoint.types',
      help: 'Comma-separated, e.g. lease.expired, license.exhausted; empty: every type.'}),
    field({id: 'webhook-description', label: 'Description', control: description, apiField: 'endpoint.description'}),
    button, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    button.disabled = true;
    try {
      const answer = await createWebhook({
        tenantId: tenantOf(), url: url.value.trim(), description: description.value.trim(),
        types: types.value.split(',').map((t) => t.trim()).filter((t) => t),
      });
      url.value = '';
      types.value = '';
      description.value = '';
      const secret = h('input', {type: 'text', id: 'webhook-secret', readonly: true, value: answer.secret, spellcheck: 'false',
        'aria-describedby': 'webhook-secret-help'});
      replace(status, h('div', {class: 'secret-box', role: 'status'},
        h('p', {class: 'ok'}, `Added ${answer.endpoint.url} (${answer.endpoint.id}).`),
        h('label', {for: 'webhook-secret'}, 'Its signing secret'),
        secret,
        h('p', {class: 'help', id: 'webhook-secret-help'},
          'Copy it now: it is shown this once. The receiver verifies each request\'s webhook-signature with it.')));
      onCreated(answer.endpoint);
    } catch (err) {
      showError(form, status, err, page);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}
