package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// historyOf checks that the license is, or was, the tenant's: a deleted
// license's history stays readable.
func (pg *Postgres) historyOf(ctx context.Context, tenantID, licenseID string) error {
	var owner string
	err := pg.pool.QueryRow(ctx, `SELECT tenant_id FROM licenses WHERE id = $1`, licenseID).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && owner != tenantID) {
		return server.ErrLicenseNotFound
	}
	if err != nil {
		return pg.fail("read license", err)
	}
	return nil
}

// scanUsageEvent reads lease_id, license_id, tenant_id, end_state,
// started_at, ended_at, feature (featureOf).
func scanUsageEvent(r pgx.CollectableRow) (server.UsageEvent, error) {
	var (
		e     server.UsageEvent
		state string
	)
	err := r.Scan(&e.LeaseID, &e.LicenseID, &e.TenantID, &state, &e.StartedAt, &e.EndedAt, &e.Feature)
	e.EndState = server.LeaseState(state)
	e.StartedAt, e.EndedAt = e.StartedAt.UTC(), e.EndedAt.UTC()
	e.Duration = e.EndedAt.Sub(e.StartedAt)
	return e, err
}

// scanCleanupEvent reads lease_id, license_id, tenant_id, cleanup_type,
// last_heartbeat_at, expires_at, cleaned_at, feature (featureOf).
func scanCleanupEvent(r pgx.CollectableRow) (server.CleanupEvent, error) {
	var e server.CleanupEvent
	err := r.Scan(&e.LeaseID, &e.LicenseID, &e.TenantID, &e.CleanupType, &e.LastHeartbeatAt, &e.ExpiresAt, &e.CleanedAt, &e.Feature)
	e.LastHeartbeatAt, e.ExpiresAt, e.CleanedAt = e.LastHeartbeatAt.UTC(), e.ExpiresAt.UTC(), e.CleanedAt.UTC()
	return e, err
}

// scanAuditEntry reads id, tenant_id, actor, action, resource,
// resource_id, details, at.
func scanAuditEntry(r pgx.CollectableRow) (server.AuditEntry, error) {
	var (
		e       server.AuditEntry
		details map[string]string
	)
	err := r.Scan(&e.ID, &e.TenantID, &e.Actor, &e.Action, &e.Resource, &e.ResourceID, &details, &e.At)
	e.Details = nilIfEmpty(details)
	e.At = e.At.UTC()
	return e, err
}

// UsageEvents lists a license's usage events by end time.
func (pg *Postgres) UsageEvents(ctx context.Context, tenantID, licenseID string) ([]server.UsageEvent, error) {
	if err := pg.historyOf(ctx, tenantID, licenseID); err != nil {
		return nil, err
	}
	rows, _ := pg.pool.Query(ctx, `SELECT lease_id, license_id, tenant_id, end_state, started_at, ended_at, `+featureOf+`
		FROM usage_events WHERE license_id = $1 ORDER BY ended_at, lease_id`, licenseID)
	out, err := pgx.CollectRows(rows, scanUsageEvent)
	if err != nil {
		return nil, pg.fail("usage events", err)
	}
	return out, nil
}

// CleanupEvents lists a license's cleanup events by cleanup time.
func (pg *Postgres) CleanupEvents(ctx context.Context, tenantID, licenseID string) ([]server.CleanupEvent, error) {
	if err := pg.historyOf(ctx, tenantID, licenseID); err != nil {
		return nil, err
	}
	rows, _ := pg.pool.Query(ctx, `SELECT lease_id, license_id, tenant_id, cleanup_type, last_heartbeat_at,
		expires_at, cleaned_at, `+featureOf+` FROM cleanup_events WHERE license_id = $1 ORDER BY cleaned_at, lease_id`, licenseID)
	out, err := pgx.CollectRows(rows, scanCleanupEvent)
	if err != nil {
		return nil, pg.fail("cleanup events", err)
	}
	return out, nil
}

func (pg *Postgres) AppendAudit(ctx context.Context, e server.AuditEntry) error {
	_, err := pg.pool.Exec(ctx, `INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)`,
		e.ID, e.TenantID, e.Actor, e.Action, e.Resource, e.ResourceID, jsonMap(e.Details), e.At.UTC().Truncate(time.Microsecond))
	if isCode(err, pgUniqueViolation) {
		return server.AlreadyExists("audit.id", "audit entry")
	}
	if err != nil {
		return pg.fail("append audit", err)
	}
	return nil
}

// AuditLog lists a tenant's audit entries, oldest first (by At, then ID).
func (pg *Postgres) AuditLog(ctx context.Context, tenantID string, p server.Page) ([]server.AuditEntry, string, error) {
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var rows pgx.Rows
	const cols = `id, tenant_id, actor, action, resource, resource_id, details, at`
	if after == nil {
		rows, _ = pg.pool.Query(ctx, `SELECT `+cols+` FROM audit_log WHERE tenant_id = $1
			ORDER BY at, id LIMIT $2`, tenantID, size+1)
	} else {
		rows, _ = pg.pool.Query(ctx, `SELECT `+cols+` FROM audit_log WHERE tenant_id = $1
			AND (at, id) > ($2, $3) ORDER BY at, id LIMIT $4`, tenantID, after.time(), after.ID, size+1)
	}
	out, err := pgx.CollectRows(rows, scanAuditEntry)
	if err != nil {
		return nil, "", pg.fail("audit log", err)
	}
	page, next := pageOf(out, size, func(e server.AuditEntry) cursor { return cursor{At: timeUS(e.At), ID: e.ID} })
	return page, next, nil
}

// zombieFeature is the feature of a cleanup event ce: its grant's, empty
// for a license's base pool.
const zombieFeature = `COALESCE((SELECT g.feature FROM licenses g WHERE g.id = ce.license_id), '')`

// ZombieReport runs the seed's three analytics queries, scoped to the
// tenant and the window [Start, End) (a zero Start or End is open), in one
// round trip. The seed's zombie percentage divided integers (always 0 or
// 100); here it is a float over every lease of the license.
func (pg *Postgres) ZombieReport(ctx context.Context, q server.ZombieQuery) (server.ZombieReport, error) {
	q, err := q.WithDefaults()
	if err != nil {
		return server.ZombieReport{}, err
	}
	top := q.TopLimit
	start, end := optTime(q.Start), optTime(q.End)
	// $4 (the top list: $5) is the feature, '' for every zombie.
	window := func(feature string) string {
		return `ce.tenant_id = $1 AND ce.cleanup_type = 'zombie'
		AND ($2::timestamptz IS NULL OR ce.cleaned_at >= $2)
		AND ($3::timestamptz IS NULL OR ce.cleaned_at < $3)
		AND (` + feature + ` = '' OR ` + zombieFeature + ` = ` + feature + `)`
	}

	var rep server.ZombieReport
	b := &pgx.Batch{}
	// A zombie counts for its license (the part of its pool's id before
	// the dot) and its feature: a license's features are ranked apart.
	// 1. Zombies cleaned per UTC day, and how many licenses they hit.
	b.Queue(`SELECT to_char(ce.cleaned_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*),
			count(DISTINCT split_part(ce.license_id, '.', 1))
		FROM cleanup_events ce WHERE `+window("$4")+` GROUP BY day ORDER BY day`, q.TenantID, start, end, q.Feature).
		Query(func(rows pgx.Rows) error {
			var err error
			rep.Days, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.ZombieDay, error) {
				var d server.ZombieDay
				err := r.Scan(&d.Date, &d.ZombiesCleaned, &d.AffectedLicenses)
				return d, err
			})
			return err
		})
	// 2. Licenses (and their features) with the most zombies, and their
	// share of all their leases.
	b.Queue(`SELECT z.lic, z.feature, l.name, z.zombies, n.leases,
			COALESCE(z.zombies::float8 / NULLIF(n.leases, 0) * 100, 0)
		FROM (SELECT split_part(ce.license_id, '.', 1) AS lic, `+zombieFeature+` AS feature, count(*) AS zombies
			FROM cleanup_events ce WHERE `+window("$5")+`
			GROUP BY 1, 2
			ORDER BY zombies DESC, split_part(ce.license_id, '.', 1) COLLATE "C", `+zombieFeature+` COLLATE "C" LIMIT $4) z
		JOIN licenses l ON l.id = z.lic
		CROSS JOIN LATERAL (SELECT count(*) AS leases FROM sessions s
			WHERE s.license_id IN (`+poolsOf("z.lic")+`) AND s.feature = z.feature) n
		ORDER BY z.zombies DESC, z.lic COLLATE "C", z.feature COLLATE "C"`, q.TenantID, start, end, top, q.Feature).
		Query(func(rows pgx.Rows) error {
			var err error
			rep.TopLicenses, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.LicenseZombies, error) {
				var z server.LicenseZombies
				err := r.Scan(&z.LicenseID, &z.Feature, &z.LicenseName, &z.ZombieCount, &z.LeaseCount, &z.Percentage)
				return z, err
			})
			return err
		})
	// 3. Mean minutes from the last heartbeat to the cleanup, and the total.
	b.Queue(`SELECT count(*), COALESCE(avg(EXTRACT(EPOCH FROM (ce.cleaned_at - ce.last_heartbeat_at))) / 60, 0)::float8
		FROM cleanup_events ce WHERE `+window("$4"), q.TenantID, start, end, q.Feature).
		QueryRow(func(r pgx.Row) error { return r.Scan(&rep.Total, &rep.MeanMinutesToCleanup) })
	if err := pg.pool.SendBatch(ctx, b).Close(); err != nil {
		return server.ZombieReport{}, pg.fail("zombie report", err)
	}
	if len(rep.Days) == 0 {
		rep.Days = nil
	}
	if len(rep.TopLicenses) == 0 {
		rep.TopLicenses = nil
	}
	return rep, nil
}
