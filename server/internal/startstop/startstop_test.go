package startstop

import (
	"context"
	"sync/atomic"
	"testing"

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

func TestParentContextEndsRun(t *testing.T) {
	t.Parallel()
	var r Runner
	ctx, cancel := context.WithCancel(t.Context())
	ended := make(chan struct{})
	r.Start(ctx, func(ctx context.Context) { <-ctx.Done(); close(ended) })
	cancel()
	<-ended
	r.Stop()
}
