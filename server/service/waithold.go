package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// unconfirmed reports whether a lease granted to a waiter is, as far as
// the store can tell, still as it was granted: neither heartbeated nor
// given a later deadline. A later deadline without a later heartbeat is a
// store that lost recent heartbeats and gave the write-behind interval
// back (a Redis loss, or a restart after a crash): whether the waiter
// heartbeated is then unknown, and a seat is never taken on a guess.
func unconfirmed(granted, now server.Lease) bool {
	return !now.LastHeartbeatAt.After(granted.LastHeartbeatAt) && !now.ExpiresAt.After(granted.ExpiresAt)
}

// holdForFirstHeartbeat revokes a seat granted to a waiter that never
// heartbeats it (it went away as the seat arrived), so the next waiter gets it.
func (s *Service) holdForFirstHeartbeat(granted server.Lease) {
	s.holds.Go(func() {
		t := time.NewTimer(s.waitHold)
		defer t.Stop()
		select {
		case <-s.shutdown:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := s.store.GetLease(ctx, granted.TenantID, granted.ID)
		if err != nil || l.State != server.LeaseActive || !unconfirmed(granted, l) {
			return
		}
		if _, err := s.store.Revoke(ctx, l.TenantID, l.ID); err != nil {
			s.log.Warn("unconfirmed waiter grant not revoked; it expires at its deadline", "lease_id", l.ID, "err", err)
			return
		}
		s.revocations.Revoked(ctx, l.ID)
		s.audit(ctx, SystemActor, l.TenantID, "lease.revoke", "lease", l.ID, map[string]string{
			"license_id": l.LicenseID, "reason": "seat granted to a waiter was not heartbeated within the hold window",
		})
	})
}
