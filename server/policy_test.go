package server

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// policyLicense has 5 base seats, feature render in two grants (3 + 2
// seats, overdraft not reserved) and feature sim (4 seats).
func policyLicense() *License {
	return &License{ID: "lic_p", TenantID: "tnt", Seats: 5, Grants: []Grant{
		{ID: "lic_p.00000001", Feature: "render", Seats: 3, Overdraft: 2},
		{ID: "lic_p.00000002", Feature: "render", Seats: 2},
		{ID: "lic_p.00000003", Feature: "sim", Seats: 4},
	}}
}

func policyGroups() map[string]Group {
	gs := map[string]Group{}
	for _, g := range []Group{
		{TenantID: "tnt", Name: "night", Kind: SubjectGroup, Members: []string{"alice", "bob"}},
		{TenantID: "tnt", Name: "day", Kind: SubjectGroup, Members: []string{"bob", "carol"}},
		{TenantID: "tnt", Name: "farm", Kind: SubjectHostGroup, Members: []string{"Node1.example", "node2"}},
	} {
		gs[g.Name] = g
	}
	return gs
}

func groupList(gs map[string]Group) []Group {
	var out []Group
	for _, g := range gs {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func user(n string) Subject      { return Subject{Kind: SubjectUser, Name: n} }
func host(n string) Subject      { return Subject{Kind: SubjectHost, Name: n} }
func group(n string) Subject     { return Subject{Kind: SubjectGroup, Name: n} }
func hostGroup(n string) Subject { return Subject{Kind: SubjectHostGroup, Name: n} }

func TestPolicyValidate(t *testing.T) {
	many := make([]PolicyRule, MaxPolicyRules+1)
	for i := range many {
		many[i] = PolicyRule{Kind: RuleInclude, Subject: user("u" + strings.Repeat("x", i%100) + string(rune('a'+i/100)))}
	}
	for _, c := range []struct {
		name    string
		p       *Policy
		field   string // "" valid
		message string
	}{
		{name: "nil policy", p: nil},
		{name: "every kind of rule", p: &Policy{
			Rules: []PolicyRule{
				{Kind: RuleReserve, Feature: "render", Count: 2, Subject: group("night")},
				{Kind: RuleReserve, Feature: "render", Count: 3, Subject: user("carol")}, // 5 of render's 5 seats
				{Kind: RuleMax, Feature: "render", Count: 2, Subject: group("night")},
				{Kind: RuleMax, Feature: "render", Count: 1, Subject: group("night"), EachMember: true},
				{Kind: RuleMax, Count: 1, Subject: hostGroup("farm"), EachMember: true},
				{Kind: RuleMax, Count: 3, Subject: host("node9")},
				{Kind: RuleInclude, Feature: "sim", Subject: group("day")},
				{Kind: RuleExclude, Feature: "sim", Subject: user("bob")},
				{Kind: RuleReserve, Count: 5, Subject: hostGroup("farm")},
			},
			Linger:     []Linger{{Feature: "sim", Duration: time.Hour}, {Duration: 0}},
			Priorities: []Priority{{Feature: "render", Subject: group("night"), Level: 2}},
		}},
		{name: "unknown kind", p: &Policy{Rules: []PolicyRule{{Kind: "limit", Count: 1, Subject: user("a")}}},
			field: "rules[0].kind", message: `must be reserve, max, include or exclude (got "limit")`},
		{name: "unknown feature", p: &Policy{Rules: []PolicyRule{{Kind: RuleInclude, Subject: user("a")}, {Kind: RuleInclude, Feature: "cad", Subject: user("a")}}},
			field: "rules[1].feature", message: `license has no grant of feature "cad"`},
		{name: "reserve without count", p: &Policy{Rules: []PolicyRule{{Kind: RuleReserve, Feature: "sim", Subject: user("a")}}},
			field: "rules[0].count", message: "must be at least 1"},
		{name: "max too high", p: &Policy{Rules: []PolicyRule{{Kind: RuleMax, Count: MaxPolicyCount + 1, Subject: user("a")}}},
			field: "rules[0].count", message: "must be at most 1000000"},
		{name: "include with a count", p: &Policy{Rules: []PolicyRule{{Kind: RuleInclude, Count: 1, Subject: user("a")}}},
			field: "rules[0].count", message: "must be 0 for an include rule"},
		{name: "exclude with a count", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Count: 2, Subject: user("a")}}},
			field: "rules[0].count", message: "must be 0 for an exclude rule"},
		{name: "unknown subject kind", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Subject: Subject{Kind: "display", Name: ":0"}}}},
			field: "rules[0].subject.kind", message: `must be user, host, group or host_group (got "display")`},
		{name: "empty name", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Subject: user("")}}},
			field: "rules[0].subject.name", message: "must not be empty"},
		{name: "control character", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Subject: user("a\x00b")}}},
			field: "rules[0].subject.name", message: "no control characters"},
		{name: "name with a space around", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Subject: user("alice ")}}},
			field: "rules[0].subject.name", message: "must not begin or end with a space"},
		{name: "name too long", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Subject: user(strings.Repeat("a", MaxPolicyName+1))}}},
			field: "rules[0].subject.name", message: "must be at most 128 bytes"},
		{name: "unknown group", p: &Policy{Rules: []PolicyRule{{Kind: RuleReserve, Count: 1, Subject: group("ghost")}}},
			field: "rules[0].subject.name", message: `group "ghost" does not exist`},
		{name: "group name with a slash", p: &Policy{Rules: []PolicyRule{{Kind: RuleInclude, Subject: hostGroup("eng/ops")}}},
			field: "rules[0].subject.name", message: "must not contain '/'"},
		{name: "a user's name may hold a slash", p: &Policy{Rules: []PolicyRule{{Kind: RuleExclude, Subject: user("ou/bob")}}}},
		{name: "group of the other kind", p: &Policy{Rules: []PolicyRule{{Kind: RuleInclude, Subject: group("farm")}}},
			field: "rules[0].subject.name", message: `"farm" is a host_group, not a group`},
		{name: "each member of a user", p: &Policy{Rules: []PolicyRule{{Kind: RuleMax, Count: 1, Subject: user("a"), EachMember: true}}},
			field: "rules[0].each_member", message: "only a max rule on a group or host_group"},
		{name: "each member of a reservation", p: &Policy{Rules: []PolicyRule{{Kind: RuleReserve, Count: 1, Subject: group("night"), EachMember: true}}},
			field: "rules[0].each_member", message: "only a max rule on a group or host_group"},
		{name: "duplicate rule", p: &Policy{Rules: []PolicyRule{
			{Kind: RuleMax, Feature: "sim", Count: 1, Subject: user("a")},
			{Kind: RuleMax, Feature: "render", Count: 1, Subject: user("a")},
			{Kind: RuleMax, Feature: "sim", Count: 3, Subject: user("a")},
		}}, field: "rules[2]", message: "duplicates rules[0]"},
		{name: "duplicate host rule in another case", p: &Policy{Rules: []PolicyRule{
			{Kind: RuleExclude, Subject: host("Node7.Example")},
			{Kind: RuleExclude, Subject: host("node7.example")},
		}}, field: "rules[1]", message: "duplicates rules[0]"},
		{name: "include and exclude of one subject may both be", p: &Policy{Rules: []PolicyRule{
			{Kind: RuleInclude, Subject: user("a")},
			{Kind: RuleExclude, Subject: user("a")},
		}}},
		{name: "reservations sum over a feature's seats", p: &Policy{Rules: []PolicyRule{
			{Kind: RuleReserve, Feature: "render", Count: 4, Subject: group("night")},
			{Kind: RuleReserve, Feature: "sim", Count: 4, Subject: group("night")},
			{Kind: RuleReserve, Feature: "render", Count: 3, Subject: user("carol")},
		}}, field: "rules", message: "reservations of render sum to 7, more than its 5 seats"},
		{name: "reservations sum over the base pool's seats", p: &Policy{Rules: []PolicyRule{
			{Kind: RuleReserve, Count: 6, Subject: user("carol")},
		}}, field: "rules", message: "reservations of the base pool sum to 6, more than its 5 seats"},
		{name: "too many rules", p: &Policy{Rules: many}, field: "rules", message: "must be at most 1000 rules"},
		{name: "linger of an unknown feature", p: &Policy{Linger: []Linger{{Feature: "cad", Duration: time.Minute}}},
			field: "linger[0].feature", message: `license has no grant of feature "cad"`},
		{name: "negative linger", p: &Policy{Linger: []Linger{{Duration: -time.Second}}},
			field: "linger[0].duration", message: "must not be negative"},
		{name: "linger too long", p: &Policy{Linger: []Linger{{Duration: 25 * time.Hour}}},
			field: "linger[0].duration", message: "must be at most 24h0m0s"},
		{name: "two lingers of a feature", p: &Policy{Linger: []Linger{{Feature: "sim"}, {Feature: "sim", Duration: time.Second}}},
			field: "linger[1].feature", message: "sim already has a linger (linger[0])"},
		{name: "priority of an unknown group", p: &Policy{Priorities: []Priority{{Subject: hostGroup("ghost")}}},
			field: "priorities[0].subject.name", message: `host_group "ghost" does not exist`},
		{name: "two priorities of a subject", p: &Policy{Priorities: []Priority{{Subject: host("A")}, {Subject: host("a"), Level: 1}}},
			field: "priorities[1]", message: "duplicates priorities[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate(policyLicense(), policyGroups())
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, EINVALID, e.Code)
			require.Equal(t, ReasonInvalidArgument, e.Reason)
			require.Equal(t, c.field, e.Field)
			require.Contains(t, e.Message, c.message)
		})
	}
}

func TestGroupValidate(t *testing.T) {
	for _, c := range []struct {
		name    string
		g       Group
		field   string
		message string
	}{
		{name: "users", g: Group{Name: "night", Kind: SubjectGroup, Members: []string{"alice", "Alice"}}},
		{name: "hosts", g: Group{Name: "farm", Kind: SubjectHostGroup, Members: []string{"n1", "n2"}}},
		{name: "a slash in a member's name", g: Group{Name: "x", Kind: SubjectGroup, Members: []string{"ou/bob"}}},
		{name: "no members", g: Group{Name: "empty", Kind: SubjectGroup}, field: "group.members", message: "must hold at least one member"},
		{name: "no members, empty list", g: Group{Name: "empty", Kind: SubjectHostGroup, Members: []string{}}, field: "group.members", message: "at least one member"},
		{name: "a slash in the name", g: Group{Name: "eng/ops", Kind: SubjectGroup, Members: []string{"a"}}, field: "group.name",
			message: "must not contain '/': the REST API names a group in its path"},
		{name: "bad name", g: Group{Name: "", Kind: SubjectGroup}, field: "group.name", message: "must not be empty"},
		{name: "bad kind", g: Group{Name: "x", Kind: SubjectUser}, field: "group.kind", message: `must be group or host_group (got "user")`},
		{name: "empty member", g: Group{Name: "x", Kind: SubjectGroup, Members: []string{"a", ""}}, field: "group.members[1]", message: "must not be empty"},
		{name: "member twice", g: Group{Name: "x", Kind: SubjectGroup, Members: []string{"a", "b", "a"}}, field: "group.members[2]", message: `"a" is listed twice (also members[0])`},
		{name: "host twice in another case", g: Group{Name: "x", Kind: SubjectHostGroup, Members: []string{"N1", "n1"}}, field: "group.members[1]", message: "listed twice"},
		{name: "too many", g: Group{Name: "x", Kind: SubjectGroup, Members: make([]string, MaxGroupMembers+1)}, field: "group.members", message: "at most 10000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.g.Validate("group")
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.True(t, errors.As(err, &e), "got %v", err)
			require.Equal(t, c.field, e.Field)
			require.Contains(t, e.Message, c.message)
		})
	}
}

func TestDecide(t *testing.T) {
	p := &Policy{
		Rules: []PolicyRule{
			/* 0 */ {Kind: RuleReserve, Feature: "render", Count: 2, Subject: group("night")},
			/* 1 */ {Kind: RuleMax, Feature: "render", Count: 3, Subject: group("night")},
			/* 2 */ {Kind: RuleReserve, Feature: "render", Count: 1, Subject: user("alice")},
			/* 3 */ {Kind: RuleMax, Feature: "render", Count: 1, Subject: group("day"), EachMember: true},
			/* 4 */ {Kind: RuleMax, Feature: "render", Count: 2, Subject: host("Node1.EXAMPLE")},
			/* 5 */ {Kind: RuleMax, Feature: "render", Count: 4, Subject: hostGroup("farm")},
			/* 6 */ {Kind: RuleMax, Feature: "render", Count: 1, Subject: hostGroup("farm"), EachMember: true},
			/* 7 */ {Kind: RuleMax, Feature: "render", Count: 2, Subject: user("carol")},
			/* 8 */ {Kind: RuleInclude, Feature: "sim", Subject: group("day")},
			/* 9 */ {Kind: RuleInclude, Feature: "sim", Subject: hostGroup("farm")},
			/* 10 */ {Kind: RuleExclude, Feature: "sim", Subject: group("night")},
			/* 11 */ {Kind: RuleExclude, Subject: host("kiosk")},
			/* 12 */ {Kind: RuleReserve, Feature: "sim", Count: 1, Subject: host("NODE2")},
		},
		Groups: groupList(policyGroups()),
	}
	require.NoError(t, p.Validate(policyLicense(), policyGroups()))
	c := Compile(p)
	for _, tc := range []struct {
		name    string
		feature string
		id      Identity
		want    Decision
	}{
		{name: "no rule of the base pool names alice", id: Identity{User: "alice", Host: "h"}, want: Decision{}},
		{name: "no rules for a feature", feature: "cad", id: Identity{User: "alice"}, want: Decision{}},
		{name: "excluded host, case aside", id: Identity{User: "alice", Host: "KIOSK"},
			want: Decision{Refusal: &PolicyRefusal{Reason: ReasonExcluded, Rule: 11, Subject: host("kiosk")}}},
		{name: "exclude wins over include: bob is in day and night", feature: "sim", id: Identity{User: "bob", Host: "h"},
			want: Decision{Refusal: &PolicyRefusal{Reason: ReasonExcluded, Rule: 10, Subject: group("night")}}},
		{name: "not included", feature: "sim", id: Identity{User: "dave", Host: "h"},
			want: Decision{Refusal: &PolicyRefusal{Reason: ReasonNotIncluded, Rule: -1}}},
		{name: "no user claimed is in no group", feature: "sim", id: Identity{Host: "h"},
			want: Decision{Refusal: &PolicyRefusal{Reason: ReasonNotIncluded, Rule: -1}}},
		{name: "included by user group", feature: "sim", id: Identity{User: "carol", Host: "h"},
			want: Decision{Reservations: []Reservation{{Key: "r:host\x00node2", Seats: 1, Rule: 12, Subject: host("NODE2")}}}},
		{name: "included by host group, case aside", feature: "sim", id: Identity{User: "dave", Host: "node2"},
			want: Decision{Reservations: []Reservation{{Key: "r:host\x00node2", Seats: 1, Member: true, Rule: 12, Subject: host("NODE2")}}}},
		{name: "alice on node1: member of two reservations, whole-group and per-host caps", feature: "render", id: Identity{User: "alice", Host: "node1.example"},
			want: Decision{
				Caps: []Cap{
					{Key: "g:night", Limit: 3, Reason: ReasonGroupLimit, Rule: 1, Subject: group("night")},
					{Key: "h:node1.example", Limit: 2, Reason: ReasonHostLimit, Rule: 4, Subject: host("Node1.EXAMPLE")},
					{Key: "hg:farm", Limit: 4, Reason: ReasonGroupLimit, Rule: 5, Subject: hostGroup("farm")},
					{Key: "hh:farm\x00node1.example", Limit: 1, Reason: ReasonHostLimit, Rule: 6, Subject: hostGroup("farm"), EachMember: true},
				},
				Reservations: []Reservation{
					{Key: "r:group\x00night", Seats: 2, Member: true, Rule: 0, Subject: group("night")},
					{Key: "r:user\x00alice", Seats: 1, Member: true, Rule: 2, Subject: user("alice")},
				},
			}},
		{name: "carol: each member of day, her own cap; no reservation of hers", feature: "render", id: Identity{User: "carol", Host: "ws"},
			want: Decision{
				Caps: []Cap{
					{Key: "gu:day\x00carol", Limit: 1, Reason: ReasonUserLimit, Rule: 3, Subject: group("day"), EachMember: true},
					{Key: "u:carol", Limit: 2, Reason: ReasonUserLimit, Rule: 7, Subject: user("carol")},
				},
				Reservations: []Reservation{
					{Key: "r:group\x00night", Seats: 2, Rule: 0, Subject: group("night")},
					{Key: "r:user\x00alice", Seats: 1, Rule: 2, Subject: user("alice")},
				},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, c.Decide(tc.feature, tc.id))
		})
	}
	require.Equal(t, Decision{}, (*CompiledPolicy)(nil).Decide("render", Identity{User: "alice"}))
	require.Nil(t, Compile(nil))
}

// TestDecideKeysIgnoreRuleOrder: a counter's key depends on its subject
// alone, so the leases counted under it keep counting when the rules are
// reordered.
func TestDecideKeysIgnoreRuleOrder(t *testing.T) {
	rules := []PolicyRule{
		{Kind: RuleReserve, Feature: "render", Count: 2, Subject: group("night")},
		{Kind: RuleMax, Feature: "render", Count: 3, Subject: group("night")},
		{Kind: RuleMax, Feature: "render", Count: 1, Subject: group("night"), EachMember: true},
		{Kind: RuleMax, Feature: "render", Count: 2, Subject: user("alice")},
		{Kind: RuleMax, Feature: "render", Count: 2, Subject: host("NODE1.example")},
		{Kind: RuleReserve, Feature: "render", Count: 1, Subject: host("node1.EXAMPLE")},
	}
	reversed := slices.Clone(rules)
	slices.Reverse(reversed)
	keys := func(rules []PolicyRule) (caps, reservations []string) {
		d := Compile(&Policy{Rules: rules, Groups: groupList(policyGroups())}).Decide("render", Identity{User: "alice", Host: "Node1.Example"})
		for _, c := range d.Caps {
			caps = append(caps, c.Key)
		}
		for _, r := range d.Reservations {
			reservations = append(reservations, r.Key)
		}
		slices.Sort(caps)
		slices.Sort(reservations)
		return caps, reservations
	}
	caps, res := keys(rules)
	require.Equal(t, []string{"g:night", "gu:night\x00alice", "h:node1.example", "u:alice"}, caps)
	require.Equal(t, []string{"r:group\x00night", "r:host\x00node1.example"}, res)
	caps2, res2 := keys(reversed)
	require.Equal(t, caps, caps2)
	require.Equal(t, res, res2)
}

// A lease's reservation key says whose reserved seat it holds: every
// subject kind reads back from the key Decide gives (a host in lower
// case, as compared); a shared seat or a key of another shape is none.
func TestReservationSubjectReadsTheKeyBack(t *testing.T) {
	rules := []PolicyRule{
		{Kind: RuleReserve, Count: 1, Subject: user("<b>ann</b>")},
		{Kind: RuleReserve, Count: 1, Subject: host("WS-1.Example")},
		{Kind: RuleReserve, Count: 1, Subject: group("night")},
		{Kind: RuleReserve, Count: 1, Subject: hostGroup("farm")},
	}
	d := Compile(&Policy{Rules: rules, Groups: groupList(policyGroups())}).Decide("", Identity{User: "x", Host: "y"})
	require.Len(t, d.Reservations, 4)
	want := []Subject{user("<b>ann</b>"), host("ws-1.example"), group("night"), hostGroup("farm")}
	for i, r := range d.Reservations {
		s, ok := ReservationSubject(r.Key)
		require.True(t, ok, r.Key)
		require.Equal(t, want[i], s)
	}
	for _, key := range []string{"", "r:", "r:group", "r:group\x00", "r:team\x00night", "u:alice", "g:night"} {
		_, ok := ReservationSubject(key)
		require.False(t, ok, "%q", key)
	}
}

func TestJudge(t *testing.T) {
	night := Reservation{Key: "r:group\x00night", Seats: 2, Rule: 0, Subject: group("night")}
	carol := Reservation{Key: "r:user\x00carol", Seats: 1, Rule: 3, Subject: user("carol")}
	member := func(r Reservation) Reservation { r.Member = true; return r }
	for _, c := range []struct {
		name       string
		d          Decision
		n, limit   int
		caps, held map[string]int
		want       Verdict
	}{
		{name: "no policy, a seat free", n: 4, limit: 5,
			want: Verdict{Grant: true, Rule: -1, InUse: 4, Limit: 5}},
		{name: "no policy, full", n: 5, limit: 5,
			want: Verdict{Reason: ReasonSeatsExhausted, Rule: -1, InUse: 5, Limit: 5, Detail: "5 of 5 in use"}},
		{name: "excluded", d: Decision{Refusal: &PolicyRefusal{Reason: ReasonExcluded, Rule: 4, Subject: group("night")}}, n: 0, limit: 5,
			want: Verdict{Reason: ReasonExcluded, Rule: 4, Subject: group("night"), InUse: 0, Limit: 5, Detail: "rule 4 excludes group night"}},
		{name: "not included", d: Decision{Refusal: &PolicyRefusal{Reason: ReasonNotIncluded, Rule: -1}}, n: 0, limit: 5,
			want: Verdict{Reason: ReasonNotIncluded, Rule: -1, InUse: 0, Limit: 5, Detail: "only those its include rules name may use it"}},
		{name: "user cap reached", d: Decision{Caps: []Cap{{Key: "u:alice", Limit: 2, Reason: ReasonUserLimit, Rule: 1, Subject: user("alice")}}},
			n: 2, limit: 5, caps: map[string]int{"u:alice": 2},
			want: Verdict{Reason: ReasonUserLimit, Rule: 1, Subject: user("alice"), InUse: 2, Limit: 2, Detail: "user alice holds 2 of the 2 seats it may hold (rule 1)"}},
		{name: "whole-group cap: bob refused though he holds none", d: Decision{Caps: []Cap{{Key: "g:night", Limit: 2, Reason: ReasonGroupLimit, Rule: 1, Subject: group("night")}}},
			n: 2, limit: 5, caps: map[string]int{"g:night": 2},
			want: Verdict{Reason: ReasonGroupLimit, Rule: 1, Subject: group("night"), InUse: 2, Limit: 2, Detail: "group night holds 2 of the 2 seats it may hold (rule 1)"}},
		{name: "each-member cap: bob granted while alice holds hers", d: Decision{Caps: []Cap{{Key: "gu:night\x00bob", Limit: 2, Reason: ReasonUserLimit, Rule: 1, Subject: group("night"), EachMember: true}}},
			n: 2, limit: 5, caps: map[string]int{"gu:night\x00alice": 2},
			want: Verdict{Grant: true, Rule: -1, InUse: 2, Limit: 5}},
		{name: "each-member cap: alice refused", d: Decision{Caps: []Cap{{Key: "gu:night\x00alice", Limit: 2, Reason: ReasonUserLimit, Rule: 1, Subject: group("night"), EachMember: true}}},
			n: 2, limit: 5, caps: map[string]int{"gu:night\x00alice": 2},
			want: Verdict{Reason: ReasonUserLimit, Rule: 1, Subject: group("night"), InUse: 2, Limit: 2, Detail: "each member of group night may hold 2 seats, and this one holds 2 (rule 1)"}},
		{name: "reserve and max on one group: the cap wins over a free reserved seat",
			d: Decision{Caps: []Cap{{Key: "g:night", Limit: 1, Reason: ReasonGroupLimit, Rule: 1, Subject: group("night")}}, Reservations: []Reservation{member(night)}},
			n: 1, limit: 5, caps: map[string]int{"g:night": 1}, held: map[string]int{night.Key: 1},
			want: Verdict{Reason: ReasonGroupLimit, Rule: 1, Subject: group("night"), InUse: 1, Limit: 1, Detail: "group night holds 1 of the 1 seats it may hold (rule 1)"}},
		{name: "an outsider: all remaining seats reserved", d: Decision{Reservations: []Reservation{night}},
			n: 3, limit: 5,
			want: Verdict{Reason: ReasonSeatsReserved, Rule: 0, Subject: group("night"), InUse: 3, Limit: 5, Detail: "2 of 2 remaining seats are reserved for group night"}},
		{name: "an outsider: a shared seat left", d: Decision{Reservations: []Reservation{night}},
			n: 2, limit: 5,
			want: Verdict{Grant: true, Rule: -1, InUse: 2, Limit: 5}},
		{name: "an outsider: held reserved seats are not kept again", d: Decision{Reservations: []Reservation{night}},
			n: 4, limit: 5, held: map[string]int{night.Key: 2},
			want: Verdict{Grant: true, Rule: -1, InUse: 4, Limit: 5}},
		{name: "a member takes a reserved seat first", d: Decision{Reservations: []Reservation{member(night)}},
			n: 3, limit: 5,
			want: Verdict{Grant: true, Reservation: night.Key, Rule: -1, InUse: 3, Limit: 5}},
		{name: "a member whose reservation is full takes a shared seat", d: Decision{Reservations: []Reservation{member(night)}},
			n: 3, limit: 5, held: map[string]int{night.Key: 2},
			want: Verdict{Grant: true, Rule: -1, InUse: 3, Limit: 5}},
		{name: "a member whose reservation is full: the rest reserved for others", d: Decision{Reservations: []Reservation{member(night), carol}},
			n: 4, limit: 5, held: map[string]int{night.Key: 2},
			want: Verdict{Reason: ReasonSeatsReserved, Rule: 3, Subject: user("carol"), InUse: 4, Limit: 5, Detail: "1 of 1 remaining seats are reserved for user carol"}},
		{name: "member of two reservations: the first with a seat free", d: Decision{Reservations: []Reservation{member(night), member(carol)}},
			n: 3, limit: 5, held: map[string]int{night.Key: 2},
			want: Verdict{Grant: true, Reservation: carol.Key, Rule: -1, InUse: 3, Limit: 5}},
		{name: "two reservations named", d: Decision{Reservations: []Reservation{night, carol}},
			n: 2, limit: 5,
			want: Verdict{Reason: ReasonSeatsReserved, Rule: 0, Subject: group("night"), InUse: 2, Limit: 5, Detail: "3 of 3 remaining seats are reserved for group night, user carol"}},
		{name: "a member of a full pool", d: Decision{Reservations: []Reservation{member(night)}},
			n: 5, limit: 5,
			want: Verdict{Reason: ReasonSeatsExhausted, Rule: -1, InUse: 5, Limit: 5, Detail: "5 of 5 in use"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Judge(c.d, c.n, c.limit, c.caps, c.held))
		})
	}
}

// TestJudgeAcquisitions plays acquisitions one after another through
// Decide and Judge, counting as a store does: a member takes the seats
// reserved for it first, then shared ones; outsiders never take reserved
// ones.
func TestJudgeAcquisitions(t *testing.T) {
	p := &Policy{
		Rules: []PolicyRule{
			{Kind: RuleReserve, Feature: "render", Count: 2, Subject: group("night")},
			{Kind: RuleMax, Feature: "render", Count: 3, Subject: group("night")},
		},
		Groups: groupList(policyGroups()),
	}
	require.NoError(t, p.Validate(policyLicense(), policyGroups()))
	c := Compile(p)
	const limit = 5 // render's seats
	n, caps, held := 0, map[string]int{}, map[string]int{}
	acquire := func(u string) Verdict {
		d := c.Decide("render", Identity{User: u, Host: "ws-" + u})
		v := Judge(d, n, limit, caps, held)
		if v.Grant {
			n++
			for _, c := range d.Caps {
				caps[c.Key]++
			}
			if v.Reservation != "" {
				held[v.Reservation]++
			}
		}
		return v
	}
	require.Equal(t, "r:group\x00night", acquire("alice").Reservation) // reserved seat 1
	require.True(t, acquire("carol").Grant)                            // shared 1
	require.True(t, acquire("dave").Grant)                             // shared 2
	require.True(t, acquire("erin").Grant)                             // shared 3: 4 in use, 1 reserved left
	v := acquire("frank")
	require.Equal(t, ReasonSeatsReserved, v.Reason)
	require.Equal(t, "1 of 1 remaining seats are reserved for group night", v.Detail)
	require.Equal(t, "r:group\x00night", acquire("bob").Reservation) // reserved seat 2: full
	require.Equal(t, ReasonSeatsExhausted, acquire("frank").Reason)
	n-- // someone (not of night) leaves
	v = acquire("alice")
	require.True(t, v.Grant)
	require.Empty(t, v.Reservation, "night's reservation is full: a shared seat")
	require.Equal(t, map[string]int{"g:night": 3}, caps)
	n--
	require.Equal(t, ReasonGroupLimit, acquire("bob").Reason, "night holds its 3")
	require.True(t, acquire("carol").Grant)
}

func TestVerdictErr(t *testing.T) {
	require.NoError(t, Verdict{Grant: true}.Err("render"))

	err := Verdict{Reason: ReasonExcluded, Rule: 4, Subject: group("night"), InUse: 1, Limit: 5, Detail: "rule 4 excludes group night"}.Err("render")
	require.Equal(t, EPERMISSION, ErrorCode(err))
	require.Equal(t, ReasonExcluded, ErrorReason(err))
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, `the site policy excludes this client from feature "render": rule 4 excludes group night`, e.Message)
	require.Equal(t, map[string]string{"feature": "render", "rule": "4", "subject_kind": "group", "subject_name": "night", "in_use": "1", "limit": "5"}, e.Metadata)

	err = Verdict{Reason: ReasonNotIncluded, Rule: -1, Detail: "only those its include rules name may use it"}.Err("")
	require.Equal(t, EPERMISSION, ErrorCode(err))
	require.True(t, errors.As(err, &e))
	require.Equal(t, "the site policy does not include this client for the license: only those its include rules name may use it", e.Message)
	require.Equal(t, map[string]string{"in_use": "0", "limit": "0"}, e.Metadata)

	for _, reason := range []string{ReasonUserLimit, ReasonHostLimit, ReasonGroupLimit, ReasonSeatsReserved} {
		err := Verdict{Reason: reason, Rule: 0, Subject: user("alice"), InUse: 2, Limit: 2, Detail: "d"}.Err("sim")
		require.Equal(t, EEXHAUSTED, ErrorCode(err), reason)
		require.Equal(t, reason, ErrorReason(err))
		require.ErrorContains(t, err, `no seat of feature "sim" free for this client: d`)
	}
	require.Equal(t, FeatureSeatsExhausted("sim", 5, 5), Verdict{Reason: ReasonSeatsExhausted, InUse: 5, Limit: 5}.Err("sim"))
	require.Equal(t, SeatsExhausted(5, 5), Verdict{Reason: ReasonSeatsExhausted, InUse: 5, Limit: 5}.Err(""))
}

// TestDecideAllocations: Decide runs on every acquisition of a license with
// a policy; it allocates its two result slices and an each-member key,
// nothing per rule.
func TestDecideAllocations(t *testing.T) {
	var rules []PolicyRule
	for _, u := range []string{"u1", "u2", "u3", "alice", "u5"} {
		rules = append(rules, PolicyRule{Kind: RuleMax, Feature: "render", Count: 1, Subject: user(u)},
			PolicyRule{Kind: RuleReserve, Feature: "render", Count: 1, Subject: user(u)})
	}
	rules = append(rules, PolicyRule{Kind: RuleMax, Feature: "render", Count: 1, Subject: group("night"), EachMember: true})
	c := Compile(&Policy{Rules: rules, Groups: groupList(policyGroups())})
	id := Identity{User: "alice", Host: "node1"}
	allocs := testing.AllocsPerRun(100, func() { _ = c.Decide("render", id) })
	require.LessOrEqual(t, allocs, 3.0)
}

// TestPolicyJSON pins the wire names of a policy (License.Policy is
// stored and sent as JSON).
func TestPolicyJSON(t *testing.T) {
	l := License{ID: "lic_j", Policy: &Policy{
		Rules:      []PolicyRule{{Kind: RuleMax, Feature: "render", Count: 2, Subject: group("night"), EachMember: true}, {Kind: RuleExclude, Subject: host("kiosk")}},
		Linger:     []Linger{{Feature: "sim", Duration: time.Minute}},
		Priorities: []Priority{{Subject: user("alice"), Level: 1}},
	}}
	b, err := json.Marshal(l.Policy)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"rules": [
			{"kind": "max", "feature": "render", "count": 2, "subject": {"kind": "group", "name": "night"}, "each_member": true},
			{"kind": "exclude", "subject": {"kind": "host", "name": "kiosk"}}
		],
		"linger": [{"feature": "sim", "duration": 60000000000}],
		"priorities": [{"subject": {"kind": "user", "name": "alice"}, "level": 1}]
	}`, string(b))
	b, err = json.Marshal(License{ID: "lic_none"})
	require.NoError(t, err)
	require.NotContains(t, string(b), "policy", "a license without a policy is as before")
	var back License
	require.NoError(t, json.Unmarshal(mustJSON(t, l), &back))
	require.Equal(t, l.Policy, back.Policy)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestDecideConcurrently: a compiled policy is shared by every acquisition
// of its license (run with -race).
func TestDecideConcurrently(t *testing.T) {
	c := Compile(&Policy{
		Rules:  []PolicyRule{{Kind: RuleMax, Feature: "render", Count: 1, Subject: group("night"), EachMember: true}, {Kind: RuleReserve, Feature: "render", Count: 1, Subject: host("N1")}},
		Groups: groupList(policyGroups()),
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				d := c.Decide("render", Identity{User: "bob", Host: "n1"})
				if len(d.Caps) != 1 || d.Caps[0].Key != "gu:night\x00bob" || !d.Reservations[0].Member {
					t.Errorf("decision %+v", d)
					return
				}
			}
		})
	}
	wg.Wait()
}
