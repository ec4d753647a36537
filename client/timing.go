package client

import (
	"context"
	"math/rand/v2"
	"time"
)

// timing holds the clock and the delays of the background work. Tests shrink
// the delays and move the wall clock; users get defaultTiming.
type timing struct {
	// now is the wall clock. Sleep detection compares it with the deadline.
	now func() time.Time
	// clockCheck is how often a waiting keeper looks at the wall clock, so
	// that it notices within this long that the machine slept past the
	// deadline (Go timers do not count time spent suspended).
	clockCheck time.Duration
	// backoffBase and backoffMax bound the exponential backoff of retries.
	backoffBase, backoffMax time.Duration
	// reconnectJitter spreads reconnects after a RECONNECT signal so that the
	// clients of a stopping instance do not all arrive at once.
	reconnectJitter time.Duration
	// minInterval guards against a server suggesting a zero interval.
	minInterval time.Duration
	// lastChance bounds the one heartbeat tried once the deadline passed.
	lastChance time.Duration
	// callTimeout bounds AcquireSeat when the keeper acquires again.
	callTimeout time.Duration
	// streamFailures is how many streams in a row may fail without an answer
	// before the keeper falls back to unary heartbeats ...
	streamFailures int
	// ... for this many beats, after which it tries a stream again.
	unaryBeforeStream int
}

var defaultTiming = timing{
	now:               time.Now,
	clockCheck:        time.Second,
	backoffBase:       250 * time.Millisecond,
	backoffMax:        10 * time.Second,
	reconnectJitter:   time.Second,
	minInterval:       time.Second,
	lastChance:        5 * time.Second,
	callTimeout:       10 * time.Second,
	streamFailures:    3,
	unaryBeforeStream: 10,
}

// wallNow is the wall-clock time without Go's monotonic reading: comparisons
// must use the wall clock, which (unlike the monotonic one on Linux) keeps
// running while the machine sleeps.
func (t timing) wallNow() time.Time { return t.now().Round(0) }

// backoff is the wait before retry number n (1, 2, ...): exponential up to
// limit, with "equal jitter" (half fixed, half random) so that clients that
// failed together do not retry together, yet never retry at once.
func (t timing) backoff(n int, limit time.Duration) time.Duration {
	d := t.backoffBase
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}

// jitter is a random wait in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
