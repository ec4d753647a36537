package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAutoHeartbeatKeepsExtending(t *testing.T) {
	// The keeper leaves a stream whose answer takes longer than an
	// interval: the fake's 20 ms is too short to count streams on a loaded
	// machine (a -race e2e run beside this one made it open 3).
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.interval = 200 * time.Millisecond })
	l := acquire(t, b)
	first := l.ExpiresAt()

	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.streamBeats[l.ID()] }) >= 3 }, "stream heartbeats")
	eventually(t, func() bool { return l.ExpiresAt().After(first) }, "ExpiresAt moves ahead")
	require.Equal(t, 0, b.fake.read(func(f *fakeServer) int { return f.unaryBeats[l.ID()] }), "the stream suffices")
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.streams }), "one stream serves every beat")
	requireNotLost(t, l)
}

func TestReconnectSignalReconnects(t *testing.T) {
	b := setup(t, DefaultOptions(), nil)
	l := acquire(t, b)
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "heartbeats")

	for range 3 {
		streams := b.fake.read(func(f *fakeServer) int { return f.streams })
		b.fake.reconnectStreams()
		eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.streams }) > streams }, "a new stream")
	}
	beats := b.fake.beats(l.ID())
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= beats+2 }, "heartbeats go on")
	requireNotLost(t, l)
}

func TestUnavailableShorterThanTTLIsNotLost(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.ttl = time.Second })
	l := acquire(t, b)
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 1 }, "heartbeats")

	b.fake.set(func(f *fakeServer) { f.unavailable = true })
	// Several heartbeats refused, well within the TTL.
	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.refusedBeats }) >= 3 }, "heartbeats refused")
	requireNotLost(t, l)
	b.fake.set(func(f *fakeServer) { f.unavailable = false })

	beats := b.fake.beats(l.ID())
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= beats+3 }, "heartbeats resume")
	requireNotLost(t, l)
}

func TestUnavailableLongerThanTTLIsLost(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.ttl = 200 * time.Millisecond })
	l := acquire(t, b)
	b.fake.set(func(f *fakeServer) { f.unavailable = true })

	requireLost(t, l)
	require.ErrorIs(t, l.Err(), ErrLeaseLost)
	require.Equal(t, ReasonLeaseExpired, Reason(l.Err()))
}

func TestLostWhenServerEndsLease(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		signalOnly   bool // the stream ends with OK after the signal
	}{
		{"expired", ReasonLeaseExpired, false},
		{"revoked", ReasonLeaseRevoked, false},
		{"expired signal only", ReasonLeaseExpired, true},
		{"revoked signal only", ReasonLeaseRevoked, true},
		{"released elsewhere", ReasonLeaseReleased, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, DefaultOptions(), func(f *fakeServer) { f.signalOnly = tc.signalOnly })
			l := acquire(t, b)
			eventually(t, func() bool { return b.fake.beats(l.ID()) >= 1 }, "heartbeats")

			b.fake.end(l.ID(), tc.reason)
			requireLost(t, l)
			require.ErrorIs(t, l.Err(), ErrLeaseLost)
			require.Equal(t, tc.reason, Reason(l.Err()))
			require.NoError(t, l.Release(testContext(t)), "nothing left to release")
		})
	}
}

func TestRevokedIsNotAcquiredAgain(t *testing.T) {
	b := setup(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, nil)
	l := acquire(t, b)
	b.fake.end(l.ID(), ReasonLeaseRevoked)

	requireLost(t, l)
	require.Equal(t, ReasonLeaseRevoked, Reason(l.Err()))
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.acquires }), "an administrator's revocation stands")
}

func TestReacquireOnExpiry(t *testing.T) {
	b := setup(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, nil)
	l := acquire(t, b)
	old := l.ID()
	eventually(t, func() bool { return b.fake.beats(old) >= 1 }, "heartbeats")

	b.fake.end(old, ReasonLeaseExpired)
	eventually(t, func() bool { return l.ID() != old }, "a new lease")
	require.NotEqual(t, "token-1", l.Token())
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "the new lease is heartbeated")
	requireNotLost(t, l)

	require.NoError(t, l.Release(testContext(t)))
	require.Equal(t, 0, b.fake.read(func(f *fakeServer) int { return f.live() }), "Release gives back the new lease")
}

// TestReacquireRetriesKeepOneIdempotencyKey: acquiring again after an
// expiry is one acquisition, however many tries it takes: when the server
// granted the seat but every answer of a try was lost (each of the gRPC
// retries of ServiceConfig too), the keeper's next try carries the same
// idempotency key, so it gets that seat back instead of taking a second.
func TestReacquireRetriesKeepOneIdempotencyKey(t *testing.T) {
	b := setup(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, nil)
	l := acquire(t, b)
	old := l.ID()
	const lost = 5 // the service config's maxAttempts: one whole try of the keeper
	b.fake.set(func(f *fakeServer) {
		f.lostReplies = lost
		f.leases[old].ended = ReasonLeaseExpired
	})
	eventually(t, func() bool { return l.ID() != old }, "a new lease")
	requireNotLost(t, l)
	keys := b.fake.seenIdemKeys()[1:] // after the first acquisition's own
	require.Len(t, keys, lost+1, "a try whose answers were all lost, then one answered")
	require.NotEmpty(t, keys[0])
	for i, k := range keys {
		require.Equal(t, keys[0], k, "try %d carries the acquisition's key", i)
	}
	require.NotEqual(t, b.fake.seenIdemKeys()[0], keys[0], "acquiring again is a new acquisition")
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.live() }), "one seat for all the tries")
}

// TestReacquireWaitsOutARateLimit: acquiring again, a RATE_LIMITED refusal
// (a limit on this address, not "no seat") is waited out as RetryInfo asks,
// and the lease carries on.
func TestReacquireWaitsOutARateLimit(t *testing.T) {
	b := setup(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, nil)
	l := acquire(t, b)
	old := l.ID()
	b.fake.set(func(f *fakeServer) {
		f.acquireRateLimited = 2
		f.leases[old].ended = ReasonLeaseExpired
	})
	eventually(t, func() bool { return l.ID() != old }, "a new lease once the limit passed")
	requireNotLost(t, l)
	require.Zero(t, b.fake.read(func(f *fakeServer) int { return f.acquireRateLimited }), "both refusals were seen")
}

func TestReacquireFailsWhenSeatTaken(t *testing.T) {
	b := setup(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, func(f *fakeServer) { f.seats = 1 })
	l := acquire(t, b)
	b.fake.set(func(f *fakeServer) {
		f.leases[l.ID()].ended = ReasonLeaseExpired
		f.leases["other"] = &fakeLease{id: "other", token: "t"} // someone took the freed seat
	})

	requireLost(t, l)
	require.ErrorIs(t, l.Err(), ErrLeaseLost)
	require.ErrorIs(t, l.Err(), ErrNoSeat, "the failure to acquire again is part of the error")
	require.Equal(t, ReasonLeaseExpired, Reason(l.Err()), "the first reason is the loss")
}

func TestSleepPastDeadline(t *testing.T) {
	t.Run("server unreachable on wake", func(t *testing.T) {
		b := setup(t, DefaultOptions(), func(f *fakeServer) { f.interval = time.Hour })
		l := acquire(t, b)
		b.fake.set(func(f *fakeServer) { f.unavailable = true })
		b.clock.jump(time.Hour)

		requireLost(t, l)
		require.ErrorIs(t, l.Err(), ErrLeaseLost)
		require.Equal(t, ReasonLeaseExpired, Reason(l.Err()))
	})
	t.Run("server expired it", func(t *testing.T) {
		b := setup(t, DefaultOptions(), func(f *fakeServer) { f.interval = time.Hour })
		l := acquire(t, b)
		b.fake.end(l.ID(), ReasonLeaseExpired)
		b.clock.jump(time.Hour)

		requireLost(t, l)
		require.Equal(t, ReasonLeaseExpired, Reason(l.Err()))
	})
	t.Run("acquired again", func(t *testing.T) {
		b := setup(t, Options{AutoHeartbeat: true, ReacquireOnExpiry: true}, func(f *fakeServer) { f.interval = time.Hour })
		l := acquire(t, b)
		old := l.ID()
		b.fake.end(old, ReasonLeaseExpired)
		b.clock.jump(time.Hour)

		eventually(t, func() bool { return l.ID() != old }, "a new lease")
		requireNotLost(t, l)
	})
	t.Run("server still accepts", func(t *testing.T) {
		// The server's grace period (or a clock that jumped for another
		// reason): the server is the judge.
		b := setup(t, DefaultOptions(), func(f *fakeServer) { f.interval = time.Hour })
		l := acquire(t, b)
		b.clock.jump(time.Hour)

		eventually(t, func() bool { return b.fake.beats(l.ID()) >= 1 }, "a heartbeat on wake")
		requireNotLost(t, l)
	})
}

func TestStreamUnimplementedFallsBackToUnary(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.streamUnimplemented = true })
	l := acquire(t, b)

	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.unaryBeats[l.ID()] }) >= 5 }, "unary heartbeats")
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.streams }), "no stream retried on a server without one")
	requireNotLost(t, l)
}

func TestStreamKeepsFailingFallsBackToUnary(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.streamUnavailable = true })
	l := acquire(t, b)

	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.unaryBeats[l.ID()] }) >= 3 }, "unary heartbeats")
	requireNotLost(t, l)

	// The stream works again: the keeper goes back to it.
	b.fake.set(func(f *fakeServer) { f.streamUnavailable = false })
	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.streamBeats[l.ID()] }) >= 3 }, "stream heartbeats again")
	requireNotLost(t, l)
}

func TestSilentStreamIsAbandoned(t *testing.T) {
	// A stream whose pings go unanswered (a half-open connection) is given
	// up after an interval; unary heartbeats carry on.
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.streamSilent = true })
	l := acquire(t, b)

	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.unaryBeats[l.ID()] }) >= 2 }, "unary heartbeats")
	require.GreaterOrEqual(t, b.fake.read(func(f *fakeServer) int { return f.streams }), 3)
	requireNotLost(t, l)
}

func TestReleaseStopsHeartbeatsAndIsIdempotent(t *testing.T) {
	b := setup(t, DefaultOptions(), nil)
	l := acquire(t, b)
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "heartbeats")

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = l.Release(testContext(t)) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, l.Release(testContext(t)), "releasing again is fine")
	require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.releases }), "one ReleaseSeat")

	requireNotKept(t, b, l, "no heartbeat after Release")
	requireNotLost(t, l)

	err := l.Heartbeat(testContext(t))
	require.ErrorIs(t, err, ErrLeaseLost)
	require.Equal(t, ReasonLeaseReleased, Reason(err))
	requireNotLost(t, l) // our own release is not a loss
}

func TestReleaseWhileKeeperReconnects(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.streamUnavailable = true; f.unavailable = true })
	l := acquire(t, b)
	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.streams }) >= 2 }, "retries")
	b.fake.set(func(f *fakeServer) { f.unavailable = false })

	require.NoError(t, l.Release(testContext(t)))
	require.Equal(t, 0, b.fake.read(func(f *fakeServer) int { return f.live() }))
}

func TestReleaseHonoursContext(t *testing.T) {
	b := setup(t, DefaultOptions(), nil)
	l := acquire(t, b)
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	require.ErrorIs(t, l.Release(ctx), context.Canceled)
	require.NoError(t, l.Release(testContext(t)))
}

func TestAutoHeartbeatOff(t *testing.T) {
	b := setup(t, Options{}, nil)
	l := acquire(t, b)
	requireNotKept(t, b, l, "no background heartbeats")

	before := l.ExpiresAt()
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, l.Heartbeat(testContext(t)))
	require.True(t, l.ExpiresAt().After(before))
	requireNotLost(t, l)

	b.fake.end(l.ID(), ReasonLeaseRevoked)
	require.ErrorIs(t, l.Heartbeat(testContext(t)), ErrLeaseLost)
	requireLost(t, l) // no keeper: the manual heartbeat tells
	require.Equal(t, ReasonLeaseRevoked, Reason(l.Err()))
}

func TestCloseStopsKeepers(t *testing.T) {
	b := setup(t, DefaultOptions(), nil)
	l := acquire(t, b)
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 1 }, "heartbeats")
	require.NoError(t, b.client.Close())
	requireNotKept(t, b, l, "no heartbeat after Close")
	requireNotLost(t, l)
}

func TestAcquireAfterCloseIsNotKeptAlive(t *testing.T) {
	b := setup(t, DefaultOptions(), nil)
	require.NoError(t, b.client.Close()) // New'd connection: still open
	l := acquire(t, b)
	requireNotKept(t, b, l, "no background heartbeats after Close")
	require.NoError(t, l.Heartbeat(testContext(t)), "by hand it still works")
	require.NoError(t, l.Release(testContext(t)))
}
