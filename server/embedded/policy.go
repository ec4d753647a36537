package embedded

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// Site policies (server.PolicyStore). A license's policy is a field of
// its record (License.Policy), with the groups it names copied in
// (Policy.Groups): a group change rewrites every license naming it in the
// same transaction, so that a license record alone says how to judge its
// acquisitions, at Open as at run time. Groups are records of their own
// in bucketGroups, keyed by tenant and name, read from disk only (admin
// calls): acquisitions never need them.
//
// In memory a license with a policy has a policyState: the policy
// compiled once per change (never per acquisition), the members of its
// groups, and holders, its active leases by feature and by user, host and
// reservation, so that counting a cap or a reservation costs the leases
// it counts, not all the license's leases. Leases that have passed their
// deadline stay in holders until they end: an acquisition's judgment
// counts the live ones (slot.live), and policyEnds the lapsed ones too.
//
// SetPolicy, PutGroup and DeleteGroup of one tenant run one at a time
// (index.groupsBusy): each reads the tenant's groups and the policies
// naming them, and writes, as one step. Each marks the licenses it
// rewrites busy, as UpdateLicense does, so that acquisitions on them wait
// for the new policy and no other write of those records interleaves.

// policyState is a license's policy as acquisitions judge it.
type policyState struct {
	compiled *server.CompiledPolicy
	// members are the members of each group the policy names, as compared
	// (a host group's lower-cased), for the caps on a group as a whole.
	members map[string]map[string]struct{}
	// groupsOf are the groups each user (a user group's members) and
	// each host (a host group's, lower-cased) is a member of: hold and
	// unhold keep holders.inGroup with them.
	groupsOfUser, groupsOfHost map[string][]string
	// holders are the license's active leases by feature ("": the base
	// pool), the whole feature (all its grants) together.
	holders map[string]*holders
}

// holders are the active leases of one feature of a license by the user,
// the host (lower-cased) and the reservation they count under.
type holders struct {
	users, hosts, reserved map[string][]ref
	// inGroup is how many of these leases each group's members hold: a
	// cap on a group as a whole reads its bound here (upper) instead of
	// summing the lists of its members (100 map reads a call for a group
	// of 100).
	inGroup map[string]int
}

func newHolders() *holders {
	return &holders{users: map[string][]ref{}, hosts: map[string][]ref{}, reserved: map[string][]ref{}, inGroup: map[string]int{}}
}

// countGroups adds d to inGroup for each group of ps the holder of a
// lease (user, host lower-cased) is a member of.
func (h *holders) countGroups(ps *policyState, user, host string, d int) {
	if user != "" {
		for _, g := range ps.groupsOfUser[user] {
			h.inGroup[g] += d
		}
	}
	if host != "" {
		for _, g := range ps.groupsOfHost[host] {
			h.inGroup[g] += d
		}
	}
}

// noHolders stands for a feature none of whose leases is active.
var noHolders = newHolders()

func addRef(m map[string][]ref, key string, r ref) {
	if key != "" {
		m[key] = append(m[key], r)
	}
}

func dropRef(m map[string][]ref, key string, r ref) {
	rs := m[key]
	if i := slices.Index(rs, r); i >= 0 {
		rs[i] = rs[len(rs)-1]
		rs = rs[:len(rs)-1]
	}
	if len(rs) == 0 {
		delete(m, key)
		return
	}
	m[key] = rs
}

// feature is the feature whose seats a pool holds: "" for a license's
// base pool.
func (l *license) feature() string {
	if l.parent != nil {
		return l.grant.Feature
	}
	return ""
}

// hold files an active lease of pool l under its license's policy, if
// the license has one.
func (x *index) hold(l *license, r ref, t *leaseText) {
	ps := l.licenseOf().policy
	if ps == nil {
		return
	}
	h := ps.holders[l.feature()]
	if h == nil {
		h = newHolders()
		ps.holders[l.feature()] = h
	}
	host := strings.ToLower(t.hostname)
	addRef(h.users, t.user, r)
	addRef(h.hosts, host, r)
	addRef(h.reserved, t.reservation, r)
	h.countGroups(ps, t.user, host, 1)
}

// unhold forgets a lease that hold filed.
func (x *index) unhold(l *license, r ref, t *leaseText) {
	ps := l.licenseOf().policy
	if ps == nil {
		return
	}
	h := ps.holders[l.feature()]
	if h == nil {
		return
	}
	host := strings.ToLower(t.hostname)
	if slices.Contains(h.users[t.user], r) || slices.Contains(h.hosts[host], r) {
		h.countGroups(ps, t.user, host, -1)
	}
	dropRef(h.users, t.user, r)
	dropRef(h.hosts, host, r)
	dropRef(h.reserved, t.reservation, r)
}

// setPolicy makes lic.lic.Policy the one its acquisitions judge by: it
// compiles it and, for a license that had none, files its active leases
// (those of its base pool and of its grants). Call with s.mu held.
func (x *index) setPolicy(lic *license) {
	p := lic.lic.Policy
	if p == nil {
		lic.policy = nil
		return
	}
	ps := lic.policy
	if ps == nil {
		ps = &policyState{holders: map[string]*holders{}}
		lic.policy = ps
		for _, pool := range append([]*license{lic}, lic.grants...) {
			for _, r := range x.entries(pool) {
				t := x.text(r)
				x.hold(pool, r, &t)
			}
		}
	}
	ps.compiled = server.Compile(p)
	ps.members = make(map[string]map[string]struct{}, len(p.Groups))
	ps.groupsOfUser, ps.groupsOfHost = map[string][]string{}, map[string][]string{}
	for _, g := range p.Groups {
		set := make(map[string]struct{}, len(g.Members))
		of := ps.groupsOfUser
		if g.Kind == server.SubjectHostGroup {
			of = ps.groupsOfHost
		}
		for _, m := range g.Members {
			if g.Kind == server.SubjectHostGroup {
				m = strings.ToLower(m)
			}
			if _, dup := set[m]; !dup {
				set[m] = struct{}{}
				of[m] = append(of[m], g.Name)
			}
		}
		ps.members[g.Name] = set
	}
	// The groups' counts, for the groups as they are now (the leases
	// filed above, before they were known, or under the old policy).
	for _, h := range ps.holders {
		clear(h.inGroup)
		for u, rs := range h.users {
			for _, g := range ps.groupsOfUser[u] {
				h.inGroup[g] += len(rs)
			}
		}
		for host, rs := range h.hosts {
			for _, g := range ps.groupsOfHost[host] {
				h.inGroup[g] += len(rs)
			}
		}
	}
}

// counting says which of a license's active leases a judgment counts:
// those live at now, and with lapsed those past their deadline that may
// still come back (a revival, or the write-behind slack after a crash: all
// but borrowed ones), except those ending with the grant judged (gone).
type counting struct {
	now    int64
	lapsed bool
	gone   []ref
}

func (x *index) counts(c *counting, r ref) bool {
	s := x.slots.at(r)
	return (s.live(c.now) || c.lapsed && !s.borrowed()) && !slices.Contains(c.gone, r)
}

// countIn counts the leases of rs that c counts.
func (x *index) countIn(rs []ref, c *counting) int {
	n := 0
	for _, r := range rs {
		if x.counts(c, r) {
			n++
		}
	}
	return n
}

// poolCount is the number of pool l's leases that c counts, from the
// sizes of its trees: it costs the leases gone and borrowed, not all.
func (x *index) poolCount(l *license, c *counting) int {
	n := x.liveCount(l, c.now) // partitions l: stale holds the lapsed ones
	if c.lapsed {
		n += l.stale.Len()
		for r := range l.borrowed {
			if !x.slots.at(r).live(c.now) {
				n--
			}
		}
	}
	for _, r := range c.gone {
		if s := x.slots.at(r); s.lic == l.num && (s.live(c.now) || c.lapsed && !s.borrowed()) {
			n--
		}
	}
	return n
}

// lists calls f with each list of h's leases under cap k of id (host
// lower-cased), while f returns true: a group's over the shorter of its
// members and h's users (or hosts).
func (ps *policyState) lists(h *holders, k server.Cap, id server.Identity, host string, f func([]ref) bool) {
	var by map[string][]ref
	switch {
	case k.Subject.Kind == server.SubjectUser || k.Subject.Kind == server.SubjectGroup && k.EachMember:
		f(h.users[id.User])
		return
	case k.Subject.Kind == server.SubjectHost || k.Subject.Kind == server.SubjectHostGroup && k.EachMember:
		f(h.hosts[host])
		return
	case k.Subject.Kind == server.SubjectGroup:
		by = h.users
	default:
		by = h.hosts
	}
	members := ps.members[k.Subject.Name]
	if len(members) < len(by) {
		for m := range members {
			if !f(by[m]) {
				return
			}
		}
		return
	}
	for key, rs := range by {
		if _, ok := members[key]; ok && !f(rs) {
			return
		}
	}
}

// under calls f with each lease of h that counts under cap k of id (host
// lower-cased), while f returns true.
func (ps *policyState) under(h *holders, k server.Cap, id server.Identity, host string, f func(ref) bool) {
	ps.lists(h, k, id, host, func(rs []ref) bool {
		for _, r := range rs {
			if !f(r) {
				return false
			}
		}
		return true
	})
}

// upper is how many leases of h are under cap k of id, whether they
// count or not: a bound of under's count, from the sizes of the lists.
func (ps *policyState) upper(h *holders, k server.Cap, id server.Identity, host string) int {
	if !k.EachMember && (k.Subject.Kind == server.SubjectGroup || k.Subject.Kind == server.SubjectHostGroup) {
		return h.inGroup[k.Subject.Name]
	}
	n := 0
	ps.lists(h, k, id, host, func(rs []ref) bool {
		n += len(rs)
		return true
	})
	return n
}

// judge is server.Judge of d for id with the counts c takes of the
// feature's leases: its caps' (under the groups as they are now) and its
// reservations' (by the reservation each lease took). n and limit are
// the pools' the request may take.
func (x *index) judge(ps *policyState, feature string, d server.Decision, id server.Identity, n, limit int, c *counting) server.Verdict {
	h := ps.holders[feature]
	if h == nil {
		h = noHolders
	}
	var caps, held map[string]int
	if len(d.Caps) > 0 {
		caps = make(map[string]int, len(d.Caps))
		host := strings.ToLower(id.Host)
		for _, k := range d.Caps {
			if _, done := caps[k.Key]; done {
				continue
			}
			// Under its limit even with lapsed and ended leases counted,
			// a cap judges the same on that bound: most acquisitions read
			// no lease of it (a refusal's counts are exact).
			if upper := ps.upper(h, k, id, host); upper < k.Limit {
				caps[k.Key] = upper
				continue
			}
			in := 0
			ps.under(h, k, id, host, func(r ref) bool {
				if x.counts(c, r) {
					in++
				}
				return true
			})
			caps[k.Key] = in
		}
	}
	if len(d.Reservations) > 0 {
		held = make(map[string]int, len(d.Reservations))
		for _, r := range d.Reservations {
			held[r.Key] = x.countIn(h.reserved[r.Key], c)
		}
	}
	return server.Judge(d, n, limit, caps, held)
}

// judgePolicy judges a new lease of feature for id on lic's policy, over
// the pools it may take (the base pool, or the covering grants): the
// leases c counts and the limits summed over those usable at now, a pool
// over its limit (lowered since) counted at its limit. judged is false
// when the policy has nothing to say (no policy, no rule of the feature)
// or no pool is usable (the caller says why). A verdict of
// SEATS_EXHAUSTED is the caller's own count's: it answers as it does
// without a policy. own, if set, adjusts the decision.
func (s *Store) judgePolicy(lic *license, feature string, id server.Identity, pools []*license, c *counting, own func(*server.Decision)) (v server.Verdict, judged bool) {
	ps := lic.policy
	if ps == nil {
		return v, false
	}
	d := ps.compiled.Decide(feature, id)
	if d.Refusal == nil && len(d.Caps) == 0 && len(d.Reservations) == 0 {
		return v, false
	}
	if own != nil {
		own(&d)
	}
	n, limit, usable := s.poolCounts(pools, c)
	if !usable {
		return v, false
	}
	return s.idx.judge(ps, feature, d, id, n, limit, c), true
}

// poolCounts sums over the pools usable at c.now the leases c counts
// (each pool's at most its limit) and their limits.
func (s *Store) poolCounts(pools []*license, c *counting) (n, limit int, usable bool) {
	at := timeOf(c.now)
	for _, p := range pools {
		if p.lic.CheckUsable(at) != nil {
			continue
		}
		usable = true
		most := p.lic.SeatLimit()
		n, limit = n+min(s.idx.poolCount(p, c), most), limit+most
	}
	return n, limit, usable
}

// policyEnds returns the lapsed leases that must end with a grant on
// lic's policy (invariant: an observed end is final): a lapsed lease may
// still come back without being judged (the write-behind slack after a
// crash or a restore gives every active lease time back), so the grant
// must hold with every lapsed lease that may come back counted, as
// toDisplace makes the seat count hold. v is the grant's verdict (judged
// on live leases), from the pool it takes, gone the leases that end with
// it already. While Judge, counting the lapsed leases too (and with the
// grant held to the reservation v gave it), would refuse, the earliest
// lapsed lease that stands in the refusing figure's way ends: one under
// the cap that refuses; for the seat count, one of from; for a
// reservation, a shared one (or one of a reservation over its seats, or
// of the grant's own). Without lapsed leases the counts are the live
// ones, which granted: it ends as few as that takes, and a lapsed lease
// that stands in no way keeps its chance to revive. ok is false if one of
// them is being written: wait.
func (s *Store) policyEnds(lic *license, feature string, id server.Identity, pools []*license, from *license, v server.Verdict, now int64, gone []ref) (ends []ref, ok bool) {
	ps := lic.policy
	if ps == nil || !s.idx.anyLapsed(lic, feature, now) {
		return nil, true // nothing lapsed: judged with the lapsed leases, it grants as judged without
	}
	d := ps.compiled.Decide(feature, id)
	if d.Refusal != nil || len(d.Caps) == 0 && len(d.Reservations) == 0 {
		return nil, true
	}
	for i := range d.Reservations {
		d.Reservations[i].Member = d.Reservations[i].Key == v.Reservation
	}
	c := &counting{now: now, lapsed: true, gone: slices.Clone(gone)}
	for {
		n, limit, _ := s.poolCounts(pools, c)
		w := s.idx.judge(ps, feature, d, id, n, limit, c)
		if w.Grant {
			return ends, true
		}
		r, found := s.idx.inTheWay(ps, feature, d, id, w, pools, from, v.Reservation, c)
		if !found {
			return ends, true // cannot be (see above); the live counts granted
		}
		if s.idx.slots.at(r).busy() {
			return nil, false
		}
		ends = append(ends, r)
		c.gone = append(c.gone, r)
	}
}

// anyLapsed reports whether a pool of the policy's scope of feature (the
// license's base pool for "", else every grant of the feature, whose
// leases its caps count together) holds a lease past its deadline that
// is not ended yet: without one there is nothing in the way (policyEnds),
// the usual case, which then costs no second judgment.
func (x *index) anyLapsed(lic *license, feature string, now int64) bool {
	if feature == "" {
		x.partition(lic, now)
		return lic.stale.Len() > 0
	}
	for _, p := range lic.grantsOf(feature) {
		x.partition(p, now)
		if p.stale.Len() > 0 {
			return true
		}
	}
	return false
}

// inTheWay picks the lapsed lease c counts that policyEnds ends next for
// the refusal w: the earliest (by deadline) that counts in the figure w
// refused on. found is false if there is none.
func (x *index) inTheWay(ps *policyState, feature string, d server.Decision, id server.Identity, w server.Verdict, pools []*license, from *license, own string, c *counting) (r ref, found bool) {
	lapsed := func(r ref) bool { return !x.slots.at(r).live(c.now) && x.counts(c, r) }
	var best ref
	consider := func(r ref) bool {
		if lapsed(r) && (!found || x.earlier(r, best)) {
			best, found = r, true
		}
		return true
	}
	h := ps.holders[feature]
	if h == nil {
		h = noHolders
	}
	for _, k := range d.Caps {
		if k.Rule == w.Rule && k.Reason == w.Reason {
			ps.under(h, k, id, strings.ToLower(id.Host), consider)
			return best, found
		}
	}
	// A pool's stale tree holds its lapsed leases by deadline. Only the
	// usable pools count in the judgment.
	firstIn := func(pools []*license, ok func(ref) bool) {
		for _, p := range pools {
			if p.lic.CheckUsable(timeOf(c.now)) != nil {
				continue
			}
			x.partition(p, c.now)
			p.stale.Ascend(func(it item) bool {
				if lapsed(it.r) && ok(it.r) {
					consider(it.r)
					return false
				}
				return true
			})
		}
	}
	all := func(ref) bool { return true }
	if w.Reason == server.ReasonSeatsReserved {
		// Ending a lease of a reservation within its seats frees a seat
		// and adds one unused reserved seat: nothing changes.
		over := map[string]bool{own: true}
		keys := map[string]bool{}
		for _, res := range d.Reservations {
			keys[res.Key] = true
			if x.countIn(h.reserved[res.Key], c) > res.Seats {
				over[res.Key] = true
			}
		}
		firstIn(pools, func(r ref) bool {
			t := x.text(r)
			return !keys[t.reservation] || over[t.reservation]
		})
		if !found {
			firstIn(pools, all)
		}
		return best, found
	}
	firstIn([]*license{from}, all)
	if !found {
		firstIn(pools, all)
	}
	return best, found
}

// earlier orders leases as a license's trees do: by deadline, then id.
func (x *index) earlier(a, b ref) bool {
	da, db := x.slots.at(a).deadline, x.slots.at(b).deadline
	return da < db || da == db && x.itemID(a) < x.itemID(b)
}

// revivalAllowed judges, on a license with a policy, the revival of a
// lapsed lease r of pool p as a new lease of the same client would be,
// except that the reservation it may take is only its own (Lease.Reservation
// is set once, at the grant): a revival that a cap, or a reservation it
// does not hold, would refuse is refused, and the lease ends as any
// lapsed lease that cannot revive. Call with s.mu held.
func (s *Store) revivalAllowed(p *license, r ref, now int64) bool {
	lic := p.licenseOf()
	if lic.policy == nil {
		return true
	}
	t := s.idx.text(r)
	pools := []*license{p}
	if p.parent != nil {
		pools = lic.covering(p.grant.Feature, t.version)
	}
	own := func(d *server.Decision) {
		for i := range d.Reservations {
			d.Reservations[i].Member = t.reservation != "" && d.Reservations[i].Key == t.reservation
		}
	}
	v, judged := s.judgePolicy(lic, p.feature(), server.Identity{User: t.user, Host: t.hostname}, pools, &counting{now: now}, own)
	return !judged || v.Grant
}

// replaces reports whether the live lease r that a request's keys match
// is replaced rather than handed back: on a license whose policy has
// rules of the pool's feature, a lease is handed back only to a request
// that claims its user and host (hosts without case). Another identity
// is judged as a new acquisition of its own, with r's seat free, and if
// granted takes r's place: r ends (revoked) with the grant. A borrowed
// lease is handed back as ever: it cannot be revoked (its certificate
// stays valid offline).
func (s *Store) replaces(lic *license, feature string, r ref, req *server.AcquireRequest) bool {
	if lic.policy == nil || !lic.policy.compiled.HasRules(feature) || s.idx.slots.at(r).borrowed() {
		return false
	}
	t := s.idx.text(r)
	return t.user != req.User || !strings.EqualFold(t.hostname, req.Hostname)
}

// lockGroups makes the caller the one SetPolicy, PutGroup or DeleteGroup
// of the tenant running, and returns what ends that. Call with s.mu held,
// before marking any license busy.
func (s *Store) lockGroups(tenantID string) func() {
	for s.idx.groupsBusy[tenantID] {
		s.wait()
	}
	s.idx.groupsBusy[tenantID] = true
	return func() {
		delete(s.idx.groupsBusy, tenantID)
		s.idle.Broadcast()
	}
}

// groups reads, with s.mu released, those of the tenant's groups named
// that exist, by name, and (if count) how many groups the tenant has:
// only what a policy or a group change needs, not every group.
func (s *Store) groups(tenantID string, names []string, count bool) (map[string]server.Group, int, error) {
	out := make(map[string]server.Group, len(names))
	n := 0
	var err error
	s.unlocked(func() {
		err = s.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketGroups)
			for _, name := range names {
				if v := b.Get(groupKey(tenantID, name)); v != nil {
					g, err := decode[server.Group](v)
					if err != nil {
						return fmt.Errorf("decode group: %w", err)
					}
					out[name] = g
				}
			}
			if count {
				pfx := prefix(tenantID)
				c := b.Cursor()
				for k, _ := c.Seek(pfx); k != nil && bytes.HasPrefix(k, pfx); k, _ = c.Next() {
					n++
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, 0, s.fail("read groups", err)
	}
	return out, n, nil
}

func groupKey(tenantID, name string) []byte { return append(prefix(tenantID), name...) }

// withGroups is a copy of p whose Groups are the groups it names, from
// groups (by name), each with its own copy of its members.
func withGroups(p *server.Policy, groups map[string]server.Group) *server.Policy {
	c := clonePolicy(p)
	c.Groups = nil
	for _, name := range c.GroupNames() {
		if g, ok := groups[name]; ok {
			g.Members = slices.Clone(g.Members)
			c.Groups = append(c.Groups, g)
		}
	}
	return c
}

// emptyPolicy reports whether p says nothing: no policy.
func emptyPolicy(p *server.Policy) bool {
	return p == nil || len(p.Rules) == 0 && len(p.Linger) == 0 && len(p.Priorities) == 0
}

func (s *Store) SetPolicy(_ context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.lockGroups(tenantID)()
	lic, err := s.idleLicense(tenantID, licenseID)
	if err != nil {
		return server.License{}, err
	}
	defer s.hold(lic)()
	var next *server.Policy
	if !emptyPolicy(p) {
		// Validated here, with the tenant's groups as they are: no group
		// change can come between (lockGroups).
		groups, _, err := s.groups(tenantID, p.GroupNames(), false)
		if err != nil {
			return server.License{}, err
		}
		if err := p.Validate(&lic.lic, groups); err != nil {
			return server.License{}, err
		}
		next = withGroups(p, groups)
	}
	l := cloneLicense(lic.lic)
	l.Policy, l.UpdatedAt = next, s.now()
	l = normalize(l)
	updated := server.EventOfLicenseChange(server.ChangePolicy, &l, nil, l.UpdatedAt)
	if err := s.writeLicenses("set policy", []server.License{l}, nil, updated); err != nil {
		return server.License{}, err
	}
	s.applyPolicy(lic, l.Policy, l.UpdatedAt)
	return cloneLicense(lic.lic), nil
}

// applyPolicy gives a license in memory the policy just stored.
func (s *Store) applyPolicy(lic *license, p *server.Policy, updated time.Time) {
	lic.lic.Policy, lic.lic.UpdatedAt = p, updated
	s.idx.setPolicy(lic)
	byTenant := s.idx.policied[lic.lic.TenantID]
	if p == nil {
		delete(byTenant, lic)
		return
	}
	if byTenant == nil {
		byTenant = map[*license]struct{}{}
		s.idx.policied[lic.lic.TenantID] = byTenant
	}
	byTenant[lic] = struct{}{}
}

// writeLicenses stores license records (with s.mu released), and the
// group g too when not nil, and the events, in one transaction; the
// tenant must exist.
func (s *Store) writeLicenses(op string, ls []server.License, g *server.Group, events ...server.Event) error {
	var err error
	s.unlocked(func() {
		err = s.commit.write(func(tx *bolt.Tx) error {
			for _, e := range events {
				if err := putEvent(tx, e); err != nil {
					return err
				}
			}
			if g != nil {
				if tx.Bucket(bucketTenants).Get([]byte(g.TenantID)) == nil {
					return server.ErrTenantNotFound
				}
				if err := tx.Bucket(bucketGroups).Put(groupKey(g.TenantID, g.Name), encode(g)); err != nil {
					return err
				}
			}
			for _, l := range ls {
				if err := tx.Bucket(bucketLicenses).Put([]byte(l.ID), encode(licenseToStore(l, false))); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return s.fail(op, err)
	}
	return nil
}

// naming returns the tenant's undeleted licenses whose policy names the
// group, by id, once none of them is busy; it waits out those that are.
// Call with s.mu held and the tenant's groups locked (no policy can
// start naming it meanwhile).
func (s *Store) naming(tenantID, name string) []*license {
	for {
		var out []*license
		busy := false
		for lic := range s.idx.policied[tenantID] {
			if lic.deleted || !slices.Contains(lic.lic.Policy.GroupNames(), name) {
				continue
			}
			busy = busy || lic.busy
			out = append(out, lic)
		}
		if !busy {
			slices.SortFunc(out, func(a, b *license) int { return strings.Compare(a.lic.ID, b.lic.ID) })
			return out
		}
		s.wait()
	}
}

func (s *Store) PutGroup(_ context.Context, g server.Group) (server.Group, error) {
	if err := g.Validate("group"); err != nil {
		return server.Group{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.lockGroups(g.TenantID)()
	lics := s.naming(g.TenantID, g.Name)
	names := []string{g.Name}
	for _, lic := range lics {
		names = append(names, lic.lic.Policy.GroupNames()...)
	}
	groups, count, err := s.groups(g.TenantID, names, true)
	if err != nil {
		return server.Group{}, err
	}
	now := s.now()
	old, exists := groups[g.Name]
	if !exists && count >= server.MaxTenantGroups {
		return server.Group{}, tooManyGroups()
	}
	g.Members = slices.Clone(g.Members)
	g.CreatedAt, g.UpdatedAt = now, now
	if exists {
		g.CreatedAt = old.CreatedAt
	}
	g, err = decode[server.Group](encode(g)) // as it reads back
	if err != nil {
		return server.Group{}, s.fail("put group", err)
	}
	groups[g.Name] = g
	lics = s.naming(g.TenantID, g.Name) // reading released s.mu: wait out writes begun meanwhile
	rewritten := make([]server.License, len(lics))
	for i, lic := range lics {
		if err := checkGroupKind(lic.lic.Policy, g); err != nil {
			return server.Group{}, err
		}
		l := cloneLicense(lic.lic)
		l.Policy = withGroups(l.Policy, groups)
		rewritten[i] = normalize(l)
	}
	for _, lic := range lics {
		defer s.hold(lic)()
	}
	if err := s.writeLicenses("put group", rewritten, &g); err != nil {
		return server.Group{}, err
	}
	for i, lic := range lics {
		s.applyPolicy(lic, rewritten[i].Policy, lic.lic.UpdatedAt)
	}
	return cloneGroup(g), nil
}

// checkGroupKind refuses g's kind if a rule or priority of p names the
// group as the other kind, with the error Policy.Validate gives it.
func checkGroupKind(p *server.Policy, g server.Group) error {
	check := func(field string, s server.Subject) error {
		if s.Kind.IsGroup() && s.Name == g.Name && s.Kind != g.Kind {
			return server.Invalid(field+".subject.name", "%q is a %s, not a %s", g.Name, g.Kind, s.Kind)
		}
		return nil
	}
	for i, r := range p.Rules {
		if err := check(fmt.Sprintf("rules[%d]", i), r.Subject); err != nil {
			return err
		}
	}
	for i, pr := range p.Priorities {
		if err := check(fmt.Sprintf("priorities[%d]", i), pr.Subject); err != nil {
			return err
		}
	}
	return nil
}

// tooManyGroups refuses a group past server.MaxTenantGroups, as the
// service's quotas answer.
func tooManyGroups() error {
	return &server.Error{
		Code: server.EEXHAUSTED, Reason: server.ReasonQuotaExceeded,
		Message:  fmt.Sprintf("a tenant has at most %d groups: delete one first", server.MaxTenantGroups),
		Metadata: map[string]string{"quota": "groups", "limit": strconv.Itoa(server.MaxTenantGroups)},
	}
}

func (s *Store) DeleteGroup(_ context.Context, tenantID, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.lockGroups(tenantID)()
	groups, _, err := s.groups(tenantID, []string{name}, false)
	if err != nil {
		return err
	}
	if _, ok := groups[name]; !ok {
		return server.ErrGroupNotFound
	}
	if lics := s.naming(tenantID, name); len(lics) > 0 {
		ids := make([]string, len(lics))
		for i, lic := range lics {
			ids[i] = lic.lic.ID
		}
		return server.GroupInUse(name, ids)
	}
	s.unlocked(func() {
		err = s.commit.write(func(tx *bolt.Tx) error { return tx.Bucket(bucketGroups).Delete(groupKey(tenantID, name)) })
	})
	if err != nil {
		return s.fail("delete group", err)
	}
	return nil
}

func (s *Store) ListGroups(_ context.Context, tenantID string) ([]server.Group, error) {
	gs, err := scanAll[server.Group](s, "list groups", bucketGroups, prefix(tenantID))
	if err != nil {
		return nil, err
	}
	return gs, nil
}

func cloneGroup(g server.Group) server.Group {
	g.Members = slices.Clone(g.Members)
	return g
}

// clonePolicy is a deep copy of p (nil: nil), for answers that share
// nothing with memory.
func clonePolicy(p *server.Policy) *server.Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.Rules, c.Linger, c.Priorities = slices.Clone(p.Rules), slices.Clone(p.Linger), slices.Clone(p.Priorities)
	c.Groups = slices.Clone(p.Groups)
	for i := range c.Groups {
		c.Groups[i].Members = slices.Clone(c.Groups[i].Members)
	}
	return &c
}
