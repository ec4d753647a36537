package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// watchersOf is how many channels watch leaseID.
func (h *Hub) watchersOf(leaseID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers[leaseID])
}

func TestLocalDeliversToThatLeaseOnly(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	pub := Local{Hub: hub}
	a1, stopA1 := hub.Watch("lse_a")
	defer stopA1()
	a2, stopA2 := hub.Watch("lse_a") // two streams of one lease (a reconnect)
	defer stopA2()
	b, stopB := hub.Watch("lse_b")
	defer stopB()

	pub.Revoked(context.Background(), "lse_a")
	require.True(t, closed(a1), "a watcher of the revoked lease is told")
	require.True(t, closed(a2), "every watcher of the revoked lease is told")
	require.False(t, closed(b), "a watcher of another lease is not")
	require.Zero(t, hub.watchersOf("lse_a"), "delivered watchers are dropped")
	require.Equal(t, 1, hub.watchersOf("lse_b"))

	pub.Revoked(context.Background(), "lse_a") // again: nobody left, no double close
	pub.Revoked(context.Background(), "lse_unknown")
	require.False(t, closed(b))
}

func TestUnwatch(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	gone, stop := hub.Watch("lse_a")
	kept, stopKept := hub.Watch("lse_a")
	defer stopKept()
	stop()
	stop() // calling it again is fine
	require.Equal(t, 1, hub.watchersOf("lse_a"))

	hub.deliver("lse_a")
	require.False(t, closed(gone), "a stream that stopped watching is not told")
	require.True(t, closed(kept))

	_, stopLast := hub.Watch("lse_c")
	stopLast()
	require.Zero(t, hub.watchersOf("lse_c"))
	hub.mu.Lock()
	_, left := hub.watchers["lse_c"]
	hub.mu.Unlock()
	require.False(t, left, "a lease nobody watches leaves no entry behind")

	_, stopAfter := hub.Watch("lse_d")
	hub.deliver("lse_d")
	stopAfter() // after delivery: a no-op
	require.Zero(t, hub.watchersOf("lse_d"))
}

// testRedis connects to the tests' Redis (SEATD_TEST_REDIS_URL).
func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("SEATD_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(t.Context()).Err(), "Redis is needed: run scripts/services.sh (or set SEATD_TEST_REDIS_URL)")
	return rdb
}

func freshPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "seatd-test-notify-" + hex.EncodeToString(b) + ":"
}

// newInstance is one seatd instance's notifier: its own hub and client.
func newInstance(t *testing.T, prefix string) (*Hub, *Redis) {
	t.Helper()
	hub := NewHub()
	r := NewRedis(hub, testRedis(t), prefix, slog.New(slog.DiscardHandler))
	t.Cleanup(r.Close)
	return hub, r
}

// waitSubscribed waits until n notifiers listen on channel, so that nothing
// published from now on can be missed.
func waitSubscribed(t *testing.T, rdb *redis.Client, channel string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		subs, err := rdb.PubSubNumSub(t.Context(), channel).Result()
		return err == nil && subs[channel] >= n
	}, 10*time.Second, 5*time.Millisecond, "%d subscribers on %s", n, channel)
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not told within 10s", what)
	}
}

func TestRedisAcrossInstances(t *testing.T) {
	t.Parallel()
	prefix := freshPrefix()
	hubA, a := newInstance(t, prefix)
	hubB, _ := newInstance(t, prefix)
	hubC, c := newInstance(t, freshPrefix()) // another deployment sharing the Redis
	rdb := testRedis(t)
	waitSubscribed(t, rdb, a.channel, 2)
	waitSubscribed(t, rdb, c.channel, 1)

	onA, stopA := hubA.Watch("lse_x")
	defer stopA()
	onB, stopB := hubB.Watch("lse_x")
	defer stopB()
	otherLeaseOnB, stopOther := hubB.Watch("lse_y")
	defer stopOther()
	otherDeployment, stopC := hubC.Watch("lse_x")
	defer stopC()

	a.Revoked(t.Context(), "lse_x")
	require.True(t, closed(onA), "the revoking instance tells its own streams at once")
	waitClosed(t, onB, "a stream of the lease on another instance")
	require.False(t, closed(otherLeaseOnB), "a stream of another lease is not told")

	// The other deployment hears nothing: once a later revocation on its
	// own channel arrived, the first one would have come before it.
	marker, stopMarker := hubC.Watch("lse_marker")
	defer stopMarker()
	require.NoError(t, rdb.Publish(t.Context(), c.channel, "lse_marker").Err())
	waitClosed(t, marker, "a revocation on the other deployment's channel")
	require.False(t, closed(otherDeployment), "another key prefix is another deployment")
}

func TestRedisRevokedWithoutRedisStillTellsLocalStreams(t *testing.T) {
	t.Parallel()
	hub := NewHub()
	opts, err := redis.ParseURL("redis://127.0.0.1:1/0") // nothing listens there
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	r := NewRedis(hub, rdb, freshPrefix(), slog.New(slog.DiscardHandler))
	defer r.Close()

	ch, stop := hub.Watch("lse_a")
	defer stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r.Revoked(ctx, "lse_a")
	require.True(t, closed(ch), "a Redis failure never delays this instance's own streams")
}
