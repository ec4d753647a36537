package cleanup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestJitterStaysWithinHalfOfItselfAroundTheInterval(t *testing.T) {
	t.Parallel()
	const interval = time.Minute
	require.Equal(t, 57*time.Second, jittered(interval, 0.1, 0), "earliest: interval × (1 − jitter/2)")
	require.Equal(t, interval, jittered(interval, 0.1, 0.5), "middle: the interval")
	require.Equal(t, 63*time.Second, jittered(interval, 0.1, 1), "latest bound: interval × (1 + jitter/2)")
	require.Equal(t, 30*time.Second, jittered(interval, 1, 0))
	require.Equal(t, 90*time.Second, jittered(interval, 1, 1))
}

func TestJitterDefaultsOutsideItsRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]float64{0: 0.1, -0.5: 0.1, 1.5: 0.1, 1: 1, 0.05: 0.05} {
		require.Equal(t, want, jitterOr(in), "jitter %v", in)
	}
}

func TestSchedulerRunsAfterPassAfterEachPassWithThePassContext(t *testing.T) {
	t.Parallel()
	f := newFakeStore(3)
	c := NewCleaner(f, Config{}, nil, nil)
	type after struct {
		ctx     context.Context
		cleaned bool
	}
	ran := make(chan after, 1)
	s := &Scheduler{Cleaner: c, Interval: time.Hour, AfterPass: func(ctx context.Context) {
		_, cleaned := c.LastRun()
		ran <- after{ctx, cleaned}
	}}
	s.Start(t.Context())
	a := <-ran
	ctx := a.ctx
	require.True(t, a.cleaned, "after the cleanup pass, not before")
	require.NoError(t, ctx.Err(), "while leading, the context is live")
	s.Stop()
	require.Error(t, ctx.Err(), "losing leadership (Stop) ends the upkeep too")
}
