package embedded

import (
	"time"

	"github.com/seatd/seatd/server"
)

// The three ways a lease ends. Each builds the lease's final record and
// the events that go with it, written together in one transaction.

func releasing(e *entry, now time.Time) ending {
	return finish(e, server.LeaseReleased, now, now)
}

// revoking ends a lease as revoked; its usage ends now, even for a lease
// already past its deadline (as the lease's own EndedAt does).
func revoking(e *entry, now time.Time) ending {
	return finish(e, server.LeaseRevoked, now, now)
}

// expiring ends a zombie: its usage ran until its last heartbeat, and the
// cleanup is recorded and audited.
func expiring(e *entry, now time.Time) ending {
	end := finish(e, server.LeaseExpired, now, e.lease.LastHeartbeatAt)
	l := end.rec.Lease
	end.cleanup = &server.CleanupEvent{
		LeaseID:         l.ID,
		LicenseID:       l.LicenseID,
		TenantID:        l.TenantID,
		CleanupType:     server.CleanupTypeZombie,
		LastHeartbeatAt: l.LastHeartbeatAt,
		ExpiresAt:       l.ExpiresAt,
		CleanedAt:       now,
	}
	end.audit = systemAudit(l, "lease.expire", now, nil)
	return end
}

func finish(e *entry, st server.LeaseState, now, usedUntil time.Time) ending {
	rec := e.record()
	rec.Rev++
	rec.Metadata = cloneLease(rec.Lease).Metadata
	rec.State = st
	rec.EndedAt = now
	return ending{
		rec: rec,
		usage: server.UsageEvent{
			LeaseID:   rec.ID,
			LicenseID: rec.LicenseID,
			TenantID:  rec.TenantID,
			EndState:  st,
			StartedAt: rec.AcquiredAt,
			EndedAt:   usedUntil,
			Duration:  usedUntil.Sub(rec.AcquiredAt),
		},
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
