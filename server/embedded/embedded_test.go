package embedded_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, backend)
}

// backend gives each test its own data directory and clock; reopening it
// after a Close sees the same data on the same clock. The suite passes
// deadlines by moving the clock (storetest.Clock), not by sleeping.
func backend(t *testing.T) storetest.Opener {
	dir := t.TempDir()
	clock := new(storetest.OffsetClock)
	return func(t *testing.T) server.Store {
		s, err := embedded.Open(dir, embedded.Options{Clock: clock.Now})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return clocked{embedded.Faulty{Store: s}, clock}
	}
}

// clocked is a store under test with its injected clock.
type clocked struct {
	embedded.Faulty
	*storetest.OffsetClock
}

var _ storetest.Clock = clocked{}
