// License: its feature grants (feature, version, seats in use / seats,
// starts, expires; added and deleted here), its site policy (its lines,
// the groups they name, who holds the reserved seats: policy.js; edited
// here: policyedit.js), its leases (user, host, fingerprint, feature and
// version, acquired, last heartbeat, expires in; by state and feature),
// revoking one after a confirmation, its settings (licenseform.js) and
// deleting it after a confirmation. What the admin may not do is not
// offered (can.js). The grants, policy and leases refresh every 5 s; the
// forms are left alone.
import {activeLeases, createGrant, deleteGrant, updateGrant, deleteLicense, getLicense, getPolicy, listGroups, listLeases, revokeLease,
  updateLicense} from '../api.js';
import {allows} from '../can.js';
import {confirm, durationText, field, formStatus, fromLocalInput, localInput, saved, showError} from '../form.js';
import {licenseForm, savedText} from '../licenseform.js';
import {groupNames, hasReservations, policyView} from '../policy.js';
import {policyEditor} from '../policyedit.js';
import {h, idTag, replace, table, when, until, seconds, num} from '../dom.js';
import {every, updatedText} from '../refresh.js';

const STATES = {
  LEASE_STATE_ACTIVE: 'active', LEASE_STATE_RELEASED: 'released',
  LEASE_STATE_EXPIRED: 'expired', LEASE_STATE_REVOKED: 'revoked',
};

export function render(main, [id], page) {
  page.title('License');
  const heading = h('h1', {tabindex: -1}, 'License');
  const facts = h('div', {id: 'license-facts'}, h('p', {class: 'loading'}, 'Loading the license…'));
  const grantsBox = h('div', {id: 'grants'});
  const policyBox = h('div', {id: 'policy'});
  const leasesBox = h('div', {id: 'leases'});
  const actionStatus = h('div', {id: 'lease-action', 'aria-live': 'polite'});
  const updated = h('p', {class: 'updated'});
  const filter = h('select', {id: 'lease-filter'},
    h('option', {value: 'LEASE_STATE_ACTIVE'}, 'Active leases'),
    h('option', {value: ''}, 'All leases, newest first'));
  // The feature filter lists the license's features once it has any.
  const featureFilter = h('select', {id: 'lease-feature'}, h('option', {value: ''}, 'every feature and the base pool'));
  const featureLabel = h('label', {class: 'inline', hidden: true}, ' of ', featureFilter);
  const editor = h('div', {id: 'edit'});
  const grantAdder = h('div', {id: 'grant-adder'});
  const grantStatus = h('div', {id: 'grant-action', 'aria-live': 'polite'});
  const policyEdit = h('div', {id: 'policy-edit'});
  const deleteStatus = formStatus('delete-status');
  let formFilled = false;
  let grantEditor = null; // opens the grant form on a grant
  let shown = null; // the license as last read
  let policyShown = null;
  const editPolicy = h('button', {type: 'button', class: 'quiet', id: 'policy-edit-open', hidden: !allows('policy.set')}, 'Edit the policy');
  editPolicy.addEventListener('click', () => {
    editPolicy.hidden = true;
    replace(policyEdit, policyEditor({licenseId: id, policy: policyShown || {}, page, onSaved: () => load()}));
    policyEdit.querySelector('button, input, select').focus();
  });
  const deleteButton = h('button', {type: 'button', class: 'danger', id: 'license-delete'}, 'Delete this license');
  deleteButton.addEventListener('click', async () => {
    const name = shown ? shown.name || shown.id : id;
    const yes = await confirm({id: 'delete-dialog', title: 'Delete this license?', action: 'Delete',
      body: [h('p', {}, `${name} is removed and its key stops working. Its ${shown ? shown.seatsInUse || 0 : 0} live leases are revoked now. `,
        'Its usage history stays.'), h('p', {}, h('code', {}, id))]});
    if (!yes) return;
    replace(deleteStatus, h('p', {}, 'Deleting…'));
    try {
      const answer = await deleteLicense(id);
      page.flash(`Deleted ${name} (${id}); ${answer.revokedLeases || 0} live leases revoked.`);
      location.hash = '#/';
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(deleteStatus, box);
    }
  });

  main.append(
    h('p', {class: 'crumbs'}, h('a', {href: '#/'}, 'Overview'), ' › ', h('span', {}, id)),
    heading, updated, facts,
    h('section', {'aria-labelledby': 'grants-h'},
      h('h2', {id: 'grants-h'}, 'Features'),
      h('p', {class: 'help'}, 'Each feature grant is a pool of its own; the seats above are the base pool, for requests that name no feature.'),
      grantStatus, grantsBox, grantAdder),
    h('section', {'aria-labelledby': 'policy-h'},
      h('h2', {id: 'policy-h'}, 'Site policy'),
      h('p', {class: 'help'}, 'Who may take this license\'s seats and how many. A change applies to the next acquisition; no held lease ends.'),
      policyBox, editPolicy, policyEdit),
    h('section', {'aria-labelledby': 'leases-h'},
      h('div', {class: 'section-head'},
        h('h2', {id: 'leases-h'}, 'Leases'),
        h('span', {}, h('label', {class: 'inline'}, 'Show ', filter), featureLabel)),
      actionStatus, leasesBox),
    allows('license.edit') ? h('section', {'aria-labelledby': 'edit-h'}, h('h2', {id: 'edit-h'}, 'Settings'), editor) : null,
    h('p', {}, h('a', {href: `#/usage/${encodeURIComponent(id)}`}, 'Usage of this license over 30 days')),
    allows('license.delete') ? h('section', {'aria-labelledby': 'delete-h', class: 'danger-zone'},
      h('h2', {id: 'delete-h'}, 'Delete'),
      h('p', {class: 'help'}, 'Revokes its live leases and removes it; its key stops working. Its history stays.'),
      deleteButton, deleteStatus) : null);

  const load = async () => {
    try {
      const [license, leases, policy] = await Promise.all([
        getLicense(id, page.signal),
        listLeases(id, filter.value, featureFilter.value, page.signal),
        getPolicy(id, page.signal),
      ]);
      // Who holds reserved seats: every live lease, whatever the filters
      // above show; the groups, when the policy names any.
      const [live, groups] = await Promise.all([
        hasReservations(policy) ? activeLeases(id, page.signal) : [],
        groupNames(policy).length ? listGroups(page.signal).then((g) => g.groups || []) : [],
      ]);
      if (page.signal.aborted) return;
      const name = license.name || license.id;
      shown = license;
      policyShown = policy;
      page.title(name);
      replace(heading, name, ' ', idTag(license.id));
      replace(facts, licenseFacts(license));
      replace(grantsBox, grantTable(license, allows('grant.delete') ? confirmDeleteGrant : null,
        allows('grant.edit') ? (g) => grantEditor && grantEditor(g) : null));
      replace(policyBox, policyView(policy, groups, live));
      listFeatures(featureFilter, featureLabel, license.grants || []);
      replace(leasesBox, leaseTable(leases.leases || [], confirmRevoke));
      if (!formFilled) {
        replace(editor, editForm(license, (got) => {
          shown = got;
          replace(facts, licenseFacts(got));
          replace(heading, got.name || got.id, ' ', idTag(got.id));
        }, page));
        if (allows('grant.create')) replace(grantAdder, grantForm(id, page, () => load()));
        grantEditor = (g) => {
          replace(grantAdder, grantForm(id, page, () => load(), g),
            h('button', {type: 'button', class: 'quiet', id: 'grant-edit-done', onclick: () => {
              replace(grantAdder, allows('grant.create') ? grantForm(id, page, () => load()) : null);
            }}, 'Done editing'));
          grantAdder.querySelector('#grant-version').focus();
        };
        formFilled = true;
      }
      replace(updated, updatedText());
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(leasesBox, box);
    }
  };
  filter.addEventListener('change', load);
  featureFilter.addEventListener('change', load);

  // confirmDeleteGrant asks before deleting a grant, which revokes its
  // live leases.
  async function confirmDeleteGrant(g) {
    const yes = await confirm({id: 'grant-delete-dialog', title: 'Delete this feature grant?', action: 'Delete',
      body: [h('p', {}, `${g.feature}${g.version ? ` up to ${g.version}` : ''}, ${g.seats} seats: its ${g.seatsInUse || 0} live leases are revoked now.`),
        h('p', {}, h('code', {}, g.id))]});
    if (!yes) return;
    try {
      const answer = await deleteGrant(id, g.id);
      replace(grantStatus, saved(`Deleted grant ${g.id}; ${answer.revokedLeases || 0} live leases revoked.`));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(grantStatus, box);
    }
    await load();
  }

  // confirmRevoke asks before revoking: a modal dialog, Cancel first.
  function confirmRevoke(lease) {
    const reason = h('input', {id: 'revoke-reason', name: 'reason', type: 'text', value: 'revoked from the console'});
    const dialog = h('dialog', {id: 'revoke-dialog', 'aria-labelledby': 'revoke-h'},
      h('form', {method: 'dialog'},
        h('h2', {id: 'revoke-h'}, 'Revoke this lease?'),
        h('p', {}, `${lease.user || lease.fingerprint} on ${lease.hostname || 'an unknown host'} loses its seat now; `,
          'its next heartbeat fails.'),
        h('p', {}, h('code', {}, lease.id)),
        h('label', {for: 'revoke-reason'}, 'Reason (kept in the audit log)'),
        reason,
        h('div', {class: 'buttons'},
          h('button', {type: 'submit', value: 'cancel', autofocus: true, class: 'quiet'}, 'Cancel'),
          h('button', {type: 'submit', value: 'revoke', class: 'danger', id: 'revoke-confirm'}, 'Revoke'))));
    dialog.addEventListener('close', async () => {
      const yes = dialog.returnValue === 'revoke';
      dialog.remove();
      if (!yes) return;
      replace(actionStatus, h('p', {}, `Revoking ${lease.id}…`));
      try {
        const answer = await revokeLease(lease.id, reason.value.trim());
        replace(actionStatus, h('p', {class: 'ok', role: 'status'},
          `Lease ${answer.lease.id} is ${STATES[answer.lease.state] || answer.lease.state}.`));
      } catch (err) {
        const box = page.failed(err);
        if (box) replace(actionStatus, box);
      }
      await load();
    });
    main.append(dialog);
    dialog.showModal();
  }

  return every(main, load);
}

function licenseFacts(l) {
  const inUse = l.seatsInUse || 0;
  const items = [
    ['Seats in use', [h('span', {class: 'in-use', id: 'license-in-use'}, `${inUse} / ${l.seats}`),
      l.overdraft ? ` (+${l.overdraft} overdraft)` : '', (l.grants || []).length ? ' of the base pool' : '']],
    ['Waiting', num(l.waiting)],
    ['Lease TTL', durationText(seconds(l.leaseTtl))],
    ['Borrowing', seconds(l.maxBorrowDuration) > 0
      ? `up to ${durationText(seconds(l.maxBorrowDuration))} offline, ${l.maxBorrowedSeats ? `${l.maxBorrowedSeats} seats at once` : 'any of its seats'}`
      : 'not allowed'],
    ['State', l.active ? h('span', {class: 'badge ok'}, 'active') : h('span', {class: 'badge off'}, 'inactive')],
    ['Expires', l.expiresAt ? [when(l.expiresAt), ` (${until(l.expiresAt)})`] : 'never'],
    ['Tenant', h('code', {}, l.tenantId)],
    ['Key', h('details', {}, h('summary', {}, 'Show the license key'), h('code', {class: 'secret'}, l.key))],
  ];
  return h('dl', {class: 'facts'}, items.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// listFeatures keeps the feature filter's options to the license's
// features (the choice stays while its feature does), shown once there is
// one.
function listFeatures(select, label, grants) {
  const names = [...new Set(grants.map((g) => g.feature))];
  const have = [...select.options].slice(1).map((o) => o.value);
  if (names.join('\n') !== have.join('\n')) {
    const chosen = select.value;
    replace(select, h('option', {value: ''}, 'every feature and the base pool'),
      names.map((n) => h('option', {value: n}, `feature ${n}`)));
    select.value = names.includes(chosen) ? chosen : '';
  }
  label.hidden = names.length === 0;
}

// grantTable lists the license's feature grants in the API's order (by
// feature, then the order their seats are taken in).
function grantTable(license, onDelete, onEdit) {
  const grants = license.grants || [];
  if (grants.length === 0) {
    return h('p', {class: 'empty'}, 'No feature grants: every seat is of the base pool.');
  }
  const now = Date.now();
  const rows = grants.map((g) => {
    const inUse = g.seatsInUse || 0;
    const seats = g.seats || 0;
    return h('tr', {dataset: {grantId: g.id, feature: g.feature}},
      h('th', {scope: 'row'}, g.feature),
      h('td', {class: 'version'}, g.version ? g.version : h('span', {class: 'none'}, 'all versions')),
      h('td', {},
        h('span', {class: inUse >= seats ? 'in-use full' : 'in-use'}, `${inUse} / ${seats}`),
        g.overdraft ? h('div', {class: 'sub'}, `+${g.overdraft} overdraft`) : null),
      h('td', {class: 'starts'}, g.startsAt ? [when(g.startsAt), h('div', {class: 'sub'}, until(g.startsAt, now))]
        : h('span', {class: 'none'}, 'at once')),
      h('td', {class: 'expires'}, g.expiresAt ? [when(g.expiresAt), h('div', {class: 'sub'}, until(g.expiresAt, now))]
        : h('span', {class: 'none'}, 'never')),
      h('td', {}, grantState(license, g, now)),
      h('td', {}, h('code', {}, g.id)),
      onDelete || onEdit ? h('td', {class: 'actions'},
        onEdit ? h('button', {type: 'button', class: 'quiet small', 'aria-label': `Edit the grant ${g.id} of ${g.feature}`,
          onclick: () => onEdit(g)}, 'Edit') : null, ' ',
        onDelete ? h('button', {type: 'button', class: 'danger small', 'aria-label': `Delete the grant ${g.id} of ${g.feature}`,
          onclick: () => onDelete(g)}, 'Delete') : null) : null);
  });
  return table('Feature grants',
    ['Feature', 'Version (up to)', 'In use / seats', 'Starts', 'Expires', 'State', 'Grant', onDelete || onEdit ? 'Action' : null].filter(Boolean),
    rows, {class: 'grants'});
}

// grantState says whether a grant gives seats now: not before it starts,
// nor once it or its license expired, nor while the license is inactive.
function grantState(license, g, now) {
  const past = (ts) => ts && new Date(ts).getTime() <= now;
  if (past(g.expiresAt) || past(license.expiresAt)) return h('span', {class: 'badge bad'}, 'expired');
  if (g.startsAt && !past(g.startsAt)) return h('span', {class: 'badge off'}, 'not started');
  if (!license.active) return h('span', {class: 'badge off'}, 'inactive');
  return h('span', {class: 'badge ok'}, 'current');
}

// leaseFeature is the feature and version a lease asked for; a lease of
// the base pool asked for none.
function leaseFeature(l) {
  if (!l.feature) return h('span', {class: 'none'}, 'base');
  return l.version ? `${l.feature} ${l.version}` : l.feature;
}

function leaseTable(leases, onRevoke) {
  if (leases.length === 0) return h('p', {class: 'empty'}, 'No leases to show.');
  const now = Date.now();
  const rows = leases.map((l) => {
    const active = l.state === 'LEASE_STATE_ACTIVE';
    const who = l.user || l.fingerprint;
    return h('tr', {dataset: {leaseId: l.id, state: STATES[l.state] || l.state}},
      h('th', {scope: 'row'}, l.user || h('span', {class: 'none'}, '—')),
      h('td', {}, l.hostname || h('span', {class: 'none'}, '—')),
      h('td', {}, h('code', {}, l.fingerprint)),
      h('td', {class: 'feature'}, leaseFeature(l)),
      h('td', {}, when(l.acquiredAt)),
      h('td', {}, when(l.lastHeartbeatAt)),
      h('td', {}, active ? until(l.expiresAt, now) : [STATES[l.state] || l.state, ' ', when(l.endedAt)]),
      h('td', {}, allows('lease.revoke') ? revocable(l, who, onRevoke) : null));
  });
  return table('Leases', ['User', 'Host', 'Fingerprint', 'Feature', 'Acquired', 'Last heartbeat', 'Expires in', 'Action'], rows, {class: 'leases'});
}

// revocable is a live lease's action: Revoke, except for a borrowed seat,
// which holds until its deadline (its certificate stays valid offline).
function revocable(l, who, onRevoke) {
  if (l.state !== 'LEASE_STATE_ACTIVE') return null;
  if (l.borrowed) {
    return h('span', {class: 'borrowed'}, h('span', {class: 'badge off'}, 'borrowed'),
      h('span', {class: 'sub'}, ' offline until it expires; cannot be revoked'));
  }
  return h('button', {
    type: 'button', class: 'danger small', 'aria-label': `Revoke the lease of ${who} on ${l.hostname || 'an unknown host'}`,
    onclick: () => onRevoke(l),
  }, 'Revoke');
}

// editForm is the license form filled with license, saved with PATCH.
function editForm(license, onSaved, page) {
  return licenseForm({
    license, prefix: 'edit', submitText: 'Save',
    async submit(fields, form, status) {
      replace(status, h('p', {}, 'Saving…'));
      try {
        const got = await updateLicense(license.id, fields);
        onSaved(got);
        replace(status, saved(`Saved: ${savedText(got)}`));
      } catch (err) {
        showError(form, status, err, page);
      }
    },
  });
}

// grantForm adds a feature grant to the license, or edits grant (its
// feature stays: a grant sells one feature).
function grantForm(licenseId, page, onAdded, grant = null) {
  const g0 = grant || {seats: 1, overdraft: 0};
  const feature = h('input', {type: 'text', required: true, autocomplete: 'off', value: g0.feature || '', disabled: Boolean(grant)});
  const version = h('input', {type: 'text', autocomplete: 'off', value: g0.version || ''});
  const seats = h('input', {type: 'number', min: 1, step: 1, required: true, value: g0.seats});
  const overdraft = h('input', {type: 'number', min: 0, step: 1, value: g0.overdraft || 0});
  const starts = h('input', {type: 'datetime-local', value: localInput(g0.startsAt)});
  const expires = h('input', {type: 'datetime-local', value: localInput(g0.expiresAt)});
  const status = formStatus('grant-status');
  const add = h('button', {type: 'submit', id: 'grant-add'}, grant ? 'Save the grant' : 'Add the grant');
  const form = h('form', {id: 'grant-form', class: 'card', novalidate: true, dataset: grant ? {grantId: grant.id} : {}},
    h('h3', {id: 'grant-form-h'}, grant ? `Edit grant ${grant.id}` : 'Add a feature grant'),
    h('div', {class: 'row'},
      field({id: 'grant-feature', label: 'Feature', control: feature, apiField: 'grant.feature'}),
      field({id: 'grant-version', label: 'Up to version', control: version, apiField: 'grant.version', help: 'Empty: every version.'}),
      field({id: 'grant-seats', label: 'Seats', control: seats, apiField: 'grant.seats'}),
      field({id: 'grant-overdraft', label: 'Overdraft', control: overdraft, apiField: 'grant.overdraft'})),
    h('div', {class: 'row'},
      field({id: 'grant-starts', label: 'Starts', control: starts, apiField: 'grant.starts_at', help: 'Empty: at once.'}),
      field({id: 'grant-expires', label: 'Expires', control: expires, apiField: 'grant.expires_at', help: 'Empty: never.'})),
    add, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    add.disabled = true;
    const body = {version: version.value.trim(), seats: Number(seats.value), overdraft: Number(overdraft.value || 0)};
    if (!grant) body.feature = feature.value.trim();
    // A new grant leaves an empty time out; an edit clears it with null.
    if (starts.value || grant) body.startsAt = fromLocalInput(starts.value);
    if (expires.value || grant) body.expiresAt = fromLocalInput(expires.value);
    try {
      const g = grant ? await updateGrant(licenseId, grant.id, body) : await createGrant(licenseId, body);
      replace(status, saved(`${grant ? 'Saved' : 'Added'} grant ${g.id}: ${g.feature}${g.version ? ` up to ${g.version}` : ''}, ${g.seats} seats.`));
      if (!grant) {
        for (const [input, v] of [[feature, ''], [version, ''], [seats, 1], [overdraft, 0], [starts, ''], [expires, '']]) input.value = v;
      }
      await onAdded();
    } catch (err) {
      showError(form, status, err, page);
    } finally {
      add.disabled = false;
    }
  });
  return form;
}
