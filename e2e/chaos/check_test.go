package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

var params = Params{Bound: 500 * time.Millisecond}

func grant(client int, lease string, start, end, deadline int) Op {
	return Op{Client: client, Kind: Acquire, License: "L", Lease: lease, Start: at(start), End: at(end), Outcome: OK, Deadline: at(deadline)}
}

func beat(lease string, start, end int, out Outcome, reason string, deadline int) Op {
	op := Op{Kind: Heartbeat, License: "L", Lease: lease, Start: at(start), End: at(end), Outcome: out, Reason: reason}
	if out == OK {
		op.Deadline = at(deadline)
	}
	return op
}

func release(lease string, start, end int, out Outcome, reason string) Op {
	op := Op{Kind: Release, License: "L", Lease: lease, Start: at(start), End: at(end), Outcome: out, Reason: reason}
	if out == OK {
		op.State = "released"
	}
	return op
}

func props(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Property)
	}
	return out
}

func records(rs ...Record) map[string]Record {
	m := map[string]Record{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

func TestSeatLimit(t *testing.T) {
	t.Parallel()
	limits := map[string]int{"L": 1}
	recs := records(Record{ID: "a", License: "L", State: "released", UsageEvents: 1},
		Record{ID: "b", License: "L", State: "released", UsageEvents: 1})
	// b granted while a surely holds the seat.
	bad := []Op{grant(1, "a", 0, 10, 5000), grant(2, "b", 100, 110, 5100),
		release("a", 3000, 3010, OK, ""), release("b", 3000, 3010, OK, "")}
	require.Equal(t, []string{"seat-limit"}, props(Check(bad, limits, recs, params)))
	// b granted once a's release was invoked: fine.
	good := []Op{grant(1, "a", 0, 10, 5000), release("a", 100, 120, OK, ""),
		grant(2, "b", 110, 130, 5100), release("b", 3000, 3010, OK, "")}
	require.Empty(t, Check(good, limits, recs, params))
	// b granted after a's acknowledged deadline (less the bound): fine.
	lapsed := []Op{grant(1, "a", 0, 10, 1000), grant(2, "b", 600, 610, 5100), release("b", 3000, 3010, OK, "")}
	recs["a"] = Record{ID: "a", License: "L", State: "expired", UsageEvents: 1, CleanupEvents: 1}
	require.Empty(t, Check(lapsed, limits, recs, params))
}

func TestFinalEnd(t *testing.T) {
	t.Parallel()
	recs := records(Record{ID: "a", License: "L", State: "expired", UsageEvents: 1, CleanupEvents: 1})
	told := []Op{grant(1, "a", 0, 10, 1000), beat("a", 1200, 1210, Failed, ReasonExpired, 0),
		beat("a", 1300, 1310, OK, "", 2300)}
	require.Contains(t, props(Check(told, nil, recs, params)), "final-end")
	// Two heartbeats at once: the one answered first may not order the other.
	overlap := []Op{grant(1, "a", 0, 10, 1000), beat("a", 1200, 1300, Failed, ReasonExpired, 0),
		beat("a", 1250, 1260, OK, "", 2250)}
	require.NotContains(t, props(Check(overlap, nil, recs, params)), "final-end")
	// A revoke told the admin: the client's later heartbeat must fail.
	rev := Op{Kind: Revoke, License: "L", Lease: "a", Start: at(100), End: at(120), Outcome: OK, State: "revoked"}
	recs["a"] = Record{ID: "a", License: "L", State: "revoked", UsageEvents: 1}
	revoked := []Op{grant(1, "a", 0, 10, 5000), rev, beat("a", 200, 210, OK, "", 5200)}
	require.Contains(t, props(Check(revoked, nil, recs, params)), "final-end")
	// A revocation refused because the lease had ended tells its end too.
	refused := Op{Kind: Revoke, License: "L", Lease: "a", Start: at(300), End: at(320), Outcome: Failed, Reason: ReasonRevoked}
	require.True(t, refused.tellsEnded())
	again := []Op{grant(1, "a", 0, 10, 5000), refused, beat("a", 400, 410, OK, "", 5400)}
	require.Contains(t, props(Check(again, nil, recs, params)), "final-end")
}

func TestLostEndAndGrant(t *testing.T) {
	t.Parallel()
	ops := []Op{grant(1, "a", 0, 10, 5000), release("a", 100, 110, OK, ""), grant(2, "b", 0, 10, 5000)}
	recs := records(Record{ID: "a", License: "L", State: "active"})
	require.ElementsMatch(t, []string{"lost-end", "lost-grant"}, props(Check(ops, nil, recs, params)))
}

func TestExactlyOnce(t *testing.T) {
	t.Parallel()
	recs := records(
		Record{ID: "a", License: "L", State: "released", UsageEvents: 2},
		Record{ID: "b", License: "L", State: "expired", UsageEvents: 1},
		Record{ID: "c", License: "L", State: "revoked", UsageEvents: 1, CleanupEvents: 1},
		Record{ID: "d", License: "L", State: "active"},
		Record{ID: "e", License: "L", State: "expired", UsageEvents: 1, CleanupEvents: 1},
	)
	require.Len(t, Check(nil, nil, recs, params), 3)
	final := params
	final.Final = true
	require.Len(t, Check(nil, nil, recs, final), 4, "an active lease at the end is one more")
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	recs := records(Record{ID: "a", License: "L", State: "expired", UsageEvents: 1, CleanupEvents: 1})
	early := []Op{grant(1, "a", 0, 10, 3000), beat("a", 1000, 1010, Failed, ReasonExpired, 0)}
	require.Equal(t, []string{"deadline"}, props(Check(early, nil, recs, params)))
	late := []Op{grant(1, "a", 0, 10, 3000), beat("a", 2700, 2710, Failed, ReasonExpired, 0)}
	require.Empty(t, Check(late, nil, recs, params), "within the bound")
	recs["a"] = Record{ID: "a", License: "L", State: "released", UsageEvents: 1}
	afterRelease := []Op{grant(1, "a", 0, 10, 3000), release("a", 500, 510, OK, ""),
		beat("a", 1000, 1010, Failed, ReasonReleased, 0)}
	require.Empty(t, Check(afterRelease, nil, recs, params))
}

// TestDeadlineSecure: with a write-behind, a deadline is secure when the
// client was on time: a heartbeat that revived a lease after a long gap
// may be forgotten by a fault, and an expiry after it is no violation;
// one on time may not.
func TestDeadlineSecure(t *testing.T) {
	t.Parallel()
	p := params
	p.Flush, p.Slack = time.Second, 1500*time.Millisecond
	recs := records(Record{ID: "a", License: "L", State: "expired", UsageEvents: 1, CleanupEvents: 1})
	onTime := []Op{grant(1, "a", 0, 10, 3000), beat("a", 1000, 1010, OK, "", 4000), beat("a", 2000, 2010, OK, "", 5000),
		beat("a", 3000, 3010, OK, "", 6000), beat("a", 3100, 3110, Failed, ReasonExpired, 0)}
	require.Equal(t, []string{"deadline"}, props(Check(onTime, nil, recs, p)))
	revived := []Op{grant(1, "a", 0, 10, 3000), beat("a", 4000, 4010, OK, "", 7000),
		beat("a", 5000, 5010, Failed, ReasonExpired, 0)}
	require.Empty(t, Check(revived, nil, recs, p), "a revival may be forgotten")
	slow := []Op{grant(1, "a", 0, 10, 3000), beat("a", 1000, 1010, OK, "", 4000),
		beat("a", 1100, 3600, Failed, ReasonExpired, 0)}
	require.Empty(t, Check(slow, nil, recs, p), "answered after the deadline less the bound")
}

func TestRecordTruth(t *testing.T) {
	t.Parallel()
	p := params
	p.Repair = time.Second
	recs := records(Record{ID: "a", License: "L", State: "revoked", EndedAt: at(1000), UsageEvents: 1})
	late := []Op{grant(1, "a", 0, 10, 9000), beat("a", 2500, 2510, OK, "", 11500)}
	require.Contains(t, props(Check(late, nil, recs, p)), "record-truth")
	soon := []Op{grant(1, "a", 0, 10, 9000), beat("a", 1500, 1510, OK, "", 10500)}
	require.NotContains(t, props(Check(soon, nil, recs, p)), "record-truth", "within a flush interval")
}

// featureGrant is an acquisition of feature f at version v that took a
// seat of grant g of license L.
func featureGrant(client int, lease, g, f, v string, start, end, deadline int) Op {
	op := grant(client, lease, start, end, deadline)
	op.Feature, op.Version, op.Grant = f, v, g
	return op
}

// renderGrants: license L (base limit 5) with two grants of "render":
// G1 up to 2024, one seat, expiring at 4 s; G2 up to 2025.10, two seats.
var renderGrants = map[string]Grant{
	"L.g1": {ID: "L.g1", License: "L", Feature: "render", Version: "2024", Limit: 1, ExpiresAt: at(4000)},
	"L.g2": {ID: "L.g2", License: "L", Feature: "render", Version: "2025.10", Limit: 2},
}

func released(ids ...string) map[string]Record {
	m := map[string]Record{}
	for _, id := range ids {
		m[id] = Record{ID: id, License: "L", State: "released", UsageEvents: 1}
	}
	return m
}

// TestSeatLimitPerGrant: each grant is a pool of its own (invariant 12):
// two leases held at once in a one-seat grant break its limit, although
// the license's base pool and its other grant have seats free.
func TestSeatLimitPerGrant(t *testing.T) {
	t.Parallel()
	limits := map[string]int{"L": 5}
	p := params
	p.Grants = renderGrants
	recs := released("a", "b", "c")
	over := []Op{featureGrant(1, "a", "L.g1", "render", "2024", 0, 10, 3000),
		featureGrant(2, "b", "L.g1", "render", "2023", 100, 110, 3100),
		release("a", 2000, 2010, OK, ""), release("b", 2000, 2010, OK, "")}
	vs := Check(over, limits, recs, p)
	require.Equal(t, []string{"seat-limit"}, props(vs))
	require.Equal(t, "L.g1", vs[0].License, "the grant's limit, not the license's")
	// One lease in each grant and one of the base pool: every pool within its limit.
	spread := []Op{featureGrant(1, "a", "L.g1", "render", "2024", 0, 10, 3000),
		featureGrant(2, "b", "L.g2", "render", "2024", 100, 110, 3100), grant(3, "c", 100, 110, 3100),
		release("a", 2000, 2010, OK, ""), release("b", 2000, 2010, OK, ""), release("c", 2000, 2010, OK, "")}
	require.Empty(t, Check(spread, limits, recs, p))
	// Two leases of the two-seat grant: within its limit.
	two := []Op{featureGrant(1, "a", "L.g2", "render", "2025", 0, 10, 3000),
		featureGrant(2, "b", "L.g2", "render", "2025.3", 100, 110, 3100),
		release("a", 2000, 2010, OK, ""), release("b", 2000, 2010, OK, "")}
	require.Empty(t, Check(two, limits, recs, p))
}

// TestGrantChoice: a lease's grant is of the feature asked, covers the
// version asked (numeric components), and had not expired.
func TestGrantChoice(t *testing.T) {
	t.Parallel()
	p := params
	p.Grants = renderGrants
	recs := released("a")
	judge := func(g Op, more ...Op) []string {
		return props(Check(append([]Op{g, release("a", 4500, 4510, OK, "")}, more...), nil, recs, p))
	}
	require.Empty(t, judge(featureGrant(1, "a", "L.g2", "render", "2025.3", 0, 10, 3000)), "2025.3 < 2025.10")
	require.Empty(t, judge(featureGrant(1, "a", "L.g1", "render", "", 0, 10, 3000)), "any version")
	require.Equal(t, []string{"grant-version"}, judge(featureGrant(1, "a", "L.g1", "render", "2024.1", 0, 10, 3000)))
	require.Equal(t, []string{"grant-version"}, judge(featureGrant(1, "a", "L.g2", "render", "2025.11", 0, 10, 3000)))
	require.Equal(t, []string{"grant-version"}, judge(featureGrant(1, "a", "L.g2", "sim", "1", 0, 10, 3000)))
	require.Equal(t, []string{"grant-choice"}, judge(featureGrant(1, "a", "", "render", "2024", 0, 10, 3000)), "a base seat")
	require.Equal(t, []string{"grant-choice"}, judge(featureGrant(1, "a", "L.g2", "", "", 0, 10, 3000)), "no feature asked")
	require.Equal(t, []string{"grant-choice"}, judge(featureGrant(1, "a", "L.g9", "render", "2024", 0, 10, 3000)), "an unknown grant")
	// Expired at 4 s: a grant invoked after it, or a heartbeat, is late.
	require.Equal(t, []string{"grant-expired"}, judge(featureGrant(1, "a", "L.g1", "render", "2024", 4100, 4110, 7000)))
	require.Empty(t, judge(featureGrant(1, "a", "L.g1", "render", "2024", 3990, 4110, 7000)), "invoked before the expiry")
	require.Equal(t, []string{"grant-expired"}, judge(featureGrant(1, "a", "L.g1", "render", "2024", 0, 10, 3000),
		beat("a", 4100, 4110, OK, "", 7100)))
	require.Empty(t, judge(featureGrant(1, "a", "L.g1", "render", "2024", 0, 10, 3000),
		beat("a", 3900, 4110, OK, "", 6900)), "a heartbeat invoked before the expiry")
	// Not started before 1 s.
	p.Grants = map[string]Grant{"L.g1": {ID: "L.g1", License: "L", Feature: "render", Limit: 1, StartsAt: at(1000)}}
	require.Equal(t, []string{"grant-expired"}, judge(featureGrant(1, "a", "L.g1", "render", "2024", 0, 500, 3000)))
	require.Empty(t, judge(featureGrant(1, "a", "L.g1", "render", "2024", 0, 1010, 3000)), "answered after the start")
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want int
	}{{"2024.2", "2024.10", -1}, {"1.10", "1.9", 1}, {"3", "3.0", 0}, {"3.0.1", "3", 1}, {"007", "7", 0}, {"2025", "2024.99", 1}} {
		require.Equal(t, c.want, compareVersions(c.a, c.b), "%s vs %s", c.a, c.b)
	}
}
