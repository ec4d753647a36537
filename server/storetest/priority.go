package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Priorities (Policy.Priorities, server/priority.go): the order of
// WaitForSeat's queue, which the service resolves from the license the
// store answers (Policy.PriorityLevel over Policy.Groups). A store keeps
// them as set, validated with the rest of the policy (a level out of
// range refused naming it), fills the groups they name, keeps those
// groups current, and counts them as naming the group (in use); it judges
// no acquisition by them: priorities with reservations, a reserved seat is
// still only its members'.
func testPriorities(t *testing.T, newBackend Backend) {
	t.Run("PrioritiesAreKeptWithTheirGroups", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(3))
		newGrant(t, s, lic, "render", grantSeats(1))
		putGroup(t, s, tn.ID, "designers", server.SubjectGroup, "dana")
		putGroup(t, s, tn.ID, "farm", server.SubjectHostGroup, "Build-1")
		ps := []server.Priority{
			{Subject: groupS("designers"), Level: 10},
			{Feature: "render", Subject: hostGroupS("farm"), Level: -5},
			{Subject: userS("bob"), Level: server.MaxPriorityLevel},
		}
		set, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Priorities: ps})
		require.NoError(t, err, "a policy of priorities alone")
		require.NotNil(t, set.Policy)
		require.Equal(t, ps, set.Policy.Priorities)
		for _, got := range []server.License{set, getLicense(t, s, tn.ID, lic.ID), licenseByKey(t, s, lic.Key), listLicenses(t, s, tn.ID, 10)[0]} {
			require.NotNil(t, got.Policy)
			require.Equal(t, ps, got.Policy.Priorities)
			require.Equal(t, map[string][]string{"designers": {"dana"}, "farm": {"Build-1"}}, groupMembers(got.Policy),
				"Policy.Groups holds the groups only priorities name")
		}
		byKey := licenseByKey(t, s, lic.Key).Policy
		require.Equal(t, 10, byKey.PriorityLevel("", server.Identity{User: "dana"}))
		require.Equal(t, -5, byKey.PriorityLevel("render", server.Identity{Host: "build-1"}))
		require.Zero(t, byKey.PriorityLevel("render", server.Identity{User: "dana"}))

		// A group change reaches the priorities naming it at once.
		putGroup(t, s, tn.ID, "designers", server.SubjectGroup, "dana", "dora")
		require.Equal(t, 10, licenseByKey(t, s, lic.Key).Policy.PriorityLevel("", server.Identity{User: "dora"}))

		// A group a priority names is in use: not deleted, nor its kind
		// changed.
		err = s.DeleteGroup(t.Context(), tn.ID, "designers")
		requireCode(t, err, server.EPRECONDITION, server.ReasonGroupInUse)
		require.Contains(t, err.Error(), lic.ID)
		_, err = s.PutGroup(t.Context(), server.Group{TenantID: tn.ID, Name: "farm", Kind: server.SubjectGroup, Members: []string{"ann"}})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument)
		require.Equal(t, "priorities[1].subject.name", errField(err))

		// Refused, naming the field; the policy in force stays.
		for field, bad := range map[string]server.Priority{
			"priorities[0].level":        {Subject: userS("bob"), Level: server.MaxPriorityLevel + 1},
			"priorities[0].feature":      {Feature: "cad", Subject: userS("bob"), Level: 1},
			"priorities[0].subject.name": {Subject: groupS("ghost"), Level: 1},
		} {
			_, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Priorities: []server.Priority{bad}})
			requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, field)
			require.Equal(t, field, errField(err))
		}
		require.Equal(t, ps, getLicense(t, s, tn.ID, lic.ID).Policy.Priorities, "nothing changed")

		// A priority-only policy refuses no one; removed, the group is free.
		acquire(t, s, lic, "x1", as("xavier", "h"))
		_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, nil)
		require.NoError(t, err)
		require.NoError(t, s.DeleteGroup(t.Context(), tn.ID, "designers"))
	})

	t.Run("PriorityWithReservations", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "alice")
		putGroup(t, s, tn.ID, "designers", server.SubjectGroup, "dave")
		lic := newLicense(t, s, tn.ID, seats(2))
		rules := []server.PolicyRule{reserveRule("", 1, groupS("night")), maxRule("", 1, groupS("designers"))}
		ps := []server.Priority{{Subject: groupS("designers"), Level: 10}, {Subject: groupS("night"), Level: -1}}
		set, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Rules: rules, Priorities: ps})
		require.NoError(t, err)
		require.Equal(t, rules, set.Policy.Rules)
		require.Equal(t, ps, set.Policy.Priorities)

		// The highest level is no pass: dave, first in the queue, takes
		// the shared seat, and is refused night's; alice, last, takes it.
		p := licenseByKey(t, s, lic.Key).Policy
		require.Equal(t, 10, p.PriorityLevel("", server.Identity{User: "dave"}))
		require.Equal(t, -1, p.PriorityLevel("", server.Identity{User: "alice"}))
		d, _ := acquire(t, s, lic, "d1", as("dave", "h"))
		require.Empty(t, d.Lease.Reservation)
		refused(t, s, lic.Key, "d2", as("dave", "h2"), server.EEXHAUSTED, server.ReasonGroupLimit, "designers' cap")
		refused(t, s, lic.Key, "e1", as("erin", "h"), server.EEXHAUSTED, server.ReasonSeatsReserved, "night's seat")
		a, _ := acquire(t, s, lic, "a1", as("alice", "h"))
		require.Equal(t, reservationKey(groupS("night")), a.Lease.Reservation)
		require.Equal(t, 2, seatsInUse(t, s, tn.ID, lic.ID))
	})
}
