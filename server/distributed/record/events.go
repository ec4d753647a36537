package record

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// rangeArgs are the arguments $1-$7 of an event list: the tenant, the
// license ("" for all), the range (NULL for an open side), the cursor
// (NULL on the first page) and the LIMIT (one more than the page, pageOf).
func (pg *Postgres) rangeArgs(ctx context.Context, r server.EventRange, p server.Page) ([]any, int, error) {
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, 0, err
	}
	if r.LicenseID != "" {
		if err := pg.historyOf(ctx, r.TenantID, r.LicenseID); err != nil {
			return nil, 0, err
		}
	}
	var (
		at *time.Time
		id string
	)
	if after != nil {
		t := after.time()
		at, id = &t, after.ID
	}
	size := p.PageSize()
	return []any{r.TenantID, r.LicenseID, optTime(r.Start), optTime(r.End), at, id, size + 1, r.Feature}, size, nil
}

// byLicense keeps one pool's events when $2 names one (a license's include
// its grants'), and one feature's when $8 names one.
const byLicense = `($2 = '' OR license_id IN (` + poolsOfArg2 + `))
		AND ($8 = '' OR license_id IN (SELECT l.id FROM licenses l WHERE l.tenant_id = $1 AND l.feature = $8))`

// featureOf is the SQL of the feature of the pool of an event's
// license_id: its grant's, empty for a license.
const featureOf = `COALESCE((SELECT l.feature FROM licenses l WHERE l.id = license_id), '')`

// rangeWhere is the condition of an event list on its time column col and
// id column idCol; license is the license condition on $2.
func rangeWhere(license, col, idCol string) string {
	return `tenant_id = $1 AND ` + license + `
		AND ($3::timestamptz IS NULL OR ` + col + ` >= $3) AND ($4::timestamptz IS NULL OR ` + col + ` < $4)
		AND ($5::timestamptz IS NULL OR (` + col + `, ` + idCol + `) > ($5, $6))
		ORDER BY ` + col + `, ` + idCol + ` LIMIT $7`
}

// ListUsageEvents pages through a tenant's usage events by end time.
func (pg *Postgres) ListUsageEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.UsageEvent, string, error) {
	args, size, err := pg.rangeArgs(ctx, r, p)
	if err != nil {
		return nil, "", err
	}
	rows, _ := pg.pool.Query(ctx, `SELECT lease_id, license_id, tenant_id, end_state, started_at, ended_at, `+featureOf+`
		FROM usage_events WHERE `+rangeWhere(byLicense, "ended_at", "lease_id"), args...)
	out, err := pgx.CollectRows(rows, scanUsageEvent)
	if err != nil {
		return nil, "", pg.fail("list usage events", err)
	}
	page, next := pageOf(out, size, func(e server.UsageEvent) cursor { return cursor{At: timeUS(e.EndedAt), ID: e.LeaseID} })
	return page, next, nil
}

// ListCleanupEvents pages through a tenant's cleanup events by cleanup time.
func (pg *Postgres) ListCleanupEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.CleanupEvent, string, error) {
	args, size, err := pg.rangeArgs(ctx, r, p)
	if err != nil {
		return nil, "", err
	}
	rows, _ := pg.pool.Query(ctx, `SELECT lease_id, license_id, tenant_id, cleanup_type, last_heartbeat_at,
		expires_at, cleaned_at, `+featureOf+` FROM cleanup_events WHERE `+rangeWhere(byLicense, "cleaned_at", "lease_id"), args...)
	out, err := pgx.CollectRows(rows, scanCleanupEvent)
	if err != nil {
		return nil, "", pg.fail("list cleanup events", err)
	}
	page, next := pageOf(out, size, func(e server.CleanupEvent) cursor { return cursor{At: timeUS(e.CleanedAt), ID: e.LeaseID} })
	return page, next, nil
}

// ListAuditEvents pages through a tenant's audit entries by time.
func (pg *Postgres) ListAuditEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.AuditEntry, string, error) {
	r.LicenseID, r.Feature = "", "" // audit entries are the tenant's
	args, size, err := pg.rangeArgs(ctx, r, p)
	if err != nil {
		return nil, "", err
	}
	// The audit log has no license column: $2 is always ''.
	rows, _ := pg.pool.Query(ctx, `SELECT id, tenant_id, actor, action, resource, resource_id, details, at
		FROM audit_log WHERE `+rangeWhere(`$2 = '' AND $8 = $8`, "at", "id"), args...)
	out, err := pgx.CollectRows(rows, scanAuditEntry)
	if err != nil {
		return nil, "", pg.fail("list audit events", err)
	}
	page, next := pageOf(out, size, func(e server.AuditEntry) cursor { return cursor{At: timeUS(e.At), ID: e.ID} })
	return page, next, nil
}
