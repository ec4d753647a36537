package distributed

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// Tenants, API keys, the audit log and the history of leases live in the
// record only: these calls go straight to it.

func (s *Store) CreateTenant(ctx context.Context, t server.Tenant) (server.Tenant, error) {
	return s.rec.CreateTenant(ctx, t)
}

func (s *Store) GetTenant(ctx context.Context, id string) (server.Tenant, error) {
	return s.rec.GetTenant(ctx, id)
}

func (s *Store) ListTenants(ctx context.Context, p server.Page) ([]server.Tenant, string, error) {
	return s.rec.ListTenants(ctx, p)
}

func (s *Store) CreateAPIKey(ctx context.Context, k server.APIKey) (server.APIKey, error) {
	return s.rec.CreateAPIKey(ctx, k)
}

func (s *Store) ListAPIKeys(ctx context.Context, tenantID string, p server.Page) ([]server.APIKey, string, error) {
	return s.rec.ListAPIKeys(ctx, tenantID, p)
}

func (s *Store) RevokeAPIKey(ctx context.Context, id string) (server.APIKey, error) {
	return s.rec.RevokeAPIKey(ctx, id)
}

func (s *Store) APIKeyBySecretHash(ctx context.Context, hash string) (server.APIKey, error) {
	return s.rec.APIKeyBySecretHash(ctx, hash)
}

func (s *Store) UsageEvents(ctx context.Context, tenantID, licenseID string) ([]server.UsageEvent, error) {
	return s.rec.UsageEvents(ctx, tenantID, licenseID)
}

func (s *Store) CleanupEvents(ctx context.Context, tenantID, licenseID string) ([]server.CleanupEvent, error) {
	return s.rec.CleanupEvents(ctx, tenantID, licenseID)
}

func (s *Store) AppendAudit(ctx context.Context, e server.AuditEntry) error {
	return s.rec.AppendAudit(ctx, e)
}

func (s *Store) AuditLog(ctx context.Context, tenantID string, p server.Page) ([]server.AuditEntry, string, error) {
	return s.rec.AuditLog(ctx, tenantID, p)
}

func (s *Store) ListUsageEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.UsageEvent, string, error) {
	return s.rec.ListUsageEvents(ctx, r, p)
}

func (s *Store) ListCleanupEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.CleanupEvent, string, error) {
	return s.rec.ListCleanupEvents(ctx, r, p)
}

func (s *Store) ListAuditEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.AuditEntry, string, error) {
	return s.rec.ListAuditEvents(ctx, r, p)
}

func (s *Store) RecordSeatEvent(ctx context.Context, e server.SeatEvent) error {
	return s.rec.RecordSeatEvent(ctx, e)
}

func (s *Store) UsageReport(ctx context.Context, q server.UsageQuery) (server.UsageReport, error) {
	return s.rec.UsageReport(ctx, q)
}

func (s *Store) ZombieReport(ctx context.Context, q server.ZombieQuery) (server.ZombieReport, error) {
	return s.rec.ZombieReport(ctx, q)
}

func (s *Store) CreateLicense(ctx context.Context, l server.License) (server.License, error) {
	return s.rec.CreateLicense(ctx, l)
}

func (s *Store) GetLicense(ctx context.Context, tenantID, id string) (server.License, error) {
	return s.rec.GetLicense(ctx, tenantID, id)
}

func (s *Store) LicenseByKey(ctx context.Context, key string) (server.License, error) {
	return s.rec.LicenseByKey(ctx, key)
}

func (s *Store) ListLicenses(ctx context.Context, tenantID string, p server.Page) ([]server.License, string, error) {
	return s.rec.ListLicenses(ctx, tenantID, p)
}

// ActiveLeases counts the leases the record holds active.
func (s *Store) ActiveLeases(ctx context.Context) (int64, error) { return s.rec.ActiveLeases(ctx) }

func (s *Store) PruneRecords(ctx context.Context, kind server.RecordKind, before time.Time, limit int) (int, error) {
	return s.rec.PruneRecords(ctx, kind, before, limit)
}
