package distributed

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Site policies in distributed mode: kept in the record with the groups
// they name, judged by acquire_pools.lua in the same step as the count.

func mkGroup(t *testing.T, s *Store, tenantID, name string, kind server.SubjectKind, members ...string) server.Group {
	t.Helper()
	g, err := s.PutGroup(t.Context(), server.Group{TenantID: tenantID, Name: name, Kind: kind, Members: members})
	require.NoError(t, err)
	return g
}

func userSubject(name string) server.Subject {
	return server.Subject{Kind: server.SubjectUser, Name: name}
}
func groupSubject(name string) server.Subject {
	return server.Subject{Kind: server.SubjectGroup, Name: name}
}

// TestPolicyIsKeptWithItsGroups: a policy is validated against the
// license and the tenant's groups (a bad one changes nothing), kept with
// the groups it names, returned by every license read, and bumps the
// license's settings version; a group change rewrites the policies naming
// it; a group named by a policy is not deleted.
func TestPolicyIsKeptWithItsGroups(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	mkGrant(t, s, lic, "render", "", 3, time.Time{})
	night := mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
	require.Equal(t, tn.ID, night.TenantID)
	require.False(t, night.CreatedAt.IsZero())

	before, err := s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)

	// Invalid: nothing changes.
	_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleReserve, Count: 1, Subject: groupSubject("day")},
	}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "rules[0].subject.name")
	_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleReserve, Feature: "render", Count: 4, Subject: groupSubject("night")},
	}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "reservations of render sum to 4, more than its 3 seats")
	row, err := s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, before.Version, row.Version, "a refused policy bumps nothing")
	require.Nil(t, row.Policy)

	_, err = s.SetPolicy(t.Context(), tn.ID, "lic_nope", &server.Policy{})
	require.ErrorIs(t, err, server.ErrLicenseNotFound)
	other := mkTenant(t, s)
	_, err = s.SetPolicy(t.Context(), other.ID, lic.ID, &server.Policy{})
	require.ErrorIs(t, err, server.ErrLicenseNotFound, "another tenant's license")

	p := &server.Policy{Rules: []server.PolicyRule{
		{Kind: server.RuleReserve, Count: 2, Subject: groupSubject("night")},
		{Kind: server.RuleMax, Feature: "render", Count: 1, Subject: userSubject("ann")},
	}}
	got, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, p)
	require.NoError(t, err)
	require.NotNil(t, got.Policy)
	require.Equal(t, p.Rules, got.Policy.Rules)
	require.Len(t, got.Policy.Groups, 1)
	require.Equal(t, []string{"ann", "bob"}, got.Policy.Groups[0].Members)
	require.Len(t, got.Grants, 1)

	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, before.Version+1, row.Version, "the settings version is bumped")
	require.Equal(t, row.Version, row.PolicyGen, "switched on at this version")
	grants, err := s.rec.PoolsOf(t.Context(), lic.ID, false)
	require.NoError(t, err)
	g, err := s.rec.License(t.Context(), grants[1])
	require.NoError(t, err)
	require.Equal(t, row.PolicyGen, g.PolicyGen, "the grant's pool knows its license has a policy")

	for name, read := range map[string]func() (server.License, error){
		"GetLicense":   func() (server.License, error) { return s.GetLicense(t.Context(), tn.ID, lic.ID) },
		"LicenseByKey": func() (server.License, error) { return s.LicenseByKey(t.Context(), lic.Key) },
		"ListLicenses": func() (server.License, error) {
			ls, _, err := s.ListLicenses(t.Context(), tn.ID, server.Page{})
			if len(ls) != 1 {
				return server.License{}, err
			}
			return ls[0], err
		},
		"UpdateLicense": func() (server.License, error) {
			return s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Name = "renamed"; return nil })
		},
	} {
		l, err := read()
		require.NoError(t, err, name)
		require.NotNil(t, l.Policy, name)
		require.Equal(t, p.Rules, l.Policy.Rules, name)
		require.Equal(t, []string{"ann", "bob"}, l.Policy.Groups[0].Members, name)
	}

	// A policy change keeps the generation: the index stays valid.
	gen := row.PolicyGen
	p.Rules = append(p.Rules, server.PolicyRule{Kind: server.RuleExclude, Subject: userSubject("eve")})
	_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, p)
	require.NoError(t, err)
	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, gen, row.PolicyGen)

	// A group change rewrites the policies naming it.
	v := row.Version
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob", "cid")
	l, err := s.GetLicense(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"ann", "bob", "cid"}, l.Policy.Groups[0].Members)
	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, v+1, row.Version, "the group change bumps the license's version")
	_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "night", Kind: server.SubjectHostGroup, Members: []string{"h1"}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
	require.Contains(t, err.Error(), "rules[0].subject.name")
	gs, err := s.ListGroups(t.Context(), tn.ID)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	require.Equal(t, server.SubjectGroup, gs[0].Kind, "the refused kind change changed nothing")

	err = s.DeleteGroup(t.Context(), tn.ID, "night")
	requireCode(t, err, server.EPRECONDITION, server.ReasonGroupInUse)
	require.Contains(t, err.Error(), lic.ID)
	require.ErrorIs(t, s.DeleteGroup(t.Context(), tn.ID, "day"), server.ErrGroupNotFound)

	// None: the policy goes, the generation with it; the group may go.
	got, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{})
	require.NoError(t, err)
	require.Nil(t, got.Policy)
	row, err = s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Zero(t, row.PolicyGen)
	require.NoError(t, s.DeleteGroup(t.Context(), tn.ID, "night"))
	gs, err = s.ListGroups(t.Context(), tn.ID)
	require.NoError(t, err)
	require.Empty(t, gs)

	_, err = s.PutGroup(t.Context(), server.Group{TenantID: "tnt_nope", Name: "x", Kind: server.SubjectGroup, Members: []string{"a"}})
	require.ErrorIs(t, err, server.ErrTenantNotFound)
	_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "x", Kind: "team", Members: []string{"a"}})
	requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
}

func tryAs(ctx context.Context, s *Store, key, fp, user, host, feature, version string) (server.AcquireResult, string, error) {
	tok := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.Acquire(ctx, server.AcquireRequest{
		LicenseKey: key, Fingerprint: fp, User: user, Hostname: host, LeaseID: server.NewID(server.PrefixLeaseID),
		TokenHash: server.HashSecret(tok), Feature: feature, Version: version,
	})
	return res, tok, err
}

func setPolicy(t *testing.T, s *Store, lic server.License, rules ...server.PolicyRule) server.License {
	t.Helper()
	l, err := s.SetPolicy(t.Context(), lic.TenantID, lic.ID, &server.Policy{Rules: rules})
	require.NoError(t, err)
	return l
}

// requirePolicyRefusal checks a refusal's reason, and its rule and subject
// when it names one.
func requirePolicyRefusal(t *testing.T, err error, code server.Code, reason string, rule int, msg ...any) {
	t.Helper()
	requireCode(t, err, code, reason, msg...)
	if rule >= 0 {
		var e *server.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, strconv.Itoa(rule), e.Metadata["rule"], msg...)
	}
}

// TestPolicyJudgedAcrossGrants: a feature's rules (reserve for a group,
// max for a user, include and exclude) are judged over all its grants:
// a request whose version only one grant covers is still counted against
// the leases of the other; the base pool is apart (rules of other
// features never apply) but goes through the same script.
func TestPolicyJudgedAcrossGrants(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	g1 := mkGrant(t, s, lic, "render", "2024", 2, time.Now().Add(24*time.Hour)) // picked first
	g2 := mkGrant(t, s, lic, "render", "", 2, time.Time{})
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
	mkGroup(t, s, tn.ID, "staff", server.SubjectGroup, "ann", "bob", "carl", "dan", "eve")
	setPolicy(t, s, lic,
		server.PolicyRule{Kind: server.RuleReserve, Feature: "render", Count: 2, Subject: groupSubject("night")},
		server.PolicyRule{Kind: server.RuleMax, Feature: "render", Count: 1, Subject: userSubject("ann")},
		server.PolicyRule{Kind: server.RuleInclude, Feature: "render", Subject: groupSubject("staff")},
		server.PolicyRule{Kind: server.RuleExclude, Feature: "render", Subject: userSubject("eve")},
	)
	ctx := t.Context()

	a, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h1", "render", "2024")
	require.NoError(t, err)
	require.Equal(t, g1.ID, a.Lease.LicenseID)
	require.Equal(t, "r:group\x00night", a.Lease.Reservation, "a member takes a reserved seat")
	got, err := s.GetLease(ctx, tn.ID, a.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, a.Lease.Reservation, got.Reservation, "recorded")
	require.NotNil(t, a.License.Policy)

	_, _, err = tryAs(ctx, s, lic.Key, "a2", "ann", "h1", "render", "2025")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 1, "ann's lease of the other grant counts")
	_, _, err = tryAs(ctx, s, lic.Key, "e", "eve", "h1", "render", "")
	requirePolicyRefusal(t, err, server.EPERMISSION, server.ReasonExcluded, 3)
	_, _, err = tryAs(ctx, s, lic.Key, "z", "zed", "h1", "render", "")
	requirePolicyRefusal(t, err, server.EPERMISSION, server.ReasonNotIncluded, -1)

	c, _, err := tryAs(ctx, s, lic.Key, "c1", "carl", "h2", "render", "2025")
	require.NoError(t, err, "G2 alone: 0 + 1 unused reserved < 2")
	require.Equal(t, g2.ID, c.Lease.LicenseID)
	require.Empty(t, c.Lease.Reservation)
	_, _, err = tryAs(ctx, s, lic.Key, "d1", "dan", "h3", "render", "2025")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonSeatsReserved, 0)
	require.Contains(t, err.Error(), "1 of 1 remaining seats are reserved for group night")
	d, _, err := tryAs(ctx, s, lic.Key, "d1", "dan", "h3", "render", "")
	require.NoError(t, err, "both grants: 2 + 1 < 4")
	require.Equal(t, g1.ID, d.Lease.LicenseID)
	_, _, err = tryAs(ctx, s, lic.Key, "c2", "carl", "h2", "render", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonSeatsReserved, 0)
	b, _, err := tryAs(ctx, s, lic.Key, "b1", "bob", "h4", "render", "")
	require.NoError(t, err)
	require.Equal(t, g2.ID, b.Lease.LicenseID)
	require.Equal(t, "r:group\x00night", b.Lease.Reservation)
	_, _, err = tryAs(ctx, s, lic.Key, "b2", "bob", "h4", "render", "")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the count's own refusal")

	// The base pool: no rule, judged all the same (eve is excluded from
	// render only), and its seat limit holds.
	e, _, err := tryAs(ctx, s, lic.Key, "e", "eve", "h1", "", "")
	require.NoError(t, err)
	require.Equal(t, lic.ID, e.Lease.LicenseID)
	require.Nil(t, e.Grant)
	require.NotNil(t, e.License.Policy)
	_, _, err = tryAs(ctx, s, lic.Key, "e2", "eve", "h1", "", "")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
	require.True(t, s.hasPolicy(lic.ID))
}

// TestPolicyRoutesBaseAcquisitions: acquire.lua leaves a license with a
// policy to acquire_pools.lua (an instance that has never seen the
// policy too); a live lease of the same keys is handed back unjudged; a
// policy taken away gives the license back to acquire.lua.
func TestPolicyRoutesBaseAcquisitions(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.RevivalWindow = time.Minute; return nil })
	require.NoError(t, err)
	acq(t, s, lic.Key, "warm") // the live state exists before the policy
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: userSubject("ann")})

	var g live.Acquisition
	require.NoError(t, s.live.Acquire(t.Context(), lic.ID, &server.AcquireRequest{LeaseID: server.NewID(server.PrefixLeaseID), Fingerprint: "x"}, &g))
	require.Equal(t, live.StatusPolicy, g.Status)
	conf, err := s.rdb.HMGet(t.Context(), s.live.Keys().License(lic.ID)[0], "revival", "policy").Result()
	require.NoError(t, err)
	require.Equal(t, "-60000000", conf[0], "revival judged by the policy: the window negated")
	require.NotEmpty(t, conf[1])

	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	ctx := t.Context()
	a, _, err := tryAs(ctx, other, lic.Key, "a1", "ann", "h", "", "")
	require.NoError(t, err)
	require.True(t, other.hasPolicy(lic.ID), "learned from acquire.lua")
	_, _, err = tryAs(ctx, s, lic.Key, "a2", "ann", "h", "", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 0)
	require.Contains(t, err.Error(), "user ann holds 1 of the 1 seats it may hold")
	again, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "", "")
	require.NoError(t, err, "the same fingerprint: handed back, not judged")
	require.True(t, again.Existing)
	require.Equal(t, a.Lease.ID, again.Lease.ID)

	_, err = s.SetPolicy(ctx, tn.ID, lic.ID, nil)
	require.NoError(t, err)
	require.NoError(t, other.live.Acquire(ctx, lic.ID, &server.AcquireRequest{LeaseID: server.NewID(server.PrefixLeaseID), Fingerprint: "y"}, &g))
	require.NotEqual(t, live.StatusPolicy, g.Status, "acquire.lua grants again")
	_, _, err = tryAs(ctx, other, lic.Key, "a3", "ann", "h", "", "")
	require.NoError(t, err, "no policy, no cap (the instance's hint is wrong: the script says so)")
	require.False(t, other.hasPolicy(lic.ID))
	conf, err = s.rdb.HMGet(t.Context(), s.live.Keys().License(lic.ID)[0], "revival", "policy").Result()
	require.NoError(t, err)
	require.Equal(t, []any{"60000000", ""}, conf, "revival is back")
}

// TestPolicyChangeIsStaleForOtherInstances: an instance that decided by
// the policy it cached is told STALE once another changed it, and judges
// by the new one.
func TestPolicyChangeIsStaleForOtherInstances(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Count: 2, Subject: userSubject("ann")})
	ctx := t.Context()
	_, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "", "")
	require.NoError(t, err)
	cached, ok := s.licenseGrants.Get(lic.ID)
	require.True(t, ok)

	setPolicy(t, other, lic, server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: userSubject("ann")})
	still, ok := s.licenseGrants.Get(lic.ID)
	require.True(t, ok)
	require.Same(t, cached, still, "this instance was not told")

	var g live.PoolAcquisition
	d, j := cached.policy.judgement("", &server.AcquireRequest{User: "ann"})
	require.Len(t, d.Caps, 1)
	require.NoError(t, s.live.AcquirePoolSet(ctx, s.coverageOf(lic.ID, cached, "", "").set,
		&server.AcquireRequest{User: "ann", Fingerprint: "a9", LeaseID: server.NewID(server.PrefixLeaseID)}, j, &g))
	require.Equal(t, live.StatusStale, g.Status, "decided by an older policy")

	_, _, err = tryAs(ctx, s, lic.Key, "a2", "ann", "h", "", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 0, "judged by the new policy")
	now, ok := s.licenseGrants.Get(lic.ID)
	require.True(t, ok)
	require.Greater(t, now.version, cached.version)

	// A group change is a policy change too.
	mkGroup(t, other, tn.ID, "night", server.SubjectGroup, "bob")
	setPolicy(t, other, lic, server.PolicyRule{Kind: server.RuleExclude, Subject: groupSubject("night")})
	_, _, err = tryAs(ctx, s, lic.Key, "c1", "carl", "h", "", "")
	require.NoError(t, err)
	mkGroup(t, other, tn.ID, "night", server.SubjectGroup, "bob", "carl")
	_, _, err = tryAs(ctx, s, lic.Key, "c2", "carl", "h", "", "")
	requirePolicyRefusal(t, err, server.EPERMISSION, server.ReasonExcluded, 0, "carl joined the group")
}

// indexOf lists the members of a license's policy index.
func indexOf(t *testing.T, s *Store, licenseID string) []string {
	t.Helper()
	ms, err := s.rdb.ZRange(t.Context(), s.live.Keys().Policy(licenseID)[0], 0, -1).Result()
	require.NoError(t, err)
	return ms
}

// TestPolicyIndexDropsEndedLeases: the members of a lease that ended go
// when a count meets them, or when the leader prunes the index.
func TestPolicyIndexDropsEndedLeases(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: userSubject("ann")})
	ctx := t.Context()
	a, tok, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "", "")
	require.NoError(t, err)
	b, btok, err := tryAs(ctx, s, lic.Key, "b1", "bob", "h", "", "")
	require.NoError(t, err)
	require.Len(t, indexOf(t, s, lic.ID), 6, "identity, user and host of each")

	_, err = s.Release(ctx, a.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	a2, _, err := tryAs(ctx, s, lic.Key, "a2", "ann", "h", "", "")
	require.NoError(t, err, "ann's ended lease no longer counts")
	ms := indexOf(t, s, lic.ID)
	require.Len(t, ms, 8, "ann's old user member went as it was counted")
	for _, m := range ms {
		require.False(t, strings.HasPrefix(m, "\x00u\x00ann\x00") && strings.HasSuffix(m, live.LeaseKey(a.Lease.ID)))
	}

	_, err = s.Release(ctx, b.Lease.ID, server.HashSecret(btok))
	require.NoError(t, err)
	require.NoError(t, s.prunePolicyIndexes(ctx))
	ms = indexOf(t, s, lic.ID)
	require.Len(t, ms, 3, "only the live lease's members are left (the prune reads identity members too)")
	for _, m := range ms {
		require.True(t, strings.HasSuffix(m, "\x00\x00"+live.LeaseKey(a2.Lease.ID)), "the base pool's members name no grant")
	}
}

// TestPolicyIndexRebuiltAfterRedisLoss: Redis loses everything; the live
// state and the policy index are built from the record before anything
// is granted: the caps count the leases held before the loss, and the
// reservations the seats they took (Lease.Reservation, recorded); a
// feature's leases count in their scope.
func TestPolicyIndexRebuiltAfterRedisLoss(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 4, time.Hour)
	mkGrant(t, s, lic, "render", "", 2, time.Time{})
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
	mkGroup(t, s, tn.ID, "all", server.SubjectGroup, "ann", "bob", "carl", "dan", "erin")
	setPolicy(t, s, lic,
		server.PolicyRule{Kind: server.RuleReserve, Count: 2, Subject: groupSubject("night")},
		server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: groupSubject("all"), EachMember: true},
		server.PolicyRule{Kind: server.RuleMax, Feature: "render", Count: 1, Subject: server.Subject{Kind: server.SubjectHost, Name: "RIG"}},
	)
	ctx := t.Context()
	a, atok, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h1", "", "")
	require.NoError(t, err)
	require.Equal(t, "r:group\x00night", a.Lease.Reservation)
	_, _, err = tryAs(ctx, s, lic.Key, "c1", "carl", "h2", "", "")
	require.NoError(t, err)
	_, _, err = tryAs(ctx, s, lic.Key, "r1", "carl", "rig", "render", "")
	require.NoError(t, err)
	before := len(indexOf(t, s, lic.ID))

	loc.loseRedis(t)
	require.Empty(t, indexOf(t, s, lic.ID))

	_, _, err = tryAs(ctx, s, lic.Key, "a2", "ann", "h1", "", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonUserLimit, 1, "ann's lease from before the loss counts")
	require.Len(t, indexOf(t, s, lic.ID), before, "the index is back, from the record")
	_, _, err = tryAs(ctx, s, lic.Key, "r2", "dan", "Rig", "render", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonHostLimit, 2, "the feature's lease counts for its host")
	_, _, err = tryAs(ctx, s, lic.Key, "d1", "dan", "h3", "", "")
	require.NoError(t, err, "2 + 1 unused reserved < 4")
	_, _, err = tryAs(ctx, s, lic.Key, "e1", "erin", "h4", "", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonSeatsReserved, 0, "ann's reserved seat is still hers")
	require.Contains(t, err.Error(), "1 of 1 remaining seats are reserved for group night")
	b, _, err := tryAs(ctx, s, lic.Key, "b1", "bob", "h5", "", "")
	require.NoError(t, err)
	require.Equal(t, "r:group\x00night", b.Lease.Reservation)

	_, err = s.Heartbeat(ctx, a.Lease.ID, server.HashSecret(atok))
	require.NoError(t, err, "the leases held before the loss live on")
}

// TestPolicyHoldsUnderRaces: three instances on one PostgreSQL and one
// Redis, 100 goroutines acquiring and releasing at once on a license of 4 seats
// that reserves 2 for a group and lets each user hold 1: the record never
// holds more (sampled while they run, and counted at the end).
func TestPolicyHoldsUnderRaces(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	stores := []*Store{s, loc.open(t, nil), loc.open(t, nil)}
	t.Cleanup(func() { _ = stores[1].Close(); _ = stores[2].Close() })
	const seats, reserved = 4, 2
	lic := mkLicense(t, s, tn.ID, seats, time.Hour)
	users := make([]string, 20)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, users[:3]...)
	mkGroup(t, s, tn.ID, "all", server.SubjectGroup, users...)
	setPolicy(t, s, lic,
		server.PolicyRule{Kind: server.RuleReserve, Count: reserved, Subject: groupSubject("night")},
		server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: groupSubject("all"), EachMember: true},
	)
	pg, _ := testServers(t)
	check := func() {
		rows, err := pg.Query(context.Background(), `SELECT "user", reservation FROM `+loc.schema+`.sessions
			WHERE license_id = $1 AND state = 'active'`, lic.ID)
		require.NoError(t, err)
		perUser := map[string]int{}
		total, shared, inReserve := 0, 0, 0
		for rows.Next() {
			var (
				user string
				res  []byte
			)
			require.NoError(t, rows.Scan(&user, &res))
			total++
			perUser[user]++
			require.LessOrEqual(t, perUser[user], 1, "user %s holds more than 1", user)
			if len(res) == 0 {
				shared++
			} else {
				inReserve++
				require.Contains(t, users[:3], user, "a reserved seat taken by a non-member")
			}
		}
		require.NoError(t, rows.Err())
		require.LessOrEqual(t, total, seats)
		require.LessOrEqual(t, inReserve, reserved)
		require.LessOrEqual(t, shared, seats-reserved, "shared seats ate into the reservation")
	}

	var (
		wg      sync.WaitGroup
		granted atomic.Int64
		mu      sync.Mutex
		refused = map[string]int{}
		done    = make(chan struct{})
		sampled = make(chan struct{})
	)
	go func() { // the record is a subset of the live leases: it holds the rules at every moment
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			default:
				check()
			}
		}
	}()
	for g := range 100 {
		wg.Go(func() {
			st := stores[g%len(stores)]
			for i := range 20 {
				user := users[(g*7+i*3)%len(users)]
				res, tok, err := tryAs(t.Context(), st, lic.Key, fmt.Sprintf("g%d-%d", g, i), user, "host-"+user, "", "")
				if err != nil {
					switch why := server.ErrorReason(err); why {
					case server.ReasonUserLimit, server.ReasonSeatsReserved, server.ReasonSeatsExhausted:
						mu.Lock()
						refused[why]++
						mu.Unlock()
					default:
						t.Errorf("acquire: %v", err)
					}
					continue
				}
				granted.Add(1)
				if i == 19 && g%10 == 0 {
					continue // a few keep their seats to the end
				}
				if _, err := st.Release(t.Context(), res.Lease.ID, server.HashSecret(tok)); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	wg.Wait()
	close(done)
	<-sampled
	check()
	require.Positive(t, granted.Load())
	require.Positive(t, refused[server.ReasonSeatsReserved], "the reservation was contended")
	t.Logf("granted %d, refused %v", granted.Load(), refused)
}

// TestHandBackComparesEmptyIdentities: a lease is handed back only to a
// request of its own user and host, empty ones included (its identity
// member holds both), hosts without case; any other is a new lease that
// replaces it.
func TestHandBackComparesEmptyIdentities(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Count: 2, Subject: userSubject("ann")})
	ctx := t.Context()
	anon, _, err := tryAs(ctx, s, lic.Key, "m1", "", "", "", "")
	require.NoError(t, err)
	again, _, err := tryAs(ctx, s, lic.Key, "m1", "", "", "", "")
	require.NoError(t, err)
	require.True(t, again.Existing, "no user, no host: its own")
	require.Equal(t, anon.Lease.ID, again.Lease.ID)

	ann, _, err := tryAs(ctx, s, lic.Key, "m1", "ann", "", "", "")
	require.NoError(t, err)
	require.False(t, ann.Existing, "a user where the lease has none")
	require.Equal(t, server.LeaseRevoked, mustLease(t, s, tn.ID, anon.Lease.ID).State)
	onHost, _, err := tryAs(ctx, s, lic.Key, "m1", "ann", "WS1", "", "")
	require.NoError(t, err)
	require.False(t, onHost.Existing, "a host where the lease has none")
	require.Equal(t, server.LeaseRevoked, mustLease(t, s, tn.ID, ann.Lease.ID).State)
	same, _, err := tryAs(ctx, s, lic.Key, "m1", "ann", "ws1", "", "")
	require.NoError(t, err)
	require.True(t, same.Existing, "hosts compare without case")
	require.Equal(t, onHost.Lease.ID, same.Lease.ID)
	require.Equal(t, 1, same.SeatsInUse, "each replaced lease gave its seat")
}

func mustLease(t *testing.T, s *Store, tenantID, id string) server.Lease {
	t.Helper()
	l, err := s.GetLease(t.Context(), tenantID, id)
	require.NoError(t, err)
	return l
}

// TestGroupMembersSentOnlyWhenTheCountNeedsThem: a decision leaves out the
// members of a group capped as a whole while the scope's holders (of any
// group) are fewer than the cap: acquire_pools.lua judges the cap on that
// bound alone. Once they reach it, the script asks for the members
// (nothing written), the acquisition is judged again with them, and the
// license's decisions carry them from then on: the cap counts the group's
// members only.
func TestGroupMembersSentOnlyWhenTheCountNeedsThem(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 10, time.Hour)
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob", "carl")
	setPolicy(t, s, lic, server.PolicyRule{Kind: server.RuleMax, Count: 2, Subject: groupSubject("night")})
	ctx := t.Context()
	wanted := func() bool {
		t.Helper()
		lg, ok := s.licenseGrants.Get(lic.ID)
		require.True(t, ok)
		return lg.policy.groupsWanted.Load()
	}

	_, _, err := tryAs(ctx, s, lic.Key, "a1", "ann", "h", "", "")
	require.NoError(t, err)
	require.False(t, wanted(), "1 holder, under the cap of 2: the members were not needed")
	_, _, err = tryAs(ctx, s, lic.Key, "z1", "zed", "h", "", "")
	require.NoError(t, err, "zed is not of the group")
	require.False(t, wanted())

	b, _, err := tryAs(ctx, s, lic.Key, "b1", "bob", "h", "", "")
	require.NoError(t, err, "2 holders, but only ann of the group: bob is granted")
	require.NotEmpty(t, b.Lease.ID)
	require.True(t, wanted(), "the holders reached the cap: the script asked for the members")

	_, _, err = tryAs(ctx, s, lic.Key, "c1", "carl", "h", "", "")
	requirePolicyRefusal(t, err, server.EEXHAUSTED, server.ReasonGroupLimit, 0, "ann and bob hold the group's 2")
	_, _, err = tryAs(ctx, s, lic.Key, "z2", "zed", "h2", "", "")
	require.NoError(t, err, "the group's cap is not zed's")
}
