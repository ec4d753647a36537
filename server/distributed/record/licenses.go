package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Licenses. A license's row also carries the bookkeeping of its live
// state: version (bumped by every change of the settings) and live_epoch
// (bumped by every rebuild of the live state), which the inserts of
// sessions check (commit.go).

func (pg *Postgres) CreateLicense(ctx context.Context, l server.License) (server.License, error) {
	l = normalizeLicense(l)
	_, err := pg.pool.Exec(ctx, `INSERT INTO licenses (id, tenant_id, key, name, seats, overdraft, lease_ttl_us,
		revival_window_us, leasing_strategy, active, expires_at, metadata, created_at, updated_at,
		max_borrow_us, max_borrowed_seats, allow_early_return)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16, $17)`,
		l.ID, l.TenantID, l.Key, l.Name, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(),
		l.RevivalWindow.Microseconds(), string(l.LeasingStrategy), l.Active, optTime(l.ExpiresAt),
		jsonMap(l.Metadata), l.CreatedAt, l.UpdatedAt, l.MaxBorrowDuration.Microseconds(), l.MaxBorrowedSeats,
		l.AllowEarlyReturn)
	if pe := pgError(err); pe != nil {
		switch {
		case pe.Code == pgForeignKeyViolation:
			return server.License{}, server.ErrTenantNotFound
		case pe.Code == pgUniqueViolation && pe.ConstraintName == "licenses_key_live_key":
			return server.License{}, server.AlreadyExists("license.key", "license key")
		case pe.Code == pgUniqueViolation:
			return server.License{}, server.AlreadyExists("license.id", "license")
		}
	}
	if err != nil {
		return server.License{}, pg.fail("create license", err)
	}
	return l, nil
}

// normalizeLicense gives a license the shape it has after a round trip
// through the database.
func normalizeLicense(l server.License) server.License {
	l.Metadata = cloneMap(l.Metadata)
	l.ExpiresAt = l.ExpiresAt.UTC().Truncate(time.Microsecond)
	l.CreatedAt = l.CreatedAt.UTC().Truncate(time.Microsecond)
	l.UpdatedAt = l.UpdatedAt.UTC().Truncate(time.Microsecond)
	l.LeaseTTL = l.LeaseTTL.Truncate(time.Microsecond)
	l.RevivalWindow = l.RevivalWindow.Truncate(time.Microsecond)
	l.MaxBorrowDuration = l.MaxBorrowDuration.Truncate(time.Microsecond)
	return l
}

func (pg *Postgres) GetLicense(ctx context.Context, tenantID, id string) (server.License, error) {
	r, err := pg.liveLicense(ctx, pg.pool, tenantID, id, "")
	if err != nil {
		return server.License{}, err
	}
	return r.License, nil
}

func (pg *Postgres) LicenseByKey(ctx context.Context, key string) (server.License, error) {
	r, err := scanLicense(pg.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses WHERE key = $1 AND deleted_at IS NULL`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.License{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return server.License{}, pg.fail("find license by key", err)
	}
	return r.License, nil
}

// liveLicense reads an undeleted license of the tenant, optionally with a
// row lock ("FOR UPDATE", "FOR NO KEY UPDATE").
func (pg *Postgres) liveLicense(ctx context.Context, q querier, tenantID, id, lock string) (LicenseRow, error) {
	r, err := scanLicense(q.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL `+lock, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return LicenseRow{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return LicenseRow{}, pg.fail("get license", err)
	}
	return r, nil
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (pg *Postgres) ListLicenses(ctx context.Context, tenantID string, p server.Page) ([]server.License, string, error) {
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var rows pgx.Rows
	if after == nil {
		rows, _ = pg.pool.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id LIMIT $2`, tenantID, size+1)
	} else {
		rows, _ = pg.pool.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE tenant_id = $1 AND deleted_at IS NULL AND (created_at, id) > ($2, $3)
			ORDER BY created_at, id LIMIT $4`, tenantID, after.time(), after.ID, size+1)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.License, error) {
		l, err := scanLicense(r)
		return l.License, err
	})
	if err != nil {
		return nil, "", pg.fail("list licenses", err)
	}
	page, next := pageOf(out, size, func(l server.License) cursor { return cursor{At: timeUS(l.CreatedAt), ID: l.ID} })
	return page, next, nil
}

// UpdateLicense changes a license under its row lock (FOR NO KEY UPDATE:
// updates of the license are serialised, acquisitions go on) and bumps its
// version. update's error is returned as is.
func (pg *Postgres) UpdateLicense(ctx context.Context, tenantID, id string, update func(*server.License) error) (LicenseRow, error) {
	var (
		next      LicenseRow
		updateErr error // the caller's, returned as is
	)
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		// FOR NO KEY UPDATE serialises updates of the license without
		// blocking the acquisitions that record leases on it.
		cur, err := pg.liveLicense(ctx, tx, tenantID, id, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		l := cur.License
		l.Metadata = cloneMap(cur.Metadata)
		// update is the caller's code: it runs while the row is locked
		// against other changes of this license (acquisitions go on).
		if updateErr = update(&l); updateErr != nil {
			return updateErr
		}
		l.ID, l.TenantID, l.Key, l.CreatedAt = cur.ID, cur.TenantID, cur.Key, cur.CreatedAt
		l = normalizeLicense(l)
		next, err = scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET name = $2, seats = $3, overdraft = $4,
			lease_ttl_us = $5, revival_window_us = $6, leasing_strategy = $7, active = $8, expires_at = $9,
			metadata = $10::jsonb, max_borrow_us = $11, max_borrowed_seats = $12, allow_early_return = $13,
			updated_at = date_trunc('microseconds', clock_timestamp()), version = version + 1
			WHERE id = $1 RETURNING `+licenseCols,
			id, l.Name, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(), l.RevivalWindow.Microseconds(),
			string(l.LeasingStrategy), l.Active, optTime(l.ExpiresAt), jsonMap(l.Metadata),
			l.MaxBorrowDuration.Microseconds(), l.MaxBorrowedSeats, l.AllowEarlyReturn))
		return err
	})
	if updateErr != nil {
		return LicenseRow{}, updateErr
	}
	if err != nil {
		return LicenseRow{}, pg.fail("update license", err)
	}
	return next, nil
}

// License reads a license's row, deleted or not: ErrNotFound if none.
func (pg *Postgres) License(ctx context.Context, id string) (LicenseRow, error) {
	return scanLicense(pg.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses WHERE id = $1`, id))
}

// TenantLicense reads an undeleted license of the tenant:
// ErrLicenseNotFound if there is none.
func (pg *Postgres) TenantLicense(ctx context.Context, tenantID, id string) (LicenseRow, error) {
	return pg.liveLicense(ctx, pg.pool, tenantID, id, "")
}

// LicenseIDByKey finds the undeleted license of a key:
// ErrLicenseNotFound if there is none.
func (pg *Postgres) LicenseIDByKey(ctx context.Context, key string) (string, error) {
	var id string
	err := pg.pool.QueryRow(ctx, `SELECT id FROM licenses WHERE key = $1 AND deleted_at IS NULL`, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", server.ErrLicenseNotFound
	}
	if err != nil {
		return "", pg.fail("find license by key", err)
	}
	return id, nil
}

// LicenseVersion is a license's settings version, for comparing the live
// state's copy with the record.
type LicenseVersion struct {
	ID, TenantID string
	Version      int64
	Deleted      bool
}

// LicenseVersions lists every license's version, deleted ones included.
func (pg *Postgres) LicenseVersions(ctx context.Context) ([]LicenseVersion, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT id, version, deleted_at IS NOT NULL, tenant_id FROM licenses`)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LicenseVersion, error) {
		var v LicenseVersion
		err := r.Scan(&v.ID, &v.Version, &v.Deleted, &v.TenantID)
		return v, err
	})
}

// LiveValues are leases' last heartbeats and deadlines as the live state
// holds them, newer than the record's.
type LiveValues struct {
	IDs                  []string
	Heartbeats, Deadline []time.Time
}

// DeleteLicense revokes a license's active leases (with their live
// values, usage events and audit entries) and soft-deletes it, in one
// transaction under its row lock (FOR UPDATE): every acquisition recording
// a lease meanwhile waits and then finds the license deleted, so no lease
// is ever recorded active on a deleted license. ErrLicenseNotFound if it
// is not an undeleted license of the tenant.
func (pg *Postgres) DeleteLicense(ctx context.Context, tenantID, id string, now time.Time, live LiveValues) (revoked int, lic LicenseRow, _ error) {
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		var err error
		if lic, err = pg.liveLicense(ctx, tx, tenantID, id, "FOR UPDATE"); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			WITH live AS (
				SELECT * FROM unnest($3::text[], $4::timestamptz[], $5::timestamptz[]) AS v(id, hb, dl)
			), locked AS (
				SELECT id FROM sessions WHERE license_id = $1 AND state = 'active' ORDER BY id FOR UPDATE
			), ended AS (
				UPDATE sessions s SET state = 'revoked', ended_at = GREATEST($2, s.acquired_at),
					last_heartbeat_at = GREATEST(s.last_heartbeat_at, (SELECT hb FROM live WHERE live.id = s.id)),
					expires_at = COALESCE((SELECT dl FROM live WHERE live.id = s.id), s.expires_at)
				FROM locked WHERE s.id = locked.id AND s.state = 'active'
				RETURNING s.id, s.license_id, s.tenant_id, s.acquired_at, s.ended_at, s.expires_at
			), usage AS (
				INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
				SELECT id, license_id, tenant_id, 'revoked', acquired_at, `+sqlSeatHeldUntil+`, `+sqlDurationUS(sqlSeatHeldUntil, "acquired_at")+`
				FROM ended ON CONFLICT (lease_id) DO NOTHING
			), audit AS (
				INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
				SELECT `+sqlAuditID+`, tenant_id, 'system', 'lease.revoke', 'lease', id,
					jsonb_build_object('license_id', license_id, 'reason', 'license deleted'), ended_at
				FROM ended
			)
			SELECT count(*) FROM ended`, id, now, live.IDs, live.Heartbeats, live.Deadline).Scan(&revoked)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE licenses SET deleted_at = $2, version = version + 1 WHERE id = $1`, id, now)
		lic.Version++
		return err
	})
	return revoked, lic, err
}

// DeletedVersion is the version of a deleted license of the tenant:
// ErrLicenseNotFound if there is none.
func (pg *Postgres) DeletedVersion(ctx context.Context, tenantID, id string) (int64, error) {
	var version int64
	err := pg.pool.QueryRow(ctx, `SELECT version FROM licenses WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NOT NULL`,
		id, tenantID).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, server.ErrLicenseNotFound
	}
	return version, err
}

// sqlAuditID generates an audit entry id in SQL, in the shape of
// server.NewID("aud_"): 24 hex digits.
const sqlAuditID = `'aud_' || encode(substr(uuid_send(gen_random_uuid()), 1, 12), 'hex')`

// sqlDurationUS is the SQL for end - start in whole microseconds.
// sqlSeatHeldUntil is server.SeatHeldUntil of an ended session (the row's
// final ended_at and expires_at), no earlier than its acquisition: where a
// usage event ends, as the usage report counts it (usage.go).
const sqlSeatHeldUntil = "GREATEST(LEAST(ended_at, expires_at), acquired_at)"

func sqlDurationUS(end, start string) string {
	return "(EXTRACT(EPOCH FROM (" + end + " - " + start + ")) * 1000000)::bigint"
}
