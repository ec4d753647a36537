package live

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// buildPolicyPool builds a pool of a license whose policy has generation
// gen, at settings version 1, holding leases, as a rebuild does.
func buildPolicyPool(t *testing.T, rs *Redis, lic server.License, gen int64, epoch int64, leases ...Lease) {
	t.Helper()
	st, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	b := Build{Epoch: epoch, Conf: Conf{License: lic, Version: 1, PolicyGen: gen}, Snapshot: st.Now, Incarnation: st.Incarnation,
		Leases: leases}
	built, _, err := rs.Rebuild(t.Context(), lic.ID, b)
	require.NoError(t, err)
	require.True(t, built)
}

// indexMembers lists the members of a license's policy index, each as
// scope|tag|name (the pool and lease cut off).
func indexMembers(t *testing.T, rs *Redis, licenseID string) []string {
	t.Helper()
	ms, err := rs.rdb.ZRange(t.Context(), rs.keys.Policy(licenseID)[0], 0, -1).Result()
	require.NoError(t, err)
	out := make([]string, len(ms))
	for i, m := range ms {
		parts := strings.Split(m, "\x00")
		if parts[1] == "r" {
			parts = []string{parts[0], parts[1], parts[2] + "/" + parts[3]}
		}
		out[i] = strings.Join(parts[:3], "|")
	}
	return out
}

// TestAcquirePoolsJudgesAPolicy: a license with a site policy is acquired
// through acquire_pools.lua only; nothing is granted until its index is
// built for its generation; caps, reservations and refusals are judged as
// server.Judge judges them, with the counts of a refusal given back; a
// grant files its holder (and the reservation it took, which a replay
// answers again); members of ended leases go when counted or pruned; a
// rebuild of a pool takes the marker away.
func TestAcquirePoolsJudgesAPolicy(t *testing.T) {
	rs, rdb := openLive(t)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 3, LeaseTTL: time.Hour,
		RevivalWindow: time.Minute, LeasingStrategy: server.PerFingerprint, Active: true}
	buildPolicyPool(t, rs, lic, 5, 1)
	conf, err := rdb.HMGet(t.Context(), rs.keysOf(lic.ID)[0], "policy", "revival").Result()
	require.NoError(t, err)
	require.Equal(t, []any{"5", "-60000000"}, conf, "the settings say the generation, and the revival window negated")

	req := func(fp, user string) *server.AcquireRequest {
		return &server.AcquireRequest{Fingerprint: fp, User: user, Hostname: "Node-1", LeaseID: server.NewID(server.PrefixLeaseID),
			TokenHash: server.HashSecret(fp)}
	}
	var a Acquisition
	require.NoError(t, rs.Acquire(t.Context(), lic.ID, req("x", "ann"), &a))
	require.Equal(t, StatusPolicy, a.Status, "acquire.lua leaves a license with a policy to acquire_pools.lua")

	night := JudgedReservation{Key: "r:group\x00night", Seats: 2}
	judged := func(user string) *Judgement {
		j := &Judgement{User: user, Host: "node-1", Reservations: []JudgedReservation{night}}
		switch user {
		case "ann":
			j.Caps = []JudgedCap{{Limit: 1, Names: EncodeNames("ann")}}
		case "bob", "bea":
			j.Reservations[0].Member = true
		case "eve":
			j.Refused = true
		}
		return j
	}
	set := rs.NewPolicyPoolSet(lic.ID, 1, []string{lic.ID}, nil)
	var g PoolAcquisition
	acquire := func(fp, user string) *server.AcquireRequest {
		r := req(fp, user)
		require.NoError(t, rs.AcquirePoolSet(t.Context(), set, r, judged(user), &g))
		return r
	}
	acquire("x", "ann")
	require.Equal(t, StatusNoPolicyIndex, g.Status, "no index yet: nothing granted")

	token, built, err := rs.BeginPolicyIndex(t.Context(), lic.ID, 5)
	require.NoError(t, err)
	require.False(t, built)
	joined, _, err := rs.BeginPolicyIndex(t.Context(), lic.ID, 5)
	require.NoError(t, err)
	require.Equal(t, token, joined, "a second builder joins the build under way")
	require.NoError(t, rs.WritePolicyIndex(t.Context(), lic.ID, token, 5, nil))
	_, built, err = rs.BeginPolicyIndex(t.Context(), lic.ID, 5)
	require.NoError(t, err)
	require.True(t, built)

	acquire("x", "ann")
	require.Equal(t, StatusGranted, g.Status, "0 + 2 reserved < 3: a shared seat")
	require.Empty(t, g.Reservation)
	ann := g.LeaseID
	acquire("x2", "ann")
	require.Equal(t, StatusPolicyRefused, g.Status)
	require.Equal(t, []int{1}, g.CapCounts, "ann holds 1 of 1")
	require.Empty(t, g.Held)
	acquire("y", "carl")
	require.Equal(t, StatusPolicyRefused, g.Status, "1 + 2 reserved >= 3")
	require.Equal(t, []int{0}, g.Held)
	require.Equal(t, 1, g.InUse)
	require.Equal(t, 3, g.Limit)
	acquire("z", "eve")
	require.Equal(t, StatusPolicyRefused, g.Status, "a refusal before any count")

	bobReq := acquire("b", "bob")
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, night.Key, g.Reservation, "a member takes a reserved seat")
	bob := g.LeaseID
	require.NoError(t, rs.AcquirePoolSet(t.Context(), set, bobReq, judged("bob"), &g))
	require.Equal(t, StatusGranted, g.Status, "a replay answers the grant")
	require.Equal(t, bob, g.LeaseID)
	require.Equal(t, night.Key, g.Reservation, "with the reservation it took")
	require.NoError(t, rs.AcquirePoolSet(t.Context(), set, req("x", "ann"), judged("ann"), &g))
	require.Equal(t, StatusHandedBack, g.Status, "a live lease of the same keys is handed back, not judged")
	require.Equal(t, ann, g.LeaseID)
	require.ElementsMatch(t, []string{"|i|ann", "|u|ann", "|h|node-1", "|i|bob", "|u|bob", "|h|node-1", "|r|r:group/night"}, indexMembers(t, rs, lic.ID))

	// Ann's lease ends: her user member goes when she is counted again
	// (her host and identity members stay: no count met them).
	require.NoError(t, rs.End(t.Context(), lic.ID, []string{ann}))
	acquire("x3", "ann")
	require.Equal(t, StatusGranted, g.Status)
	require.NotEqual(t, ann, g.LeaseID)
	require.ElementsMatch(t, []string{"|i|ann", "|i|ann", "|u|ann", "|h|node-1", "|h|node-1", "|i|bob", "|u|bob", "|h|node-1", "|r|r:group/night"},
		indexMembers(t, rs, lic.ID))

	// Bob's lease ends and nobody counts him: the prune takes his members,
	// and ann's old host and identity members.
	require.NoError(t, rs.End(t.Context(), lic.ID, []string{bob}))
	next, removed, err := rs.PrunePolicyIndex(t.Context(), lic.ID, 1, []string{lic.ID}, "", 2)
	require.NoError(t, err)
	require.NotEmpty(t, next, "a full page: go on")
	for next != "" {
		var n int
		next, n, err = rs.PrunePolicyIndex(t.Context(), lic.ID, 1, []string{lic.ID}, next, 2)
		require.NoError(t, err)
		removed += n
	}
	require.Equal(t, 6, removed)
	require.ElementsMatch(t, []string{"|i|ann", "|u|ann", "|h|node-1"}, indexMembers(t, rs, lic.ID))

	// A rebuild of the pool takes the marker away.
	buildPolicyPool(t, rs, lic, 5, 2)
	acquire("w", "bea")
	require.Equal(t, StatusNoPolicyIndex, g.Status)
	require.ErrorIs(t, rs.WritePolicyIndex(t.Context(), lic.ID, token, 5, nil), ErrPolicyIndexLost, "a build begun before the rebuild")
}

// TestPolicyIndexCountsEveryPoolOfTheScope: a feature's leases count for
// its policy in every grant, those that do not cover the version asked
// too; a group cap counts its members' leases whether it reads them per
// member or all at once.
func TestPolicyIndexCountsEveryPoolOfTheScope(t *testing.T) {
	rs, _ := openLive(t)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 1, LeaseTTL: time.Hour,
		LeasingStrategy: server.PerFingerprint, Active: true}
	a, b := lic, lic
	a.ID, a.Seats, a.Feature = server.NewGrantID(lic.ID), 5, "render"
	b.ID, b.Seats, b.Feature = server.NewGrantID(lic.ID), 5, "render"
	buildPolicyPool(t, rs, lic, 3, 1)
	buildPolicyPool(t, rs, a, 3, 1)
	buildPolicyPool(t, rs, b, 3, 1)
	token, _, err := rs.BeginPolicyIndex(t.Context(), lic.ID, 3)
	require.NoError(t, err)
	require.NoError(t, rs.WritePolicyIndex(t.Context(), lic.ID, token, 3, nil))

	many := make([]string, 40) // more members than holders: read all at once
	for i := range many {
		many[i] = "m" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	many[0], many[1] = "ann", "bob"
	var g PoolAcquisition
	take := func(set *PoolSet, user string, group Names, limit int) {
		r := &server.AcquireRequest{Fingerprint: user + server.NewID(""), User: user, LeaseID: server.NewID(server.PrefixLeaseID),
			TokenHash: server.HashSecret(user)}
		j := &Judgement{Scope: "render", User: user, Caps: []JudgedCap{{Limit: limit, Names: group}}}
		require.NoError(t, rs.AcquirePoolSet(t.Context(), set, r, j, &g))
	}
	onlyA := rs.NewPolicyPoolSet(lic.ID, 1, []string{a.ID}, []string{b.ID})
	onlyB := rs.NewPolicyPoolSet(lic.ID, 1, []string{b.ID}, []string{a.ID})
	pair := EncodeNames("ann", "bob")
	take(onlyA, "ann", pair, 2)
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, a.ID, g.PoolID)
	take(onlyB, "bob", pair, 2)
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, b.ID, g.PoolID)
	take(onlyB, "ann", pair, 2)
	require.Equal(t, StatusPolicyRefused, g.Status, "the group holds 2 of 2 across both grants")
	require.Equal(t, []int{2}, g.CapCounts)
	take(onlyB, "ann", pair, 4)
	require.Equal(t, StatusGranted, g.Status)
	take(onlyA, "carl", EncodeNames("carl"), 1)
	require.Equal(t, StatusGranted, g.Status, "others are not of the group")
	take(onlyA, "bob", pair, 3)
	require.Equal(t, StatusPolicyRefused, g.Status, "a member at a time")
	require.Equal(t, []int{3}, g.CapCounts)
	take(onlyA, "bob", EncodeNames(many...), 3)
	require.Equal(t, StatusPolicyRefused, g.Status, "all at once: the same count")
	require.Equal(t, []int{3}, g.CapCounts)
}

// TestReviveJudgesThePolicy: heartbeat.lua leaves a lapsed lease of a
// license with a policy to revive.lua, which revives it within the window
// only if the policy would grant its client a seat.
func TestReviveJudgesThePolicy(t *testing.T) {
	rs, _ := openLive(t)
	now, err := rs.Now(t.Context())
	require.NoError(t, err)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 3, LeaseTTL: time.Hour,
		RevivalWindow: time.Hour, LeasingStrategy: server.PerFingerprint, Active: true}
	lapsed := Lease{ID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret("a1"), Acquired: now.Add(-time.Hour),
		Heartbeat: now.Add(-time.Hour), Deadline: now.Add(-time.Minute), DedupeKey: "fp:a1"}
	live := Lease{ID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret("a2"), Acquired: now,
		Heartbeat: now, Deadline: now.Add(time.Hour), DedupeKey: "fp:a2"}
	buildPolicyPool(t, rs, lic, 5, 1, lapsed, live)
	token, _, err := rs.BeginPolicyIndex(t.Context(), lic.ID, 5)
	require.NoError(t, err)
	require.NoError(t, rs.WritePolicyIndex(t.Context(), lic.ID, token, 5, []PolicyHolder{
		{PoolID: lic.ID, LeaseID: lapsed.ID, User: "ann"}, {PoolID: lic.ID, LeaseID: live.ID, User: "ann"}}))

	b, err := rs.Heartbeat(t.Context(), lic.ID, lapsed.ID, lapsed.TokenHash)
	require.NoError(t, err)
	require.Equal(t, StatusJudgeRevival, b.Status)
	set := rs.NewPolicyPoolSet(lic.ID, 1, []string{lic.ID}, nil)
	capped := &Judgement{User: "ann", Caps: []JudgedCap{{Limit: 1, Names: EncodeNames("ann")}}}
	r, err := rs.Revive(t.Context(), set, lic.ID, lapsed.ID, lapsed.TokenHash, capped)
	require.NoError(t, err)
	require.Equal(t, StatusExpired, r.Status, "ann holds her 1 seat with her other lease")
	r, err = rs.Revive(t.Context(), set, lic.ID, lapsed.ID, "wrong", capped)
	require.NoError(t, err)
	require.Equal(t, StatusWrongToken, r.Status)

	require.NoError(t, rs.End(t.Context(), lic.ID, []string{live.ID}))
	r, err = rs.Revive(t.Context(), set, lic.ID, lapsed.ID, lapsed.TokenHash, capped)
	require.NoError(t, err)
	require.Equal(t, StatusRenewed, r.Status, "within her cap now")
	require.True(t, r.Deadline.After(now))
	b, err = rs.Heartbeat(t.Context(), lic.ID, lapsed.ID, lapsed.TokenHash)
	require.NoError(t, err)
	require.Equal(t, StatusRenewed, b.Status, "live again: a plain heartbeat")

	stale := rs.NewPolicyPoolSet(lic.ID, 0, []string{lic.ID}, nil)
	r, err = rs.Revive(t.Context(), stale, lic.ID, lapsed.ID, lapsed.TokenHash, capped)
	require.NoError(t, err)
	require.Equal(t, StatusStale, r.Status)
}
