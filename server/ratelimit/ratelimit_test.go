package ratelimit

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestTakeRefusesPastTheBurstUntilATokenIsBack(t *testing.T) {
	l := New(2, 3, 0) // 2 a second, 3 at once
	for i := range 3 {
		ok, _ := l.Take("a", t0)
		require.True(t, ok, "take %d within the burst", i)
	}
	ok, retry := l.Take("a", t0)
	require.False(t, ok)
	require.Equal(t, 500*time.Millisecond, retry, "one token comes back every 1/2 s")
	ok, _ = l.Take("b", t0)
	require.True(t, ok, "another address has its own bucket")
	ok, _ = l.Take("a", t0.Add(499*time.Millisecond))
	require.False(t, ok)
	ok, _ = l.Take("a", t0.Add(500*time.Millisecond))
	require.True(t, ok, "a token is back after 1/rate")
}

func TestChargeCountsFailuresAndEmptyOnlyLooks(t *testing.T) {
	l := New(1, 2, 0)
	for range 100 {
		empty, _ := l.Empty("never-failed", t0)
		require.False(t, empty)
	}
	require.Zero(t, l.Len(), "looking at an address never charged remembers nothing")

	l.Charge("a", t0)
	empty, _ := l.Empty("a", t0)
	require.False(t, empty, "one failure of a burst of 2")
	l.Charge("a", t0)
	empty, retry := l.Empty("a", t0)
	require.True(t, empty)
	require.Equal(t, time.Second, retry)
	l.Charge("a", t0) // charging an empty bucket does not put it in debt
	empty, _ = l.Empty("a", t0.Add(time.Second))
	require.False(t, empty, "a token is back a second later")
}

func TestAddressesAreBounded(t *testing.T) {
	const max = 64
	l := New(1, 1, max)
	for i := range 10 * max {
		l.Charge(fmt.Sprintf("10.0.%d.%d", i/256, i%256), t0)
		require.LessOrEqual(t, l.Len(), max)
	}
	// The most recently charged address is still remembered.
	empty, _ := l.Empty(fmt.Sprintf("10.0.%d.%d", (10*max-1)/256, (10*max-1)%256), t0)
	require.True(t, empty)
}

func TestLeastRecentlySeenIsForgottenFirst(t *testing.T) {
	l := New(1, 1, shards) // one address per shard
	l.Charge("a", t0)
	// Fill a's shard with other addresses until a is forgotten.
	for i := 0; ; i++ {
		other := fmt.Sprint("other-", i)
		if l.shard(other) != l.shard("a") {
			continue
		}
		l.Charge(other, t0)
		break
	}
	empty, _ := l.Empty("a", t0)
	require.False(t, empty, "a forgotten address starts with a full bucket")
}

func TestNilLimiterAllowsEverything(t *testing.T) {
	l := New(0, 10, 0)
	require.Nil(t, l)
	ok, _ := l.Take("a", t0)
	require.True(t, ok)
	l.Charge("a", t0)
	empty, _ := l.Empty("a", t0)
	require.False(t, empty)
}

func TestConcurrentUse(t *testing.T) {
	l := New(1000, 10, 128)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				addr := fmt.Sprint(g, "-", i%300)
				l.Take(addr, t0)
				l.Charge(addr, t0)
				l.Empty(addr, t0)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, l.Len(), 128)
}
