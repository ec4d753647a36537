package embedded

import (
	"time"

	"github.com/seatd/seatd/server"
)

// The three ways a lease ends. Each builds the lease's final record and
// the events that go with it, written together in one transaction.

// Each one's usage event is server.UsageEventOf the ended lease: its seat
// was held until its end, or until its deadline if that came first.

func (s *Store) releasing(r ref, now time.Time) ending {
	return s.finish(r, server.LeaseReleased, now)
}

// revoking ends a lease as revoked, even one already past its deadline.
func (s *Store) revoking(r ref, now time.Time) ending {
	return s.finish(r, server.LeaseRevoked, now)
}

// expiring ends a zombie: the cleanup is recorded and audited. A lapsed
// linger is no zombie: its client released it, and it ends released.
func (s *Store) expiring(r ref, now time.Time) ending {
	if s.idx.slots.at(r).lingering() {
		return s.releasing(r, now)
	}
	end := s.finish(r, server.LeaseExpired, now)
	l := end.lease
	end.cleanup = &server.CleanupEvent{
		LeaseID:         l.ID,
		LicenseID:       l.LicenseID,
		TenantID:        l.TenantID,
		CleanupType:     server.CleanupTypeZombie,
		LastHeartbeatAt: l.LastHeartbeatAt,
		ExpiresAt:       l.ExpiresAt,
		CleanedAt:       now,
		Feature:         l.Feature,
	}
	end.audit = systemAudit(l, "lease.expire", now, nil)
	return end
}

// replacing ends a live lease whose seat a request of the same keys but
// another user or host takes (Store.replaces): as revoked, audited with
// the lease that replaces it.
func (s *Store) replacing(r ref, now time.Time, by string) ending {
	end := s.finish(r, server.LeaseRevoked, now)
	end.audit = systemAudit(end.lease, "lease.replace", now, map[string]string{"replaced_by": by})
	return end
}

func (s *Store) finish(r ref, st server.LeaseState, now time.Time) ending {
	sl, text, lic := *s.idx.slots.at(r), s.idx.slots.text(r), &s.idx.licenseOf(r).lic
	sl.rev++
	l := expand(&sl, text, lic.ID, lic.TenantID)
	l.State, l.EndedAt = st, now
	var event *server.Event
	switch st {
	case server.LeaseRevoked:
		e := server.EventOfLease(server.EventLeaseRevoked, &l, now)
		event = &e
	case server.LeaseExpired:
		e := server.EventOfLease(server.EventLeaseExpired, &l, now)
		event = &e
	}
	return ending{
		event:  event,
		lease:  l,
		key:    activeKey(lic.ID, sl.acquired, l.ID),
		rev:    sl.rev,
		record: appendHistory(nil, &sl, text, st, now.UnixNano(), lic.ID, lic.TenantID),
		usage:  server.UsageEventOf(&l),
	}
}

// systemAudit is an audit entry for something the store did by itself.
func systemAudit(l server.Lease, action string, now time.Time, details map[string]string) *server.AuditEntry {
	d := map[string]string{"license_id": l.LicenseID}
	for k, v := range details {
		d[k] = v
	}
	return &server.AuditEntry{
		ID:         server.NewID("aud_"),
		TenantID:   l.TenantID,
		Actor:      "system",
		Action:     action,
		Resource:   "lease",
		ResourceID: l.ID,
		Details:    d,
		At:         now,
	}
}
