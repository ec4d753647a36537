package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Clock is how the suite passes a deadline the store handed out, without
// sleeping a guessed margin past it. A store under test implements it if
// it can: one that takes an injected clock moves it (Moves is true, and
// no test waits); one whose clock is elsewhere (Redis TIME) waits until
// that clock reads past the deadline.
type Clock interface {
	// Pass returns once the store's clock reads later than at.
	Pass(ctx context.Context, at time.Time) error
	// Moves reports whether Pass moves the clock rather than waiting
	// for it: a test may then hand out deadlines far off and still pass
	// them at once.
	Moves() bool
}

// passDeadline returns once the store's clock is past at, a deadline it
// handed out. A store without a Clock is waited for on the suite's own
// clock, with a margin for the store's clock running behind it.
func passDeadline(t *testing.T, s server.Store, at time.Time) {
	t.Helper()
	if c, ok := s.(Clock); ok {
		require.NoError(t, c.Pass(t.Context(), at), "pass the store's clock to %s", at)
		return
	}
	time.Sleep(time.Until(at) + 100*time.Millisecond)
}

// passDeadlines is passDeadline for the latest deadline of leases.
func passDeadlines(t *testing.T, s server.Store, leases ...server.Lease) {
	t.Helper()
	require.NotEmpty(t, leases)
	latest := leases[0].ExpiresAt
	for _, l := range leases[1:] {
		if l.ExpiresAt.After(latest) {
			latest = l.ExpiresAt
		}
	}
	passDeadline(t, s, latest)
}

// clockMoves reports whether the store's clock can be moved (Clock.Moves).
func clockMoves(s server.Store) bool {
	c, ok := s.(Clock)
	return ok && c.Moves()
}

// lapsingTTL is the TTL of a lease a test lets lapse: one that cannot run
// out on its own during the test where the store's clock can be moved past
// it, else the shortest there is (a test then waits that long).
func lapsingTTL(s server.Store) time.Duration {
	if clockMoves(s) {
		return longTTL
	}
	return shortTTL
}

// OffsetClock is an injected clock for a store under test: the real time
// plus an offset that Pass moves forward. It runs like the real one (a
// test that needs time to go by still sees it go by) and never goes back.
type OffsetClock struct {
	offset atomic.Int64 // nanoseconds
}

// Now is the clock's reading.
func (c *OffsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Pass moves the clock just past at, if it is not already there.
func (c *OffsetClock) Pass(_ context.Context, at time.Time) error {
	for {
		off := c.offset.Load()
		ahead := at.Sub(time.Now().Add(time.Duration(off))) + time.Millisecond
		if ahead <= 0 || c.offset.CompareAndSwap(off, off+int64(ahead)) {
			return nil
		}
	}
}

// Moves is true: Pass moves the clock.
func (c *OffsetClock) Moves() bool { return true }
