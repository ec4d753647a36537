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
	Borrowed       bool
}

func infoOf(l *server.Lease) *leaseInfo {
	return &leaseInfo{
		LicenseID: l.LicenseID, TenantID: l.TenantID, Fingerprint: l.Fingerprint, User: l.User,
		Hostname: l.Hostname, Metadata: l.Metadata, IdempotencyKey: l.IdempotencyKey,
		DedupeKey: l.DedupeKey, AcquiredAt: l.AcquiredAt, Borrowed: l.Borrowed,
	}
}

// lease builds an active lease from its fixed fields and live values.
func (i *leaseInfo) lease(id, tokenHash string, hb, deadline time.Time) server.Lease {
	return server.Lease{
		ID: id, LicenseID: i.LicenseID, TenantID: i.TenantID, TokenHash: tokenHash,
		Fingerprint: i.Fingerprint, User: i.User, Hostname: i.Hostname, Metadata: cloneMap(i.Metadata),
		IdempotencyKey: i.IdempotencyKey, DedupeKey: i.DedupeKey, State: server.LeaseActive,
		AcquiredAt: i.AcquiredAt, LastHeartbeatAt: hb, ExpiresAt: deadline, Borrowed: i.Borrowed,
	}
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
