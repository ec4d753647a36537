package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// positions records what WaitForSeat reports.
type positions struct {
	mu  sync.Mutex
	got [][2]int
}

func (p *positions) report(position, length int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, [2]int{position, length})
}

func (p *positions) all() [][2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][2]int(nil), p.got...)
}

func TestWaitForSeatReportsPositionsThenGrants(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.positions = []int32{3, 2, 1} })
	var p positions
	l, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}, p.report)
	require.NoError(t, err)
	require.Equal(t, [][2]int{{3, 3}, {2, 3}, {1, 3}}, p.all())

	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 2 }, "the granted lease is kept alive")
	requireNotLost(t, l)
	require.NoError(t, l.Release(testContext(t)))
}

func TestWaitForSeatWaitsForAFreeSeat(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.seats = 1; f.positions = []int32{1} })
	holder := acquire(t, b)
	got := make(chan *Lease, 1)
	go func() {
		l, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp2"}, nil)
		require.NoError(t, err)
		got <- l
	}()
	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.waitTries }) >= 3 }, "the wait finding no seat")
	require.Empty(t, got, "no seat while the holder keeps it")
	require.NoError(t, holder.Release(testContext(t)))
	l := <-got
	require.NotEqual(t, holder.ID(), l.ID())
	require.NoError(t, l.Release(testContext(t)))
}

func TestWaitForSeatFallsBackToPolling(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.waitUnimplemented = true; f.seats = 1 })
	holder := acquire(t, b)
	var p positions
	got := make(chan *Lease, 1)
	go func() {
		l, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp2"}, p.report)
		require.NoError(t, err)
		got <- l
	}()
	eventually(t, func() bool { return b.fake.read(func(f *fakeServer) int { return f.acquires }) >= 4 }, "polls")
	require.NoError(t, holder.Release(testContext(t)))

	l := <-got
	require.Contains(t, p.all(), [2]int{0, 0}, "position 0 while polling")
	eventually(t, func() bool { return b.fake.beats(l.ID()) >= 1 }, "the polled lease is kept alive")
	require.NoError(t, l.Release(testContext(t)))
}

// TestWaitForSeatPollsThroughPolicyCaps: polling (a server without the
// queue), a refusal by the site policy's caps or reserved seats is no
// seat for now, as SEATS_EXHAUSTED is: the wait goes on until a seat is
// granted. It used to end at the first such refusal.
func TestWaitForSeatPollsThroughPolicyCaps(t *testing.T) {
	b := setup(t, DefaultOptions(), func(f *fakeServer) {
		f.waitUnimplemented = true
		f.acquireRefusals = []error{
			reasonErr(codes.ResourceExhausted, ReasonUserLimit),
			reasonErr(codes.ResourceExhausted, ReasonSeatsReserved),
			reasonErr(codes.ResourceExhausted, ReasonHostLimit),
			reasonErr(codes.ResourceExhausted, ReasonGroupLimit),
		}
	})
	var p positions
	l, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp", User: "bob"}, p.report)
	require.NoError(t, err)
	require.Equal(t, 5, b.fake.read(func(f *fakeServer) int { return f.acquires }), "four refusals, then the seat")
	require.Contains(t, p.all(), [2]int{0, 0}, "position 0 while polling")
	require.NoError(t, l.Release(testContext(t)))
}

// TestWaitForSeatPollingEndsWhenThePolicyExcludes: EXCLUDED and
// NOT_INCLUDED end a polled wait at once (ErrNotAllowed): no seat that
// frees would be this client's.
func TestWaitForSeatPollingEndsWhenThePolicyExcludes(t *testing.T) {
	for _, reason := range []string{ReasonExcluded, ReasonNotIncluded} {
		t.Run(reason, func(t *testing.T) {
			b := setup(t, DefaultOptions(), func(f *fakeServer) {
				f.waitUnimplemented = true
				f.acquireRefusals = []error{reasonErr(codes.PermissionDenied, reason)}
			})
			_, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp", User: "intern"}, nil)
			require.ErrorIs(t, err, ErrNotAllowed)
			require.NotErrorIs(t, err, ErrNoSeat)
			require.Equal(t, reason, Reason(err))
			require.Equal(t, 1, b.fake.read(func(f *fakeServer) int { return f.acquires }), "one try")
		})
	}
}

func TestWaitForSeatRetriesUnavailable(t *testing.T) {
	// The server sends UNAVAILABLE to queued waiters when it shuts down; the
	// waiter joins again (here the fake refuses the first grants).
	b := setup(t, DefaultOptions(), func(f *fakeServer) { f.acquireUnavailable = 2; f.positions = []int32{1} })
	l, err := b.client.WaitForSeat(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"", "w_1", "w_1"}, b.fake.seenTickets(),
		"joins first at the back, then again with the ticket of its place")
	require.NoError(t, l.Release(testContext(t)))
}

func TestWaitForSeatStopsWithContext(t *testing.T) {
	for name, unimplemented := range map[string]bool{"queue": false, "polling": true} {
		t.Run(name, func(t *testing.T) {
			b := setup(t, DefaultOptions(), func(f *fakeServer) { f.seats = 1; f.waitUnimplemented = unimplemented })
			holder := acquire(t, b)
			ctx, cancel := context.WithTimeout(testContext(t), 30*time.Millisecond)
			defer cancel()
			_, err := b.client.WaitForSeat(ctx, AcquireOptions{LicenseKey: "key", Fingerprint: "fp2"}, nil)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NoError(t, holder.Release(testContext(t)))
		})
	}
}
