package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seatd/seatd/server"
)

// Site policies and groups of the reference store (server.PolicyStore):
// a license's policy is kept in its License, with the groups it names
// copied in (Policy.Groups) and rewritten on every change of one of them;
// the groups by tenant and name. Acquire judges a new lease with
// server.Judge over linear counts of the live leases (policy.go says
// what counts).

func groupID(tenantID, name string) string { return tenantID + "\x00" + name }

// tenantGroups returns the tenant's groups by name. Caller holds mu.
func (s *memStore) tenantGroups(tenantID string) map[string]server.Group {
	out := map[string]server.Group{}
	for _, g := range s.d.Groups {
		if g.TenantID == tenantID {
			out[g.Name] = g
		}
	}
	return out
}

// policyNames lists the groups a policy's rules and priorities name.
func policyNames(p *server.Policy) []string {
	var names []string
	for _, r := range p.Rules {
		if r.Subject.Kind.IsGroup() && !slices.Contains(names, r.Subject.Name) {
			names = append(names, r.Subject.Name)
		}
	}
	for _, pr := range p.Priorities {
		if pr.Subject.Kind.IsGroup() && !slices.Contains(names, pr.Subject.Name) {
			names = append(names, pr.Subject.Name)
		}
	}
	slices.Sort(names)
	return names
}

func clonePolicy(p *server.Policy) *server.Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.Rules, c.Linger, c.Priorities, c.Groups = slices.Clone(p.Rules), slices.Clone(p.Linger), slices.Clone(p.Priorities), slices.Clone(p.Groups)
	for i := range c.Groups {
		c.Groups[i].Members = slices.Clone(c.Groups[i].Members)
	}
	return &c
}

// policyWithGroups is p with the groups it names filled in from groups.
func policyWithGroups(p *server.Policy, groups map[string]server.Group) *server.Policy {
	c := clonePolicy(p)
	c.Groups = nil
	for _, name := range policyNames(c) {
		if g, ok := groups[name]; ok {
			g.Members = slices.Clone(g.Members)
			c.Groups = append(c.Groups, g)
		}
	}
	return c
}

func (s *memStore) SetPolicy(_ context.Context, tenantID, licenseID string, p *server.Policy) (server.License, error) {
	now, err := s.lock()
	if err != nil {
		return server.License{}, err
	}
	defer s.mu.Unlock()
	l, err := s.license(tenantID, licenseID)
	if err != nil {
		return server.License{}, err
	}
	var next *server.Policy
	if p != nil && len(p.Rules)+len(p.Linger)+len(p.Priorities) > 0 { // else: none
		groups := s.tenantGroups(tenantID)
		if err := p.Validate(&l, groups); err != nil {
			return server.License{}, err
		}
		next = policyWithGroups(p, groups)
	}
	stored := s.d.Licenses[licenseID]
	stored.Policy, stored.UpdatedAt = next, now
	s.d.Licenses[licenseID] = stored
	return cloneLicense(s.withGrants(stored)), nil
}

// namingGroup returns the ids of the tenant's undeleted licenses whose
// policy names the group, sorted. Caller holds mu.
func (s *memStore) namingGroup(tenantID, name string) []string {
	var ids []string
	for id, l := range s.d.Licenses {
		if l.TenantID == tenantID && !s.d.Deleted[id] && l.Policy != nil && slices.Contains(policyNames(l.Policy), name) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *memStore) PutGroup(_ context.Context, g server.Group) (server.Group, error) {
	if err := g.Validate("group"); err != nil {
		return server.Group{}, err
	}
	now, err := s.lock()
	if err != nil {
		return server.Group{}, err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Tenants[g.TenantID]; !ok {
		return server.Group{}, server.ErrTenantNotFound
	}
	groups := s.tenantGroups(g.TenantID)
	old, exists := groups[g.Name]
	if !exists && len(groups) >= server.MaxTenantGroups {
		return server.Group{}, &server.Error{
			Code: server.EEXHAUSTED, Reason: server.ReasonQuotaExceeded,
			Message:  fmt.Sprintf("a tenant has at most %d groups", server.MaxTenantGroups),
			Metadata: map[string]string{"quota": "groups", "limit": strconv.Itoa(server.MaxTenantGroups)},
		}
	}
	g.Members = slices.Clone(g.Members)
	g.CreatedAt, g.UpdatedAt = now, now
	if exists {
		g.CreatedAt = old.CreatedAt
	}
	groups[g.Name] = g
	// A kind the policies naming the group would refuse is refused, with
	// Validate's error; nothing changes.
	ids := s.namingGroup(g.TenantID, g.Name)
	for _, id := range ids {
		l := s.d.Licenses[id]
		for i, r := range l.Policy.Rules {
			if r.Subject.Kind.IsGroup() && r.Subject.Name == g.Name && r.Subject.Kind != g.Kind {
				return server.Group{}, server.Invalid(fmt.Sprintf("rules[%d].subject.name", i), "%q is a %s, not a %s", g.Name, g.Kind, r.Subject.Kind)
			}
		}
		for i, pr := range l.Policy.Priorities {
			if pr.Subject.Kind.IsGroup() && pr.Subject.Name == g.Name && pr.Subject.Kind != g.Kind {
				return server.Group{}, server.Invalid(fmt.Sprintf("priorities[%d].subject.name", i), "%q is a %s, not a %s", g.Name, g.Kind, pr.Subject.Kind)
			}
		}
	}
	s.d.Groups[groupID(g.TenantID, g.Name)] = g
	for _, id := range ids {
		l := s.d.Licenses[id]
		l.Policy = policyWithGroups(l.Policy, groups)
		s.d.Licenses[id] = l
	}
	g.Members = slices.Clone(g.Members)
	return g, nil
}

func (s *memStore) DeleteGroup(_ context.Context, tenantID, name string) error {
	if _, err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.d.Groups[groupID(tenantID, name)]; !ok {
		return server.ErrGroupNotFound
	}
	if ids := s.namingGroup(tenantID, name); len(ids) > 0 {
		return server.GroupInUse(name, ids)
	}
	delete(s.d.Groups, groupID(tenantID, name))
	return nil
}

func (s *memStore) ListGroups(_ context.Context, tenantID string) ([]server.Group, error) {
	if _, err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []server.Group
	for _, g := range s.tenantGroups(tenantID) {
		g.Members = slices.Clone(g.Members)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b server.Group) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// judgePolicy judges a new lease of feature for id on lic's policy over
// the pools it may take: the leases counts says count, and limits, summed
// over those usable at now (a pool over its limit counted at it), caps
// and reservations counted over the leases of the whole feature. judged
// is false when the policy says nothing of the feature or no pool is
// usable. own, if set, adjusts the decision (a revival). Caller holds mu.
func (s *memStore) judgePolicy(lic server.License, feature string, id server.Identity, pools []server.License, now time.Time, own func(*server.Decision), counts func(server.Lease) bool) (server.Verdict, bool) {
	if lic.Policy == nil {
		return server.Verdict{}, false
	}
	d := server.Compile(lic.Policy).Decide(feature, id)
	if d.Refusal == nil && len(d.Caps) == 0 && len(d.Reservations) == 0 {
		return server.Verdict{}, false
	}
	if own != nil {
		own(&d)
	}
	n, limit, usable := 0, 0, false
	for _, p := range pools {
		if p.CheckUsable(now) == nil {
			usable = true
			in := 0
			for _, ls := range s.d.Leases {
				if ls.LicenseID == p.ID && counts(ls) {
					in++
				}
			}
			n, limit = n+min(in, p.SeatLimit()), limit+p.SeatLimit()
		}
	}
	if !usable {
		return server.Verdict{}, false
	}
	members := policyMembers(lic.Policy)
	caps, held := map[string]int{}, map[string]int{}
	for _, ls := range s.d.Leases {
		if !counts(ls) || !leaseOfFeature(ls, lic.ID, feature) {
			continue
		}
		for _, c := range d.Caps {
			if countsUnder(ls, c, id, members) {
				caps[c.Key]++
			}
		}
		if ls.Reservation != "" {
			held[ls.Reservation]++
		}
	}
	return server.Judge(d, n, limit, caps, held), true
}

// live counts the leases live at now.
func liveAt(now time.Time) func(server.Lease) bool {
	return func(ls server.Lease) bool { return ls.Live(now) }
}

// leaseOfFeature reports whether ls is a lease of license licenseID's feature
// ("": its base pool).
func leaseOfFeature(ls server.Lease, licenseID, feature string) bool {
	return ls.LicenseOf() == licenseID && ls.Feature == feature && server.IsGrantID(ls.LicenseID) == (feature != "")
}

// policyMembers are the members of the policy's groups by name, as
// compared (hosts lower-cased).
func policyMembers(p *server.Policy) map[string]map[string]bool {
	members := map[string]map[string]bool{}
	for _, g := range p.Groups {
		set := map[string]bool{}
		for _, m := range g.Members {
			if g.Kind == server.SubjectHostGroup {
				m = strings.ToLower(m)
			}
			set[m] = true
		}
		members[g.Name] = set
	}
	return members
}

// countsUnder reports whether lease ls counts under cap c of id.
func countsUnder(ls server.Lease, c server.Cap, id server.Identity, members map[string]map[string]bool) bool {
	lh := strings.ToLower(ls.Hostname)
	switch {
	case c.Subject.Kind == server.SubjectUser || c.Subject.Kind == server.SubjectGroup && c.EachMember:
		return ls.User == id.User
	case c.Subject.Kind == server.SubjectHost || c.Subject.Kind == server.SubjectHostGroup && c.EachMember:
		return lh == strings.ToLower(id.Host)
	case c.Subject.Kind == server.SubjectGroup:
		return members[c.Subject.Name][ls.User]
	}
	return members[c.Subject.Name][lh]
}

// replaces reports whether the live lease ls of the same keys as req is
// replaced rather than handed back: the license's policy has rules of
// the feature and req claims another user or host. A borrowed lease is
// handed back. Caller holds mu.
func replaces(lic server.License, ls server.Lease, req server.AcquireRequest) bool {
	return lic.Policy != nil && server.Compile(lic.Policy).HasRules(req.Feature) && !ls.Borrowed &&
		(ls.User != req.User || !strings.EqualFold(ls.Hostname, req.Hostname))
}

// replace ends a lease whose seat a request of another identity took:
// revoked, audited. Caller holds mu.
func (s *memStore) replace(ls server.Lease, by string, now time.Time) {
	s.end(ls, server.LeaseRevoked, now)
	s.d.Audit = append(s.d.Audit, server.AuditEntry{
		ID: server.NewID("aud_"), TenantID: ls.TenantID, Actor: "system", Action: "lease.replace",
		Resource: "lease", ResourceID: ls.ID, At: now,
		Details: map[string]string{"license_id": ls.LicenseID, "replaced_by": by},
	})
}

// policyEnds expires the lapsed leases in the way of a grant of v to id
// on lic's policy from pool from: while the grant, judged with every
// active lease that may come back counted (and held to the reservation v
// gave it), would be refused, the earliest (by deadline, then id) lapsed
// lease in the refusing figure: under the refusing cap; for a
// reservation, a shared one of the pools (or one of a reservation over
// its seats, or of the grant's own), else any of them; for the seat
// count, one of from, else of the pools. Caller holds mu.
func (s *memStore) policyEnds(lic server.License, feature string, id server.Identity, pools []server.License, from server.License, v server.Verdict, now time.Time) {
	if lic.Policy == nil {
		return
	}
	held := func(d *server.Decision) {
		for i := range d.Reservations {
			d.Reservations[i].Member = d.Reservations[i].Key == v.Reservation
		}
	}
	mayReturn := func(ls server.Lease) bool { return ls.State == server.LeaseActive && (ls.Live(now) || !ls.Borrowed) }
	lapsed := func(ls server.Lease) bool { return mayReturn(ls) && !ls.Live(now) }
	earliest := func(ok func(server.Lease) bool) (server.Lease, bool) {
		var best server.Lease
		found := false
		for _, ls := range s.d.Leases {
			if lapsed(ls) && ok(ls) && (!found || ls.ExpiresAt.Before(best.ExpiresAt) || ls.ExpiresAt.Equal(best.ExpiresAt) && ls.ID < best.ID) {
				best, found = ls, true
			}
		}
		return best, found
	}
	inPools := func(pools []server.License) func(server.Lease) bool {
		return func(ls server.Lease) bool {
			for _, p := range pools {
				if p.ID == ls.LicenseID && p.CheckUsable(now) == nil {
					return true
				}
			}
			return false
		}
	}
	d := server.Compile(lic.Policy).Decide(feature, id)
	held(&d)
	for {
		w, judged := s.judgePolicy(lic, feature, id, pools, now, held, mayReturn)
		if !judged || w.Grant {
			return
		}
		var next server.Lease
		found := false
		for _, c := range d.Caps {
			if c.Rule == w.Rule && c.Reason == w.Reason {
				members := policyMembers(lic.Policy)
				next, found = earliest(func(ls server.Lease) bool {
					return leaseOfFeature(ls, lic.ID, feature) && countsUnder(ls, c, id, members)
				})
				break
			}
		}
		switch {
		case found:
		case w.Reason == server.ReasonSeatsReserved:
			keys, over := map[string]bool{}, map[string]bool{v.Reservation: true}
			for _, r := range d.Reservations {
				keys[r.Key] = true
				n := 0
				for _, ls := range s.d.Leases {
					if ls.Reservation == r.Key && mayReturn(ls) && leaseOfFeature(ls, lic.ID, feature) {
						n++
					}
				}
				over[r.Key] = over[r.Key] || n > r.Seats
			}
			next, found = earliest(func(ls server.Lease) bool {
				return inPools(pools)(ls) && (!keys[ls.Reservation] || over[ls.Reservation])
			})
			if !found {
				next, found = earliest(inPools(pools))
			}
		default:
			if next, found = earliest(inPools([]server.License{from})); !found {
				next, found = earliest(inPools(pools))
			}
		}
		if !found {
			return
		}
		s.expire(next, now)
	}
}

// revivalAllowed judges, on a license with a policy, the revival of the
// lapsed lease ls as a new lease of its client, but for the reservation
// it may take: only its own. Caller holds mu.
func (s *memStore) revivalAllowed(ls server.Lease, now time.Time) bool {
	lic := s.withGrants(s.d.Licenses[ls.LicenseOf()])
	pools := []server.License{lic}
	if ls.Feature != "" {
		grants, err := lic.GrantsFor(ls.Feature, ls.Version)
		if err != nil {
			return false
		}
		pools = pools[:0]
		for i := range grants {
			pools = append(pools, grants[i].Pool(&lic))
		}
	}
	own := func(d *server.Decision) {
		for i := range d.Reservations {
			d.Reservations[i].Member = ls.Reservation != "" && d.Reservations[i].Key == ls.Reservation
		}
	}
	v, judged := s.judgePolicy(lic, ls.Feature, server.Identity{User: ls.User, Host: ls.Hostname}, pools, now, own, liveAt(now))
	return !judged || v.Grant
}
