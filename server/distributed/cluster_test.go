package distributed

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/redistest"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/storetest"
)

// On a Redis Cluster (three masters of their own) the store behaves the
// same: every script touches the keys of one license (one slot) and the
// expiry hint is spread over slots.

func TestConformanceOnRedisCluster(t *testing.T) {
	t.Parallel()
	testServers(t)
	cluster := redistest.StartCluster(t, 3)
	storetest.RunWith(t, func(t *testing.T) storetest.Opener {
		loc := newLocation(t)
		loc.redisURL = cluster.URL()
		return func(t *testing.T) server.Store { return loc.openFaulty(t, nil) }
	}, storetest.Options{})
}

// TestSeatLimitAcrossInstancesOnRedisCluster: three stores on one cluster,
// many acquisitions at once on licenses whose keys live on different
// masters: never more than the limit, and the hint pieces find every
// lapsed lease.
func TestSeatLimitAcrossInstancesOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	loc := newLocation(t)
	loc.redisURL = cluster.URL()
	var stores []*Store
	for range 3 {
		s := loc.open(t, nil)
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	tn := mkTenant(t, stores[0])
	const seats = 3
	var lics []server.License
	for range 4 {
		lics = append(lics, mkLicense(t, stores[0], tn.ID, seats, time.Second))
	}
	var granted [4]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 60 {
		wg.Go(func() {
			li := i % len(lics)
			_, _, err := tryAcq(t.Context(), stores[i%len(stores)], lics[li].Key, fmt.Sprintf("fp-%d", i))
			switch {
			case err == nil:
				granted[li].Add(1)
			case server.ErrorCode(err) != server.EEXHAUSTED:
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("acquire: %v", err)
	}
	for i, lic := range lics {
		require.EqualValues(t, seats, granted[i].Load(), "license %d: seats granted", i)
		n, err := stores[1].SeatsInUse(t.Context(), tn.ID, lic.ID)
		require.NoError(t, err)
		require.Equal(t, seats, n)
	}

	// They all lapse; one cleaner on another instance finds every one.
	require.Eventually(t, func() bool {
		refs, err := stores[2].DueLeases(t.Context(), nil, 100)
		return err == nil && len(refs) == seats*len(lics)
	}, 10*time.Second, 50*time.Millisecond, "every lapsed lease is due, whatever master its license lives on")
	refs, err := stores[2].DueLeases(t.Context(), nil, 100)
	require.NoError(t, err)
	exp, err := stores[2].ExpireLeases(t.Context(), refs)
	require.NoError(t, err)
	require.Len(t, exp, seats*len(lics))
}

// TestLegacyHintMovedAtOpen: the one-piece expiry hint of earlier versions
// is moved into its pieces when a store opens, so that no lapsed lease
// waits for the reconciliation to be found.
func TestLegacyHintMovedAtOpen(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Second)
	res, _ := acq(t, s, lic.Key, "a")
	_, rdb := testServers(t)
	piece := s.live.Keys().ExpiryOf(lic.ID)
	score := rdb.ZScore(t.Context(), piece[0], lic.ID).Val()
	require.NotZero(t, score)
	// As an earlier version left it: the hint in the one-piece key only.
	old := s.live.Keys().LegacyExpiry()
	require.NoError(t, rdb.ZRem(t.Context(), piece[0], lic.ID).Err())
	require.NoError(t, rdb.ZAdd(t.Context(), old[0], redis.Z{Score: score, Member: lic.ID}).Err())

	s2 := loc.open(t, nil)
	t.Cleanup(func() { _ = s2.Close() })
	require.Zero(t, rdb.Exists(t.Context(), old[0]).Val(), "the old hint is gone")
	require.Equal(t, score, rdb.ZScore(t.Context(), piece[0], lic.ID).Val(), "and in its piece")
	require.Eventually(t, func() bool {
		refs, err := s2.DueLeases(t.Context(), nil, 10)
		return err == nil && len(refs) == 1 && refs[0].LeaseID == res.Lease.ID
	}, 5*time.Second, 50*time.Millisecond)
}
