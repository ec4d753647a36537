package startstop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStartOnceStopWaits(t *testing.T) {
	t.Parallel()
	var r Runner
	r.Stop() // without Start: nothing
	require.False(t, r.Running())

	var runs atomic.Int64
	started := make(chan struct{})
	var returned atomic.Bool
	run := func(ctx context.Context) {
		if runs.Add(1) == 1 {
			close(started)
		}
		<-ctx.Done()
		returned.Store(true)
	}
	r.Start(t.Context(), run)
	r.Start(t.Context(), run) // while running: nothing
	<-started
	require.True(t, r.Running())
	r.Stop()
	require.True(t, returned.Load(), "Stop waits for run to return")
	require.False(t, r.Running())
	r.Stop() // twice: nothing
	require.Equal(t, int64(1), runs.Load())

	r.Start(t.Context(), func(context.Context) { runs.Add(1) })
	r.Stop()
	require.Equal(t, int64(2), runs.Load(), "started again after Stop")
}

// TestParentContextEndsRun: run's context is the caller's, made
// cancellable: it carries the caller's values, and it ends when the
// caller's context ends, without Stop.
func TestParentContextEndsRun(t *testing.T) {
	t.Parallel()
	var r Runner
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "from the caller"))
	got := make(chan context.Context, 1)
	ended := make(chan error, 1)
	r.Start(parent, func(ctx context.Context) {
		got <- ctx
		<-ctx.Done()
		ended <- ctx.Err()
	})
	ctx := <-got
	require.Equal(t, "from the caller", ctx.Value(key{}), "run's context derives from the caller's")
	require.NoError(t, ctx.Err(), "live until the caller's context ends")

	cancel()
	select {
	case err := <-ended:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("run's context did not end with the caller's")
	}
	require.True(t, r.Running(), "Running is about Start and Stop, not the context")
	r.Stop() // after run returned on its own: returns at once
	require.False(t, r.Running())
}
