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
// the pools it may take: live leases and limits summed over those usable
// at now (a pool over its limit counted at it), caps and reservations
// counted over the live leases of the whole feature. judged is false
// when the policy says nothing of the feature or no pool is usable. own,
// if set, adjusts the decision (a revival). Caller holds mu.
func (s *memStore) judgePolicy(lic server.License, feature string, id server.Identity, pools []server.License, now time.Time, own func(*server.Decision)) (server.Verdict, bool) {
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
			n, limit = n+min(s.live(p.ID, now), p.SeatLimit()), limit+p.SeatLimit()
		}
	}
	if !usable {
		return server.Verdict{}, false
	}
	members := map[string]map[string]bool{}
	for _, g := range lic.Policy.Groups {
		set := map[string]bool{}
		for _, m := range g.Members {
			if g.Kind == server.SubjectHostGroup {
				m = strings.ToLower(m)
			}
			set[m] = true
		}
		members[g.Name] = set
	}
	host := strings.ToLower(id.Host)
	caps, held := map[string]int{}, map[string]int{}
	for _, ls := range s.d.Leases {
		if !ls.Live(now) || ls.LicenseOf() != lic.ID || ls.Feature != feature || server.IsGrantID(ls.LicenseID) != (feature != "") {
			continue
		}
		lh := strings.ToLower(ls.Hostname)
		for _, c := range d.Caps {
			var counts bool
			switch {
			case c.Subject.Kind == server.SubjectUser || c.Subject.Kind == server.SubjectGroup && c.EachMember:
				counts = ls.User == id.User
			case c.Subject.Kind == server.SubjectHost || c.Subject.Kind == server.SubjectHostGroup && c.EachMember:
				counts = lh == host
			case c.Subject.Kind == server.SubjectGroup:
				counts = members[c.Subject.Name][ls.User]
			default:
				counts = members[c.Subject.Name][lh]
			}
			if counts {
				caps[c.Key]++
			}
		}
		if ls.Reservation != "" {
			held[ls.Reservation]++
		}
	}
	return server.Judge(d, n, limit, caps, held), true
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
	v, judged := s.judgePolicy(lic, ls.Feature, server.Identity{User: ls.User, Host: ls.Hostname}, pools, now, own)
	return !judged || v.Grant
}
