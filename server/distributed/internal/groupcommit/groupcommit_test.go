package groupcommit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBatcher: every call gets its own answer, batches respect their
// bounds, and a failing batch fails only its own calls.
func TestBatcher(t *testing.T) {
	t.Parallel()
	var (
		batches, maxSize, running, maxRunning atomic.Int64
		mu                                    sync.Mutex
	)
	b := New(2, 4, 8, func(batch []*Call[int, int]) {
		batches.Add(1)
		n := running.Add(1)
		defer running.Add(-1)
		mu.Lock()
		maxSize.Store(max(maxSize.Load(), int64(len(batch))))
		maxRunning.Store(max(maxRunning.Load(), n))
		mu.Unlock()
		time.Sleep(100 * time.Microsecond)
		for _, c := range batch {
			if c.Req < 0 {
				panic("negative")
			}
			c.Res = 2 * c.Req
		}
	})
	const callers, calls = 64, 200
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				req := g*calls + i
				got, err := b.Do(t.Context(), req)
				if err != nil || got != 2*req {
					t.Errorf("do(%d) = %d, %v", req, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, maxSize.Load(), int64(8), "calls per batch")
	require.LessOrEqual(t, maxRunning.Load(), int64(2), "batches at once")
	require.Less(t, batches.Load(), int64(callers*calls), "calls were grouped")

	// A panic fails the calls of its batch, nothing else.
	_, err := b.Do(t.Context(), -1)
	require.ErrorContains(t, err, "panicked")
	got, err := b.Do(t.Context(), 21)
	require.NoError(t, err)
	require.Equal(t, 42, got)

	// A caller that gave up before its batch ran is answered with its
	// context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b2 := New(1, 1, 8, func(batch []*Call[int, int]) {
		for _, c := range batch {
			if c.Err = c.Ctx.Err(); c.Err == nil {
				c.Res = c.Req
			}
		}
	})
	_, err = b2.Do(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)

	b.Stop()
	_, err = b.Do(t.Context(), 1)
	require.ErrorIs(t, err, ErrStopped)
}

// TestBatcherStopWaitsForTheRunningBatch: stop returns only once the batch
// in flight has answered its callers (a store closes its pools after it).
func TestBatcherStopWaitsForTheRunningBatch(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	b := New(1, 1, 8, func(batch []*Call[int, int]) {
		close(started)
		<-release
		for _, c := range batch {
			c.Res = c.Req
		}
	})
	answered := make(chan error, 1)
	go func() {
		_, err := b.Do(t.Context(), 1)
		answered <- err
	}()
	<-started
	var released atomic.Bool
	stopped := make(chan bool, 1)
	go func() {
		b.Stop()
		stopped <- released.Load()
	}()
	// stop holds the lock until it waits: once it has marked the batcher
	// stopped and let go of the lock, it is waiting.
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.stopped
	}, 10*time.Second, time.Millisecond)
	released.Store(true)
	close(release)
	select {
	case afterRelease := <-stopped:
		require.True(t, afterRelease, "stop returned while the batch was running")
	case <-time.After(30 * time.Second):
		t.Fatal("stop did not return after the running batch ended")
	}
	require.NoError(t, <-answered)
}
