package service

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// shortHold holds a waiter's grant for a moment only.
func shortHold(c *Config) { c.WaitHold = 20 * time.Millisecond }

// waitGranted waits on a free seat: the waiter is granted at once.
func (e *env) waitGranted(t *testing.T, key string) Grant {
	t.Helper()
	g, err := e.svc.WaitForSeat(t.Context(), SeatRequest{LicenseKey: key, Fingerprint: "waiter"}, "", func(Place) error { return nil })
	require.NoError(t, err)
	return g
}

func TestWaiterGrantNotHeartbeatedIsRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shortHold)
	lic := e.license(t, 1)
	g := e.waitGranted(t, lic.Key)
	revoked, stop := e.svc.hub.Watch(g.Lease.ID)
	defer stop()

	e.svc.holds.Wait() // the hold ran out and was judged
	l, err := e.store.GetLease(t.Context(), server.DefaultTenantID, g.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseRevoked, l.State, "the seat goes to the next waiter")
	within(t, revoked, "the revocation published to the lease's streams")

	entry := e.auditOf(t, server.DefaultTenantID, "lease.revoke", g.Lease.ID)
	require.Equal(t, SystemActor, entry.Actor)
	require.Equal(t, lic.ID, entry.Details["license_id"])
	require.Contains(t, entry.Details["reason"], "not heartbeated within the hold window")
}

func TestWaiterGrantHeartbeatedIsKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shortHold)
	lic := e.license(t, 1)
	g := e.waitGranted(t, lic.Key)

	e.clock.Advance(time.Second) // the heartbeat comes later than the grant, by the store's clock
	_, err := e.svc.Heartbeat(t.Context(), g.Lease.ID, g.Token)
	require.NoError(t, err)

	e.svc.holds.Wait()
	l, err := e.store.GetLease(t.Context(), server.DefaultTenantID, g.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, l.State)
	for _, entry := range e.audit(t, server.DefaultTenantID) {
		require.NotEqual(t, "lease.revoke", entry.Action, "nothing revoked, nothing audited")
	}
}

// A seat the waiter already held (the same fingerprint) is not a new grant:
// nothing holds it, and a waiter who never heartbeats it keeps it until
// its deadline.
func TestWaiterRefoundLeaseIsNotHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shortHold)
	lic := e.license(t, 1)
	held := e.acquire(t, lic.Key, "waiter")
	g := e.waitGranted(t, lic.Key)
	require.True(t, g.Existing)
	require.Equal(t, held.Lease.ID, g.Lease.ID)

	e.svc.holds.Wait()
	l, err := e.store.GetLease(t.Context(), server.DefaultTenantID, g.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, l.State)
}

// heartbeatFirst is a store whose revocations are preceded by a heartbeat
// of the lease: the waiter's first heartbeat lands just as the hold
// decided that it never came.
type heartbeatFirst struct {
	server.Store
	beat func(leaseID string)
}

func (s *heartbeatFirst) Revoke(ctx context.Context, tenantID, leaseID string) (server.Lease, error) {
	s.beat(leaseID)
	return s.Store.Revoke(ctx, tenantID, leaseID)
}

func (s *heartbeatFirst) RevokeUnconfirmed(ctx context.Context, granted server.Lease) (server.Lease, bool, error) {
	s.beat(granted.ID)
	return s.Store.RevokeUnconfirmed(ctx, granted)
}

// TestWaiterGrantHeartbeatedAsTheHoldEndsIsKept: a heartbeat acknowledged
// before the hold takes the seat back keeps it; the hold's check and its
// revocation are one step of the store.
func TestWaiterGrantHeartbeatedAsTheHoldEndsIsKept(t *testing.T) {
	t.Parallel()
	hooked := &heartbeatFirst{}
	var beats atomic.Int32
	e := newEnv(t, shortHold, func(c *Config) { hooked.Store, c.Store = c.Store, hooked })
	granted := make(chan Grant, 1)
	hooked.beat = func(leaseID string) {
		g := <-granted // the hold may end before WaitForSeat returned
		if leaseID != g.Lease.ID {
			return
		}
		e.clock.Advance(time.Second) // later than the grant, by the store's clock
		if _, err := e.svc.Heartbeat(context.Background(), g.Lease.ID, g.Token); err == nil {
			beats.Add(1)
		}
	}
	lic := e.license(t, 1)
	g := e.waitGranted(t, lic.Key)
	granted <- g

	e.svc.holds.Wait()
	require.Equal(t, int32(1), beats.Load(), "the heartbeat landed as the hold ended, and was acknowledged")
	l, err := e.store.GetLease(t.Context(), server.DefaultTenantID, g.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, l.State, "a heartbeat was acknowledged, then its lease revoked")
	_, err = e.svc.Heartbeat(t.Context(), g.Lease.ID, g.Token)
	require.NoError(t, err, "the waiter keeps heartbeating its seat")
	for _, entry := range e.audit(t, server.DefaultTenantID) {
		require.NotEqual(t, "lease.revoke", entry.Action, "a kept lease is not audited as revoked")
	}
}
