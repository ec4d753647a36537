package storetest

import (
	"context"
	"slices"
	"time"

	"github.com/seatd/seatd/server"
)

// PruneRecords of the reference store: what the suite's retention test
// asks of every backend, in the simplest form.
func (s *memStore) PruneRecords(_ context.Context, kind server.RecordKind, before time.Time, limit int) (int, error) {
	if !kind.Valid() {
		return 0, server.ErrUnknownRecordKind(kind)
	}
	if _, err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	take := func(old bool) bool {
		if old && n < limit {
			n++
			return true
		}
		return false
	}
	switch kind {
	case server.RecordLeases:
		for id, l := range s.d.Leases {
			if l.State != server.LeaseActive && take(l.EndedAt.Before(before)) {
				delete(s.d.Leases, id)
				s.d.Usage = slices.DeleteFunc(s.d.Usage, func(u server.UsageEvent) bool { return u.LeaseID == id })
			}
		}
	case server.RecordCleanupEvents:
		s.d.Cleanup = slices.DeleteFunc(s.d.Cleanup, func(c server.CleanupEvent) bool { return take(c.CleanedAt.Before(before)) })
	case server.RecordSeatEvents:
		s.d.Seats = slices.DeleteFunc(s.d.Seats, func(e server.SeatEvent) bool { return take(e.At.Before(before)) })
	case server.RecordAudit:
		s.d.Audit = slices.DeleteFunc(s.d.Audit, func(e server.AuditEntry) bool { return take(e.At.Before(before)) })
	case server.RecordWebhookDeliveries, server.RecordWebhookEvents:
		// No outbox (Options.NoWebhooks): nothing to remove.
	case server.RecordReturnedCertificates:
		for id, rc := range s.d.Returned {
			if take(rc.ExpiresAt.Before(before)) {
				delete(s.d.Returned, id)
			}
		}
	}
	return n, nil
}
