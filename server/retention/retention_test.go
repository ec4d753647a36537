package retention_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/retention"
)

// fakeStore holds a number of old records per kind and records each call.
type fakeStore struct {
	mu      sync.Mutex
	left    map[server.RecordKind]int
	calls   []call
	failing map[server.RecordKind]bool
	onCall  func(n int) // called with the number of calls so far
}

type call struct {
	kind   server.RecordKind
	before time.Time
	limit  int
}

func (f *fakeStore) PruneRecords(_ context.Context, kind server.RecordKind, before time.Time, limit int) (int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call{kind, before, limit})
	n := len(f.calls)
	var err error
	took := 0
	if f.failing[kind] {
		err = server.Unavailable(errors.New("down"))
	} else {
		took = min(limit, f.left[kind])
		f.left[kind] -= took
	}
	hook := f.onCall
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return took, err
}

type counts struct {
	pruned map[server.RecordKind]int
	failed map[server.RecordKind]int
}

func (c *counts) Add(kind server.RecordKind, n int) { c.pruned[kind] += n }
func (c *counts) Failed(kind server.RecordKind)     { c.failed[kind]++ }

func newCounts() *counts {
	return &counts{pruned: map[server.RecordKind]int{}, failed: map[server.RecordKind]int{}}
}

var clock = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func TestRunPrunesEachKindInBatchesUpToItsCutoff(t *testing.T) {
	t.Parallel()
	st := &fakeStore{left: map[server.RecordKind]int{
		server.RecordLeases: 25, server.RecordCleanupEvents: 10, server.RecordSeatEvents: 3, server.RecordAudit: 7,
	}}
	c := newCounts()
	p := retention.New(st, retention.Config{
		Keep: map[server.RecordKind]time.Duration{
			server.RecordLeases: 24 * time.Hour, server.RecordCleanupEvents: time.Hour,
			server.RecordSeatEvents: time.Minute,
			// audit: kept forever
		},
		BatchSize: 10,
		Now:       func() time.Time { return clock },
	}, nil, c)

	pass := p.Run(t.Context())

	require.True(t, pass.Done)
	require.Equal(t, map[server.RecordKind]int{server.RecordLeases: 25, server.RecordCleanupEvents: 10, server.RecordSeatEvents: 3}, pass.Pruned)
	require.Equal(t, pass.Pruned, c.pruned, "the counter saw every record")
	require.Equal(t, 7, st.left[server.RecordAudit], "a kind without a Keep is kept forever")
	// Leases: 10, 10, 5 (short: done); cleanup events: 10, 0; seat events: 3.
	want := []call{
		{server.RecordLeases, clock.Add(-24 * time.Hour), 10},
		{server.RecordLeases, clock.Add(-24 * time.Hour), 10},
		{server.RecordLeases, clock.Add(-24 * time.Hour), 10},
		{server.RecordCleanupEvents, clock.Add(-time.Hour), 10},
		{server.RecordCleanupEvents, clock.Add(-time.Hour), 10},
		{server.RecordSeatEvents, clock.Add(-time.Minute), 10},
	}
	require.Equal(t, want, st.calls)
}

func TestRunStopsAKindThatFailsAndGoesOn(t *testing.T) {
	t.Parallel()
	st := &fakeStore{
		left:    map[server.RecordKind]int{server.RecordLeases: 5, server.RecordAudit: 5},
		failing: map[server.RecordKind]bool{server.RecordLeases: true},
	}
	c := newCounts()
	p := retention.New(st, retention.Config{
		Keep:      map[server.RecordKind]time.Duration{server.RecordLeases: time.Hour, server.RecordAudit: time.Hour},
		BatchSize: 10,
	}, nil, c)

	pass := p.Run(t.Context())

	require.False(t, pass.Done)
	require.Equal(t, []server.RecordKind{server.RecordLeases}, pass.Failed)
	require.Equal(t, 1, c.failed[server.RecordLeases])
	require.Equal(t, 5, pass.Pruned[server.RecordAudit], "the other kinds are still pruned")
	require.Equal(t, 5, st.left[server.RecordLeases], "nothing of the failed kind removed")
}

func TestRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	st := &fakeStore{left: map[server.RecordKind]int{server.RecordLeases: 1000}}
	ctx, cancel := context.WithCancel(t.Context())
	st.onCall = func(n int) {
		if n == 3 {
			cancel() // as a lost leadership or the pass limit would
		}
	}
	p := retention.New(st, retention.Config{
		Keep: map[server.RecordKind]time.Duration{server.RecordLeases: time.Hour}, BatchSize: 10,
	}, nil, nil)

	pass := p.Run(ctx)

	require.False(t, pass.Done)
	require.Equal(t, 30, pass.Pruned[server.RecordLeases], "no batch taken after the context ended")
	require.Len(t, st.calls, 3)
	require.Empty(t, pass.Failed, "an ended pass is not a failure")
}

func TestTickRunsOnceAnInterval(t *testing.T) {
	t.Parallel()
	now := clock
	st := &fakeStore{left: map[server.RecordKind]int{}}
	p := retention.New(st, retention.Config{
		Keep:     map[server.RecordKind]time.Duration{server.RecordAudit: time.Hour},
		Interval: time.Hour,
		Now:      func() time.Time { return now },
	}, nil, nil)

	p.Tick(t.Context()) // the first tick runs
	require.Len(t, st.calls, 1)
	now = now.Add(59 * time.Minute)
	p.Tick(t.Context())
	require.Len(t, st.calls, 1, "within the interval: no pass")
	now = now.Add(time.Minute)
	p.Tick(t.Context())
	require.Len(t, st.calls, 2, "an interval after the first: a pass")
}
