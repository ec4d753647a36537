package distributed

import (
	"maps"
	"time"

	"github.com/seatd/seatd/server"
)

// leaseInfo is what never changes about a lease: cached per process so
// that heartbeats need no PostgreSQL read. Cached values are shared: never
// change one.
type leaseInfo struct {
	LicenseID      string
	TenantID       string
	Fingerprint    string
	User           string
	Hostname       string
	Metadata       map[string]string
	IdempotencyKey string
	DedupeKey      string
	AcquiredAt     time.Time
}

func infoOf(l *server.Lease) *leaseInfo {
	return &leaseInfo{
		LicenseID: l.LicenseID, TenantID: l.TenantID, Fingerprint: l.Fingerprint, User: l.User,
		Hostname: l.Hostname, Metadata: l.Metadata, IdempotencyKey: l.IdempotencyKey,
		DedupeKey: l.DedupeKey, AcquiredAt: l.AcquiredAt,
	}
}

// lease builds an active lease from its fixed fields and live values.
func (i *leaseInfo) lease(id, tokenHash string, hb, deadline time.Time) server.Lease {
	var l server.Lease
	i.leaseTo(&l, id, tokenHash, hb, deadline)
	return l
}

// leaseTo is lease writing to l, field by field (no temporary copy).
func (i *leaseInfo) leaseTo(l *server.Lease, id, tokenHash string, hb, deadline time.Time) {
	l.ID, l.LicenseID, l.TenantID, l.TokenHash = id, i.LicenseID, i.TenantID, tokenHash
	l.Fingerprint, l.User, l.Hostname, l.Metadata = i.Fingerprint, i.User, i.Hostname, cloneMap(i.Metadata)
	l.IdempotencyKey, l.DedupeKey, l.State = i.IdempotencyKey, i.DedupeKey, server.LeaseActive
	l.AcquiredAt, l.LastHeartbeatAt, l.ExpiresAt = i.AcquiredAt, hb, deadline
	l.EndedAt = time.Time{}
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
