// Overview: each license's seats in use against its limit, its queue,
// its features' use, expiry and state; the cleanup leader and its last
// pass. Refreshes every 5 s.
import {listLicenses, cleanupStatus, session, ApiError} from '../api.js';
import {allows} from '../can.js';
import {durationText} from '../form.js';
import {h, idTag, replace, table, when, until, seconds, span, num} from '../dom.js';
import {every, updatedText} from '../refresh.js';
import {sso} from '../sso.js';

// cleanupRefused remembers, for this tab, that the key may not read the
// cleanup status (an API key: the status is operator only), so the page
// does not ask again every 5 s.
let cleanupRefused = {key: null, err: null};
// signedInAs is who the tab is signed in as: the key, or the single
// sign-on session's person.
const signedInAs = () => session.key || `sso:${sso.issuer}:${sso.subject}`;

export function render(main, _params, page) {
  page.title('Overview');
  const licensesBox = h('div', {id: 'licenses'}, h('p', {class: 'loading'}, 'Loading licenses…'));
  const cleanupBox = h('div', {id: 'cleanup'}, h('p', {class: 'loading'}, 'Loading…'));
  const updated = h('p', {class: 'updated', id: 'updated'});
  main.append(
    h('h1', {tabindex: -1}, 'Overview'),
    updated,
    h('section', {'aria-labelledby': 'licenses-h'},
      h('div', {class: 'section-head'}, h('h2', {id: 'licenses-h'}, 'Licenses'),
        allows('license.create') ? h('a', {class: 'button', href: '#/licenses/new', id: 'license-new'}, 'New license') : null),
      licensesBox),
    h('section', {'aria-labelledby': 'cleanup-h'}, h('h2', {id: 'cleanup-h'}, 'Cleanup'), cleanupBox));

  return every(main, async () => {
    const [licenses, status] = await Promise.allSettled([
      listLicenses(page.signal),
      cleanupRefused.key === signedInAs() ? Promise.reject(cleanupRefused.err) : cleanupStatus(page.signal),
    ]);
    if (page.signal.aborted) return;
    if (licenses.status === 'fulfilled') replace(licensesBox, licenseTable(licenses.value));
    else {
      const box = page.failed(licenses.reason);
      if (box) replace(licensesBox, box);
    }
    if (status.status === 'fulfilled') replace(cleanupBox, cleanupFacts(status.value));
    else {
      if (status.reason instanceof ApiError && status.reason.status === 403) {
        cleanupRefused = {key: signedInAs(), err: status.reason};
      }
      const box = page.failed(status.reason);
      if (box) replace(cleanupBox, box);
    }
    replace(updated, updatedText());
  });
}

function licenseTable(licenses) {
  if (licenses.length === 0) {
    return h('p', {class: 'empty'}, 'No licenses yet.');
  }
  const now = Date.now();
  const rows = licenses.map((l) => {
    const limit = l.seats + (l.overdraft || 0);
    const inUse = l.seatsInUse || 0;
    const full = inUse >= l.seats;
    const expired = l.expiresAt && new Date(l.expiresAt).getTime() <= now;
    return h('tr', {dataset: {licenseId: l.id}, class: l.active ? '' : 'inactive'},
      h('th', {scope: 'row'},
        h('a', {href: `#/licenses/${encodeURIComponent(l.id)}`}, l.name || l.id),
        h('div', {class: 'sub'}, idTag(l.id))),
      h('td', {class: 'seats-cell'},
        h('meter', {
          min: 0, max: limit, low: Math.min(l.seats * 0.75, l.seats - 0.5), high: l.seats - 0.5, optimum: 0, value: inUse,
          'aria-label': `${l.name || l.id}: ${inUse} of ${l.seats} seats in use`,
        }),
        h('span', {class: full ? 'in-use full' : 'in-use'}, `${inUse} / ${l.seats}`),
        l.overdraft ? h('div', {class: 'sub'}, `+${l.overdraft} overdraft`) : null,
        (l.grants || []).length ? h('div', {class: 'sub'}, 'base pool') : null),
      h('td', {class: 'features'}, featureUse(l, now)),
      h('td', {class: 'queue'}, num(l.waiting)),
      h('td', {}, h('span', {class: 'ttl'}, durationText(seconds(l.leaseTtl)))),
      h('td', {}, l.expiresAt ? [when(l.expiresAt), h('div', {class: expired ? 'sub bad' : 'sub'},
        expired ? 'expired' : until(l.expiresAt, now))] : h('span', {class: 'none'}, 'never')),
      h('td', {}, l.active ? h('span', {class: 'badge ok'}, 'active') : h('span', {class: 'badge off'}, 'inactive')));
  });
  return table('Licenses', ['License', 'In use / seats', 'Features', 'Queue', 'Lease TTL', 'Expires', 'State'], rows, {class: 'licenses'});
}

// featureUse is a license's use per feature, its grants summed: one line
// per feature, "render 3 / 7". The seats are those of the grants current
// now (started, not expired); seats in use count every grant's leases.
function featureUse(license, now) {
  const grants = license.grants || [];
  if (grants.length === 0) return h('span', {class: 'none'}, '—');
  const past = (ts) => ts && new Date(ts).getTime() <= now;
  const byFeature = new Map();
  for (const g of grants) {
    const f = byFeature.get(g.feature) || {inUse: 0, seats: 0, grants: 0, current: 0};
    const current = !past(g.expiresAt) && !past(license.expiresAt) && (!g.startsAt || past(g.startsAt));
    f.inUse += g.seatsInUse || 0;
    f.seats += current ? (g.seats || 0) : 0;
    f.grants += 1;
    f.current += current ? 1 : 0;
    byFeature.set(g.feature, f);
  }
  return [...byFeature].map(([name, f]) => h('div', {class: 'feature-use', dataset: {feature: name}},
    h('span', {class: 'feature-name'}, name), ' ',
    h('span', {class: f.seats > 0 && f.inUse >= f.seats ? 'in-use full' : 'in-use'}, `${f.inUse} / ${f.seats}`),
    f.current === 0 ? h('span', {class: 'sub'}, ' (no current grant)')
      : f.grants > 1 ? h('span', {class: 'sub'}, ` (${f.grants} grants)`) : null));
}

function cleanupFacts(st) {
  const run = st.lastRun;
  const leader = st.leaderId
    ? [h('code', {}, st.leaderId), st.isLeader ? ' (this instance)' : ` (answered by ${st.instanceId})`]
    : h('span', {class: 'bad'}, 'no instance leads cleanup');
  const items = [
    ['Leader', leader],
    ['Last pass', run ? [when(run.startedAt), ' — ',
      h('span', {class: run.result === 'ok' ? 'badge ok' : 'badge bad'}, run.result),
      ` ${run.trigger}, ${num(run.expired)} expired of ${num(run.scanned)} scanned in ${num(seconds(run.duration) * 1000, 1)} ms`,
      Number(run.errors) ? `, ${num(run.errors)} errors` : ''] : 'none yet on this instance'],
    ['Next pass', st.nextRunAt ? [when(st.nextRunAt), ` (${until(st.nextRunAt)}, every ${span(seconds(st.interval))})`] : '—'],
  ];
  return h('dl', {class: 'facts'}, items.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}
