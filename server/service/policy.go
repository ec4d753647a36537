package service

import (
	"context"
	"fmt"

	"github.com/seatd/seatd/server"
)

// Site policies and groups (server/policy.go, issue 27). The service
// refuses a request of the wrong shape before the store is asked; what
// needs the license and the tenant's groups (a feature the license holds,
// a group that exists, reservations within the seats, no rule twice) the
// store judges with Policy.Validate in the same step as the write.

// GetPolicy reads a license of the tenant with its policy (nil: none).
func (s *Service) GetPolicy(ctx context.Context, tenant, licenseID string) (server.License, error) {
	if err := required("license_id", licenseID); err != nil {
		return server.License{}, err
	}
	return s.store.GetLicense(ctx, tenant, licenseID)
}

// SetPolicy replaces the policy of a license of the tenant (nil, or no
// rules and no priorities: none) and audits it. No held lease ends: the
// policy judges the next acquisitions. No queued waiter moves: its
// priorities order the waiters that join after it.
func (s *Service) SetPolicy(ctx context.Context, actor, tenant, licenseID string, p *server.Policy) (server.License, error) {
	if err := required("license_id", licenseID); err != nil {
		return server.License{}, err
	}
	if err := checkPolicyShape(p); err != nil {
		return server.License{}, err
	}
	var set *server.Policy
	if p != nil && (len(p.Rules) > 0 || len(p.Priorities) > 0) {
		// Groups are the store's to fill; the time is this call's.
		set = &server.Policy{Rules: p.Rules, Priorities: p.Priorities, UpdatedAt: s.now()}
	}
	l, err := s.store.SetPolicy(ctx, tenant, licenseID, set)
	if err != nil {
		return server.License{}, err
	}
	details := map[string]string{"license_id": licenseID, "rules": itoa(0)}
	if set != nil {
		details["rules"] = itoa(len(set.Rules))
		for kind, n := range ruleCounts(set.Rules) {
			details["rules."+string(kind)] = itoa(n)
		}
		if len(set.Priorities) > 0 {
			details["priorities"] = itoa(len(set.Priorities))
		}
	}
	s.audit(ctx, actor, tenant, "policy.set", "license_policy", licenseID, details)
	return l, nil
}

func ruleCounts(rules []server.PolicyRule) map[server.RuleKind]int {
	n := map[server.RuleKind]int{}
	for _, r := range rules {
		n[r.Kind]++
	}
	return n
}

// checkPolicyShape refuses what no license could take, naming the field
// (rules[2].count): the rules' number, each rule's kind, count, feature
// name, subject kind and name, each_member; the priorities'
// (checkPrioritiesShape). Lingers are not served yet: refused rather than
// kept unenforced.
func checkPolicyShape(p *server.Policy) error {
	if p == nil {
		return nil
	}
	if len(p.Linger) > 0 {
		return server.Invalid("linger", "lingering seats are not available yet")
	}
	if err := checkPrioritiesShape(p.Priorities); err != nil {
		return err
	}
	if len(p.Rules) > server.MaxPolicyRules {
		return server.Invalid("rules", "must be at most %d rules", server.MaxPolicyRules)
	}
	for i, r := range p.Rules {
		f := fmt.Sprintf("rules[%d]", i)
		switch r.Kind {
		case server.RuleReserve, server.RuleMax:
			switch {
			case r.Count < 1:
				return server.Invalid(f+".count", "must be at least 1 for a %s rule", r.Kind)
			case r.Count > server.MaxPolicyCount:
				return server.Invalid(f+".count", "must be at most %d", server.MaxPolicyCount)
			}
		case server.RuleInclude, server.RuleExclude:
			if r.Count != 0 {
				return server.Invalid(f+".count", "must be 0 for an %s rule", r.Kind)
			}
		case "":
			return server.Invalid(f+".kind", "is required: reserve, max, include or exclude")
		default:
			return server.Invalid(f+".kind", "must be reserve, max, include or exclude (got %q)", r.Kind)
		}
		if r.Feature != "" {
			if err := server.CheckFeature(f+".feature", r.Feature); err != nil {
				return err
			}
		}
		if err := checkSubjectShape(f+".subject", r.Subject); err != nil {
			return err
		}
		if r.EachMember && (r.Kind != server.RuleMax || !r.Subject.Kind.IsGroup()) {
			return server.Invalid(f+".each_member", "only a max rule on a group or host_group may count each member apart")
		}
	}
	return nil
}

// ListGroups lists the tenant's groups by name.
func (s *Service) ListGroups(ctx context.Context, tenant string) ([]server.Group, error) {
	return s.store.ListGroups(ctx, tenant)
}

// PutGroup creates the tenant's group g.Name or replaces its kind and
// members (validated first: Group.Validate, field "group"), and audits it.
// The policies naming it judge by it from their next acquisition on. A
// change of kind that a policy naming the group would refuse is refused
// with GroupKindInUse, naming the licenses.
func (s *Service) PutGroup(ctx context.Context, actor, tenant string, g server.Group) (server.Group, error) {
	if err := g.Validate("group"); err != nil {
		return server.Group{}, err
	}
	now := s.now()
	g.TenantID, g.CreatedAt, g.UpdatedAt = tenant, now, now
	out, err := s.store.PutGroup(ctx, g)
	if server.ErrorCode(err) == server.EINVALID {
		// g is valid: the store refused the kind for a policy naming the
		// group (its error names that policy's field, not the license).
		err = s.kindRefusal(ctx, tenant, g, err)
	}
	if err != nil {
		return server.Group{}, err
	}
	s.audit(ctx, actor, tenant, "group.put", "group", out.Name, map[string]string{
		"kind": string(out.Kind), "members": itoa(len(out.Members)),
	})
	return out, nil
}

// DeleteGroup removes a group of the tenant that no policy names (the
// store refuses with GroupInUse otherwise), and audits it.
func (s *Service) DeleteGroup(ctx context.Context, actor, tenant, name string) error {
	if err := server.CheckPolicyName("name", name); err != nil {
		return err
	}
	if err := s.store.DeleteGroup(ctx, tenant, name); err != nil {
		return err
	}
	s.audit(ctx, actor, tenant, "group.delete", "group", name, nil)
	return nil
}

// kindRefusal is the refusal of g's kind as a group change: GroupKindInUse
// naming the licenses whose policies name the group as the other kind,
// found by reading the tenant's licenses (only on the way to this refusal:
// at most the licenses quota of them, a page at a time). storeErr is
// returned as it is when there are none (nor any to read).
func (s *Service) kindRefusal(ctx context.Context, tenant string, g server.Group, storeErr error) error {
	var ids []string
	page := server.Page{Size: server.MaxPageSize}
	for {
		ls, next, err := s.store.ListLicenses(ctx, tenant, page)
		if err != nil {
			return storeErr
		}
		for _, l := range ls {
			if namesAsOtherKind(l.Policy, g) {
				ids = append(ids, l.ID)
			}
		}
		if next == "" {
			break
		}
		page.Token = next
	}
	if len(ids) == 0 {
		return storeErr
	}
	other := server.SubjectGroup
	if g.Kind == server.SubjectGroup {
		other = server.SubjectHostGroup
	}
	return server.GroupKindInUse(g.Name, other, ids)
}

// namesAsOtherKind reports whether a rule or priority of p names group g
// as the kind g is not.
func namesAsOtherKind(p *server.Policy, g server.Group) bool {
	if p == nil {
		return false
	}
	other := func(s server.Subject) bool { return s.Kind.IsGroup() && s.Name == g.Name && s.Kind != g.Kind }
	for _, r := range p.Rules {
		if other(r.Subject) {
			return true
		}
	}
	for _, pr := range p.Priorities {
		if other(pr.Subject) {
			return true
		}
	}
	return false
}
