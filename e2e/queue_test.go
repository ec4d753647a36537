package e2e

// WaitForSeat end to end: FIFO order across instances, positions, a waiter
// that goes away, a grant that is never heartbeated (--wait-hold), and the
// queue bound (--wait-queue-max). Waiters here are raw gRPC streams, so that
// every message the server sends is seen as it is.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// queuedWaiter is one raw WaitForSeat stream and everything it received.
type queuedWaiter struct {
	name   string
	p      *proc
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	positions []*seatdv1.QueuePosition
	granted   *seatdv1.AcquireSeatResponse
	grantedAt time.Time
	err       error // how the stream ended: nil after a grant and a clean end
}

// joinQueue opens a WaitForSeat stream on p for fingerprint fp. onGrant (may
// be nil) runs on the stream's goroutine as soon as the grant arrives. The
// stream is cancelled when the test ends.
func joinQueue(t testing.TB, p *proc, key, fp string, onGrant func(*queuedWaiter, *seatdv1.AcquireSeatResponse)) *queuedWaiter {
	t.Helper()
	return resumeQueue(t, p, &seatdv1.WaitForSeatRequest{LicenseKey: key, Fingerprint: fp}, onGrant)
}

// resumeQueue is joinQueue with the whole request (a queue_ticket, say).
func resumeQueue(t testing.TB, p *proc, req *seatdv1.WaitForSeatRequest, onGrant func(*queuedWaiter, *seatdv1.AcquireSeatResponse)) *queuedWaiter {
	t.Helper()
	fp := req.GetFingerprint()
	ctx, cancel := context.WithCancel(context.Background())
	w := &queuedWaiter{name: fp, p: p, cancel: cancel, done: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	go func() {
		defer close(w.done)
		s, err := p.seats().WaitForSeat(ctx, req)
		if err != nil {
			w.finish(err)
			return
		}
		for {
			resp, err := s.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
					if w.grant() == nil {
						err = errors.New("WaitForSeat ended cleanly without a grant")
					}
				}
				w.finish(err)
				return
			}
			if g := resp.GetGranted(); g != nil {
				w.mu.Lock()
				w.granted, w.grantedAt = g, time.Now()
				w.mu.Unlock()
				if onGrant != nil {
					onGrant(w, g)
				}
				continue // the server ends the stream after the grant
			}
			if pos := resp.GetPosition(); pos != nil {
				w.mu.Lock()
				w.positions = append(w.positions, pos)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *queuedWaiter) finish(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

func (w *queuedWaiter) grant() *seatdv1.AcquireSeatResponse {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.granted
}

func (w *queuedWaiter) grantTime() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.grantedAt
}

// reported is every position received so far, as (position, length) pairs.
func (w *queuedWaiter) reported() [][2]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([][2]int, len(w.positions))
	for i, p := range w.positions {
		out[i] = [2]int{int(p.GetPosition()), int(p.GetQueueLength())}
	}
	return out
}

// ticket names the waiter's place, from the last position received.
func (w *queuedWaiter) ticket() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.positions) == 0 {
		return ""
	}
	return w.positions[len(w.positions)-1].GetTicket()
}

// position is the last position received, or 0.
func (w *queuedWaiter) position() int {
	r := w.reported()
	if len(r) == 0 {
		return 0
	}
	return r[len(r)-1][0]
}

func (w *queuedWaiter) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// end waits for the stream to end and returns how it ended.
func (w *queuedWaiter) end(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(timeout):
		if w.ended() { // both were ready (a timeout of 0): select picked at random
			break
		}
		t.Fatalf("waiter %s: stream did not end within %s (positions %v)", w.name, timeout, w.reported())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// waitPosition waits until the last reported position is want.
func (w *queuedWaiter) waitPosition(t testing.TB, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for w.position() != want {
		if w.ended() {
			t.Fatalf("waiter %s ended (err %v, granted %v) while waiting for position %d; positions %v", w.name, w.end(t, 0), w.grant() != nil, want, w.reported())
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiter %s: position %d not reported within %s; positions %v", w.name, want, timeout, w.reported())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// requireQueueReason requires err to be the status code with ErrorInfo reason.
func requireQueueReason(t testing.TB, err error, code codes.Code, reason, what string) {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "%s: not a gRPC status: %v", what, err)
	require.Equal(t, code, st.Code(), "%s: %v", what, err)
	info := errorInfo(st)
	require.NotNil(t, info, "%s: no ErrorInfo in %v", what, err)
	require.Equal(t, reason, info.GetReason(), "%s: %v", what, err)
}

// queueProcs starts the instances of a queue test: one embedded seatd, or
// two distributed ones on a fresh schema and key prefix.
func queueProcs(t testing.TB, distributed bool, args ...string) []*proc {
	t.Helper()
	if !distributed {
		return []*proc{start(t, options{args: args})}
	}
	return sharedBackend(t, "").startCluster(t, 2, "queue", args...)
}

// TestWaitForSeatFIFO: waiters that joined one after another get the seat in
// join order, whichever instance each one waits on, and each first hears its
// join position. 50 waiters over two distributed instances; 10 embedded.
//
// The cases run one after the other, the distributed one (the longest e2e
// test but TestChaos) first: a parallel subtest would queue again, behind
// every test that started meanwhile, for a slot of its own.
func TestWaitForSeatFIFO(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		distributed bool
		waiters     int
	}{{"distributed", true, 50}, {"embedded", false, 10}} {
		t.Run(tc.name, func(t *testing.T) {
			// The head tries every 50ms: a seat handed to the other
			// instance waits for its waiters' next look (8 polls).
			procs := queueProcs(t, tc.distributed, "--wait-poll", "50ms")
			lic := newLicense(t, procs[0], 1, time.Minute, "fifo")
			holder, err := procs[0].acquire(t.Context(), lic.GetKey(), "holder")
			require.NoError(t, err)

			var (
				mu     sync.Mutex
				order  []int // waiter numbers (1-based join order) in grant order
				issues []string
			)
			waiters := make([]*queuedWaiter, tc.waiters)
			for i := range waiters {
				n := i + 1
				p := procs[i%len(procs)]
				waiters[i] = joinQueue(t, p, lic.GetKey(), fmt.Sprintf("waiter-%02d", n), func(w *queuedWaiter, g *seatdv1.AcquireSeatResponse) {
					mu.Lock()
					order = append(order, n)
					if g.GetSeatsInUse() != 1 {
						issues = append(issues, fmt.Sprintf("%s granted with seats_in_use %d", w.name, g.GetSeatsInUse()))
					}
					mu.Unlock()
					// Give the seat back at once: the next waiter's turn.
					if _, err := p.release(context.Background(), g); err != nil {
						mu.Lock()
						issues = append(issues, fmt.Sprintf("%s release: %v", w.name, err))
						mu.Unlock()
					}
				})
				// Join order is known: the next one starts once this one is in.
				waiters[i].waitPosition(t, n, eventTimeout)
				first := waiters[i].reported()[0]
				require.Equal(t, n, first[0], "%s: first position is its join position", waiters[i].name)
				require.Equal(t, n, first[1], "%s: queue length on joining", waiters[i].name)
			}

			began := time.Now()
			_, err = procs[0].release(t.Context(), holder)
			require.NoError(t, err)
			for _, w := range waiters {
				require.NoError(t, w.end(t, 60*time.Second), "%s ends with its grant", w.name)
				require.NotNil(t, w.grant(), "%s was granted a seat", w.name)
			}
			t.Logf("%d waiters on %d instance(s) served in %s", tc.waiters, len(procs), time.Since(began).Round(time.Millisecond))

			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, issues)
			want := make([]int, tc.waiters)
			for i := range want {
				want[i] = i + 1
			}
			require.Equal(t, want, order, "grants in join order")
			for _, w := range waiters {
				r := w.reported()
				for j := 1; j < len(r); j++ {
					require.Less(t, r[j][0], r[j-1][0], "%s: positions only move up: %v", w.name, r)
				}
				require.Equal(t, 1, r[len(r)-1][0], "%s: last position before the grant is 1: %v", w.name, r)
			}
			require.Empty(t, procs[0].leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE), "every seat was given back")
		})
	}
}

// TestWaitForSeatLeaveAndHold: a waiter that disconnects leaves the queue
// (the one behind it moves up), and a seat granted to a waiter that never
// heartbeats it goes to the next waiter after --wait-hold; one that is
// heartbeated in time stays.
func TestWaitForSeatLeaveAndHold(t *testing.T) {
	t.Parallel()
	// --wait-hold: long enough for the test to heartbeat w3's grant within
	// it on most machines (2 s once was not; the test waits it out twice);
	// a machine too slow for that tries again with a longer one.
	for _, distributed := range []bool{false, true} {
		name := map[bool]string{false: "embedded", true: "distributed"}[distributed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			widenWindow(t, 6*time.Second, func(hold time.Duration) string {
				procs := queueProcs(t, distributed, "--wait-hold", hold.String())
				on := func(i int) *proc { return procs[i%len(procs)] }
				lic := newLicense(t, procs[0], 1, time.Minute, "hold")
				holder, err := procs[0].acquire(t.Context(), lic.GetKey(), "holder")
				require.NoError(t, err)

				w1 := joinQueue(t, on(0), lic.GetKey(), "w1", nil)
				w1.waitPosition(t, 1, eventTimeout)
				w2 := joinQueue(t, on(1), lic.GetKey(), "w2", nil)
				w2.waitPosition(t, 2, eventTimeout)
				w3 := joinQueue(t, on(0), lic.GetKey(), "w3", nil)
				w3.waitPosition(t, 3, eventTimeout)
				w4 := joinQueue(t, on(1), lic.GetKey(), "w4", nil)
				w4.waitPosition(t, 4, eventTimeout)

				// w2 goes away: w3 and w4 move up, w1 stays first.
				w2.cancel()
				require.Equal(t, codes.Canceled, status.Code(w2.end(t, eventTimeout)), "w2 ended by its own cancel")
				w3.waitPosition(t, 2, eventTimeout)
				w4.waitPosition(t, 3, eventTimeout)
				require.Equal(t, 1, w1.position())

				// The seat frees: w1 gets it but never heartbeats it. The hold
				// window starts with that grant, so after releasedAt.
				releasedAt := time.Now()
				_, err = procs[0].release(t.Context(), holder)
				require.NoError(t, err)
				require.NoError(t, w1.end(t, eventTimeout))
				g1 := w1.grant()
				require.NotNil(t, g1)
				w3.waitPosition(t, 1, eventTimeout)
				w4.waitPosition(t, 2, eventTimeout)

				// After the hold window the unconfirmed seat goes to w3.
				require.NoError(t, w3.end(t, hold+eventTimeout))
				g3 := w3.grant()
				require.NotNil(t, g3)
				// w1's grant may reach this test late (its stream's goroutine),
				// so the lower bound is measured from the release that led to it.
				held := w3.grantTime().Sub(releasedAt)
				waited := w3.grantTime().Sub(w1.grantTime())
				t.Logf("unheartbeated grant moved to the next waiter %s after the release, %s after the first grant arrived (--wait-hold %s)",
					held.Round(time.Millisecond), waited.Round(time.Millisecond), hold)
				require.GreaterOrEqual(t, held, hold, "the seat was held for the first grantee for --wait-hold")
				// Soon after the window, not at the lease's 1 min TTL (the bound
				// leaves a loaded machine's scheduling room).
				require.Less(t, waited, hold+20*time.Second, "the seat moved on soon after --wait-hold")
				_, err = on(0).heartbeat(t.Context(), g1)
				requireQueueReason(t, err, codes.FailedPrecondition, "LEASE_REVOKED", "heartbeat of the unconfirmed grant")

				// w3 heartbeats at once: after the hold window the seat is still
				// its own and w4 still waits at the head of the queue. (The
				// window is measured from when w3's grant reached this test,
				// after the server granted it.)
				_, err = on(1).heartbeat(t.Context(), g3)
				if late := time.Since(g3.GetLease().GetAcquiredAt().AsTime()); err != nil && late >= hold {
					return fmt.Sprintf("w3's grant reached the test and was heartbeated %s after it was made (%v)", late.Round(time.Millisecond), err)
				}
				require.NoError(t, err)
				w4.waitPosition(t, 1, eventTimeout)
				time.Sleep(time.Until(w3.grantTime().Add(hold + time.Second)))
				_, err = on(0).heartbeat(t.Context(), g3)
				require.NoError(t, err, "a grant heartbeated within the hold window is kept")
				require.False(t, w4.ended(), "w4 must still be waiting")
				require.Nil(t, w4.grant())
				require.Equal(t, 1, w4.position())

				// w3 releases: w4 gets the seat.
				_, err = on(0).release(t.Context(), g3)
				require.NoError(t, err)
				require.NoError(t, w4.end(t, eventTimeout))
				require.NotNil(t, w4.grant())
				_, err = on(1).release(t.Context(), w4.grant())
				require.NoError(t, err)
				return ""
			})
		})
	}
}

// TestWaitForSeatQueueFull: past --wait-queue-max waiters a new one gets
// RESOURCE_EXHAUSTED with reason QUEUE_FULL (the bound is shared by every
// instance); once a waiter leaves, a new one gets in.
func TestWaitForSeatQueueFull(t *testing.T) {
	t.Parallel()
	const queueMax = 3
	for _, distributed := range []bool{false, true} {
		name := map[bool]string{false: "embedded", true: "distributed"}[distributed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			procs := queueProcs(t, distributed, "--wait-queue-max", fmt.Sprint(queueMax))
			on := func(i int) *proc { return procs[i%len(procs)] }
			lic := newLicense(t, procs[0], 1, time.Minute, "full")
			holder, err := procs[0].acquire(t.Context(), lic.GetKey(), "holder")
			require.NoError(t, err)

			in := make([]*queuedWaiter, queueMax)
			for i := range in {
				in[i] = joinQueue(t, on(i), lic.GetKey(), fmt.Sprintf("in-%d", i+1), nil)
				in[i].waitPosition(t, i+1, eventTimeout)
			}
			for i := range 2 {
				over := joinQueue(t, on(i), lic.GetKey(), fmt.Sprintf("over-%d", i+1), nil)
				err := over.end(t, eventTimeout)
				requireQueueReason(t, err, codes.ResourceExhausted, "QUEUE_FULL", "a waiter past --wait-queue-max")
				require.Empty(t, over.reported(), "a refused waiter hears no position")
			}

			// One leaves; a newcomer gets in at the tail.
			in[0].cancel()
			require.Equal(t, codes.Canceled, status.Code(in[0].end(t, eventTimeout)))
			in[1].waitPosition(t, 1, eventTimeout)
			late := joinQueue(t, on(1), lic.GetKey(), "late", nil)
			late.waitPosition(t, queueMax, eventTimeout)
			require.Equal(t, [2]int{queueMax, queueMax}, late.reported()[0])

			_, err = procs[0].release(t.Context(), holder)
			require.NoError(t, err)
			require.NoError(t, in[1].end(t, eventTimeout))
			require.NotNil(t, in[1].grant())
		})
	}
}

// TestWaitForSeatKeepsPlaceAcrossShutdown: a waiter whose instance shuts
// down waits again on another one with the ticket of its place and is still
// first, ahead of a waiter that joined after it, and the seat goes to it. A
// malformed ticket is refused, naming the field; a ticket nobody holds joins
// at the back.
func TestWaitForSeatKeepsPlaceAcrossShutdown(t *testing.T) {
	t.Parallel()
	procs := queueProcs(t, true)
	a, b := procs[0], procs[1]
	lic := newLicense(t, b, 1, time.Minute, "resume")
	holder, err := b.acquire(t.Context(), lic.GetKey(), "holder")
	require.NoError(t, err)

	first := joinQueue(t, a, lic.GetKey(), "first", nil)
	first.waitPosition(t, 1, eventTimeout)
	second := joinQueue(t, b, lic.GetKey(), "second", nil)
	second.waitPosition(t, 2, eventTimeout)
	ticket := first.ticket()
	require.Regexp(t, `^w_[0-9a-f]{24}$`, ticket, "positions carry the place's ticket")

	stopAllOK(t, a)
	requireQueueReason(t, first.end(t, eventTimeout), codes.Unavailable, "SERVER_SHUTTING_DOWN", "first, as A shuts down")
	again := resumeQueue(t, b, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "first", QueueTicket: ticket}, nil)
	again.waitPosition(t, 1, eventTimeout)
	require.Equal(t, [2]int{1, 2}, again.reported()[0], "first again, of two")
	require.NotEqual(t, ticket, again.ticket(), "the place moved to a new ticket")
	require.Equal(t, 2, second.position(), "the later waiter stays behind")

	bad := resumeQueue(t, b, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "bad", QueueTicket: "not a ticket"}, nil)
	err = bad.end(t, eventTimeout)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "queue_ticket")
	stranger := resumeQueue(t, b, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "stranger", QueueTicket: "w_000000000000000000000000"}, nil)
	stranger.waitPosition(t, 3, eventTimeout)

	_, err = b.release(t.Context(), holder)
	require.NoError(t, err)
	require.NoError(t, again.end(t, eventTimeout))
	g := again.grant()
	require.NotNil(t, g, "the seat goes to the waiter that kept its place")
	require.Equal(t, "first", g.GetLease().GetFingerprint())
	second.waitPosition(t, 1, eventTimeout)
	require.Nil(t, second.grant())
	_, err = b.release(t.Context(), g)
	require.NoError(t, err)
	require.NoError(t, second.end(t, eventTimeout))
	require.NotNil(t, second.grant())
}

// TestWaitForSeatUnknownKeyWritesNothing: a guessed license key gets
// NOT_FOUND before any queue exists; nothing of it is left in Redis (the
// queues used to be joined first, and left a key behind per guess).
func TestWaitForSeatUnknownKeyWritesNothing(t *testing.T) {
	t.Parallel()
	b := sharedBackend(t, "")
	p := b.startSeatd(t, "queue-guess-"+randomHex(3))
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	for i := range 5 {
		stream, err := p.seats().WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: fmt.Sprintf("slk_guess-%d", i), Fingerprint: "x"})
		require.NoError(t, err)
		_, err = stream.Recv()
		requireStatus(t, err, codes.NotFound, "LICENSE_NOT_FOUND")
	}
	_, rdb := sharedServers(t)
	keys, err := rdb.Keys(ctx, b.Prefix+"*waitq*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "queue keys written for unknown license keys")
	p.stopOK()
}
