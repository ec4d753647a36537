package service

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server/waitqueue"
)

// countedQueue counts the calls a wait queue gets: each is one script of
// the Redis queue.
type countedQueue struct {
	waitqueue.Queue
	joins, positions, asides, leaves atomic.Int64
}

func (q *countedQueue) Join(ctx context.Context, name string, level int, resume string) (waitqueue.Ticket, error) {
	q.joins.Add(1)
	t, err := q.Queue.Join(ctx, name, level, resume)
	if err != nil {
		return nil, err
	}
	return countedTicket{Ticket: t, q: q}, nil
}

func (q *countedQueue) calls() int64 {
	return q.joins.Load() + q.positions.Load() + q.asides.Load() + q.leaves.Load()
}

type countedTicket struct {
	waitqueue.Ticket
	q *countedQueue
}

func (t countedTicket) Position(ctx context.Context) (waitqueue.Place, error) {
	t.q.positions.Add(1)
	return t.Ticket.Position(ctx)
}

func (t countedTicket) StandAside(ctx context.Context, aside bool) (string, error) {
	t.q.asides.Add(1)
	return t.Ticket.StandAside(ctx, aside)
}

func (t countedTicket) Leave(ctx context.Context) string {
	t.q.leaves.Add(1)
	return t.Ticket.Leave(ctx)
}

// testQueues are the wait queues a service test runs over: the memory one,
// and the Redis one (a prefix of its own per test; a liveness far beyond
// the test, whose waiters may look at their place only once).
var testQueues = map[string]func(tb testing.TB, max int) waitqueue.Queue{
	"memory": func(_ testing.TB, max int) waitqueue.Queue { return waitqueue.NewMemory(max) },
	"redis": func(tb testing.TB, max int) waitqueue.Queue {
		opts, err := redis.ParseURL(cmp.Or(os.Getenv("SEATD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/0"))
		require.NoError(tb, err)
		rdb := redis.NewClient(opts)
		require.NoError(tb, rdb.Ping(context.Background()).Err(), "Redis is needed: run scripts/services.sh (or set SEATD_TEST_REDIS_URL)")
		prefix := fmt.Sprintf("seatd-test-svcq-%d:", rand.Uint32())
		tb.Cleanup(func() {
			ctx := context.Background()
			iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
			for iter.Next(ctx) {
				rdb.Del(ctx, iter.Val())
			}
			_ = rdb.Close()
		})
		return waitqueue.NewRedis(rdb, prefix, max, time.Hour)
	},
}

// drain is n waiters queued behind a head on a license whose one seat is
// held, and then given seats for all of them. Polls are an hour apart:
// only the service's own wake-ups move anyone.
type drain struct {
	queue   *countedQueue
	waiters []*waiter
	giveUp  context.CancelFunc // the head leaves: the drain begins
}

func newDrain(tb testing.TB, newQueue func(testing.TB, int) waitqueue.Queue, n int) drain {
	tb.Helper()
	q := &countedQueue{Queue: newQueue(tb, n+1)}
	e := newEnv(tb, func(c *Config) { c.WaitQueue, c.WaitPoll = q, time.Hour })
	lic := e.license(tb, 1)
	e.acquire(tb, lic.Key, "holder")
	ctx, giveUp := context.WithCancel(tb.Context())
	e.wait(ctx, lic.Key, "head").placeIs(tb, 1)
	d := drain{queue: q, giveUp: giveUp}
	for i := range n {
		w := e.wait(tb.Context(), lic.Key, fmt.Sprintf("waiter-%d", i))
		w.placeIs(tb, i+2)
		d.waiters = append(d.waiters, w)
	}
	_, err := e.svc.UpdateLicense(tb.Context(), "operator", lic.TenantID, LicenseInput{ID: lic.ID, Seats: int64(n + 1)}, []string{"seats"})
	require.NoError(tb, err)
	return d
}

// run drains the queue and returns how many calls the queue got meanwhile.
func (d drain) run(tb testing.TB) (calls, positions int64) {
	calls, positions = d.queue.calls(), d.queue.positions.Load()
	d.giveUp()
	for i, w := range d.waiters {
		within(tb, w.granted, fmt.Sprintf("waiter %d's grant", i))
	}
	return d.queue.calls() - calls, d.queue.positions.Load() - positions
}

// TestWaitQueueDrainIsLinear: when waiters leave one after another, each
// departure costs the queue a bounded number of calls (the next in line
// is told at once; the others see their place at their own next look),
// not a look by every waiter still queued: draining n waiters used to
// cost ~n²/2 Position scripts.
func TestWaitQueueDrainIsLinear(t *testing.T) {
	t.Parallel()
	const n = 60
	for name, newQueue := range testQueues {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := newDrain(t, newQueue, n)
			calls, positions := d.run(t)
			t.Logf("draining %d waiters: %d queue calls, %d of them Position", n, calls, positions)
			require.Zero(t, d.queue.asides.Load(), "without a policy nobody stands aside")
			require.LessOrEqual(t, positions, int64(2*n), "Position calls to drain %d waiters", n)
			require.LessOrEqual(t, calls, int64(4*n), "queue calls to drain %d waiters", n)
		})
	}
}

// BenchmarkWaitQueueDrain drains n waiters (one seat each as the one
// before them leaves) and reports the queue calls (Redis: scripts) per
// drain.
func BenchmarkWaitQueueDrain(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				var calls, positions int64
				for b.Loop() {
					b.StopTimer()
					d := newDrain(b, testQueues[name], n)
					b.StartTimer()
					c, p := d.run(b)
					calls += c
					positions += p
				}
				b.ReportMetric(float64(calls)/float64(b.N), "calls/drain")
				b.ReportMetric(float64(positions)/float64(b.N), "positions/drain")
			})
		}
	}
}
