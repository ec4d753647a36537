package gcpace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPercentKeepsTheHeapGoalBounded(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{100 * mb, 400},
		{256 * mb, 400},
		{512 * mb, 150},
		{640 * mb, 100},
		{1100 * mb, 100},
	} {
		require.Equal(t, tc.want, Percent(tc.live), "live %d MB", tc.live/mb)
	}
	// Between smallHeap and the switch to 100 the goal stays at goalCap.
	for live := uint64(257 * mb); live < 640*mb; live += 10 * mb {
		goal := live * uint64(100+Percent(live)) / 100
		require.LessOrEqual(t, goal, uint64(goalCap), "live %d MB", live/mb)
		require.Greater(t, goal, uint64(goalCap)*99/100, "live %d MB", live/mb)
	}
}

func TestRunLeavesAGOGCFromTheEnvironmentAlone(t *testing.T) {
	t.Setenv("GOGC", "200")
	Run(t.Context()) // returns at once: it would block otherwise
}
