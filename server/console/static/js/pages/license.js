// License: its feature grants (feature, version, seats in use / seats,
// starts, expires), its site policy (its lines, the groups they name, who
// holds the reserved seats: policy.js), its leases (user, host, fingerprint, feature and
// version, acquired, last heartbeat, expires in; by state and feature),
// revoking one after a confirmation, and editing seats, lease TTL and
// active. The grants, policy and leases refresh every 5 s; the form is
// left alone.
import {activeLeases, getLicense, getPolicy, listGroups, listLeases, revokeLease, updateLicense} from '../api.js';
import {groupNames, hasReservations, policyView} from '../policy.js';
import {h, replace, table, when, until, seconds, span, num} from '../dom.js';
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
  let formFilled = false;

  main.append(
    h('p', {class: 'crumbs'}, h('a', {href: '#/'}, 'Overview'), ' › ', h('span', {}, id)),
    heading, updated, facts,
    h('section', {'aria-labelledby': 'grants-h'},
      h('h2', {id: 'grants-h'}, 'Features'),
      h('p', {class: 'help'}, 'Each feature grant is a pool of its own; the seats above are the base pool, for requests that name no feature.'),
      grantsBox),
    h('section', {'aria-labelledby': 'policy-h'},
      h('h2', {id: 'policy-h'}, 'Site policy'),
      h('p', {class: 'help'}, 'Who may take this license\'s seats and how many. A change applies to the next acquisition; no held lease ends.'),
      policyBox),
    h('section', {'aria-labelledby': 'leases-h'},
      h('div', {class: 'section-head'},
        h('h2', {id: 'leases-h'}, 'Leases'),
        h('span', {}, h('label', {class: 'inline'}, 'Show ', filter), featureLabel)),
      actionStatus, leasesBox),
    h('section', {'aria-labelledby': 'edit-h'}, h('h2', {id: 'edit-h'}, 'Settings'), editor),
    h('p', {}, h('a', {href: `#/usage/${encodeURIComponent(id)}`}, 'Usage of this license over 30 days')));

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
      page.title(name);
      replace(heading, name);
      replace(facts, licenseFacts(license));
      replace(grantsBox, grantTable(license));
      replace(policyBox, policyView(policy, groups, live));
      listFeatures(featureFilter, featureLabel, license.grants || []);
      replace(leasesBox, leaseTable(leases.leases || [], confirmRevoke));
      if (!formFilled) {
        replace(editor, editForm(license, (saved) => replace(facts, licenseFacts(saved)), page));
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
    ['Lease TTL', span(seconds(l.leaseTtl))],
    ['Borrowing', seconds(l.maxBorrowDuration) > 0
      ? `up to ${span(seconds(l.maxBorrowDuration))} offline, ${l.maxBorrowedSeats ? `${l.maxBorrowedSeats} seats at once` : 'any of its seats'}`
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
function grantTable(license) {
  const grants = license.grants || [];
  if (grants.length === 0) {
    return h('p', {class: 'empty'}, 'No feature grants: every seat is of the base pool. Add one with seatctl grants create.');
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
      h('td', {}, h('code', {}, g.id)));
  });
  return table('Feature grants',
    ['Feature', 'Version (up to)', 'In use / seats', 'Starts', 'Expires', 'State', 'Grant'], rows, {class: 'grants'});
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
      h('td', {}, revocable(l, who, onRevoke)));
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

function editForm(license, onSaved, page) {
  const seats = h('input', {id: 'edit-seats', name: 'seats', type: 'number', min: 1, step: 1, required: true, value: license.seats});
  const ttl = h('input', {id: 'edit-ttl', name: 'ttl', type: 'number', min: 1, step: 1, required: true,
    value: Math.round(seconds(license.leaseTtl)), 'aria-describedby': 'edit-ttl-help'});
  const active = h('input', {id: 'edit-active', name: 'active', type: 'checkbox', checked: license.active, 'aria-describedby': 'edit-active-help'});
  const status = h('div', {id: 'edit-status', 'aria-live': 'polite'});
  const save = h('button', {type: 'submit', id: 'edit-save'}, 'Save');
  const form = h('form', {id: 'edit-form', class: 'card'},
    h('div', {class: 'field'}, h('label', {for: 'edit-seats'}, 'Seats'), seats),
    h('div', {class: 'field'}, h('label', {for: 'edit-ttl'}, 'Lease TTL (seconds)'), ttl,
      h('p', {id: 'edit-ttl-help', class: 'help'}, 'How long a lease lives without a heartbeat.')),
    h('div', {class: 'field check'}, active, h('label', {for: 'edit-active'}, 'Active'),
      h('p', {id: 'edit-active-help', class: 'help'}, 'An inactive license refuses new seats; leases held run out.')),
    save, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    save.disabled = true;
    replace(status, h('p', {}, 'Saving…'));
    try {
      const saved = await updateLicense(license.id, {
        seats: Number(seats.value), leaseTtl: `${Number(ttl.value)}s`, active: active.checked,
      });
      onSaved(saved);
      replace(status, h('p', {class: 'ok', role: 'status'},
        `Saved: ${saved.seats} seats, lease TTL ${span(seconds(saved.leaseTtl))}, ${saved.active ? 'active' : 'inactive'}.`));
    } catch (err) {
      const box = page.failed(err);
      if (box) replace(status, box);
    } finally {
      save.disabled = false;
    }
  });
  return form;
}
