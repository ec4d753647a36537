package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestClientWaitForSeatAcrossShutdown: the Go client's WaitForSeat queues on
// one instance (A), and another waiter queues behind it on the other (B); A
// drains (SIGTERM); the client hears UNAVAILABLE, waits again on B with its
// queue ticket without the application noticing, is still first, and gets
// the seat when it frees. The granted lease then keeps itself alive past
// --wait-hold. Which instance is A is whichever the client's pick_first
// reached first: gRPC tries the next address when the first has not
// connected within 250 ms (Happy Eyeballs), which a loaded machine makes
// happen (the waiter once queued on the second address).
//
// The TTL is short (heartbeat every second) on purpose: the client's first
// heartbeat after a grant comes one heartbeat interval later, so a grant
// whose interval exceeds --wait-hold is revoked by the server (see the
// report of this test set: client/wait.go does not heartbeat a granted seat
// promptly).
func TestClientWaitForSeatAcrossShutdown(t *testing.T) {
	t.Parallel()
	const (
		ttl = 6 * time.Second
		// The client's first heartbeat comes a second after the grant: the
		// rest of the window is for a loaded machine.
		hold = 6 * time.Second
	)
	procs := sharedBackend(t, "").startCluster(t, 2, "cwait", "--drain-delay", "500ms", "--wait-hold", hold.String())
	lic := newLicense(t, procs[0], 1, ttl, "client-wait")

	// The seat's holder keeps it (its client heartbeats) until it releases
	// it, through whichever instance stays.
	holderClient := dialAll(t, []string{procs[0].GRPCAddr, procs[1].GRPCAddr}, client.ServiceConfig, slog.New(newLogCounter()))
	holder, err := holderClient.Acquire(t.Context(), client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "holder"})
	require.NoError(t, err)

	// pick_first over both: the waiter queues on one (A) until it goes away.
	logs := newLogCounter()
	c := dialAll(t, []string{procs[0].GRPCAddr, procs[1].GRPCAddr}, client.ServiceConfig, slog.New(logs))
	var (
		mu        sync.Mutex
		positions [][2]int
	)
	type result struct {
		lease *client.Lease
		err   error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		l, err := c.WaitForSeat(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "waiter"}, func(pos, length int) {
			mu.Lock()
			defer mu.Unlock()
			positions = append(positions, [2]int{pos, length})
		})
		got <- result{l, err}
	}()
	heard := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(positions)
	}
	eventually(t, eventTimeout, "the waiter's first position", func() bool { return heard() == 1 })
	started := []int{procs[0].metricSumStarted(t, "WaitForSeat"), procs[1].metricSumStarted(t, "WaitForSeat")}
	require.ElementsMatch(t, []int{0, 1}, started, "the waiter queues on one instance (WaitForSeat calls per instance)")
	a, b := procs[0], procs[1]
	if started[1] == 1 {
		a, b = b, a
	}
	later := joinQueue(t, b, lic.GetKey(), "later", nil)
	later.waitPosition(t, 2, eventTimeout)

	stopAllOK(t, a)
	eventually(t, eventTimeout, "the waiter joining again on B", func() bool { return heard() == 2 })
	require.Equal(t, 2, b.metricSumStarted(t, "WaitForSeat"), "the later waiter and then the client queue on B")
	require.NoError(t, holder.Release(t.Context()))

	var r result
	select {
	case r = <-got:
	case <-time.After(eventTimeout):
		t.Fatalf("WaitForSeat did not return within %s of the seat freeing", eventTimeout)
	}
	require.NoError(t, r.err, "the shutdown of A never reaches the application")
	mu.Lock()
	require.Equal(t, [][2]int{{1, 1}, {1, 2}}, positions, "first on A, then first again on B, ahead of the later waiter")
	mu.Unlock()

	// Past the hold window the grant is still ours and heartbeated: a
	// heartbeat reached B, and 2s after the window (whose end the
	// hold's check runs at) nothing took the seat.
	var granted *seatdv1.Lease
	waitUntil(t, hold+eventTimeout, "a heartbeat of the waited-for lease", func() (bool, string) {
		select {
		case <-r.lease.Lost():
			t.Fatalf("the waited-for lease was lost: %v", r.lease.Err())
		default:
		}
		list := b.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE)
		if len(list) != 1 || list[0].GetId() != r.lease.ID() {
			return false, fmt.Sprintf("active leases %v", list)
		}
		granted = list[0]
		return granted.GetLastHeartbeatAt().AsTime().After(granted.GetAcquiredAt().AsTime()), fmt.Sprintf("lease %v", granted)
	})
	time.Sleep(time.Until(granted.GetAcquiredAt().AsTime().Add(hold + 2*time.Second)))
	select {
	case <-r.lease.Lost():
		t.Fatalf("the waited-for lease was lost: %v", r.lease.Err())
	default:
	}
	list := b.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE)
	require.Len(t, list, 1)
	require.Equal(t, r.lease.ID(), list[0].GetId())
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, list[0].GetState())
	require.Equal(t, 1, later.position(), "the later waiter is next")
	require.NoError(t, r.lease.Release(t.Context()))
	require.NoError(t, later.end(t, eventTimeout))
	require.NotNil(t, later.grant(), "then the later waiter gets the seat")
	_, err = b.release(t.Context(), later.grant())
	require.NoError(t, err)
	warnings, examples := logs.atLeast(slog.LevelWarn)
	require.Zero(t, warnings, "client library warnings: %v", examples)
	stopAllOK(t, b)
}

// metricSumStarted is how many calls of a seatd method p has started.
func (p *proc) metricSumStarted(t testing.TB, method string) int {
	t.Helper()
	return int(p.metricMatching(t, "grpc_server_started_total", `grpc_method="`+method+`"`))
}
