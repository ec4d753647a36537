// A license's site policy as the license page shows it
// (docs/concepts/policy.md): what the policy says, a row per line; the
// groups its lines name, with their members; and who holds the reserved
// seats (each live lease's reservedFor, fixed when it was granted). Text
// only, as every page (dom.js).
import {h, table, when} from './dom.js';

const RULES = {KIND_RESERVE: 'reserve', KIND_MAX: 'max', KIND_INCLUDE: 'include', KIND_EXCLUDE: 'exclude'};
const SUBJECTS = {KIND_USER: 'user', KIND_HOST: 'host', KIND_GROUP: 'group', KIND_HOST_GROUP: 'host group'};
const GROUP_KINDS = {KIND_USERS: 'users', KIND_HOSTS: 'hosts'};

// A group's members shown before "and N more": a group may hold 10,000.
const MEMBERS_SHOWN = 30;

// subjectText says who a rule names: "group night", "host ws-1".
export function subjectText(s) {
  if (!s) return '';
  return `${SUBJECTS[s.kind] || s.kind} ${s.name}`;
}

// sameSubject: host names compare without case, as the server compares
// them (a lease's reservedFor names a host in lower case); group names
// compare exactly.
function sameSubject(a, b) {
  if (!a || !b || a.kind !== b.kind) return false;
  return a.kind === 'KIND_HOST' ? a.name.toLowerCase() === b.name.toLowerCase() : a.name === b.name;
}

const poolText = (feature) => (feature ? feature : h('span', {class: 'none'}, 'base pool'));

// groupNames are the groups the policy's lines name (its rules', then its
// priorities'), in order, once each.
export function groupNames(policy) {
  const names = [];
  for (const r of [...(policy.rules || []), ...(policy.priorities || [])]) {
    const s = r.subject || {};
    if ((s.kind === 'KIND_GROUP' || s.kind === 'KIND_HOST_GROUP') && !names.includes(s.name)) names.push(s.name);
  }
  return names;
}

// hasReservations says whether the policy keeps seats for anyone: only
// then are the live leases read for who holds them.
export function hasReservations(policy) {
  return (policy.rules || []).some((r) => r.kind === 'KIND_RESERVE');
}

// holdersOf sorts the live leases that hold reserved seats by the reserve
// rule whose seats they hold (index into the rules; -1: a reservation the
// policy no longer has, which the lease keeps until it ends).
function holdersOf(policy, leases) {
  const rules = policy.rules || [];
  const byRule = new Map();
  for (const l of leases) {
    if (!l.reservedFor || l.state !== 'LEASE_STATE_ACTIVE') continue;
    const i = rules.findIndex((r) => r.kind === 'KIND_RESERVE' && (r.feature || '') === (l.feature || '') &&
      sameSubject(r.subject, l.reservedFor));
    if (!byRule.has(i)) byRule.set(i, []);
    byRule.get(i).push(l);
  }
  return byRule;
}

// ruleText says what a rule does: "reserve 2", "max 1 each member".
function ruleText(r) {
  const kind = RULES[r.kind] || r.kind;
  if (r.kind === 'KIND_RESERVE' || r.kind === 'KIND_MAX') {
    return `${kind} ${r.count || 0}${r.eachMember ? ' each member' : ''}`;
  }
  return kind;
}

// LINES are the producers of the policy table's rows, in the order shown:
// a policy line is one row of pool, what it does, whom it names, and its
// use now. Linger, once the API has it, is one producer here.
const LINES = [
  (policy, held) => (policy.rules || []).map((r, i) => ({
    kind: 'rule', index: i, pool: r.feature, what: ruleText(r), who: subjectText(r.subject),
    use: r.kind === 'KIND_RESERVE' ? `${(held.get(i) || []).length} of ${r.count || 0} taken` : '',
  })),
  // A priority: the level its subject waits at in WaitForSeat's queue
  // (highest first; 0 for a waiter none names).
  (policy) => (policy.priorities || []).map((p, i) => ({
    kind: 'priority', index: i, pool: p.feature, what: `priority ${p.level || 0}`, who: subjectText(p.subject), use: '',
  })),
];

function linesTable(policy, held) {
  const rows = LINES.flatMap((line) => line(policy, held)).map((l) =>
    h('tr', {dataset: {line: l.kind, index: l.index}},
      h('th', {scope: 'row'}, poolText(l.pool)),
      h('td', {class: 'what'}, l.what),
      h('td', {class: 'who'}, l.who),
      h('td', {class: 'use'}, l.use || h('span', {class: 'none'}, '—'))));
  return table('Site policy', ['Pool', 'Rule', 'Who', 'Reserved seats'], rows, {class: 'policy-lines'});
}

function groupsTable(names, groups) {
  const rows = names.map((name) => {
    const g = groups.find((x) => x.name === name);
    if (!g) {
      return h('tr', {dataset: {group: name}}, h('th', {scope: 'row'}, name),
        h('td', {}, h('span', {class: 'none'}, '—')), h('td', {class: 'members'}, h('span', {class: 'bad'}, 'not found')));
    }
    const members = g.members || [];
    const more = members.length - MEMBERS_SHOWN;
    return h('tr', {dataset: {group: name}},
      h('th', {scope: 'row'}, name),
      h('td', {}, GROUP_KINDS[g.kind] || g.kind),
      h('td', {class: 'members'}, members.slice(0, MEMBERS_SHOWN).join(', '),
        more > 0 ? h('span', {class: 'sub'}, ` and ${more} more (seatctl groups ls)`) : null));
  });
  return table('Groups the policy names', ['Group', 'Of', 'Members'], rows, {class: 'policy-groups'});
}

function holdersTable(policy, held) {
  const rules = policy.rules || [];
  const order = [...held.keys()].sort((a, b) => (a < 0) - (b < 0) || a - b);
  const rows = order.flatMap((i) => held.get(i).map((l) => {
    const reservation = i >= 0
      ? [subjectText(rules[i].subject), h('div', {class: 'sub'}, rules[i].feature ? `of ${rules[i].feature}` : 'of the base pool')]
      : [subjectText(l.reservedFor), h('div', {class: 'sub'}, 'a reservation the policy no longer has')];
    return h('tr', {dataset: {leaseId: l.id, rule: i}},
      h('th', {scope: 'row'}, reservation),
      h('td', {class: 'user'}, l.user || h('span', {class: 'none'}, '—')),
      h('td', {class: 'host'}, l.hostname || h('span', {class: 'none'}, '—')),
      h('td', {}, l.feature ? (l.version ? `${l.feature} ${l.version}` : l.feature) : h('span', {class: 'none'}, 'base')),
      h('td', {}, when(l.acquiredAt)),
      h('td', {}, h('code', {}, l.id)));
  }));
  if (rows.length === 0) return h('p', {class: 'empty', id: 'no-holders'}, 'No reserved seat is taken now.');
  return table('Who holds reserved seats', ['Reserved for', 'User', 'Host', 'Feature', 'Acquired', 'Lease'], rows, {class: 'holders'});
}

// policyView is the policy section's content for the policy, the tenant's
// groups and the license's live leases (read only when the policy has
// reservations).
export function policyView(policy, groups, leases) {
  const held = holdersOf(policy, leases);
  const lines = LINES.flatMap((line) => line(policy, held));
  if (lines.length === 0) {
    return h('p', {class: 'empty'}, 'No site policy: every client may take any free seat.');
  }
  const names = groupNames(policy);
  return [
    h('dl', {class: 'facts'}, h('dt', {}, 'Last set'), h('dd', {}, when(policy.updateTime))),
    linesTable(policy, held),
    names.length ? [h('h3', {id: 'policy-groups-h'}, 'Groups it names'), groupsTable(names, groups)] : null,
    hasReservations(policy) ? [h('h3', {id: 'holders-h'}, 'Who holds reserved seats'), holdersTable(policy, held)] : null,
  ];
}
