package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Signing keys live in PostgreSQL only. The partial unique indexes
// signing_keys_current_idx and signing_keys_next_idx allow one key per
// tenant that signs and one next key; migrations/00004_signing_keys.sql.
// Both writes lock the tenant's row first, so that one tenant's
// ensures and rotations take turns (and see each other's keys).

const signingKeyCols = `kid, tenant_id, public_key, private_key, created_at, is_next, retired_at`

func scanSigningKey(row pgx.Row) (server.SigningKey, error) {
	var (
		k       server.SigningKey
		retired *time.Time
	)
	if err := row.Scan(&k.ID, &k.TenantID, &k.PublicKey, &k.PrivateKey, &k.CreatedAt, &k.Next, &retired); err != nil {
		return server.SigningKey{}, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.RetiredAt = fromOpt(retired)
	return k, nil
}

// lockTenantForKeys locks the tenant's row (FOR NO KEY UPDATE: rows that
// reference it are not held up) until tx ends.
func lockTenantForKeys(ctx context.Context, tx pgx.Tx, tenantID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, tenantID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return server.ErrTenantNotFound
	}
	return err
}

func insertSigningKey(ctx context.Context, tx pgx.Tx, k server.SigningKey, next bool) error {
	_, err := tx.Exec(ctx, `INSERT INTO signing_keys (`+signingKeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, NULL)`,
		k.ID, k.TenantID, k.PublicKey, k.PrivateKey, k.CreatedAt.UTC().Truncate(time.Microsecond), next)
	return err
}

// EnsureSigningKeys: one transaction that locks the tenant's row, looks
// which of its two keys it lacks, inserts those and reads the keys back.
func (pg *Postgres) EnsureSigningKeys(ctx context.Context, tenantID string, signing, next server.SigningKey) ([]server.SigningKey, error) {
	var out []server.SigningKey
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		if err := lockTenantForKeys(ctx, tx, tenantID); err != nil {
			return err
		}
		var hasSigning, hasNext bool
		if err := tx.QueryRow(ctx, `SELECT
			EXISTS (SELECT 1 FROM signing_keys WHERE tenant_id = $1 AND retired_at IS NULL AND NOT is_next),
			EXISTS (SELECT 1 FROM signing_keys WHERE tenant_id = $1 AND is_next)`, tenantID).Scan(&hasSigning, &hasNext); err != nil {
			return err
		}
		for _, add := range []struct {
			k         server.SigningKey
			has, next bool
		}{{signing, hasSigning, false}, {next, hasNext, true}} {
			if add.k.ID == "" || add.has {
				continue
			}
			if add.k.TenantID != tenantID {
				return server.Invalid("signing_key.tenant_id", "not the tenant's key")
			}
			if err := insertSigningKey(ctx, tx, add.k, add.next); err != nil {
				return err
			}
		}
		var err error
		out, err = signingKeysOf(ctx, tx, tenantID)
		return err
	})
	if err != nil {
		return nil, pg.signingKeyError("ensure signing keys", err)
	}
	return out, nil
}

// RotateSigningKey: one transaction that locks the tenant's row, retires
// the key that signs, makes the next key sign (in that order: one key
// signs at a time, for the unique index) and inserts the new next key.
func (pg *Postgres) RotateSigningKey(ctx context.Context, next server.SigningKey) (server.SigningKey, error) {
	at := next.CreatedAt.UTC().Truncate(time.Microsecond)
	var out server.SigningKey
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		if err := lockTenantForKeys(ctx, tx, next.TenantID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE signing_keys SET retired_at = $2
			WHERE tenant_id = $1 AND retired_at IS NULL AND NOT is_next`, next.TenantID, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return server.ErrSigningKeysMissing
		}
		out, err = scanSigningKey(tx.QueryRow(ctx, `UPDATE signing_keys SET is_next = false
			WHERE tenant_id = $1 AND is_next RETURNING `+signingKeyCols, next.TenantID))
		if errors.Is(err, pgx.ErrNoRows) {
			return server.ErrSigningKeysMissing
		}
		if err != nil {
			return err
		}
		return insertSigningKey(ctx, tx, next, true)
	})
	if err != nil {
		return server.SigningKey{}, pg.signingKeyError("rotate signing key", err)
	}
	return out, nil
}

func (pg *Postgres) signingKeyError(op string, err error) error {
	var e *server.Error
	if errors.As(err, &e) {
		return err
	}
	if pe := pgError(err); pe != nil {
		switch {
		case pe.Code == pgForeignKeyViolation:
			return server.ErrTenantNotFound
		case pe.Code == pgUniqueViolation && pe.ConstraintName == "signing_keys_pkey":
			return server.AlreadyExists("signing_key.kid", "signing key")
		}
	}
	return pg.fail(op, err)
}

func (pg *Postgres) SigningKeys(ctx context.Context, tenantID string) ([]server.SigningKey, error) {
	out, err := signingKeysOf(ctx, pg.pool, tenantID)
	if err != nil {
		return nil, pg.fail("list signing keys", err)
	}
	return out, nil
}

// signingKeysOf reads the tenant's keys in server.SortSigningKeys's order.
func signingKeysOf(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, tenantID string) ([]server.SigningKey, error) {
	rows, _ := q.Query(ctx, `SELECT `+signingKeyCols+` FROM signing_keys WHERE tenant_id = $1
		ORDER BY is_next DESC, retired_at IS NULL DESC, created_at DESC, kid DESC`, tenantID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.SigningKey, error) { return scanSigningKey(r) })
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []server.SigningKey{}
	}
	return out, nil
}
