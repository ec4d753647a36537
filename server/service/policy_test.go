package service

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// requireField checks that err is INVALID_ARGUMENT naming field.
func requireField(t *testing.T, err error, field string, msg ...any) {
	t.Helper()
	var e *server.Error
	require.ErrorAs(t, err, &e, msg...)
	require.Equal(t, server.EINVALID, e.Code, msg...)
	require.Equal(t, field, e.Field, msg...)
}

func user(name string) server.Subject  { return server.Subject{Kind: server.SubjectUser, Name: name} }
func group(name string) server.Subject { return server.Subject{Kind: server.SubjectGroup, Name: name} }

// TestBadPolicyShapesAreRefusedNamingTheField: what no license could take
// is refused naming the rule and field, before the store is asked, and
// nothing is audited.
func TestBadPolicyShapesAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 3)
	good := func() server.PolicyRule {
		return server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: user("bob")}
	}
	for field, bad := range map[string]func(*server.PolicyRule){
		"rules[1].kind":         func(r *server.PolicyRule) { r.Kind = "" },
		"rules[1].count":        func(r *server.PolicyRule) { r.Count = 0 },
		"rules[1].feature":      func(r *server.PolicyRule) { r.Feature = "no such feature" },
		"rules[1].subject.kind": func(r *server.PolicyRule) { r.Subject.Kind = "" },
		"rules[1].subject.name": func(r *server.PolicyRule) { r.Subject.Name = "bob\x07" },
		"rules[1].each_member":  func(r *server.PolicyRule) { r.EachMember = true },
	} {
		r := good()
		bad(&r)
		_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Rules: []server.PolicyRule{good(), r}})
		requireField(t, err, field)
	}
	for field, r := range map[string]server.PolicyRule{
		"rules[0].kind":         {Kind: "limit", Count: 1, Subject: user("bob")},
		"rules[0].count":        {Kind: server.RuleExclude, Count: 1, Subject: user("bob")},
		"rules[0].subject.kind": {Kind: server.RuleExclude, Subject: server.Subject{Kind: "display", Name: ":0"}},
		"rules[0].subject.name": {Kind: server.RuleExclude, Subject: user(strings.Repeat("b", server.MaxPolicyName+1))},
	} {
		_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Rules: []server.PolicyRule{r}})
		requireField(t, err, field, r)
	}
	tooHigh := good()
	tooHigh.Count = server.MaxPolicyCount + 1
	_, err := e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Rules: []server.PolicyRule{tooHigh}})
	requireField(t, err, "rules[0].count")
	_, err = e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Rules: make([]server.PolicyRule, server.MaxPolicyRules+1)})
	requireField(t, err, "rules")
	_, err = e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, "", &server.Policy{Rules: []server.PolicyRule{good()}})
	requireField(t, err, "license_id")
	// Not served yet: refused rather than kept and not enforced.
	_, err = e.svc.SetPolicy(t.Context(), "operator", server.DefaultTenantID, lic.ID, &server.Policy{Linger: []server.Linger{{Duration: time.Minute}}})
	requireField(t, err, "linger")

	for _, entry := range e.audit(t, server.DefaultTenantID) {
		require.NotEqual(t, "policy.set", entry.Action, "a refused policy is not audited")
	}
	l, err := e.svc.GetPolicy(t.Context(), server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Nil(t, l.Policy, "nothing set")
}

// TestBadGroupsAreRefusedNamingTheField: a group's name, kind and members
// (Group.Validate, under "group"), and a delete's name.
func TestBadGroupsAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for field, g := range map[string]server.Group{
		"group.name":       {Name: "", Kind: server.SubjectGroup, Members: []string{"bob"}},
		"group.kind":       {Name: "night", Kind: server.SubjectUser, Members: []string{"bob"}},
		"group.members[1]": {Name: "night", Kind: server.SubjectGroup, Members: []string{"bob", " bob"}},
	} {
		_, err := e.svc.PutGroup(t.Context(), "operator", server.DefaultTenantID, g)
		requireField(t, err, field, g)
	}
	_, err := e.svc.PutGroup(t.Context(), "operator", server.DefaultTenantID,
		server.Group{Name: "farm", Kind: server.SubjectHostGroup, Members: []string{"node01", "NODE01"}})
	requireField(t, err, "group.members[1]", "host names compare without case")
	requireField(t, e.svc.DeleteGroup(t.Context(), "operator", server.DefaultTenantID, ""), "name")
	require.Empty(t, e.audit(t, server.DefaultTenantID))
}

// TestPolicyAndGroupAuditEntries: setting a policy, putting and deleting a
// group are audited with what they did; the policy answered is the one
// set, with the time it was set. Needs a store that keeps policies.
func TestPolicyAndGroupAuditEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 3)
	g, err := e.svc.PutGroup(ctx, "apikey:k1", server.DefaultTenantID, server.Group{Name: "night", Kind: server.SubjectGroup, Members: []string{"alice", "bob"}})
	require.NoError(t, err)
	require.Equal(t, server.DefaultTenantID, g.TenantID)
	put := e.auditOf(t, server.DefaultTenantID, "group.put", "night")
	require.Equal(t, "apikey:k1", put.Actor)
	require.Equal(t, "group", put.Resource)
	require.Equal(t, map[string]string{"kind": "group", "members": "2"}, put.Details)

	rules := []server.PolicyRule{
		{Kind: server.RuleReserve, Count: 1, Subject: group("night")},
		{Kind: server.RuleMax, Count: 1, Subject: user("bob")},
		{Kind: server.RuleExclude, Subject: user("intern")},
	}
	l, err := e.svc.SetPolicy(ctx, "operator", server.DefaultTenantID, lic.ID, &server.Policy{Rules: rules})
	require.NoError(t, err)
	require.NotNil(t, l.Policy)
	require.Equal(t, rules, l.Policy.Rules)
	require.Equal(t, e.clock.Now(), l.Policy.UpdatedAt)
	set := e.auditOf(t, server.DefaultTenantID, "policy.set", lic.ID)
	require.Equal(t, "license_policy", set.Resource)
	require.Equal(t, map[string]string{"license_id": lic.ID, "rules": "3", "rules.reserve": "1", "rules.max": "1", "rules.exclude": "1"}, set.Details)
	got, err := e.svc.GetPolicy(ctx, server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, rules, got.Policy.Rules)

	// A group a policy names is not deleted; once the policy is removed
	// (no rules) it is.
	err = e.svc.DeleteGroup(ctx, "operator", server.DefaultTenantID, "night")
	require.Equal(t, server.ReasonGroupInUse, server.ErrorReason(err), "%v", err)
	require.Contains(t, err.Error(), lic.ID)
	_, err = e.svc.SetPolicy(ctx, "operator", server.DefaultTenantID, lic.ID, &server.Policy{})
	require.NoError(t, err)
	got, err = e.svc.GetPolicy(ctx, server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Nil(t, got.Policy, "an empty policy removes it")
	require.NoError(t, e.svc.DeleteGroup(ctx, "operator", server.DefaultTenantID, "night"))
	deleted := e.auditOf(t, server.DefaultTenantID, "group.delete", "night")
	require.Equal(t, "group", deleted.Resource)
	require.Equal(t, server.ReasonGroupNotFound, server.ErrorReason(e.svc.DeleteGroup(ctx, "operator", server.DefaultTenantID, "night")))
}

// TestGroupKindChangeNamesTheLicenses: a group that policies name cannot
// change kind; the refusal says so and names every license whose policy
// names it (GROUP_IN_USE, FAILED_PRECONDITION, as a delete's), where it
// used to be the store's INVALID_ARGUMENT naming a field of a policy the
// caller never sent. Nothing changes; a group no policy names changes
// kind freely.
func TestGroupKindChangeNamesTheLicenses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	put := func(name string, kind server.SubjectKind, members ...string) error {
		_, err := e.svc.PutGroup(ctx, "operator", server.DefaultTenantID, server.Group{Name: name, Kind: kind, Members: members})
		return err
	}
	require.NoError(t, put("night", server.SubjectHostGroup, "node01"))
	require.NoError(t, put("spare", server.SubjectHostGroup, "node02"))
	a, b, c := e.license(t, 3), e.license(t, 3), e.license(t, 3)
	for _, l := range []server.License{a, c} {
		_, err := e.svc.SetPolicy(ctx, "operator", server.DefaultTenantID, l.ID, &server.Policy{Rules: []server.PolicyRule{
			{Kind: server.RuleExclude, Subject: server.Subject{Kind: server.SubjectHostGroup, Name: "night"}},
		}})
		require.NoError(t, err)
	}
	_, err := e.svc.SetPolicy(ctx, "operator", server.DefaultTenantID, b.ID, &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleExclude, Subject: user("night")}, // a user of that name is no group
	}})
	require.NoError(t, err)

	err = put("night", server.SubjectGroup, "alice")
	require.Equal(t, server.EPRECONDITION, server.ErrorCode(err), "%v", err)
	require.Equal(t, server.ReasonGroupInUse, server.ErrorReason(err))
	require.ErrorContains(t, err, `group "night" is a host_group, and the policy of license `)
	require.ErrorContains(t, err, "names it as one: its kind cannot change while a policy names it")
	require.ErrorContains(t, err, a.ID)
	require.ErrorContains(t, err, c.ID)
	require.NotContains(t, err.Error(), b.ID, "b names a user night, no group")
	groups, err := e.svc.ListGroups(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	require.Equal(t, server.SubjectHostGroup, groups[0].Kind, "unchanged: %+v", groups[0])
	require.Equal(t, []string{"node01"}, groups[0].Members)

	require.NoError(t, put("night", server.SubjectHostGroup, "node01", "node03"), "its members change")
	require.NoError(t, put("spare", server.SubjectGroup, "alice"), "no policy names spare")
}
