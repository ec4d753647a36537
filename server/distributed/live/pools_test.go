package live

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// buildPool builds the live state of a pool (a license, or a grant's
// pool) at settings version 1, holding leases, as a rebuild does.
func buildPool(t *testing.T, rs *Redis, lic server.License, leases ...Lease) {
	t.Helper()
	st, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	b := Build{Epoch: 1, Conf: Conf{License: lic, Version: 1}, Snapshot: st.Now, Incarnation: st.Incarnation, Leases: leases}
	built, _, err := rs.Rebuild(t.Context(), lic.ID, b)
	require.NoError(t, err)
	require.True(t, built)
}

// TestAcquirePoolsJudgesAllPoolsInOneStep: acquire_pools.lua refuses a
// stale grants version, names the pools without live state, grants in the
// first pool with a free seat while displacing the lapsed lease of the
// request's key in another pool, hands a lease back across pools, sums a
// full feature, and says why no pool is usable.
func TestAcquirePoolsJudgesAllPoolsInOneStep(t *testing.T) {
	rs, _ := openLive(t)
	now, err := rs.Now(t.Context())
	require.NoError(t, err)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 1, LeaseTTL: time.Hour,
		LeasingStrategy: server.PerFingerprint, Active: true}
	pool := func(seats int) server.License {
		p := lic
		p.ID, p.Seats, p.Feature = server.NewGrantID(lic.ID), seats, "render"
		return p
	}
	a, b, c := pool(1), pool(1), pool(1)
	for _, k := range rs.Keys().RebuildKeys(a.ID) {
		require.Contains(t, k, "{"+lic.ID+"}:", "a grant's keys are in its license's slot")
	}
	lapsed := Lease{ID: server.NewID(server.PrefixLeaseID), TokenHash: "h-old", Acquired: now.Add(-2 * time.Hour),
		Heartbeat: now.Add(-2 * time.Hour), Deadline: now.Add(-time.Hour), DedupeKey: "fp:x"}
	buildPool(t, rs, lic)
	buildPool(t, rs, a, lapsed)
	buildPool(t, rs, b)

	req := func(fp string) *server.AcquireRequest {
		return &server.AcquireRequest{Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(fp)}
	}
	var g PoolAcquisition
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 0, []string{b.ID, a.ID}, req("x"), &g))
	require.Equal(t, StatusStale, g.Status)
	require.EqualValues(t, 1, g.RedisVersion)
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{c.ID, b.ID}, req("x"), &g))
	require.Equal(t, StatusNoState, g.Status)
	require.Equal(t, []string{c.ID}, g.NoState)

	// B grants (first in order); A's lapsed lease of the key x goes with it.
	r := req("x")
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{b.ID, a.ID}, r, &g))
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, b.ID, g.PoolID)
	require.Equal(t, r.LeaseID, g.LeaseID)
	require.Equal(t, b.ID, g.License.ID)
	require.Equal(t, []string{lapsed.ID}, g.Displaced)
	require.Equal(t, []string{a.ID}, g.DisplacedPools)
	require.Equal(t, 1, g.InUse)

	// A replay of the grant answers it.
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{b.ID, a.ID}, r, &g))
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, r.LeaseID, g.LeaseID)

	// The same key again, pools in the other order: handed back from B.
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{a.ID, b.ID}, req("x"), &g))
	require.Equal(t, StatusHandedBack, g.Status)
	require.Equal(t, b.ID, g.PoolID)
	require.Equal(t, r.LeaseID, g.LeaseID)

	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{b.ID, a.ID}, req("y"), &g))
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, a.ID, g.PoolID, "B is full: A")
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{b.ID, a.ID}, req("z"), &g))
	require.Equal(t, StatusExhausted, g.Status)
	require.Equal(t, 2, g.InUse)
	require.Equal(t, 2, g.Limit)

	// A pool not started yet, one expired: none usable, and why.
	later, gone := pool(1), pool(1)
	later.StartsAt = now.Add(time.Hour)
	gone.ExpiresAt = now.Add(-time.Minute)
	buildPool(t, rs, later)
	buildPool(t, rs, gone)
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{gone.ID, later.ID}, req("z"), &g))
	require.Equal(t, StatusUnusable, g.Status)
	require.Equal(t, []Status{StatusLicenseExpired, StatusNotStarted}, g.Unusable)
	require.Equal(t, timeUS(later.StartsAt), timeUS(g.Starts[1]))
}

// TestAcquirePoolsRunJudgesEachInTurn: acquisitions on the same pools that
// arrive together share one script run, each judged as if alone, after
// the ones before it.
func TestAcquirePoolsRunJudgesEachInTurn(t *testing.T) {
	rs, _ := openLive(t)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 1, LeaseTTL: time.Hour,
		LeasingStrategy: server.PerFingerprint, Active: true}
	a := lic
	a.ID, a.Seats = server.NewGrantID(lic.ID), 2
	buildPool(t, rs, lic)
	buildPool(t, rs, a)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		count = map[Status]int{}
	)
	for i := range 5 {
		wg.Go(func() {
			fp := string(rune('a' + i))
			var g PoolAcquisition
			err := rs.AcquirePools(t.Context(), lic.ID, 1, []string{a.ID},
				&server.AcquireRequest{Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(fp)}, &g)
			assert.NoError(t, err)
			mu.Lock()
			count[g.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, map[Status]int{StatusGranted: 2, StatusExhausted: 3}, count)
}

// TestAcquirePoolsReplaysAKeylessBorrow: a borrow has no dedupe key, and
// without an idempotency key its replay is found by its lease id, in
// whichever pool granted it (here the second: the first is full), never
// granted again in another pool.
func TestAcquirePoolsReplaysAKeylessBorrow(t *testing.T) {
	rs, _ := openLive(t)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 1, LeaseTTL: time.Hour,
		LeasingStrategy: server.PerFingerprint, Active: true, MaxBorrowDuration: 24 * time.Hour}
	a, b := lic, lic
	a.ID, b.ID = server.NewGrantID(lic.ID), server.NewGrantID(lic.ID)
	buildPool(t, rs, lic)
	buildPool(t, rs, a)
	buildPool(t, rs, b)
	borrow := func(fp string) *server.AcquireRequest {
		return &server.AcquireRequest{Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(fp), BorrowFor: time.Hour}
	}
	var g PoolAcquisition
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{a.ID, b.ID}, borrow("x"), &g))
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, a.ID, g.PoolID)
	r := borrow("y")
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{a.ID, b.ID}, r, &g))
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, b.ID, g.PoolID, "A is full: B")
	require.Equal(t, 1, g.InUse)

	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{a.ID, b.ID}, r, &g))
	require.Equal(t, StatusGranted, g.Status)
	require.Equal(t, b.ID, g.PoolID)
	require.Equal(t, r.LeaseID, g.LeaseID)
	require.Equal(t, 1, g.InUse, "the replay answers the grant: no second lease")
	require.Equal(t, b.ID, g.License.ID, "the answer carries the granting pool's settings")
}

// TestAcquirePoolsLooksOnlyAsFarAsThePick: a pool's settings are read
// (and judged usable) only when an acquisition looks at it: the pools
// after the one that grants are checked (live state, deleted, strategy)
// but not read, so a setting there that would break the judging of the
// pool breaks nothing; a lease of the request's key in such a pool is
// still handed back, and once every pool is needed, all are judged.
func TestAcquirePoolsLooksOnlyAsFarAsThePick(t *testing.T) {
	rs, rdb := openLive(t)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 1, LeaseTTL: time.Hour,
		LeasingStrategy: server.PerFingerprint, Active: true}
	pool := func() server.License {
		p := lic
		p.ID, p.Seats, p.Feature = server.NewGrantID(lic.ID), 1, "render"
		return p
	}
	a, b, c := pool(), pool(), pool()
	buildPool(t, rs, lic)
	buildPool(t, rs, a)
	buildPool(t, rs, b)
	buildPool(t, rs, c)
	// C's expiry cannot be judged: judging C fails the script.
	require.NoError(t, rdb.HSet(t.Context(), rs.Keys().RebuildKeys(c.ID)[0], "exp", "not a number").Err())

	req := func(fp string) *server.AcquireRequest {
		return &server.AcquireRequest{Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(fp)}
	}
	pools := []string{a.ID, b.ID, c.ID}
	var g PoolAcquisition
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, pools, req("x"), &g))
	require.Equal(t, StatusGranted, g.Status, "C is not looked at: A grants")
	require.Equal(t, a.ID, g.PoolID)
	require.Equal(t, a.ID, g.License.ID)
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, pools, req("y"), &g))
	require.Equal(t, StatusGranted, g.Status, "A is full: B grants, C is not looked at")
	require.Equal(t, b.ID, g.PoolID)
	require.Equal(t, b.ID, g.License.ID, "the answer carries the settings of the pool that granted")

	// x's lease is in A, looked at first; y's in B: handed back from
	// whichever pool holds it, in any order.
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, []string{b.ID, a.ID, c.ID}, req("x"), &g))
	require.Equal(t, StatusHandedBack, g.Status)
	require.Equal(t, a.ID, g.PoolID)
	require.Equal(t, a.ID, g.License.ID)

	// A and B full: C is looked at, and its settings fail the script.
	require.NoError(t, rs.AcquirePools(t.Context(), lic.ID, 1, pools, req("z"), &g))
	require.Equal(t, StatusFailed, g.Status, "C is judged once A and B are full")
}
