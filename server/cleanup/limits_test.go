package cleanup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// blockingStore has one lease due and expires nothing: its batch waits
// until its context ends, and hands the test that context first.
type blockingStore struct {
	countingStore
	batches chan context.Context
}

func (b *blockingStore) DueLeases(_ context.Context, after *server.LeaseRef, _ int) ([]server.LeaseRef, error) {
	if after != nil {
		return nil, nil
	}
	return []server.LeaseRef{{LeaseID: "lse_1", LicenseID: "lic", ExpiresAt: time.Now().Add(-time.Hour)}}, nil
}

func (b *blockingStore) ExpireLeases(ctx context.Context, _ []server.LeaseRef) ([]server.Lease, error) {
	b.batches <- ctx
	<-ctx.Done()
	return nil, ctx.Err()
}

// passOnBlockingStore starts a pass (under the test's context, which ends
// it when the test does) and returns when it was started, the context its
// batch got, and the pass's report once it returns.
func passOnBlockingStore(t *testing.T, cfg Config) (time.Time, context.Context, <-chan Run) {
	t.Helper()
	store := &blockingStore{batches: make(chan context.Context, 1)}
	c := NewCleaner(store, cfg, nil, nil)
	done := make(chan Run, 1)
	start := time.Now()
	go func() { done <- c.Pass(t.Context(), TriggerManual) }()
	select {
	case ctx := <-store.batches:
		return start, ctx, done
	case <-time.After(time.Minute):
		t.Fatal("the pass never tried a batch")
		return start, nil, nil
	}
}

// requireDeadline checks that ctx ends at limit after the pass's start:
// no earlier than start+limit, no later than now+limit.
func requireDeadline(t *testing.T, ctx context.Context, start time.Time, limit time.Duration) {
	t.Helper()
	deadline, ok := ctx.Deadline()
	require.True(t, ok, "a pass's batches run under its hard limit")
	require.False(t, deadline.Before(start.Add(limit)), "deadline %v after the start, want %v", deadline.Sub(start), limit)
	require.False(t, deadline.After(time.Now().Add(limit)), "deadline %v after the start, want %v", deadline.Sub(start), limit)
}

// TestHardLimitCancelsThePass: a batch that would never end is cancelled
// at the hard limit and the pass returns (not ok: its lease waits for the
// next pass). The batch's deadline is checked against the clock the pass
// read, so nothing depends on the machine's speed; the pass is given a
// minute to return.
func TestHardLimitCancelsThePass(t *testing.T) {
	t.Parallel()
	const hard = 100 * time.Millisecond
	start, ctx, done := passOnBlockingStore(t, Config{SoftLimit: hard, HardLimit: hard})
	requireDeadline(t, ctx, start, hard)
	select {
	case run := <-done:
		require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "the hard limit ended the batch")
		require.Equal(t, ResultFailed, run.Result, "its one batch failed")
		require.EqualValues(t, 1, run.Errors)
		require.Zero(t, run.Expired)
	case <-time.After(time.Minute):
		t.Fatal("the pass did not end at its hard limit")
	}
}

// TestHardLimitIsNeverBelowTheSoftLimit: a hard limit configured below
// the soft one is raised to it (else a pass would be cancelled before it
// stopped taking batches); a larger one is kept. The batches' deadline
// shows which limit a pass runs under.
func TestHardLimitIsNeverBelowTheSoftLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		soft, hard, want time.Duration
	}{
		{"below the soft limit: raised to it", 2 * time.Minute, time.Minute, 2 * time.Minute},
		{"above it: kept", time.Minute, 3 * time.Minute, 3 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start, ctx, _ := passOnBlockingStore(t, Config{SoftLimit: tc.soft, HardLimit: tc.hard})
			requireDeadline(t, ctx, start, tc.want)
		})
	}
}
