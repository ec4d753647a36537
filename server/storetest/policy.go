package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Policy: site policies and groups (server.PolicyStore, server/policy.go).
// A license's policy is judged in the same atomic step as its seat count
// (invariant 13): caps count the live leases of the pool (the base pool,
// or all of a feature's grants) whose user or host the rule names under
// the policy and groups as they are now; reservations count the live
// leases that took one of their seats (Lease.Reservation). A policy change
// ends no lease; handing back an existing lease to its own user and host
// is not judged (it is the same seat), and another identity's request of
// the same keys is judged as a new lease that takes its seat; a revival
// is judged as a new lease of its client, except that the only
// reservation it may take is its own. A grant ends (expired) the lapsed
// leases that, back, would break its caps or reservations, and only
// those: an observed end is final, and a lapsed lease may come back
// unjudged (a crash's write-behind slack). A change of a license's seats
// or grants that its policy would no longer pass is refused.

// Rule and subject builders.
func userS(name string) server.Subject  { return server.Subject{Kind: server.SubjectUser, Name: name} }
func hostS(name string) server.Subject  { return server.Subject{Kind: server.SubjectHost, Name: name} }
func groupS(name string) server.Subject { return server.Subject{Kind: server.SubjectGroup, Name: name} }
func hostGroupS(name string) server.Subject {
	return server.Subject{Kind: server.SubjectHostGroup, Name: name}
}

func reserveRule(feature string, n int, s server.Subject) server.PolicyRule {
	return server.PolicyRule{Kind: server.RuleReserve, Feature: feature, Count: n, Subject: s}
}

func maxRule(feature string, n int, s server.Subject) server.PolicyRule {
	return server.PolicyRule{Kind: server.RuleMax, Feature: feature, Count: n, Subject: s}
}

func maxEach(feature string, n int, s server.Subject) server.PolicyRule {
	r := maxRule(feature, n, s)
	r.EachMember = true
	return r
}

func includeRule(feature string, s server.Subject) server.PolicyRule {
	return server.PolicyRule{Kind: server.RuleInclude, Feature: feature, Subject: s}
}

func excludeRule(feature string, s server.Subject) server.PolicyRule {
	return server.PolicyRule{Kind: server.RuleExclude, Feature: feature, Subject: s}
}

// reservationKey is a reservation's counter key (server.Reservation.Key),
// as Lease.Reservation holds it.
func reservationKey(s server.Subject) string { return "r:" + string(s.Kind) + "\x00" + s.Name }

// putGroup stores a group that must be accepted.
func putGroup(t *testing.T, s server.Store, tenantID, name string, kind server.SubjectKind, members ...string) server.Group {
	t.Helper()
	g, err := s.PutGroup(t.Context(), server.Group{TenantID: tenantID, Name: name, Kind: kind, Members: members})
	require.NoError(t, err, "PutGroup(%s)", name)
	require.Equal(t, tenantID, g.TenantID)
	require.Equal(t, name, g.Name)
	require.Equal(t, kind, g.Kind)
	require.Equal(t, members, g.Members)
	require.False(t, g.CreatedAt.IsZero(), "group CreatedAt")
	require.False(t, g.UpdatedAt.Before(g.CreatedAt), "group UpdatedAt")
	return g
}

// setPolicy sets a policy of rules that must be accepted, and checks the
// answer.
func setPolicy(t *testing.T, s server.Store, l server.License, rules ...server.PolicyRule) server.License {
	t.Helper()
	got, err := s.SetPolicy(t.Context(), l.TenantID, l.ID, &server.Policy{Rules: rules})
	require.NoError(t, err, "SetPolicy")
	require.Equal(t, l.ID, got.ID)
	require.NotNil(t, got.Policy, "SetPolicy answers with the policy")
	require.Equal(t, rules, got.Policy.Rules)
	return got
}

// as asks as a user on a host.
func as(user, host string) func(*server.AcquireRequest) {
	return func(r *server.AcquireRequest) { r.User, r.Hostname = user, host }
}

// refused tries an acquisition that the policy must refuse with reason.
func refused(t *testing.T, s server.Store, key, fingerprint string, mut func(*server.AcquireRequest), code server.Code, reason string, msgAndArgs ...any) map[string]string {
	t.Helper()
	_, _, err := tryAcquire(t.Context(), s, key, fingerprint, mut)
	requireCode(t, err, code, reason, msgAndArgs...)
	return errMeta(err)
}

// groupNames lists the names and members of a policy's groups.
func groupMembers(p *server.Policy) map[string][]string {
	out := map[string][]string{}
	for _, g := range p.Groups {
		out[g.Name] = g.Members
	}
	return out
}

func testPolicy(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	testPriorities(t, newBackend) // priority.go

	t.Run("PoliciesAndGroupsAreKept", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(3))
		newGrant(t, s, lic, "render", grantSeats(2))
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		labs := putGroup(t, s, tn.ID, "labs", server.SubjectHostGroup, "LAB1", "lab2")
		unused := putGroup(t, s, tn.ID, "unused", server.SubjectGroup, "cy")
		rules := []server.PolicyRule{
			reserveRule("", 1, groupS("night")), maxRule("render", 1, hostGroupS("labs")), excludeRule("", userS("eve")),
		}
		set := setPolicy(t, s, lic, rules...)
		require.Equal(t, map[string][]string{"night": {"ann", "bob"}, "labs": {"LAB1", "lab2"}}, groupMembers(set.Policy),
			"Policy.Groups: the groups it names, filled by the store")
		require.Len(t, set.Grants, 1)

		up, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.Name = "renamed"
			l.Policy = nil // not how a policy changes: kept
			return nil
		})
		require.NoError(t, err)
		for _, got := range []server.License{up, getLicense(t, s, tn.ID, lic.ID), licenseByKey(t, s, lic.Key), listLicenses(t, s, tn.ID, 10)[0]} {
			require.NotNil(t, got.Policy)
			require.Equal(t, rules, got.Policy.Rules)
			require.Equal(t, map[string][]string{"night": {"ann", "bob"}, "labs": {"LAB1", "lab2"}}, groupMembers(got.Policy))
		}
		// The answer is a copy: changing it changes nothing kept.
		up.Policy.Rules[0].Count = 3
		up.Policy.Groups[0].Members[0] = "zed"
		got := getLicense(t, s, tn.ID, lic.ID)
		require.Equal(t, rules, got.Policy.Rules)
		require.Equal(t, map[string][]string{"night": {"ann", "bob"}, "labs": {"LAB1", "lab2"}}, groupMembers(got.Policy))

		gs, err := s.ListGroups(t.Context(), tn.ID)
		require.NoError(t, err)
		require.Equal(t, []string{"labs", "night", "unused"}, []string{gs[0].Name, gs[1].Name, gs[2].Name}, "by name")
		require.Equal(t, labs.Members, gs[0].Members)
		other := newTenant(t, s)
		gs, err = s.ListGroups(t.Context(), other.ID)
		require.NoError(t, err)
		require.Empty(t, gs, "another tenant's groups")

		// A group's change keeps its creation time.
		again, err := s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "unused", Kind: server.SubjectGroup, Members: []string{"cy", "dee"}})
		require.NoError(t, err)
		requireSameTime(t, unused.CreatedAt, again.CreatedAt)
		require.Equal(t, []string{"cy", "dee"}, again.Members)

		// nil, or a policy with nothing in it: none.
		for _, p := range []*server.Policy{nil, {}} {
			got, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, p)
			require.NoError(t, err)
			require.Nil(t, got.Policy)
			require.Nil(t, getLicense(t, s, tn.ID, lic.ID).Policy)
		}
		_, err = s.SetPolicy(t.Context(), other.ID, lic.ID, &server.Policy{Rules: rules})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "another tenant's license")
		_, err = s.PutGroup(t.Context(), server.Group{TenantID: "tnt_missing", Name: "x", Kind: server.SubjectGroup, Members: []string{"a"}})
		requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound)
	})

	t.Run("IncludeOnly", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		putGroup(t, s, tn.ID, "eng", server.SubjectGroup, "bob")
		setPolicy(t, s, lic, includeRule("", userS("ann")), includeRule("", groupS("eng")), includeRule("", hostS("Kiosk")))
		acquire(t, s, lic, "a", as("ann", "h1"))
		acquire(t, s, lic, "b", as("bob", "h1"))
		acquire(t, s, lic, "c", as("zed", "kiosk"))
		meta := refused(t, s, lic.Key, "d", as("carl", "h1"), server.EPERMISSION, server.ReasonNotIncluded, "named by no include rule")
		require.Equal(t, "3", meta["in_use"])
		refused(t, s, lic.Key, "e", as("", ""), server.EPERMISSION, server.ReasonNotIncluded, "no user, no host")
		refused(t, s, lic.Key, "f", as("Ann", "h1"), server.EPERMISSION, server.ReasonNotIncluded, "users compare exactly")
		require.Equal(t, 3, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("ExcludeWinsOverInclude", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		putGroup(t, s, tn.ID, "eng", server.SubjectGroup, "ann", "bob")
		setPolicy(t, s, lic, includeRule("", groupS("eng")), excludeRule("", userS("bob")), excludeRule("", hostS("Public1")))
		acquire(t, s, lic, "a", as("ann", "ws1"))
		meta := refused(t, s, lic.Key, "b", as("bob", "ws1"), server.EPERMISSION, server.ReasonExcluded, "excluded though included")
		require.Equal(t, "1", meta["rule"])
		require.Equal(t, "user", meta["subject_kind"])
		require.Equal(t, "bob", meta["subject_name"])
		meta = refused(t, s, lic.Key, "c", as("ann", "PUBLIC1"), server.EPERMISSION, server.ReasonExcluded, "a host excluded, whatever its case")
		require.Equal(t, "2", meta["rule"])
	})

	t.Run("MaxUser", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		setPolicy(t, s, lic, maxRule("", 2, userS("ann")))
		acquire(t, s, lic, "a1", as("ann", "h1"))
		acquire(t, s, lic, "a2", as("ann", "h2"))
		meta := refused(t, s, lic.Key, "a3", as("ann", "h3"), server.EEXHAUSTED, server.ReasonUserLimit, "ann holds 2 of 2")
		require.Equal(t, map[string]string{"in_use": "2", "limit": "2", "rule": "0", "subject_kind": "user", "subject_name": "ann"}, meta)
		acquire(t, s, lic, "b1", as("bob", "h1"))
		acquire(t, s, lic, "b2", as("bob", "h1"))
		acquire(t, s, lic, "b3", as("bob", "h1"))
		refused(t, s, lic.Key, "b4", as("bob", "h1"), server.EEXHAUSTED, server.ReasonSeatsExhausted, "the license's seats")
	})

	t.Run("MaxHostIgnoresCase", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		setPolicy(t, s, lic, maxRule("", 1, hostS("WS1.example")))
		acquire(t, s, lic, "a", as("ann", "ws1.EXAMPLE"))
		meta := refused(t, s, lic.Key, "b", as("bob", "Ws1.Example"), server.EEXHAUSTED, server.ReasonHostLimit, "the same host in another case")
		require.Equal(t, "1", meta["in_use"])
		require.Equal(t, "host", meta["subject_kind"])
		acquire(t, s, lic, "c", as("bob", "ws2.example"))
	})

	t.Run("MaxGroupWholeAndEachMember", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "eng", server.SubjectGroup, "ann", "bob", "cy")
		putGroup(t, s, tn.ID, "labs", server.SubjectHostGroup, "Lab1", "lab2")

		whole := newLicense(t, s, tn.ID, seats(10))
		setPolicy(t, s, whole, maxRule("", 2, groupS("eng")), maxRule("", 1, hostGroupS("labs")))
		acquire(t, s, whole, "a", as("ann", "ws"))
		acquire(t, s, whole, "b", as("bob", "ws"))
		meta := refused(t, s, whole.Key, "c", as("cy", "ws"), server.EEXHAUSTED, server.ReasonGroupLimit, "the group as a whole holds 2")
		require.Equal(t, map[string]string{"in_use": "2", "limit": "2", "rule": "0", "subject_kind": "group", "subject_name": "eng"}, meta)
		acquire(t, s, whole, "d", as("dee", "ws"))
		acquire(t, s, whole, "e", as("dee", "LAB1"))
		refused(t, s, whole.Key, "f", as("eve", "lab2"), server.EEXHAUSTED, server.ReasonGroupLimit, "the host group as a whole")

		each := newLicense(t, s, tn.ID, seats(10))
		setPolicy(t, s, each, maxEach("", 1, groupS("eng")), maxEach("", 1, hostGroupS("labs")))
		acquire(t, s, each, "a", as("ann", "ws"))
		meta = refused(t, s, each.Key, "a2", as("ann", "ws"), server.EEXHAUSTED, server.ReasonUserLimit, "each member holds at most 1")
		require.Equal(t, "eng", meta["subject_name"])
		acquire(t, s, each, "b", as("bob", "ws"))
		acquire(t, s, each, "c", as("cy", "ws"))
		acquire(t, s, each, "d1", as("dee", "ws"))
		acquire(t, s, each, "d2", as("dee", "ws"))
		acquire(t, s, each, "l1", as("dee", "lab1"))
		refused(t, s, each.Key, "l1b", as("eve", "LAB1"), server.EEXHAUSTED, server.ReasonHostLimit, "each host of the group")
		acquire(t, s, each, "l2", as("eve", "lab2"))
	})

	t.Run("ReserveForAGroup", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		night := putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		lic := newLicense(t, s, tn.ID, seats(4))
		setPolicy(t, s, lic, reserveRule("", 2, groupS(night.Name)))
		key := reservationKey(groupS("night"))

		c1, _ := acquire(t, s, lic, "c1", as("carl", "h"))
		require.Empty(t, c1.Lease.Reservation, "a non-member takes a shared seat")
		acquire(t, s, lic, "c2", as("carl", "h"))
		meta := refused(t, s, lic.Key, "c3", as("carl", "h"), server.EEXHAUSTED, server.ReasonSeatsReserved, "the 2 seats left are the group's")
		require.Equal(t, map[string]string{"in_use": "2", "limit": "4", "rule": "0", "subject_kind": "group", "subject_name": "night"}, meta)

		a1, _ := acquire(t, s, lic, "a1", as("ann", "h"))
		require.Equal(t, key, a1.Lease.Reservation, "a member takes a reserved seat")
		require.Equal(t, key, getLease(t, s, tn.ID, a1.Lease.ID).Reservation)
		refused(t, s, lic.Key, "c3", as("carl", "h"), server.EEXHAUSTED, server.ReasonSeatsReserved, "1 reserved seat left")
		b1, _ := acquire(t, s, lic, "b1", as("bob", "h"))
		require.Equal(t, key, b1.Lease.Reservation)
		refused(t, s, lic.Key, "a2", as("ann", "h"), server.EEXHAUSTED, server.ReasonSeatsExhausted, "all 4 taken")
		require.Equal(t, 4, seatsInUse(t, s, tn.ID, lic.ID))

		// A member takes its reservation's seats first, then shared ones.
		lic2 := newLicense(t, s, tn.ID, seats(3))
		setPolicy(t, s, lic2, reserveRule("", 1, groupS("night")))
		x, _ := acquire(t, s, lic2, "a1", as("ann", "h"))
		require.Equal(t, key, x.Lease.Reservation)
		y, _ := acquire(t, s, lic2, "b1", as("bob", "h"))
		require.Empty(t, y.Lease.Reservation, "the reservation is full: a shared seat")
		acquire(t, s, lic2, "c1", as("carl", "h"))
		refused(t, s, lic2.Key, "c2", as("carl", "h"), server.EEXHAUSTED, server.ReasonSeatsExhausted)
	})

	t.Run("ReserveAndMaxOnOneGroup", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		lic := newLicense(t, s, tn.ID, seats(4))
		setPolicy(t, s, lic, reserveRule("", 2, groupS("night")), maxRule("", 3, groupS("night")))
		acquire(t, s, lic, "a1", as("ann", "h"))
		acquire(t, s, lic, "b1", as("bob", "h"))
		a2, _ := acquire(t, s, lic, "a2", as("ann", "h"))
		require.Empty(t, a2.Lease.Reservation)
		meta := refused(t, s, lic.Key, "b2", as("bob", "h"), server.EEXHAUSTED, server.ReasonGroupLimit, "the group's cap, a seat still free")
		require.Equal(t, "1", meta["rule"])
		acquire(t, s, lic, "c1", as("carl", "h"))
	})

	t.Run("FeaturePolicyAcrossItsGrantsNotTheBasePool", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
		lic := newLicense(t, s, tn.ID, seats(3))
		at := now()
		r1 := newGrant(t, s, lic, "render", grantExpires(at.Add(24*time.Hour)))
		r2 := newGrant(t, s, lic, "render", grantExpires(at.Add(48*time.Hour)))
		s1 := newGrant(t, s, lic, "sim", grantExpires(at.Add(24*time.Hour)))
		s2 := newGrant(t, s, lic, "sim", grantExpires(at.Add(48*time.Hour)))
		setPolicy(t, s, lic, maxRule("render", 1, userS("ann")), reserveRule("sim", 1, groupS("night")))

		acquireFeature(t, s, lic, r1, "a1", "", as("ann", "h"))
		meta := refused(t, s, lic.Key, "a2", with2(ofFeature("render", ""), as("ann", "h")), server.EEXHAUSTED, server.ReasonUserLimit,
			"the cap counts the feature's grants together: r2's seat is free")
		require.Equal(t, "render", meta["feature"])
		acquireFeature(t, s, lic, r2, "b1", "", as("bob", "h"))
		// The base pool has no rule: ann takes all of it.
		for _, fp := range []string{"a1", "a2", "a3"} {
			acquire(t, s, lic, fp, as("ann", "h"))
		}

		acquireFeature(t, s, lic, s1, "c1", "", as("carl", "h"))
		meta = refused(t, s, lic.Key, "c2", with2(ofFeature("sim", ""), as("carl", "h")), server.EEXHAUSTED, server.ReasonSeatsReserved,
			"the sim seat left, summed over its grants, is night's")
		require.Equal(t, map[string]string{"in_use": "1", "limit": "2", "feature": "sim", "rule": "1", "subject_kind": "group", "subject_name": "night"}, meta)
		a, _ := acquireFeature(t, s, lic, s2, "a1", "", as("ann", "h"))
		require.Equal(t, reservationKey(groupS("night")), a.Lease.Reservation)
	})

	t.Run("PolicyChangeCountsHeldLeasesAndEndsNone", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		a, tokA := acquire(t, s, lic, "a1", as("ann", "h"))
		b, tokB := acquire(t, s, lic, "b1", as("bob", "h"))
		setPolicy(t, s, lic, maxRule("", 1, userS("ann")), excludeRule("", userS("bob")))
		refused(t, s, lic.Key, "a2", as("ann", "h"), server.EEXHAUSTED, server.ReasonUserLimit, "the lease held before the rule counts")
		refused(t, s, lic.Key, "b2", as("bob", "h"), server.EPERMISSION, server.ReasonExcluded)
		heartbeat(t, s, a.Lease.ID, tokA)
		heartbeat(t, s, b.Lease.ID, tokB)
		require.Equal(t, 2, seatsInUse(t, s, tn.ID, lic.ID), "no lease ended")

		// Raised, then removed.
		setPolicy(t, s, lic, maxRule("", 2, userS("ann")))
		acquire(t, s, lic, "a2", as("ann", "h"))
		refused(t, s, lic.Key, "a3", as("ann", "h"), server.EEXHAUSTED, server.ReasonUserLimit)
		_, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, nil)
		require.NoError(t, err)
		acquire(t, s, lic, "a3", as("ann", "h"))
		acquire(t, s, lic, "b2", as("bob", "h"))
	})

	t.Run("HandBackIsNotJudged", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(3), strategy(server.PerUser)))
		first, _ := acquire(t, s, lic, "fp1", as("ann", "h"))
		idem := func(r *server.AcquireRequest) { r.User, r.Hostname, r.IdempotencyKey = "bob", "h", "k1" }
		byKey, _ := acquire(t, s, lic, "fp2", idem)
		setPolicy(t, s, lic, maxRule("", 1, userS("ann")), excludeRule("", userS("bob")))
		again, _ := acquire(t, s, lic, "fp3", as("ann", "h"))
		require.True(t, again.Existing, "the same seat is handed back, whatever the policy")
		require.Equal(t, first.Lease.ID, again.Lease.ID)
		keyed, _ := acquire(t, s, lic, "fp4", idem)
		require.True(t, keyed.Existing)
		require.Equal(t, byKey.Lease.ID, keyed.Lease.ID)
	})

	t.Run("HandBackOnlyToItsOwnIdentity", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(5), strategy(server.PerHostname)))
		setPolicy(t, s, lic, excludeRule("", userS("intern")), maxRule("", 1, userS("bob")))
		alice, tokA := acquire(t, s, lic, "fp1", as("alice", "ws1"))
		acquire(t, s, lic, "fp0", as("bob", "ws0"))

		// Another user on alice's host is judged as itself, and a refusal
		// leaves her lease alone.
		refused(t, s, lic.Key, "fp2", as("intern", "ws1"), server.EPERMISSION, server.ReasonExcluded, "excluded, on a host that holds a lease")
		refused(t, s, lic.Key, "fp3", as("bob", "ws1"), server.EEXHAUSTED, server.ReasonUserLimit, "at his cap, on a host that holds a lease")
		heartbeat(t, s, alice.Lease.ID, tokA)
		again, tokA := acquire(t, s, lic, "fp4", as("alice", "ws1"))
		require.True(t, again.Existing, "her own lease, handed back")
		require.Equal(t, alice.Lease.ID, again.Lease.ID)

		// One the policy grants takes the seat in a lease of its own; the
		// old lease ends, revoked, audited.
		carl, _ := acquire(t, s, lic, "fp5", as("carl", "ws1"))
		require.False(t, carl.Existing)
		require.NotEqual(t, alice.Lease.ID, carl.Lease.ID)
		require.Equal(t, "carl", carl.Lease.User)
		require.Equal(t, 2, carl.SeatsInUse, "alice's seat went to carl")
		require.Equal(t, server.LeaseRevoked, getLease(t, s, tn.ID, alice.Lease.ID).State)
		_, err := s.Heartbeat(t.Context(), alice.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
		require.Len(t, usageOf(usageEvents(t, s, tn.ID, lic.ID), alice.Lease.ID), 1, "the replaced lease's usage")
		audit, _, err := s.AuditLog(t.Context(), tn.ID, server.Page{Size: 10})
		require.NoError(t, err)
		require.Len(t, audit, 1)
		require.Equal(t, "system", audit[0].Actor)
		require.Equal(t, "lease.replace", audit[0].Action)
		require.Equal(t, alice.Lease.ID, audit[0].ResourceID)
		require.Equal(t, carl.Lease.ID, audit[0].Details["replaced_by"])
	})

	t.Run("LicenseChangesKeepThePolicyValid", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
		lic := newLicense(t, s, tn.ID, seats(5))
		g := newGrant(t, s, lic, "render", grantSeats(2))
		rules := []server.PolicyRule{reserveRule("", 4, groupS("night")), reserveRule("render", 2, groupS("night"))}
		setPolicy(t, s, lic, rules...)

		_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Seats = 3; return nil })
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "seats under the reservations")
		require.Equal(t, "policy.rules", errField(err))
		_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 1; return nil })
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "a grant's seats under the feature's reservations")
		require.Equal(t, "policy.rules", errField(err))
		_, err = s.DeleteGrant(t.Context(), tn.ID, lic.ID, g.ID)
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "the only grant of a feature a rule names")
		require.Equal(t, "policy.rules[1].feature", errField(err))
		got := getLicense(t, s, tn.ID, lic.ID)
		require.Equal(t, 5, got.Seats, "nothing changed")
		require.Len(t, got.Grants, 1)
		require.Equal(t, 2, got.Grants[0].Seats)
		setPolicy(t, s, lic, got.Policy.Rules...) // the policy kept is one SetPolicy takes

		_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Seats, l.Name = 4, "smaller"; return nil })
		require.NoError(t, err, "4 seats hold the 4 reserved")
		setPolicy(t, s, lic, rules[0])
		_, err = s.DeleteGrant(t.Context(), tn.ID, lic.ID, g.ID)
		require.NoError(t, err, "no rule names render any more")
	})

	t.Run("GroupChangeAppliesAtOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "eng", server.SubjectGroup, "ann")
		lic := newLicense(t, s, tn.ID, seats(5))
		capped := newLicense(t, s, tn.ID, seats(5))
		setPolicy(t, s, lic, excludeRule("", groupS("eng")))
		setPolicy(t, s, capped, maxRule("", 1, groupS("eng")))
		acquire(t, s, lic, "b1", as("bob", "h"))
		acquire(t, s, capped, "b1", as("bob", "h"))
		acquire(t, s, capped, "a1", as("ann", "h"))

		putGroup(t, s, tn.ID, "eng", server.SubjectGroup, "ann", "bob")
		refused(t, s, lic.Key, "b2", as("bob", "h"), server.EPERMISSION, server.ReasonExcluded, "bob joined the excluded group")
		meta := refused(t, s, capped.Key, "c", as("bob", "h"), server.EEXHAUSTED, server.ReasonGroupLimit,
			"bob's lease, taken before he joined, counts for the group now")
		require.Equal(t, "2", meta["in_use"])
		require.Equal(t, map[string][]string{"eng": {"ann", "bob"}}, groupMembers(getLicense(t, s, tn.ID, lic.ID).Policy),
			"the licenses naming the group show it as it is")

		// Members gone: their leases no longer count for the group.
		putGroup(t, s, tn.ID, "eng", server.SubjectGroup, "cy")
		acquire(t, s, lic, "b2", as("bob", "h"))
		acquire(t, s, capped, "c1", as("cy", "h"))
		refused(t, s, capped.Key, "c2", as("cy", "h"), server.EEXHAUSTED, server.ReasonGroupLimit, "cy's own lease")
	})

	t.Run("GroupInUseAndUnknownGroups", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
		putGroup(t, s, tn.ID, "labs", server.SubjectHostGroup, "lab1")
		a := newLicense(t, s, tn.ID, seats(2))
		b := newLicense(t, s, tn.ID, seats(2))
		rules := []server.PolicyRule{reserveRule("", 1, groupS("night"))}
		setPolicy(t, s, a, rules...)
		setPolicy(t, s, b, includeRule("", groupS("night")), maxRule("", 1, hostS("x")))

		err := s.DeleteGroup(t.Context(), tn.ID, "night")
		requireCode(t, err, server.EPRECONDITION, server.ReasonGroupInUse)
		require.Contains(t, err.Error(), a.ID)
		require.Contains(t, err.Error(), b.ID)
		err = s.DeleteGroup(t.Context(), tn.ID, "ghost")
		requireCode(t, err, server.ENOTFOUND, server.ReasonGroupNotFound)
		other := newTenant(t, s)
		err = s.DeleteGroup(t.Context(), other.ID, "labs")
		requireCode(t, err, server.ENOTFOUND, server.ReasonGroupNotFound, "another tenant's group")

		// A rule naming a group that does not exist, or of the other kind:
		// refused, naming the field; the policy in force stays.
		_, err = s.SetPolicy(t.Context(), tn.ID, a.ID, &server.Policy{Rules: []server.PolicyRule{
			maxRule("", 1, userS("ann")), excludeRule("", groupS("ghost")),
		}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
		require.Equal(t, "rules[1].subject.name", errField(err))
		_, err = s.SetPolicy(t.Context(), tn.ID, a.ID, &server.Policy{Rules: []server.PolicyRule{excludeRule("", groupS("labs"))}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
		require.Equal(t, "rules[0].subject.name", errField(err))
		_, err = s.SetPolicy(t.Context(), tn.ID, a.ID, &server.Policy{Rules: []server.PolicyRule{reserveRule("", 3, userS("ann"))}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "reservations past the seats")
		require.Equal(t, "rules", errField(err))
		_, err = s.SetPolicy(t.Context(), tn.ID, a.ID, &server.Policy{Rules: []server.PolicyRule{maxRule("cad", 1, userS("ann"))}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "a feature the license holds no grant of")
		require.Equal(t, "rules[0].feature", errField(err))
		_, err = s.SetPolicy(t.Context(), other.ID, a.ID, &server.Policy{Rules: rules})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
		require.Equal(t, rules, getLicense(t, s, tn.ID, a.ID).Policy.Rules, "nothing changed")
		// Another tenant's group of that name is not the tenant's.
		putGroup(t, s, other.ID, "day", server.SubjectGroup, "ann")
		_, err = s.SetPolicy(t.Context(), tn.ID, a.ID, &server.Policy{Rules: []server.PolicyRule{excludeRule("", groupS("day"))}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)

		// A kind change that a policy naming the group refuses.
		_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "night", Kind: server.SubjectHostGroup, Members: []string{"h1"}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
		require.Equal(t, "rules[0].subject.name", errField(err))
		require.Equal(t, map[string][]string{"night": {"ann"}}, groupMembers(getLicense(t, s, tn.ID, a.ID).Policy), "nothing changed")
		gs, err := s.ListGroups(t.Context(), tn.ID)
		require.NoError(t, err)
		require.Equal(t, server.SubjectGroup, gs[1].Kind)
		require.Equal(t, []string{"ann"}, gs[1].Members)
		// A bad group.
		_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "bad", Kind: server.SubjectGroup, Members: []string{"a", "a"}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
		require.Equal(t, "group.members[1]", errField(err))

		// Once no policy names it, it goes; a deleted license's policy
		// does not hold it.
		_, err = s.SetPolicy(t.Context(), tn.ID, a.ID, nil)
		require.NoError(t, err)
		_, err = s.DeleteLicense(t.Context(), tn.ID, b.ID)
		require.NoError(t, err)
		require.NoError(t, s.DeleteGroup(t.Context(), tn.ID, "night"))
		err = s.DeleteGroup(t.Context(), tn.ID, "night")
		requireCode(t, err, server.ENOTFOUND, server.ReasonGroupNotFound, "deleted twice")
		gs, err = s.ListGroups(t.Context(), tn.ID)
		require.NoError(t, err)
		require.Len(t, gs, 1)
	})

	t.Run("GroupQuota", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		for i := range server.MaxTenantGroups {
			_, err := s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: fmt.Sprintf("g%04d", i), Kind: server.SubjectGroup, Members: []string{"a"}})
			require.NoError(t, err)
		}
		_, err := s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "one-more", Kind: server.SubjectGroup, Members: []string{"a"}})
		requireCode(t, err, server.EEXHAUSTED, server.ReasonQuotaExceeded)
		require.Equal(t, "groups", errMeta(err)["quota"])
		// Changing one at the quota is not a new one.
		putGroup(t, s, tn.ID, "g0000", server.SubjectHostGroup, "h")
		gs, err := s.ListGroups(t.Context(), tn.ID)
		require.NoError(t, err)
		require.Len(t, gs, server.MaxTenantGroups)
	})

	t.Run("ConcurrentAcquisitionsKeepReservationsAndCaps", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		const users, callers, limit, reserved = 25, 50, 6, 2
		var everyone, night []string
		for i := range users {
			everyone = append(everyone, fmt.Sprintf("u%02d", i))
		}
		night = everyone[:5]
		putGroup(t, s, tn.ID, "everyone", server.SubjectGroup, everyone...)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, night...)
		lic := newLicense(t, s, tn.ID, seats(limit))
		setPolicy(t, s, lic, reserveRule("", reserved, groupS("night")), maxEach("", 1, groupS("everyone")))

		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				_, _, err := tryAcquire(t.Context(), s, lic.Key, fmt.Sprintf("fp%02d", i), as(everyone[i%users], fmt.Sprintf("h%02d", i)))
				if err != nil && !isCode(err, server.EEXHAUSTED, server.ReasonUserLimit) &&
					!isCode(err, server.EEXHAUSTED, server.ReasonSeatsReserved) && !isCode(err, server.EEXHAUSTED, server.ReasonSeatsExhausted) {
					t.Errorf("acquire %d: %v", i, err)
				}
			})
		}
		wg.Wait()

		held := listLeases(t, s, tn.ID, lic.ID, server.LeaseActive)
		perUser := map[string]int{}
		inReserve, shared := 0, 0
		for _, l := range held {
			perUser[l.User]++
			if l.Reservation != "" {
				require.Equal(t, reservationKey(groupS("night")), l.Reservation)
				require.Contains(t, night, l.User, "only members take reserved seats")
				inReserve++
			} else {
				shared++
			}
		}
		for u, n := range perUser {
			require.LessOrEqual(t, n, 1, "user %s holds more than its cap", u)
		}
		require.Len(t, held, limit, "demand fills every seat")
		require.Equal(t, reserved, inReserve, "the members took the reserved seats")
		require.LessOrEqual(t, shared, limit-reserved, "no one took a reserved seat as a shared one")
		require.Equal(t, limit, seatsInUse(t, s, tn.ID, lic.ID))
	})

	// A roomy license and a large group: the counts a store may read no
	// further than its verdict needs (the distributed store's upper
	// bounds, its reservations of others left uncounted while the free
	// seats outnumber them) still judge as exactly.
	t.Run("LargeGroupOnARoomyLicense", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		var members []string
		for i := range 40 {
			members = append(members, fmt.Sprintf("m%02d", i))
		}
		putGroup(t, s, tn.ID, "big", server.SubjectGroup, members...)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		lic := newLicense(t, s, tn.ID, seats(100))
		setPolicy(t, s, lic, maxRule("", 3, groupS("big")), reserveRule("", 2, groupS("night")), reserveRule("", 5, groupS("big")))
		for i := range 5 { // holders outside the group: more than the cap
			acquire(t, s, lic, fmt.Sprintf("o%d", i), as(fmt.Sprintf("other%d", i), "h"))
		}
		for i := range 3 {
			acquire(t, s, lic, fmt.Sprintf("g%d", i), as(members[i*7], "h"))
		}
		meta := refused(t, s, lic.Key, "g3", as(members[39], "h"), server.EEXHAUSTED, server.ReasonGroupLimit, "the 40-member group holds 3")
		require.Equal(t, "3", meta["in_use"])

		night := reservationKey(groupS("night"))
		a1, tokA1 := acquire(t, s, lic, "a1", as("ann", "h"))
		require.Equal(t, night, a1.Lease.Reservation)
		b1, _ := acquire(t, s, lic, "b1", as("bob", "h"))
		require.Equal(t, night, b1.Lease.Reservation)
		a2, _ := acquire(t, s, lic, "a2", as("ann", "h"))
		require.Empty(t, a2.Lease.Reservation, "the reservation is full: a shared seat")
		release(t, s, a1.Lease.ID, tokA1)
		a3, _ := acquire(t, s, lic, "a3", as("ann", "h"))
		require.Equal(t, night, a3.Lease.Reservation, "the released reserved seat is the group's again")
		require.Equal(t, 11, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("LapsedLeaseDoesNotCount", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
		lic := newLicense(t, s, tn.ID, with(seats(2), leaseTTL(lapsingTTL(s))))
		setPolicy(t, s, lic, maxRule("", 1, userS("ann")), reserveRule("", 1, groupS("night")))
		a, _ := acquire(t, s, lic, "a1", as("ann", "h"))
		require.NotEmpty(t, a.Lease.Reservation)
		refused(t, s, lic.Key, "a2", as("ann", "h"), server.EEXHAUSTED, server.ReasonUserLimit)
		_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.LeaseTTL = longTTL; return nil })
		require.NoError(t, err)
		passDeadlines(t, s, a.Lease)
		b, _ := acquire(t, s, lic, "a2", as("ann", "h"))
		require.Equal(t, a.Lease.Reservation, b.Lease.Reservation, "the lapsed lease holds neither the cap nor the reserved seat")
		acquire(t, s, lic, "c1", as("carl", "h"))
	})

	w.run("RevivalIsJudgedByThePolicy", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
		lapsing := func(l *server.License) { l.Seats, l.LeaseTTL, l.RevivalWindow = 2, shortTTL, time.Minute }
		long := func(l *server.License) error { l.LeaseTTL = longTTL; return nil }

		// A cap: the user took another seat meanwhile.
		capped := newLicense(t, s, tn.ID, lapsing)
		setPolicy(t, s, capped, maxRule("", 1, userS("ann")))
		a, tokA := acquire(t, s, capped, "a1", as("ann", "h"))
		// A reservation: of the 2 seats free, both are night's; carl's
		// lapsed lease was a shared one. ann's own reserved seat is hers
		// to revive.
		reserving := newLicense(t, s, tn.ID, func(l *server.License) { lapsing(l); l.Seats = 3 })
		setPolicy(t, s, reserving, reserveRule("", 2, groupS("night")))
		c, tokC := acquire(t, s, reserving, "c1", as("carl", "h"))
		r, tokR := acquire(t, s, reserving, "a1", as("ann", "h"))
		require.NotEmpty(t, r.Lease.Reservation)
		// And a license where nothing stands in the way.
		free := newLicense(t, s, tn.ID, lapsing)
		setPolicy(t, s, free, maxRule("", 1, userS("ann")))
		f, tokF := acquire(t, s, free, "a1", as("ann", "h"))
		for _, l := range []server.License{capped, reserving, free} {
			_, err := s.UpdateLicense(t.Context(), tn.ID, l.ID, long)
			require.NoError(t, err)
		}
		passDeadlines(t, s, a.Lease, c.Lease, r.Lease, f.Lease)

		acquire(t, s, capped, "a2", as("ann", "h"))
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "its revival would break the cap (a seat is free)")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, capped.ID))

		acquire(t, s, reserving, "d1", as("dee", "h")) // a shared seat: 0 in use + 2 reserved < 3
		_, err = s.Heartbeat(t.Context(), c.Lease.ID, server.HashSecret(tokC))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "the seats free are night's")
		hb := heartbeat(t, s, r.Lease.ID, tokR)
		require.Equal(t, r.Lease.Reservation, hb.Reservation, "revived in its own reserved seat")
		require.Equal(t, 2, seatsInUse(t, s, tn.ID, reserving.ID))

		heartbeat(t, s, f.Lease.ID, tokF) // revived: within its cap
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, free.ID))
	})

	// Invariant: an observed end is final. A lapsed lease may come back
	// without being judged (a crash's write-behind slack gives every
	// active lease time back), so a grant that was judged without it ends
	// it if, back, it would break the grant's cap or reservation; the
	// lapsed leases in no such way stay, and may revive.
	w.run("GrantEndsTheLapsedLeasesInItsWay", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
		lapsing := func(n int) func(*server.License) {
			return func(l *server.License) { l.Seats, l.LeaseTTL, l.RevivalWindow = n, lapsingTTL(s), time.Hour }
		}
		long := func(l *server.License) error { l.LeaseTTL = longTTL; return nil }

		capped := newLicense(t, s, tn.ID, lapsing(5))
		setPolicy(t, s, capped, maxRule("", 1, userS("bob")))
		b1, _ := acquire(t, s, capped, "b1", as("bob", "h1"))
		c1, tokC := acquire(t, s, capped, "c1", as("carl", "h3"))
		// 3 seats, 1 night's: x1's shared seat back would leave night's to
		// x2 and x3.
		reserving := newLicense(t, s, tn.ID, lapsing(3))
		setPolicy(t, s, reserving, reserveRule("", 1, groupS("night")))
		x1, _ := acquire(t, s, reserving, "x1", as("xavier", "h1"))
		for _, l := range []server.License{capped, reserving} {
			_, err := s.UpdateLicense(t.Context(), tn.ID, l.ID, long)
			require.NoError(t, err)
		}
		passDeadlines(t, s, b1.Lease, c1.Lease, x1.Lease)

		acquire(t, s, capped, "b2", as("bob", "h2"))
		require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, b1.Lease.ID).State, "bob's lapsed lease, back, would break his cap")
		require.Len(t, cleanupOf(cleanupEvents(t, s, tn.ID, capped.ID), b1.Lease.ID), 1)
		require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, c1.Lease.ID).State, "carl's is in no one's way")
		heartbeat(t, s, c1.Lease.ID, tokC) // and revives

		acquire(t, s, reserving, "y1", as("yves", "h2"))
		require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, x1.Lease.ID).State, "1 + 1 + 1 reserved fits 3 seats")
		acquire(t, s, reserving, "z1", as("zoe", "h3"))
		require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, x1.Lease.ID).State, "back, it would take night's seat")
		a, _ := acquire(t, s, reserving, "a1", as("ann", "h4"))
		require.Equal(t, reservationKey(groupS("night")), a.Lease.Reservation)
	})

	w.run("PolicyAndGroupsSurviveReopen", func(t *testing.T) {
		open := newBackend(t)
		s := openReopenable(t, open)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		lic := newLicense(t, s, tn.ID, seats(3))
		g := newGrant(t, s, lic, "render", grantSeats(2))
		rules := []server.PolicyRule{reserveRule("", 1, groupS("night")), maxRule("", 1, userS("ann")), maxRule("render", 1, userS("ann"))}
		setPolicy(t, s, lic, rules...)
		a, tokA := acquire(t, s, lic, "a1", as("ann", "h"))
		acquireFeature(t, s, lic, g, "a1", "", as("ann", "h"))
		require.NoError(t, s.Close())

		s2 := openWith(t, open)
		got := getLicense(t, s2, tn.ID, lic.ID)
		require.NotNil(t, got.Policy)
		require.Equal(t, rules, got.Policy.Rules)
		require.Equal(t, map[string][]string{"night": {"ann", "bob"}}, groupMembers(got.Policy))
		gs, err := s2.ListGroups(t.Context(), tn.ID)
		require.NoError(t, err)
		require.Len(t, gs, 1)
		require.Equal(t, []string{"ann", "bob"}, gs[0].Members)
		hb := heartbeat(t, s2, a.Lease.ID, tokA)
		require.Equal(t, reservationKey(groupS("night")), hb.Reservation, "the lease keeps the reservation it took")
		refused(t, s2, lic.Key, "a2", as("ann", "h"), server.EEXHAUSTED, server.ReasonUserLimit, "held leases count after a reopen")
		refused(t, s2, lic.Key, "a2", with2(ofFeature("render", ""), as("ann", "h")), server.EEXHAUSTED, server.ReasonUserLimit)
		b, _ := acquire(t, s2, lic, "b1", as("bob", "h"))
		require.Empty(t, b.Lease.Reservation, "night's one seat is ann's")
		// Groups still change after a reopen, and judge at once.
		putGroup(t, s2, tn.ID, "night", server.SubjectGroup, "bob")
		acquire(t, s2, lic, "c1", as("carl", "h"))
	})
}
