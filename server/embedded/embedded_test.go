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

// backend gives each test its own data directory; reopening it after a
// Close sees the same data.
func backend(t *testing.T) storetest.Opener {
	dir := t.TempDir()
	return func(t *testing.T) server.Store {
		s, err := embedded.Open(dir, embedded.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return embedded.Faulty{Store: s}
	}
}
