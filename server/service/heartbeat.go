package service

import (
	"context"

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
