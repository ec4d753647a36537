package server

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPriorityValidate: a priority's level is bounded, the error naming
// the field; the rest of a priority is judged as a rule's subject and
// feature are (TestPolicyValidate).
func TestPriorityValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		level int
		ok    bool
	}{
		{"lowest", MinPriorityLevel, true},
		{"highest", MaxPriorityLevel, true},
		{"zero", 0, true},
		{"below the range", MinPriorityLevel - 1, false},
		{"above the range", MaxPriorityLevel + 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Policy{Priorities: []Priority{
				{Subject: user("alice"), Level: 1},
				{Feature: "render", Subject: group("night"), Level: c.level},
			}}
			err := p.Validate(policyLicense(), policyGroups())
			if c.ok {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, EINVALID, e.Code)
			require.Equal(t, "priorities[1].level", e.Field)
			require.Contains(t, e.Message, "must be from -1000 to 1000")
		})
	}
}

// TestPriorityLevel: a waiter's level is the highest of the priorities of
// its feature naming its user, its host (without case), a group of its
// user or a host group of its host; 0 when none does, and priorities of
// other features (or the base pool) never count.
func TestPriorityLevel(t *testing.T) {
	gs := policyGroups()
	p := &Policy{
		Priorities: []Priority{
			{Subject: group("night"), Level: 5},                   // alice, bob
			{Subject: user("bob"), Level: 2},                      // lower than night's: night's wins
			{Subject: hostGroup("farm"), Level: -10},              // Node1.example, node2
			{Subject: host("WS-9"), Level: 7},                     //
			{Feature: "render", Subject: group("day"), Level: 30}, // bob, carol
			{Feature: "render", Subject: user("dave"), Level: -1},
		},
		Groups: groupList(gs),
	}
	require.NoError(t, p.Validate(policyLicense(), gs))
	for _, c := range []struct {
		feature, user, host string
		level               int
	}{
		{"", "alice", "", 5},
		{"", "bob", "", 5},
		{"", "carol", "", 0},
		{"", "erin", "node1.EXAMPLE", -10},
		{"", "alice", "node2", 5}, // the highest of night's 5 and farm's -10
		{"", "erin", "ws-9", 7},
		{"", "", "", 0},
		{"render", "bob", "", 30},
		{"render", "alice", "", 0}, // night's priority is of the base pool
		{"render", "dave", "", -1},
		{"sim", "bob", "", 0},
	} {
		require.Equal(t, c.level, p.PriorityLevel(c.feature, Identity{User: c.user, Host: c.host}), "%+v", c)
	}
	var none *Policy
	require.Zero(t, none.PriorityLevel("", Identity{User: "alice"}))
	// The entries' order does not matter: the highest wins.
	p.Priorities[0], p.Priorities[1] = p.Priorities[1], p.Priorities[0]
	require.Equal(t, 5, p.PriorityLevel("", Identity{User: "bob"}))
	// A group the policy's copy does not hold (or holds of the other
	// kind) names no one.
	p.Groups = nil
	require.Equal(t, 2, p.PriorityLevel("", Identity{User: "bob"}))
	require.Zero(t, p.PriorityLevel("", Identity{User: "alice"}))
}
