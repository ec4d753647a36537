package gcpace

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPercentBoundsTheGarbageAtScale(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{20 * mb, 400},
		{64 * mb, 400},
		{128 * mb, 200},
		{512 * mb, 50},
		{1024 * mb, 25},
		{4096 * mb, 25},
	} {
		require.Equal(t, tc.want, Percent(tc.live), "live %d MB", tc.live/mb)
	}
	// Between 64 MB and 1 GB the garbage allowed stays at headroom (to
	// the percent's rounding: 1 % of the live heap).
	for live := uint64(65 * mb); live < 1024*mb; live += 10 * mb {
		garbage := live * uint64(Percent(live)) / 100
		require.LessOrEqual(t, garbage, uint64(headroom), "live %d MB", live/mb)
		require.Greater(t, garbage, uint64(headroom)-live/100, "live %d MB", live/mb)
	}
}

func TestRunLeavesAGOGCFromTheEnvironmentAlone(t *testing.T) {
	t.Setenv("GOGC", "200")
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	Run(t.Context()) // returns at once: it would block otherwise
	require.Equal(t, 123, debug.SetGCPercent(123), "the percent is left alone")
}

// With a memory limit the limit bounds the heap: Run sets 400 and returns.
func TestRunUnderAMemoryLimitSetsTheSmallHeapPaceAndReturns(t *testing.T) {
	t.Setenv("GOGC", "")
	beforeLimit := debug.SetMemoryLimit(4 << 30)
	defer debug.SetMemoryLimit(beforeLimit)
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	Run(t.Context()) // returns at once: it would block otherwise
	require.Equal(t, 400, debug.SetGCPercent(100))
	require.True(t, limited())
	debug.SetMemoryLimit(math.MaxInt64)
	require.False(t, limited())
}
