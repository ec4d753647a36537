package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// Heartbeat renews the lease its token opens (server.LeaseStore.Heartbeat).
func (s *Service) Heartbeat(ctx context.Context, leaseID, token string) (server.Lease, error) {
	l, err := s.store.Heartbeat(ctx, leaseID, server.HashSecret(token))
	s.okHeartbeats.count(s.metrics.Heartbeats, err)
	return l, err
}

// KeepAlive is one lease kept alive by a stream of heartbeats, which hears
// at once when the lease is revoked, on this instance or (through the
// Revocations publisher) another: a revoked client stops at once rather
// than at its next heartbeat.
type KeepAlive struct {
	s            *Service
	revoked      <-chan struct{} // nil until a heartbeat succeeded
	stopWatching func()
}

// KeepAlive starts keeping a lease alive; Close it when the stream ends.
func (s *Service) KeepAlive() *KeepAlive { return &KeepAlive{s: s} }

// Beat heartbeats the lease. The first that succeeds starts watching for
// its revocation: only a caller that proved the token hears of it.
func (k *KeepAlive) Beat(ctx context.Context, leaseID, token string) (server.Lease, error) {
	l, err := k.s.Heartbeat(ctx, leaseID, token)
	if err == nil && k.revoked == nil {
		k.revoked, k.stopWatching = k.s.hub.Watch(leaseID)
	}
	return l, err
}

// Revoked is closed when the lease is revoked (nil, never ready, before
// the first heartbeat that succeeded).
func (k *KeepAlive) Revoked() <-chan struct{} { return k.revoked }

// Close stops watching.
func (k *KeepAlive) Close() {
	if k.stopWatching != nil {
		k.stopWatching()
	}
}

// Ended is asked by a stream whose lease's deadline, the last it told its
// client, has passed with no heartbeat on it. It answers the end error
// (ErrLeaseExpired, ErrLeaseReleased, ErrLeaseRevoked) once the lease can
// no longer heartbeat, or else when to ask again: the lease was renewed
// by another call, or a late heartbeat may still revive it (the license's
// RevivalWindow). An expiry is recorded (as cleanup records it) before it
// is answered, so that the stream's client, told the lease ended, is
// never contradicted by a later heartbeat (invariant 3). A store error is
// answered as it is.
func (k *KeepAlive) Ended(ctx context.Context, tenantID, leaseID string) (askAgain time.Time, err error) {
	l, err := k.s.store.GetLease(ctx, tenantID, leaseID)
	if err != nil {
		return time.Time{}, err
	}
	if l.State != server.LeaseActive {
		return time.Time{}, l.State.EndError()
	}
	now := k.s.now()
	if now.Before(l.ExpiresAt) {
		return l.ExpiresAt, nil
	}
	lic, err := k.s.store.GetLicense(ctx, l.TenantID, l.LicenseOf()) // a grant's pool has its license's revival window
	if err == nil && now.Before(l.ExpiresAt.Add(lic.RevivalWindow)) {
		return l.ExpiresAt.Add(lic.RevivalWindow), nil
	}
	ended, err := k.s.store.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: l.ID, LicenseID: l.LicenseID, ExpiresAt: l.ExpiresAt}})
	if err != nil {
		return time.Time{}, err
	}
	if len(ended) > 0 {
		return time.Time{}, server.ErrLeaseExpired
	}
	// Not expired: it ended otherwise in the meantime, or it lives on (a
	// heartbeat won the race, or the deadline read was behind the live
	// one): look again after a heartbeat interval.
	if l, err = k.s.store.GetLease(ctx, tenantID, leaseID); err != nil {
		return time.Time{}, err
	}
	if l.State != server.LeaseActive {
		return time.Time{}, l.State.EndError()
	}
	return now.Add(max(l.ExpiresAt.Sub(l.LastHeartbeatAt)/server.HeartbeatDivisor, time.Second)), nil
}
