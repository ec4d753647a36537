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
	l.Policy = nil // SetPolicy sets it, against the tenant's groups
	created := server.EventOfLicense(server.EventLicenseCreated, &l, l.CreatedAt)
	// The license and its event in one statement (invariant 14).
	_, err := pg.pool.Exec(ctx, `WITH lic AS (INSERT INTO licenses (id, tenant_id, key, name, seats, overdraft, lease_ttl_us,
		revival_window_us, leasing_strategy, active, expires_at, metadata, created_at, updated_at,
		max_borrow_us, max_borrowed_seats, allow_early_return)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15, $16, $17) RETURNING id)
		INSERT INTO webhook_events (id, type, at, tenant_id, license_id, subject_id, data)
		SELECT $18, $19, $13, $2, id, id, $20::jsonb FROM lic`,
		l.ID, l.TenantID, l.Key, l.Name, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(),
		l.RevivalWindow.Microseconds(), string(l.LeasingStrategy), l.Active, optTime(l.ExpiresAt),
		jsonMap(l.Metadata), l.CreatedAt, l.UpdatedAt, l.MaxBorrowDuration.Microseconds(), l.MaxBorrowedSeats,
		l.AllowEarlyReturn, created.ID, string(created.Type), string(created.Data))
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
	return pg.withGrants(ctx, r.License)
}

func (pg *Postgres) LicenseByKey(ctx context.Context, key string) (server.License, error) {
	r, err := scanLicense(pg.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE key = $1 AND deleted_at IS NULL AND parent_id IS NULL`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.License{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return server.License{}, pg.fail("find license by key", err)
	}
	return pg.withGrants(ctx, r.License)
}

// withGrants fills in the grants of a license.
func (pg *Postgres) withGrants(ctx context.Context, l server.License) (server.License, error) {
	gs, err := pg.grantsOf(ctx, pg.pool, l.ID)
	if err != nil {
		return server.License{}, pg.fail("read grants", err)
	}
	l.Grants = gs[l.ID]
	return l, nil
}

// grantsOf reads the undeleted grants of licenses, by license, in
// SortGrants order.
func (pg *Postgres) grantsOf(ctx context.Context, q queryer, licenseIDs ...string) (map[string][]server.Grant, error) {
	rows, _ := q.Query(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE parent_id = ANY($1) AND deleted_at IS NULL`, licenseIDs)
	grants, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Grant, error) {
		row, err := scanLicense(r)
		return row.Grant(), err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string][]server.Grant, len(licenseIDs))
	for _, g := range grants {
		out[g.LicenseID] = append(out[g.LicenseID], g)
	}
	for _, gs := range out {
		server.SortGrants(gs)
	}
	return out, nil
}

// queryer is a pool or a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// LicenseWithGrants reads an undeleted license of the tenant with its
// grants (the record's settings version too): ErrLicenseNotFound if none.
func (pg *Postgres) LicenseWithGrants(ctx context.Context, id string) (LicenseRow, error) {
	r, err := scanLicense(pg.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE id = $1 AND deleted_at IS NULL AND parent_id IS NULL`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return LicenseRow{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return LicenseRow{}, pg.fail("read license", err)
	}
	r.License, err = pg.withGrants(ctx, r.License)
	return r, err
}

// liveLicense reads an undeleted license of the tenant, optionally with a
// row lock ("FOR UPDATE", "FOR NO KEY UPDATE").
func (pg *Postgres) liveLicense(ctx context.Context, q querier, tenantID, id, lock string) (LicenseRow, error) {
	r, err := scanLicense(q.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL AND parent_id IS NULL `+lock, id, tenantID))
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
			WHERE tenant_id = $1 AND deleted_at IS NULL AND parent_id IS NULL ORDER BY created_at, id LIMIT $2`, tenantID, size+1)
	} else {
		rows, _ = pg.pool.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE tenant_id = $1 AND deleted_at IS NULL AND parent_id IS NULL AND (created_at, id) > ($2, $3)
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
	ids := make([]string, len(page))
	for i, l := range page {
		ids[i] = l.ID
	}
	gs, err := pg.grantsOf(ctx, pg.pool, ids...)
	if err != nil {
		return nil, "", pg.fail("list licenses: grants", err)
	}
	for i := range page {
		page[i].Grants = gs[page[i].ID]
	}
	return page, next, nil
}

// UpdateLicense changes a license under its row lock (FOR NO KEY UPDATE:
// updates of the license are serialised, acquisitions go on) and bumps its
// version. update's error is returned as is, and so is Policy.CheckChange's
// if the change breaks the license's policy (nothing written).
//
// The settings a grant's pool takes from its license are rewritten in its
// grants' rows in the same transaction (their versions bumped too): pools
// are returned for pushing to the live state, the license with its Grants.
func (pg *Postgres) UpdateLicense(ctx context.Context, tenantID, id string, update func(*server.License) error) (LicenseRow, []LicenseRow, error) {
	var (
		next      LicenseRow
		pools     []LicenseRow
		updateErr error // the caller's or Policy.CheckChange's, returned as is
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
		// Its policy must stay valid (seats under the reservations).
		refused, err := pg.policyRefusal(ctx, tx, cur, func(n *server.License) {
			grants := n.Grants
			*n = l
			n.Grants, n.Policy = grants, cur.Policy
		})
		if err != nil {
			return err
		}
		if refused != nil {
			updateErr = refused
			return refused
		}
		next, err = scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET name = $2, seats = $3, overdraft = $4,
			lease_ttl_us = $5, revival_window_us = $6, leasing_strategy = $7, active = $8, expires_at = $9,
			metadata = $10::jsonb, max_borrow_us = $11, max_borrowed_seats = $12, allow_early_return = $13,
			updated_at = date_trunc('microseconds', clock_timestamp()), version = version + 1
			WHERE id = $1 RETURNING `+licenseCols,
			id, l.Name, l.Seats, l.Overdraft, l.LeaseTTL.Microseconds(), l.RevivalWindow.Microseconds(),
			string(l.LeasingStrategy), l.Active, optTime(l.ExpiresAt), jsonMap(l.Metadata),
			l.MaxBorrowDuration.Microseconds(), l.MaxBorrowedSeats, l.AllowEarlyReturn))
		if err != nil {
			return err
		}
		updated := server.EventOfLicenseChange(server.ChangeSettings, &next.License, nil, next.UpdatedAt)
		if _, err = insertEvent(ctx, tx, updated); err != nil {
			return err
		}
		if pools, err = inheritSettings(ctx, tx, id); err != nil {
			return err
		}
		next.Grants = make([]server.Grant, len(pools))
		for i := range pools {
			next.Grants[i] = pools[i].Grant()
		}
		server.SortGrants(next.Grants)
		return nil
	})
	if updateErr != nil {
		return LicenseRow{}, nil, updateErr
	}
	if err != nil {
		return LicenseRow{}, nil, pg.fail("update license", err)
	}
	return next, pools, nil
}

// inheritSettings copies a license's settings that its grants' pools take
// from it into their rows (Grant.Pool), bumping their versions, and
// returns the pools.
func inheritSettings(ctx context.Context, tx pgx.Tx, licenseID string) ([]LicenseRow, error) {
	rows, _ := tx.Query(ctx, `UPDATE licenses g SET name = l.name, lease_ttl_us = l.lease_ttl_us,
			revival_window_us = l.revival_window_us, leasing_strategy = l.leasing_strategy, active = l.active,
			allow_early_return = l.allow_early_return, expires_at = LEAST(g.grant_expires_at, l.expires_at),
			version = g.version + 1
		FROM licenses l WHERE l.id = $1 AND g.parent_id = $1 AND g.deleted_at IS NULL
		RETURNING `+grantCols, licenseID)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LicenseRow, error) { return scanLicense(r) })
}

// grantCols are licenseCols of the alias g.
var grantCols = aliased("g", licenseCols)

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
	err := pg.pool.QueryRow(ctx, `SELECT id FROM licenses WHERE key = $1 AND deleted_at IS NULL AND parent_id IS NULL`, key).Scan(&id)
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

// DeleteLicense revokes a license's active leases and its grants' (with
// their live values, usage events and audit entries) and soft-deletes it
// and its grants, in one transaction under their row locks (FOR UPDATE):
// every acquisition recording a lease meanwhile waits and then finds the
// pool deleted, so no lease is ever recorded active on a deleted license.
// ErrLicenseNotFound if it is not an undeleted license of the tenant.
// pools are the grants' rows, deleted (to tombstone their live state).
func (pg *Postgres) DeleteLicense(ctx context.Context, tenantID, id string, now time.Time, live LiveValues) (revoked int, lic LicenseRow, pools []LicenseRow, _ error) {
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		var err error
		if lic, err = pg.liveLicense(ctx, tx, tenantID, id, "FOR UPDATE"); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+licenseCols+` FROM licenses
			WHERE parent_id = $1 AND deleted_at IS NULL ORDER BY id FOR UPDATE`, id)
		if pools, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (LicenseRow, error) { return scanLicense(r) }); err != nil {
			return err
		}
		ids := []string{id}
		for i := range pools {
			ids = append(ids, pools[i].ID)
			pools[i].Version++
			pools[i].Deleted = true
		}
		if revoked, err = deletePools(ctx, tx, ids, now, live, "license deleted"); err != nil {
			return err
		}
		lic.Version++
		// After its leases' lease.revoked events, as the embedded store writes them.
		_, err = insertEvent(ctx, tx, server.EventOfLicense(server.EventLicenseDeleted, &lic.License, now))
		return err
	})
	return revoked, lic, pools, err
}

// DeleteGrant revokes a grant's active leases and soft-deletes it, as
// DeleteLicense does for a license, and bumps its license's version (the
// grants an acquisition judges by are those of a license version: see
// server/distributed/grants.go). ErrLicenseNotFound / ErrGrantNotFound;
// Policy.CheckChange's error (INVALID_ARGUMENT) if the license's policy
// names the grant's feature and it is the feature's only grant.
func (pg *Postgres) DeleteGrant(ctx context.Context, tenantID, licenseID, grantID string, now time.Time, live LiveValues) (revoked int, lic, pool LicenseRow, _ error) {
	var refused error // Policy.CheckChange's, returned as is
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		var err error
		if lic, err = pg.liveLicense(ctx, tx, tenantID, licenseID, "FOR NO KEY UPDATE"); err != nil {
			return err
		}
		if pool, err = lockGrant(ctx, tx, licenseID, grantID, "FOR UPDATE"); err != nil {
			return err
		}
		// Its license's policy must stay valid (no rule of a feature it no
		// longer holds).
		if refused, err = pg.policyRefusal(ctx, tx, lic, func(n *server.License) { replaceGrant(n, grantID, nil) }); err != nil {
			return err
		}
		if refused != nil {
			return refused
		}
		if revoked, err = deletePools(ctx, tx, []string{grantID}, now, live, "grant deleted"); err != nil {
			return err
		}
		pool.Version++
		pool.Deleted = true
		if lic, err = bumpLicense(ctx, tx, licenseID); err != nil {
			return err
		}
		// After its leases' lease.revoked events (deletePools writes those).
		deleted := pool.Grant()
		_, err = insertEvent(ctx, tx, server.EventOfLicenseChange(server.ChangeGrantDeleted, &lic.License, &deleted, now))
		return err
	})
	if refused != nil {
		return 0, LicenseRow{}, LicenseRow{}, refused
	}
	return revoked, lic, pool, err
}

// lockGrant reads an undeleted grant of a license under a row lock:
// ErrGrantNotFound if none.
func lockGrant(ctx context.Context, tx pgx.Tx, licenseID, grantID, lock string) (LicenseRow, error) {
	r, err := scanLicense(tx.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE id = $1 AND parent_id = $2 AND deleted_at IS NULL `+lock, grantID, licenseID))
	if errors.Is(err, pgx.ErrNoRows) {
		return LicenseRow{}, server.ErrGrantNotFound
	}
	return r, err
}

// bumpLicense bumps a license's settings version: its grants changed.
func bumpLicense(ctx context.Context, tx pgx.Tx, licenseID string) (LicenseRow, error) {
	return scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET version = version + 1 WHERE id = $1 RETURNING `+licenseCols, licenseID))
}

// deletePools revokes the active sessions of pools (license or grant rows,
// locked FOR UPDATE by the caller) with their live values, usage events
// and audit entries, and soft-deletes the rows (version + 1).
func deletePools(ctx context.Context, tx pgx.Tx, ids []string, now time.Time, live LiveValues, reason string) (revoked int, err error) {
	err = tx.QueryRow(ctx, `
		WITH live AS (
			SELECT * FROM unnest($3::text[], $4::timestamptz[], $5::timestamptz[]) AS v(id, hb, dl)
		), locked AS (
			SELECT id FROM sessions WHERE license_id = ANY($1) AND state = 'active' ORDER BY id FOR UPDATE
		), ended AS (
			UPDATE sessions s SET state = 'revoked', ended_at = GREATEST($2, s.acquired_at),
				last_heartbeat_at = GREATEST(s.last_heartbeat_at, (SELECT hb FROM live WHERE live.id = s.id)),
				expires_at = COALESCE((SELECT dl FROM live WHERE live.id = s.id), s.expires_at)
			FROM locked WHERE s.id = locked.id AND s.state = 'active'
			RETURNING `+sessionCols("s")+`
		), event AS (
			`+sqlLeaseEvent(server.EventLeaseRevoked, "ended", "true", "ended_at")+`
		), usage AS (
			INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
			SELECT id, license_id, tenant_id, 'revoked', acquired_at, `+sqlSeatHeldUntil+`, `+sqlDurationUS(sqlSeatHeldUntil, "acquired_at")+`
			FROM ended ON CONFLICT (lease_id) DO NOTHING
		), audit AS (
			INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
			SELECT `+sqlAuditID+`, tenant_id, 'system', 'lease.revoke', 'lease', id,
				jsonb_build_object('license_id', license_id, 'reason', $6::text), ended_at
			FROM ended
		)
		SELECT count(*) FROM ended`, ids, now, live.IDs, live.Heartbeats, live.Deadline, reason).Scan(&revoked)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `UPDATE licenses SET deleted_at = $2, version = version + 1 WHERE id = ANY($1)`, ids, now)
	return revoked, err
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
