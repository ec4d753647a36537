package cleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// fakeStore is a CleanupStore over a fixed list of due leases.
type fakeStore struct {
	mu        sync.Mutex
	due       []server.LeaseRef
	expired   map[string]int
	failBatch func(batch []server.LeaseRef) error
	inFlight  atomic.Int32
	maxFlight atomic.Int32
	batchLens []int
	delay     time.Duration
	lingering map[string]bool // leases whose end is a lapsed linger: released
}

func newFakeStore(n int) *fakeStore {
	f := &fakeStore{expired: map[string]int{}}
	base := time.Now().Add(-time.Hour)
	for i := range n {
		f.due = append(f.due, server.LeaseRef{LeaseID: fmt.Sprintf("lse_%05d", i), LicenseID: "lic", ExpiresAt: base.Add(time.Duration(i) * time.Millisecond)})
	}
	return f
}

func (f *fakeStore) DueLeases(_ context.Context, after *server.LeaseRef, limit int) ([]server.LeaseRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []server.LeaseRef
	for _, r := range f.due {
		if f.expired[r.LeaseID] > 0 {
			continue
		}
		if after != nil && !(r.ExpiresAt.After(after.ExpiresAt) || (r.ExpiresAt.Equal(after.ExpiresAt) && r.LeaseID > after.LeaseID)) {
			continue
		}
		out = append(out, r)
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

func (f *fakeStore) ExpireLeases(ctx context.Context, refs []server.LeaseRef) ([]server.Lease, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxFlight.Load()
		if n <= m || f.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.failBatch != nil {
		if err := f.failBatch(refs); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batchLens = append(f.batchLens, len(refs))
	var out []server.Lease
	for _, r := range refs {
		if f.expired[r.LeaseID] == 0 {
			l := server.Lease{ID: r.LeaseID, LicenseID: r.LicenseID, State: server.LeaseExpired}
			if f.lingering[r.LeaseID] {
				l.State, l.Lingering = server.LeaseReleased, true
			}
			out = append(out, l)
		}
		f.expired[r.LeaseID]++
	}
	return out, nil
}

func (f *fakeStore) ActiveLeases(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int64(len(f.due) - len(f.expired)), nil
}

func (f *fakeStore) ZombieReport(context.Context, server.ZombieQuery) (server.ZombieReport, error) {
	return server.ZombieReport{}, nil
}

// TestLapsedLingersAreNoZombies: a lease whose linger lapsed ends
// released (server/linger.go): the pass ends it but does not count it
// among the zombies it expired.
func TestLapsedLingersAreNoZombies(t *testing.T) {
	t.Parallel()
	f := newFakeStore(10)
	f.lingering = map[string]bool{f.due[2].LeaseID: true, f.due[7].LeaseID: true}
	c := NewCleaner(f, Config{BatchSize: 4, Concurrency: 2}, nil, nil)
	run := c.Pass(context.Background(), TriggerManual)
	require.Equal(t, ResultOK, run.Result)
	require.EqualValues(t, 10, run.Scanned)
	require.EqualValues(t, 8, run.Expired)
	require.Len(t, f.expired, 10, "every one ended")
}

func TestPassExpiresEverythingInBoundedBatches(t *testing.T) {
	t.Parallel()
	f := newFakeStore(1234)
	c := NewCleaner(f, Config{BatchSize: 100, Concurrency: 3}, nil, nil)
	run := c.Pass(context.Background(), TriggerManual)
	require.Equal(t, ResultOK, run.Result)
	require.EqualValues(t, 1234, run.Scanned)
	require.EqualValues(t, 1234, run.Expired)
	require.Len(t, f.expired, 1234)
	require.LessOrEqual(t, slices.Max(f.batchLens), 100)
	require.LessOrEqual(t, f.maxFlight.Load(), int32(3))
	last, ok := c.LastRun()
	require.True(t, ok)
	require.Equal(t, run, last)
}

func TestPassTransientErrorRemovesNothingAndIsRetried(t *testing.T) {
	t.Parallel()
	f := newFakeStore(300)
	// A transient error: the batch holding lse_00150 (lse_00100..199) fails
	// the first time it is tried and would succeed on any later try, so a
	// cleaner that went on to expire a failed batch's leases in the same
	// pass (retrying it, or splitting it up) would show here.
	var failedOnce atomic.Bool
	f.failBatch = func(batch []server.LeaseRef) error {
		if slices.ContainsFunc(batch, func(r server.LeaseRef) bool { return r.LeaseID == "lse_00150" }) && failedOnce.CompareAndSwap(false, true) {
			return server.Unavailable(errors.New("connection reset"))
		}
		return nil
	}
	c := NewCleaner(f, Config{BatchSize: 100, Concurrency: 2}, nil, nil)
	run := c.Pass(context.Background(), TriggerSchedule)
	for i := 100; i < 200; i++ {
		require.Zero(t, f.expired[fmt.Sprintf("lse_%05d", i)], "a failed batch's leases stay for the next pass (ADR-031)")
	}
	require.Equal(t, ResultPartial, run.Result)
	require.EqualValues(t, 1, run.Errors)
	require.EqualValues(t, 200, run.Expired)

	run = c.Pass(context.Background(), TriggerSchedule)
	require.Equal(t, ResultOK, run.Result)
	require.EqualValues(t, 100, run.Expired, "the next pass picks up what failed")
	require.Len(t, f.expired, 300)
	for id, n := range f.expired {
		require.Equal(t, 1, n, "lease %s expired more than once", id)
	}
}

func TestPassAllBatchesFailingIsFailed(t *testing.T) {
	t.Parallel()
	f := newFakeStore(10)
	f.failBatch = func([]server.LeaseRef) error { return errors.New("down") }
	run := NewCleaner(f, Config{}, nil, nil).Pass(context.Background(), TriggerManual)
	require.Equal(t, ResultFailed, run.Result)
	require.Empty(t, f.expired)
}

func TestPassSoftLimitStopsTakingBatches(t *testing.T) {
	t.Parallel()
	f := newFakeStore(1000)
	f.delay = 30 * time.Millisecond
	c := NewCleaner(f, Config{BatchSize: 10, Concurrency: 1, SoftLimit: 50 * time.Millisecond, HardLimit: time.Second}, nil, nil)
	run := c.Pass(context.Background(), TriggerManual)
	require.Equal(t, ResultPartial, run.Result)
	require.Less(t, run.Expired, int64(1000))
}

func TestPassNothingDue(t *testing.T) {
	t.Parallel()
	run := NewCleaner(newFakeStore(0), Config{}, nil, nil).Pass(context.Background(), TriggerManual)
	require.Equal(t, ResultOK, run.Result)
	require.Zero(t, run.Scanned)
}

func TestSchedulerRunsAtOnceAndStops(t *testing.T) {
	t.Parallel()
	f := newFakeStore(5)
	c := NewCleaner(f, Config{}, nil, nil)
	s := &Scheduler{Cleaner: c, Interval: time.Hour}
	s.Stop() // stop without start is a no-op
	s.Start(context.Background())
	require.Eventually(t, func() bool { _, ok := c.LastRun(); return ok }, 5*time.Second, 10*time.Millisecond)
	require.True(t, s.Running())
	require.Eventually(t, func() bool { return !s.NextRun().IsZero() }, 5*time.Second, 10*time.Millisecond)
	s.Stop()
	s.Stop()
	require.False(t, s.Running())
	require.Len(t, f.expired, 5)
}
