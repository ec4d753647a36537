package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

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
		// The store judges and revokes in one step: a heartbeat that
		// lands as the hold ends is either seen (the seat stays) or
		// refused, never acknowledged and then revoked.
		l, revoked, err := s.store.RevokeUnconfirmed(ctx, granted)
		if err != nil {
			s.log.Warn("unconfirmed waiter grant not revoked; it expires at its deadline", "lease_id", granted.ID, "err", err)
			return
		}
		if !revoked {
			return
		}
		s.revocations.Revoked(ctx, l.ID)
		s.audit(ctx, SystemActor, l.TenantID, "lease.revoke", "lease", l.ID, leaseDetails(l, map[string]string{
			"reason": "seat granted to a waiter was not heartbeated within the hold window",
		}))
	})
}
