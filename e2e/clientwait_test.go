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
// instance A, and another waiter queues behind it on B; A drains (SIGTERM);
// the client hears UNAVAILABLE, waits again on B with its queue ticket
// without the application noticing, is still first, and gets the seat when
// it frees. The granted lease then keeps itself alive past --wait-hold.
//
// The TTL is short (heartbeat every second) on purpose: the client's first
// heartbeat after a grant comes one heartbeat interval later, so a grant
// whose interval exceeds --wait-hold is revoked by the server (see the
// report of this test set: client/wait.go does not heartbeat a granted seat
// promptly).
func TestClientWaitForSeatAcrossShutdown(t *testing.T) {
	t.Parallel()
	const (
		ttl  = 6 * time.Second
		hold = 3 * time.Second
	)
	procs := sharedBackend(t, "").startCluster(t, 2, "cwait", "--drain-delay", "500ms", "--wait-hold", hold.String())
	a, b := procs[0], procs[1]
	lic := newLicense(t, a, 1, ttl, "client-wait")

	holderClient, err := client.Dial(b.GRPCAddr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holderClient.Close() })
	holder, err := holderClient.Acquire(t.Context(), client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "holder"})
	require.NoError(t, err)

	// pick_first over [A, B]: the waiter queues on A until A goes away.
	logs := newLogCounter()
	c := dialAll(t, []string{a.GRPCAddr, b.GRPCAddr}, client.ServiceConfig, slog.New(logs))
	var (
		mu        sync.Mutex
		positions [][2]int
	)
	type result struct {
		lease *client.Lease
		err   error
	}
	got := make(chan result, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
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
	eventually(t, 10*time.Second, "the waiter's first position", func() bool { return heard() == 1 })
	require.Equal(t, 1, a.metricSumStarted(t, "WaitForSeat"), "the waiter queues on A")
	later := joinQueue(t, b, lic.GetKey(), "later", nil)
	later.waitPosition(t, 2, 10*time.Second)

	stopAllOK(t, a)
	eventually(t, 10*time.Second, "the waiter joining again on B", func() bool { return heard() == 2 })
	require.Equal(t, 2, b.metricSumStarted(t, "WaitForSeat"), "the later waiter and then the client queue on B")
	require.NoError(t, holder.Release(t.Context()))

	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForSeat did not return within 10s of the seat freeing")
	}
	require.NoError(t, r.err, "the shutdown of A never reaches the application")
	mu.Lock()
	require.Equal(t, [][2]int{{1, 1}, {1, 2}}, positions, "first on A, then first again on B, ahead of the later waiter")
	mu.Unlock()

	// Past the hold window the grant is still ours and heartbeated: a
	// heartbeat reached B, and 2s after the window (whose end the
	// hold's check runs at) nothing took the seat.
	var granted *seatdv1.Lease
	waitUntil(t, hold+10*time.Second, "a heartbeat of the waited-for lease", func() (bool, string) {
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
	require.NoError(t, later.end(t, 10*time.Second))
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
