package record

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Feature grants are rows of licenses (migration 00010): a grant's row is
// its pool (Grant.Pool), with parent_id its license. Every change of a
// license's grants bumps the license's settings version in the same
// transaction: an acquisition judges the grants of one license version,
// and the live state's copy of that version tells an instance that its
// grants are stale (server/distributed/grants.go).

// CreateGrant stores a grant as its pool's row, under its license's row
// lock. It returns the grant's row and the license's (version bumped).
// ErrLicenseNotFound if the license is not the tenant's (or deleted).
func (pg *Postgres) CreateGrant(ctx context.Context, g server.Grant) (pool, lic LicenseRow, _ error) {
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		parent, err := pg.liveLicense(ctx, tx, g.TenantID, g.LicenseID, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		p := g.Pool(&parent.License)
		pool, err = scanLicense(tx.QueryRow(ctx, `INSERT INTO licenses (id, tenant_id, key, name, seats, overdraft,
			lease_ttl_us, revival_window_us, leasing_strategy, active, expires_at, metadata, created_at, updated_at,
			max_borrow_us, max_borrowed_seats, allow_early_return, parent_id, feature, grant_version, starts_at,
			grant_expires_at, policy_gen, linger_us)
			VALUES ($1, $2, '', $3, $4, $5, $6, $7, $8, $9, $10, '{}', $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
			RETURNING `+licenseCols,
			g.ID, g.TenantID, p.Name, p.Seats, p.Overdraft, p.LeaseTTL.Microseconds(), p.RevivalWindow.Microseconds(),
			string(p.LeasingStrategy), p.Active, optTime(p.ExpiresAt), utcUS(g.CreatedAt), utcUS(g.UpdatedAt),
			p.MaxBorrowDuration.Microseconds(), p.MaxBorrowedSeats, p.AllowEarlyReturn, g.LicenseID, g.Feature,
			g.Version, optTime(utcUS(g.StartsAt)), optTime(utcUS(g.ExpiresAt)), parent.PolicyGen,
			parent.Policy.LingerFor(g.Feature).Microseconds()))
		if err != nil {
			return err
		}
		if lic, err = bumpLicense(ctx, tx, g.LicenseID); err != nil {
			return err
		}
		created := pool.Grant()
		_, err = insertEvent(ctx, tx, server.EventOfLicenseChange(server.ChangeGrantCreated, &lic.License, &created, pool.UpdatedAt))
		return err
	})
	if server.ErrorReason(err) == server.ReasonLicenseNotFound {
		return LicenseRow{}, LicenseRow{}, err
	}
	if pe := pgError(err); pe != nil && pe.Code == pgUniqueViolation {
		return LicenseRow{}, LicenseRow{}, server.AlreadyExists("grant.id", "feature grant")
	}
	if err != nil {
		return LicenseRow{}, LicenseRow{}, pg.fail("create grant", err)
	}
	return pool, lic, nil
}

// UpdateGrant changes a grant under its license's and its own row locks
// (FOR NO KEY UPDATE: acquisitions go on) and bumps both versions.
// update's error is returned as is, and so is Policy.CheckChange's if the
// change breaks the license's policy (nothing written); ErrLicenseNotFound
// / ErrGrantNotFound.
func (pg *Postgres) UpdateGrant(ctx context.Context, tenantID, licenseID, grantID string, update func(*server.Grant) error) (pool, lic LicenseRow, _ error) {
	var updateErr error // the caller's or Policy.CheckChange's, returned as is
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		parent, err := pg.liveLicense(ctx, tx, tenantID, licenseID, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		cur, err := lockGrant(ctx, tx, licenseID, grantID, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		g := cur.Grant()
		if updateErr = update(&g); updateErr != nil {
			return updateErr
		}
		was := cur.Grant()
		g.ID, g.LicenseID, g.TenantID, g.Feature, g.CreatedAt = was.ID, was.LicenseID, was.TenantID, was.Feature, was.CreatedAt
		// Its license's policy must stay valid (seats under the feature's
		// reservations).
		refused, err := pg.policyRefusal(ctx, tx, parent, func(n *server.License) { replaceGrant(n, grantID, &g) })
		if err != nil {
			return err
		}
		if refused != nil {
			updateErr = refused
			return refused
		}
		p := g.Pool(&parent.License)
		pool, err = scanLicense(tx.QueryRow(ctx, `UPDATE licenses SET seats = $2, overdraft = $3, expires_at = $4,
			max_borrow_us = $5, max_borrowed_seats = $6, grant_version = $7, starts_at = $8, grant_expires_at = $9,
			updated_at = date_trunc('microseconds', clock_timestamp()), version = version + 1
			WHERE id = $1 RETURNING `+licenseCols,
			grantID, p.Seats, p.Overdraft, optTime(p.ExpiresAt), p.MaxBorrowDuration.Microseconds(), p.MaxBorrowedSeats,
			g.Version, optTime(utcUS(g.StartsAt)), optTime(utcUS(g.ExpiresAt))))
		if err != nil {
			return err
		}
		if lic, err = bumpLicense(ctx, tx, licenseID); err != nil {
			return err
		}
		updated := pool.Grant()
		_, err = insertEvent(ctx, tx, server.EventOfLicenseChange(server.ChangeGrantUpdated, &lic.License, &updated, pool.UpdatedAt))
		return err
	})
	if updateErr != nil {
		return LicenseRow{}, LicenseRow{}, updateErr
	}
	switch server.ErrorReason(err) {
	case server.ReasonLicenseNotFound, server.ReasonGrantNotFound:
		return LicenseRow{}, LicenseRow{}, err
	}
	if err != nil {
		return LicenseRow{}, LicenseRow{}, pg.fail("update grant", err)
	}
	return pool, lic, nil
}

// TenantPool reads an undeleted pool of the tenant: a license, or a grant
// of an undeleted license. ErrLicenseNotFound if there is none.
func (pg *Postgres) TenantPool(ctx context.Context, tenantID, poolID string) (LicenseRow, error) {
	if !server.IsGrantID(poolID) {
		return pg.TenantLicense(ctx, tenantID, poolID)
	}
	r, err := scanLicense(pg.pool.QueryRow(ctx, `SELECT `+licenseCols+` FROM licenses
		WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL AND parent_id IS NOT NULL`, poolID, tenantID))
	if err == pgx.ErrNoRows {
		return LicenseRow{}, server.ErrLicenseNotFound
	}
	if err != nil {
		return LicenseRow{}, pg.fail("get grant", err)
	}
	return r, nil
}

// PoolsOf returns the ids of a license's pools: the license's own, then
// its grants' (deleted ones too when withDeleted: their records stay).
func (pg *Postgres) PoolsOf(ctx context.Context, licenseID string, withDeleted bool) ([]string, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT id FROM licenses WHERE parent_id = $1 AND ($2 OR deleted_at IS NULL) ORDER BY id`,
		licenseID, withDeleted)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, pg.fail("list grants", err)
	}
	return append([]string{licenseID}, ids...), nil
}

// poolsOf is the SQL of the ids of the pools of id (an SQL expression): a
// license and its grants (deleted ones too: their records stay), or a
// grant alone. A list that reads sessions or events by license_id with it
// uses their license_id indexes.
func poolsOf(id string) string {
	return `SELECT p.id FROM licenses p WHERE p.id = ` + id + ` OR p.parent_id = ` + id
}

// poolsOfArg2 is poolsOf("$2"), as a constant.
const poolsOfArg2 = `SELECT p.id FROM licenses p WHERE p.id = $2 OR p.parent_id = $2`

// utcUS is a time as the record keeps it.
func utcUS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// aliased prefixes every column of a comma-separated list with alias.
func aliased(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
