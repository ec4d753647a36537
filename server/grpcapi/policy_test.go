package grpcapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

func userSubject(name string) *seatdv1.PolicySubject {
	return &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_USER, Name: name}
}

func groupSubject(name string) *seatdv1.PolicySubject {
	return &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_GROUP, Name: name}
}

// setPolicy sets a license's policy (default tenant) and answers the
// policy as set.
func (e *env) setPolicy(t *testing.T, licenseID string, rules ...*seatdv1.PolicyRule) *seatdv1.LicensePolicy {
	t.Helper()
	resp, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: licenseID, Policy: &seatdv1.LicensePolicy{Rules: rules}})
	require.NoError(t, err)
	return resp.GetPolicy()
}

func (e *env) putGroup(t *testing.T, name string, kind seatdv1.IdentityGroup_Kind, members ...string) *seatdv1.IdentityGroup {
	t.Helper()
	resp, err := e.admin.PutGroup(operator(t), &seatdv1.PutGroupRequest{Group: &seatdv1.IdentityGroup{Name: name, Kind: kind, Members: members}})
	require.NoError(t, err)
	return resp.GetGroup()
}

// acquireAs asks for a seat as user on host (fingerprint: both).
func (e *env) acquireAs(t *testing.T, key, feature, user, host string) (*seatdv1.AcquireSeatResponse, error) {
	return e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{
		LicenseKey: key, Fingerprint: user + "@" + host, User: user, Hostname: host, Feature: feature,
	})
}

// TestBadPoliciesAndGroupsAreRefusedNamingTheField: every bad field of a
// policy or a group is INVALID_ARGUMENT naming it (the rule's index
// included), before the store is asked: nothing is set or created.
func TestBadPoliciesAndGroupsAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	good := func() *seatdv1.PolicyRule {
		return &seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Subject: userSubject("bob")}
	}
	for field, bad := range map[string]func(*seatdv1.PolicyRule){
		"rules[1].kind":         func(r *seatdv1.PolicyRule) { r.Kind = seatdv1.PolicyRule_KIND_UNSPECIFIED },
		"rules[1].subject.kind": func(r *seatdv1.PolicyRule) { r.Subject = nil },
		"rules[1].subject.name": func(r *seatdv1.PolicyRule) { r.Subject.Name = "" },
		"rules[1].count":        func(r *seatdv1.PolicyRule) { r.Count = 0 },
		"rules[1].feature":      func(r *seatdv1.PolicyRule) { r.Feature = "ren der" },
		"rules[1].each_member":  func(r *seatdv1.PolicyRule) { r.EachMember = true },
	} {
		r := good()
		bad(r)
		_, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{good(), r}}})
		requireInvalid(t, err, field)
	}
	for field, r := range map[string]*seatdv1.PolicyRule{
		"rules[0].kind":         {Kind: 9, Subject: userSubject("bob")},
		"rules[0].subject.kind": {Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: &seatdv1.PolicySubject{Kind: 7, Name: "bob"}},
		"rules[0].count":        {Kind: seatdv1.PolicyRule_KIND_INCLUDE, Count: 2, Subject: userSubject("bob")},
		"rules[0].subject.name": {Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: userSubject(strings.Repeat("b", server.MaxPolicyName+1))},
	} {
		_, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{r}}})
		requireInvalid(t, err, field, r)
	}
	negative := good()
	negative.Count = -1
	_, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{negative}}})
	requireInvalid(t, err, "rules[0].count")
	_, err = e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{Policy: &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{good()}}})
	requireInvalid(t, err, "license_id")
	// No policy at all is not a removal ({} is): policy is required.
	held := e.license(t, 3, time.Minute)
	e.setPolicy(t, held.GetId(), good())
	_, err = e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: held.GetId()})
	requireInvalid(t, err, "policy")
	kept, err := e.admin.GetLicensePolicy(operator(t), &seatdv1.GetLicensePolicyRequest{LicenseId: held.GetId()})
	require.NoError(t, err)
	require.Len(t, kept.GetPolicy().GetRules(), 1, "the policy is kept")
	_, err = e.admin.GetLicensePolicy(operator(t), &seatdv1.GetLicensePolicyRequest{})
	requireInvalid(t, err, "license_id")

	for field, g := range map[string]*seatdv1.IdentityGroup{
		"group.kind":       {Name: "night", Members: []string{"alice"}},
		"group.name":       {Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice"}},
		"group.members[1]": {Name: "night", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice", "alice"}},
		"group.members[0]": {Name: "farm", Kind: seatdv1.IdentityGroup_KIND_HOSTS, Members: []string{""}},
		"group.members":    {Name: "big", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: make([]string, server.MaxGroupMembers+1)},
	} {
		_, err := e.admin.PutGroup(operator(t), &seatdv1.PutGroupRequest{Group: g})
		requireInvalid(t, err, field)
	}
	_, err = e.admin.PutGroup(operator(t), &seatdv1.PutGroupRequest{})
	requireInvalid(t, err, "group")
	_, err = e.admin.DeleteGroup(operator(t), &seatdv1.DeleteGroupRequest{})
	requireInvalid(t, err, "name")

	got, err := e.admin.GetLicensePolicy(operator(t), &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Equal(t, lic.GetId(), got.GetPolicy().GetLicenseId())
	require.Empty(t, got.GetPolicy().GetRules(), "nothing set")
	require.Nil(t, got.GetPolicy().GetUpdateTime())
	groups, err := e.admin.ListGroups(operator(t), &seatdv1.ListGroupsRequest{})
	require.NoError(t, err)
	require.Empty(t, groups.GetGroups(), "nothing created")
}

// TestGroupWithASlashOrNoMembersIsRefused: the REST API names a group in
// its path (/v1/admin/groups/{name}), where no '/' can be part of a name:
// a group named with one could be made over gRPC and never read, replaced
// or deleted over REST. A group of nobody would reserve seats for no one
// or, included, lock everyone out. Both are refused naming the field, and
// nothing is created; a policy naming such a group is refused too.
func TestGroupWithASlashOrNoMembersIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	_, err := e.admin.PutGroup(operator(t), &seatdv1.PutGroupRequest{Group: &seatdv1.IdentityGroup{Name: "eng/ops", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice"}}})
	requireInvalid(t, err, "group.name")
	require.Contains(t, err.Error(), "must not contain '/'")
	for _, members := range [][]string{nil, {}} {
		_, err = e.admin.PutGroup(operator(t), &seatdv1.PutGroupRequest{Group: &seatdv1.IdentityGroup{Name: "night", Kind: seatdv1.IdentityGroup_KIND_HOSTS, Members: members}})
		requireInvalid(t, err, "group.members")
		require.Contains(t, err.Error(), "at least one member")
	}
	_, err = e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{
		{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: groupSubject("eng/ops")},
	}}})
	requireInvalid(t, err, "rules[0].subject.name")
	require.Contains(t, err.Error(), "must not contain '/'")
	groups, err := e.admin.ListGroups(operator(t), &seatdv1.ListGroupsRequest{})
	require.NoError(t, err)
	require.Empty(t, groups.GetGroups(), "nothing created")
	// A user's name is no path segment: a '/' in it is fine.
	e.putGroup(t, "ou", seatdv1.IdentityGroup_KIND_USERS, "ou/bob")
}

// TestPolicyCallsNeedAKeyOfTheTenant: no key is UNAUTHENTICATED; an API
// key naming another tenant is PERMISSION_DENIED; another tenant's license
// is not found, and the tenant's groups are its own.
func TestPolicyCallsNeedAKeyOfTheTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute) // the default tenant's
	secret := e.apiKey(t, "acme")
	policy := &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: userSubject("intern")}}}
	group := &seatdv1.IdentityGroup{Name: "night", Kind: seatdv1.IdentityGroup_KIND_USERS, Members: []string{"alice"}}
	calls := map[string]func(ctx context.Context, tenant string) error{
		"GetLicensePolicy": func(ctx context.Context, tenant string) error {
			_, err := e.admin.GetLicensePolicy(ctx, &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId(), TenantId: tenant})
			return err
		},
		"SetLicensePolicy": func(ctx context.Context, tenant string) error {
			_, err := e.admin.SetLicensePolicy(ctx, &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: policy, TenantId: tenant})
			return err
		},
		"ListGroups": func(ctx context.Context, tenant string) error {
			_, err := e.admin.ListGroups(ctx, &seatdv1.ListGroupsRequest{TenantId: tenant})
			return err
		},
		"PutGroup": func(ctx context.Context, tenant string) error {
			_, err := e.admin.PutGroup(ctx, &seatdv1.PutGroupRequest{Group: group, TenantId: tenant})
			return err
		},
		"DeleteGroup": func(ctx context.Context, tenant string) error {
			_, err := e.admin.DeleteGroup(ctx, &seatdv1.DeleteGroupRequest{Name: "night", TenantId: tenant})
			return err
		},
	}
	for name, call := range calls {
		requireStatus(t, call(t.Context(), ""), codes.Unauthenticated, server.ReasonUnauthenticated, name)
		requireStatus(t, call(as(t, secret), server.DefaultTenantID), codes.PermissionDenied, server.ReasonPermissionDenied, name)
		requireInvalid(t, call(operator(t), "Not A Tenant"), "tenant_id", name)
	}
	_, err := e.admin.GetLicensePolicy(as(t, secret), &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
}

// TestSitePolicyEndToEnd runs a site policy through the API as an admin
// and the clients meet it (docs/concepts/policy.md): groups put, the
// policy set and read back, acquisitions refused EXCLUDED, USER_LIMIT,
// SEATS_RESERVED and NOT_INCLUDED with their rule in the metadata, a
// member taking the reserved seat, a policy change ending no lease, a
// group change applying to the next acquisition, a group in use kept, and
// each change audited. It needs a store that keeps and enforces policies.
func TestSitePolicyEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	key := lic.GetKey()
	e.grant(t, lic.GetId(), &seatdv1.FeatureGrant{Feature: "render", Seats: 2})
	night := e.putGroup(t, "night", seatdv1.IdentityGroup_KIND_USERS, "alice", "carol")
	require.Equal(t, []string{"alice", "carol"}, night.GetMembers())
	require.NotNil(t, night.GetCreateTime())
	e.putGroup(t, "farm", seatdv1.IdentityGroup_KIND_HOSTS, "node01", "Node02")

	rules := []*seatdv1.PolicyRule{
		{Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: 1, Subject: groupSubject("night")},
		{Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Subject: userSubject("bob")},
		{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: userSubject("intern")},
		{Kind: seatdv1.PolicyRule_KIND_INCLUDE, Feature: "render", Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST_GROUP, Name: "farm"}},
	}
	set := e.setPolicy(t, lic.GetId(), rules...)
	require.Equal(t, lic.GetId(), set.GetLicenseId())
	require.NotNil(t, set.GetUpdateTime())
	require.Len(t, set.GetRules(), len(rules))
	for i := range rules {
		require.True(t, proto.Equal(rules[i], set.GetRules()[i]), "rule %d: %v", i, set.GetRules()[i])
	}
	got, err := e.admin.GetLicensePolicy(operator(t), &seatdv1.GetLicensePolicyRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.True(t, proto.Equal(set, got.GetPolicy()), "read back: %v", got.GetPolicy())

	// 3 seats, 1 kept for night.
	_, err = e.acquireAs(t, key, "", "intern", "ws-9")
	st := requireStatus(t, err, codes.PermissionDenied, server.ReasonExcluded, "intern")
	require.Equal(t, "2", errorInfo(st).GetMetadata()["rule"])
	require.Equal(t, "intern", errorInfo(st).GetMetadata()["subject_name"])
	_, err = e.acquireAs(t, key, "", "bob", "ws-1")
	require.NoError(t, err)
	_, err = e.acquireAs(t, key, "", "bob", "ws-2")
	st = requireStatus(t, err, codes.ResourceExhausted, server.ReasonUserLimit, "bob's second seat")
	require.Equal(t, map[string]string{"in_use": "1", "limit": "1", "rule": "1", "subject_kind": "user", "subject_name": "bob"}, errorInfo(st).GetMetadata())
	dave, err := e.acquireAs(t, key, "", "dave", "ws-3")
	require.NoError(t, err, "a shared seat: 1 in use + 1 reserved < 3")
	_, err = e.acquireAs(t, key, "", "erin", "ws-4")
	st = requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsReserved, "the last seat is night's")
	require.Contains(t, st.Message(), "1 of 1 remaining seats are reserved for group night")
	require.Equal(t, "night", errorInfo(st).GetMetadata()["subject_name"])
	alice, err := e.acquireAs(t, key, "", "alice", "ws-5")
	require.NoError(t, err, "night's reserved seat")
	_, err = e.acquireAs(t, key, "", "carol", "ws-6")
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsExhausted, "all 3 taken")

	// Who holds the reserved seat: the lease says so, as granted and as
	// listed; a shared seat names none.
	require.True(t, proto.Equal(groupSubject("night"), alice.GetLease().GetReservedFor()), "%v", alice.GetLease())
	require.Nil(t, dave.GetLease().GetReservedFor())
	listed, err := e.admin.ListLeases(operator(t), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), State: seatdv1.LeaseState_LEASE_STATE_ACTIVE})
	require.NoError(t, err)
	reservedFor := map[string]string{}
	for _, l := range listed.GetLeases() {
		reservedFor[l.GetUser()] = l.GetReservedFor().GetKind().String() + " " + l.GetReservedFor().GetName()
	}
	require.Equal(t, map[string]string{"bob": "KIND_UNSPECIFIED ", "dave": "KIND_UNSPECIFIED ", "alice": "KIND_GROUP night"}, reservedFor)

	// The feature's rules are the feature's: only the farm's hosts.
	_, err = e.acquireAs(t, key, "render", "erin", "ws-4")
	requireStatus(t, err, codes.PermissionDenied, server.ReasonNotIncluded)
	_, err = e.acquireAs(t, key, "render", "erin", "NODE01")
	require.NoError(t, err, "host names compare without case")

	// A policy that now excludes dave ends none of his leases.
	e.setPolicy(t, lic.GetId(), append(rules, &seatdv1.PolicyRule{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: userSubject("dave")})...)
	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: dave.GetLease().GetId(), LeaseToken: dave.GetLeaseToken()})
	require.NoError(t, err, "a policy change ends no lease")

	// A group change applies from the next acquisition: erin joins night
	// and takes the seat alice gives back.
	_, err = e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: alice.GetLease().GetId(), LeaseToken: alice.GetLeaseToken()})
	require.NoError(t, err)
	e.putGroup(t, "night", seatdv1.IdentityGroup_KIND_USERS, "carol", "erin")
	_, err = e.acquireAs(t, key, "", "erin", "ws-4")
	require.NoError(t, err, "erin is night's now")

	// What the store judges against the license and the groups.
	for field, r := range map[string]*seatdv1.PolicyRule{
		"rules[0].subject.name": {Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: 1, Subject: groupSubject("day")},
		"rules[0].feature":      {Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Feature: "sim", Subject: userSubject("bob")},
		"rules":                 {Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: 4, Subject: userSubject("bob")},
	} {
		_, err := e.admin.SetLicensePolicy(operator(t), &seatdv1.SetLicensePolicyRequest{LicenseId: lic.GetId(), Policy: &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{r}}})
		requireInvalid(t, err, field, r)
	}
	_, err = e.admin.PutGroup(operator(t), &seatdv1.PutGroupRequest{Group: &seatdv1.IdentityGroup{Name: "night", Kind: seatdv1.IdentityGroup_KIND_HOSTS, Members: []string{"node09"}}})
	st = requireStatus(t, err, codes.FailedPrecondition, server.ReasonGroupInUse, "a policy names night as a group of users")
	require.Contains(t, st.Message(), `group "night" is a group, and the policy of license `+lic.GetId()+" names it as one")
	_, err = e.admin.DeleteGroup(operator(t), &seatdv1.DeleteGroupRequest{Name: "night"})
	st = requireStatus(t, err, codes.FailedPrecondition, server.ReasonGroupInUse)
	require.Contains(t, st.Message(), lic.GetId())
	list, err := e.admin.ListGroups(operator(t), &seatdv1.ListGroupsRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetGroups(), 2)
	require.Equal(t, "farm", list.GetGroups()[0].GetName())
	require.Equal(t, seatdv1.IdentityGroup_KIND_HOSTS, list.GetGroups()[0].GetKind())
	require.Equal(t, []string{"carol", "erin"}, list.GetGroups()[1].GetMembers())

	// An empty policy removes it; the groups are then free to go.
	removed := e.setPolicy(t, lic.GetId())
	require.Empty(t, removed.GetRules())
	for _, name := range []string{"night", "farm"} {
		_, err = e.admin.DeleteGroup(operator(t), &seatdv1.DeleteGroupRequest{Name: name})
		require.NoError(t, err, name)
	}
	_, err = e.admin.DeleteGroup(operator(t), &seatdv1.DeleteGroupRequest{Name: "night"})
	requireStatus(t, err, codes.NotFound, server.ReasonGroupNotFound)
	_, err = e.acquireAs(t, key, "", "intern", "ws-9")
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsExhausted, "no rule: only the count")

	audit, err := e.admin.ListAuditEvents(operator(t), &seatdv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	count := map[string]int{}
	for _, a := range audit.GetAuditEvents() {
		count[a.GetAction()+" "+a.GetResourceId()]++
		if a.GetAction() == "policy.set" {
			require.Equal(t, lic.GetId(), a.GetDetails()["license_id"])
		}
	}
	require.Equal(t, 3, count["policy.set "+lic.GetId()], "set, changed, removed: %v", count)
	require.Equal(t, 2, count["group.put night"], "%v", count)
	require.Equal(t, 1, count["group.delete night"], "%v", count)
	require.Equal(t, 1, count["group.delete farm"], "%v", count)
}

// TestPolicyOfEveryRuleKindRoundTrips: each kind of rule and subject, with
// each_member, converts to the domain and back unchanged.
func TestPolicyOfEveryRuleKindRoundTrips(t *testing.T) {
	t.Parallel()
	in := &seatdv1.LicensePolicy{Rules: []*seatdv1.PolicyRule{
		{Kind: seatdv1.PolicyRule_KIND_RESERVE, Count: 2, Feature: "render", Subject: groupSubject("night")},
		{Kind: seatdv1.PolicyRule_KIND_MAX, Count: 3, Subject: groupSubject("night"), EachMember: true},
		{Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST, Name: "ws-1"}},
		{Kind: seatdv1.PolicyRule_KIND_INCLUDE, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_HOST_GROUP, Name: "farm"}},
		{Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: userSubject("intern")},
	}}
	p, err := policyFromProto(in)
	require.NoError(t, err)
	require.Equal(t, server.PolicyRule{Kind: server.RuleMax, Count: 3, Subject: server.Subject{Kind: server.SubjectGroup, Name: "night"}, EachMember: true}, p.Rules[1])
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	p.UpdatedAt = at
	out := policyToProto(server.License{ID: "lic_a", Policy: p})
	require.Equal(t, "lic_a", out.GetLicenseId())
	require.Equal(t, at, out.GetUpdateTime().AsTime())
	out.LicenseId, out.UpdateTime = "", nil
	require.True(t, proto.Equal(in, out), "%v", out)

	g, err := groupFromProto(&seatdv1.IdentityGroup{Name: "farm", Kind: seatdv1.IdentityGroup_KIND_HOSTS, Members: []string{"node01"}})
	require.NoError(t, err)
	require.Equal(t, server.Group{Name: "farm", Kind: server.SubjectHostGroup, Members: []string{"node01"}}, g)
	require.Equal(t, seatdv1.IdentityGroup_KIND_HOSTS, groupToProto(g).GetKind())
	require.Len(t, ruleKindToProto, 4)
}
