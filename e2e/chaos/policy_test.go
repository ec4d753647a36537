package chaos

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// sitePolicy is license L's policy in these tests: base pool limit 4
// (limits below), "sim" a feature.
var sitePolicy = Policy{
	Rules: []Rule{
		{Kind: Reserve, Count: 1, Subject: Subject{Group, "night"}},                  // 0
		{Kind: Reserve, Count: 1, Subject: Subject{HostGroup, "farm"}},               // 1
		{Kind: Max, Count: 2, Subject: Subject{Group, "interns"}},                    // 2: as a whole
		{Kind: Max, Count: 1, Subject: Subject{Group, "interns"}, EachMember: true},  // 3
		{Kind: Max, Count: 1, Subject: Subject{Host, "Kiosk"}},                       // 4
		{Kind: Exclude, Subject: Subject{User, "mallory"}},                           // 5
		{Kind: Include, Feature: "sim", Subject: Subject{Group, "night"}},            // 6
		{Kind: Exclude, Feature: "sim", Subject: Subject{User, "ben"}},               // 7
		{Kind: Max, Feature: "sim", Count: 1, Subject: Subject{HostGroup, "farm"}},   // 8
		{Kind: Include, Feature: "sim", Subject: Subject{HostGroup, "farm"}},         // 9
		{Kind: Max, Count: 1, Subject: Subject{HostGroup, "farm"}, EachMember: true}, // 10
	},
	Groups: map[string][]string{"night": {"ann", "ben"}, "interns": {"ivy", "joe", "kim"}, "farm": {"farm-1", "FARM-2"}},
}

var policyLimits = map[string]int{"L": 4}

func policyParams() Params {
	p := params
	p.Policies = map[string]Policy{"L": sitePolicy}
	return p
}

// as is an OK acquisition of lease by user@host of feature ("" the base
// pool), answered at end, held until released at rel (and told so).
func as(user, host, feature, lease string, start, end, rel int) []Op {
	g := grant(1, lease, start, end, 60_000)
	g.User, g.Host, g.Feature = user, host, feature
	if feature != "" {
		g.Grant = "L.sim"
	}
	return []Op{g, release(lease, rel, rel+5, OK, "")}
}

func refused(user, host, feature, reason, rule string, start, end int) Op {
	return Op{Client: 9, Kind: Acquire, License: "L", Start: at(start), End: at(end), Outcome: Failed,
		Reason: reason, Rule: rule, User: user, Host: host, Feature: feature}
}

// allReleased are the records of leases, all released.
func allReleased(ids ...string) map[string]Record {
	m := map[string]Record{}
	for _, id := range ids {
		m[id] = Record{ID: id, License: "L", State: "released", UsageEvents: 1}
	}
	return m
}

func history(parts ...[]Op) []Op {
	var out []Op
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func policyCheck(ops []Op, recs map[string]Record) []string {
	p := policyParams()
	p.Grants = map[string]Grant{"L.sim": {ID: "L.sim", License: "L", Feature: "sim", Limit: 10}}
	return props(Check(ops, policyLimits, recs, p))
}

func TestPolicyExcludeAndInclude(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"policy-exclude"}, policyCheck(as("mallory", "ws", "", "a", 0, 10, 100), allReleased("a")))
	// Exclude wins over include: ben is of group night.
	require.Equal(t, []string{"policy-exclude"}, policyCheck(as("ben", "ws", "sim", "a", 0, 10, 100), allReleased("a")))
	require.Equal(t, []string{"policy-include"}, policyCheck(as("zed", "ws", "sim", "a", 0, 10, 100), allReleased("a")))
	// Included by user (group night) or host (host group farm, any case).
	require.Empty(t, policyCheck(history(as("ann", "", "sim", "a", 0, 10, 100), as("", "farm-2", "sim", "b", 200, 210, 300)),
		allReleased("a", "b")))
	// The base pool has no includes; mallory is excluded only there.
	require.Empty(t, policyCheck(history(as("zed", "ws", "", "a", 0, 10, 100)), allReleased("a")))
	// A grant whose answer was lost is judged from the record.
	recs := allReleased("a")
	recs["a"] = Record{ID: "a", License: "L", State: "released", UsageEvents: 1, User: "mallory"}
	lost := []Op{{Kind: Acquire, License: "L", User: "mallory", Start: at(0), End: at(10), Outcome: Unknown}}
	require.Equal(t, []string{"policy-exclude"}, policyCheck(lost, recs))
}

func TestPolicyCap(t *testing.T) {
	t.Parallel()
	// Group interns as a whole: at most 2 at once (rule 2).
	// (ivy on a farm host: the reservations leave the others 2 seats.)
	three := history(as("ivy", "farm-1", "", "a", 0, 10, 1000), as("joe", "", "", "b", 0, 10, 1000), as("kim", "", "", "c", 500, 510, 1000))
	require.Equal(t, []string{"policy-cap"}, policyCheck(three, allReleased("a", "b", "c")))
	// The third once one of them was released: fine.
	after := history(as("ivy", "", "", "a", 0, 10, 400), as("joe", "", "", "b", 0, 10, 1000), as("kim", "", "", "c", 500, 510, 1000))
	require.Empty(t, policyCheck(after, allReleased("a", "b", "c")))
	// Each member at most 1 (rule 3): ivy twice at once.
	twice := history(as("ivy", "", "", "a", 0, 10, 1000), as("ivy", "", "", "b", 500, 510, 1000))
	require.Equal(t, []string{"policy-cap"}, policyCheck(twice, allReleased("a", "b")))
	// A host compared without case (rule 4).
	kiosk := history(as("", "kiosk", "", "a", 0, 10, 1000), as("", "KIOSK", "", "b", 500, 510, 1000))
	require.Equal(t, []string{"policy-cap"}, policyCheck(kiosk, allReleased("a", "b")))
	// Each farm host at most 1 (rule 10): two hosts, one each.
	farm := history(as("", "farm-1", "", "a", 0, 10, 1000), as("", "farm-2", "", "b", 500, 510, 1000))
	require.Empty(t, policyCheck(farm, allReleased("a", "b")))
	// A feature's cap counts its own leases only (rule 8: farm on sim).
	require.Empty(t, policyCheck(history(farm, as("", "farm-2", "sim", "c", 500, 510, 1000)), allReleased("a", "b", "c")))
	require.Equal(t, []string{"policy-cap"}, policyCheck(history(as("", "farm-1", "sim", "a", 0, 10, 1000),
		as("", "farm-2", "sim", "b", 500, 510, 1000)), allReleased("a", "b")))
}

func TestPolicyReserve(t *testing.T) {
	t.Parallel()
	// Limit 4, one seat kept for night, one for farm: others hold at most 2.
	others := history(as("zed", "ws", "", "a", 0, 10, 1000), as("", "", "", "b", 0, 10, 1000), as("ivy", "ws", "", "c", 500, 510, 1000))
	require.Equal(t, []string{"policy-reserve"}, policyCheck(others, allReleased("a", "b", "c")))
	// A farm host takes the third: the night's seat is still kept.
	farm := history(as("zed", "ws", "", "a", 0, 10, 1000), as("", "", "", "b", 0, 10, 1000), as("ivy", "farm-1", "", "c", 500, 510, 1000))
	require.Empty(t, policyCheck(farm, allReleased("a", "b", "c")))
	// ... but then a fourth outside the night (farm or not) breaks it:
	// the night's set of one reservation leaves 3 to the others.
	fourth := history(farm, as("", "FARM-2", "", "d", 600, 610, 1000))
	require.Equal(t, []string{"policy-reserve"}, policyCheck(fourth, allReleased("a", "b", "c", "d")))
	night := history(farm, as("ann", "", "", "d", 600, 610, 1000))
	require.Empty(t, policyCheck(night, allReleased("a", "b", "c", "d")))
	// A feature's leases are not the base pool's.
	require.Empty(t, policyCheck(history(others[:4], as("ann", "", "sim", "c", 500, 510, 1000)), allReleased("a", "b", "c")))
}

func TestPolicyReason(t *testing.T) {
	t.Parallel()
	good := []Op{
		refused("mallory", "", "", ReasonExcluded, "5", 0, 10),
		refused("ben", "", "sim", ReasonExcluded, "7", 0, 10),
		refused("zed", "", "sim", ReasonNotIncluded, "", 0, 10),
		refused("ivy", "", "", ReasonGroupLimit, "2", 0, 10),
		refused("ivy", "", "", ReasonUserLimit, "3", 0, 10),
		refused("", "KIOSK", "", ReasonHostLimit, "4", 0, 10),
		refused("", "farm-1", "", ReasonHostLimit, "10", 0, 10),
		refused("", "farm-1", "sim", ReasonGroupLimit, "8", 0, 10),
		refused("zed", "", "", ReasonSeatsReserved, "0", 0, 10),
		refused("zed", "", "", ReasonSeatsExhausted, "", 0, 10),
		refused("mallory", "", "", "LICENSE_INACTIVE", "", 0, 10),
	}
	for _, op := range good {
		require.Empty(t, policyCheck([]Op{op}, nil), "%s", op)
	}
	bad := []Op{
		refused("zed", "", "", ReasonExcluded, "5", 0, 10),            // not excluded
		refused("mallory", "", "", ReasonExcluded, "4", 0, 10),        // another rule
		refused("mallory", "", "", ReasonSeatsExhausted, "", 0, 10),   // judged after the exclude
		refused("mallory", "", "", ReasonSeatsReserved, "0", 0, 10),   // judged after the exclude
		refused("ann", "", "sim", ReasonNotIncluded, "", 0, 10),       // included
		refused("zed", "", "sim", ReasonSeatsExhausted, "", 0, 10),    // judged after the includes
		refused("zed", "", "", ReasonNotIncluded, "", 0, 10),          // the base pool has no includes
		refused("zed", "", "", ReasonGroupLimit, "2", 0, 10),          // not an intern
		refused("ivy", "", "", ReasonUserLimit, "2", 0, 10),           // rule 2 is the group's as a whole
		refused("ivy", "", "", ReasonUserLimit, "", 0, 10),            // no rule named
		refused("ivy", "", "", ReasonUserLimit, "99", 0, 10),          // no such rule
		refused("", "farm-1", "", ReasonGroupLimit, "8", 0, 10),       // rule 8 is sim's
		refused("zed", "", "", ReasonSeatsReserved, "2", 0, 10),       // not a reservation
		refused("", "farm-1", "sim", ReasonSeatsReserved, "1", 0, 10), // the base pool's reservation
	}
	for _, op := range bad {
		require.Equal(t, []string{"policy-reason"}, policyCheck([]Op{op}, nil), "%s", op)
	}
}

func TestCheckRefusals(t *testing.T) {
	t.Parallel()
	p := policyParams()
	causes := func(ops []Op) []string { return props(CheckRefusals(ops, policyLimits, p)) }
	// ivy refused her own cap (rule 3) while she held a lease: a cause.
	held := history(as("ivy", "", "", "a", 0, 10, 1000), []Op{refused("ivy", "", "", ReasonUserLimit, "3", 500, 510)})
	require.Empty(t, causes(held))
	// ... after its release was answered: none.
	require.Equal(t, []string{"refusal-cause"}, causes(history(as("ivy", "", "", "a", 0, 10, 100),
		[]Op{refused("ivy", "", "", ReasonUserLimit, "3", 500, 510)})))
	// ... while joe held one: not hers (each member apart), but the
	// group's as a whole needs 2.
	require.Equal(t, []string{"refusal-cause", "refusal-cause"}, causes(history(as("joe", "", "", "a", 0, 10, 1000),
		[]Op{refused("ivy", "", "", ReasonUserLimit, "3", 500, 510), refused("ivy", "", "", ReasonGroupLimit, "2", 500, 510)})))
	require.Empty(t, causes(history(as("joe", "", "", "a", 0, 10, 1000), as("kim", "", "", "b", 0, 10, 1000),
		[]Op{refused("ivy", "", "", ReasonGroupLimit, "2", 500, 510)})))
	// A release invoked but not answered yet may still count.
	require.Empty(t, causes(history(as("ivy", "", "", "a", 0, 10, 500), []Op{refused("ivy", "", "", ReasonUserLimit, "3", 502, 520)})))
	// An acquisition answered unknown may have granted.
	unknown := Op{Kind: Acquire, License: "L", User: "ivy", Start: at(0), End: at(10), Outcome: Unknown}
	require.Empty(t, causes([]Op{unknown, refused("ivy", "", "", ReasonUserLimit, "3", 500, 510)}))
	// SEATS_RESERVED: 2 of 4 seats are kept, so 2 leases at least.
	two := history(as("zed", "", "", "a", 0, 10, 1000), as("ann", "", "", "b", 0, 10, 1000))
	require.Empty(t, causes(history(two, []Op{refused("zed", "", "", ReasonSeatsReserved, "0", 500, 510)})))
	require.Equal(t, []string{"refusal-cause"}, causes(history(two[:2], []Op{refused("zed", "", "", ReasonSeatsReserved, "0", 500, 510)})))
	// SEATS_EXHAUSTED: all 4.
	require.Equal(t, []string{"refusal-cause"}, causes(history(two, []Op{refused("zed", "", "", ReasonSeatsExhausted, "", 500, 510)})))
	four := history(two, as("", "farm-1", "", "c", 0, 10, 1000), as("ann", "", "", "d", 0, 10, 1000))
	require.Empty(t, causes(history(four, []Op{refused("zed", "", "", ReasonSeatsExhausted, "", 500, 510)})))
}

func TestCheckHolders(t *testing.T) {
	t.Parallel()
	judge := func(hs ...Holder) []string { return props(CheckHolders(sitePolicy, "L", 4, t0, hs)) }
	ok := []Holder{{Lease: "a", User: "ann", Reserved: 0}, {Lease: "b", Host: "Farm-1", Reserved: 1},
		{Lease: "c", User: "zed", Reserved: -1}, {Lease: "d", User: "ivy", Reserved: -1},
		{Lease: "e", User: "ann", Feature: "sim", Reserved: -1}}
	require.Empty(t, judge(ok...))
	require.Equal(t, []string{"policy-exclude"}, judge(Holder{Lease: "a", User: "mallory", Reserved: -1}))
	require.Equal(t, []string{"policy-include"}, judge(Holder{Lease: "a", User: "zed", Feature: "sim", Reserved: -1}))
	require.Equal(t, []string{"policy-cap"}, judge(Holder{Lease: "a", Host: "kiosk", Reserved: -1}, Holder{Lease: "b", Host: "kiosk", Reserved: -1}))
	// A non-member in a reserved seat.
	require.Equal(t, []string{"policy-reserved-seat"}, judge(Holder{Lease: "a", User: "zed", Reserved: 0}))
	// Two in the night's one seat.
	require.Equal(t, []string{"policy-reserved-seat"}, judge(Holder{Lease: "a", User: "ann", Reserved: 0}, Holder{Lease: "b", User: "ben", Reserved: 0}))
	// Three shared seats where the reservations leave two: also more
	// outside the reservations than they leave.
	require.Equal(t, []string{"policy-reserve", "policy-reserved-seat"}, judge(Holder{Lease: "a", User: "zed", Reserved: -1},
		Holder{Lease: "b", User: "zed", Reserved: -1}, Holder{Lease: "c", User: "ivy", Reserved: -1}))
	// ... but a member in a shared seat is only the store's account.
	require.Equal(t, []string{"policy-reserved-seat"}, judge(Holder{Lease: "a", User: "zed", Reserved: -1},
		Holder{Lease: "b", User: "zed", Reserved: -1}, Holder{Lease: "c", User: "ann", Reserved: -1}))
	require.Equal(t, []string{"policy-reserved-seat"}, judge(Holder{Lease: "a", User: "ann", Reserved: 2}))
}
