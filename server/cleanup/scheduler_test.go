package cleanup

import (
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
