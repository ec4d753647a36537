package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Signing keys live in PostgreSQL only. The partial unique index
// signing_keys_current_idx allows one key per tenant that signs (retired_at
// NULL); migrations/00004_signing_keys.sql.

const signingKeyCols = `kid, tenant_id, public_key, private_key, created_at, retired_at`

func scanSigningKey(row pgx.Row) (server.SigningKey, error) {
	var (
		k       server.SigningKey
		retired *time.Time
	)
	if err := row.Scan(&k.ID, &k.TenantID, &k.PublicKey, &k.PrivateKey, &k.CreatedAt, &retired); err != nil {
		return server.SigningKey{}, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.RetiredAt = fromOpt(retired)
	return k, nil
}

// AddSigningKey: without replace, one INSERT that does nothing when the
// tenant has a key that signs (the partial unique index decides between
// two instances at once), then that key is read. With replace, the
// tenant's row is locked so that rotations of one tenant take turns, the
// current key is retired and the new one inserted in one transaction.
func (pg *Postgres) AddSigningKey(ctx context.Context, k server.SigningKey, replace bool) (server.SigningKey, error) {
	k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Microsecond)
	k.RetiredAt = time.Time{}
	insert := `INSERT INTO signing_keys (` + signingKeyCols + `) VALUES ($1, $2, $3, $4, $5, NULL)`
	args := []any{k.ID, k.TenantID, k.PublicKey, k.PrivateKey, k.CreatedAt}
	if !replace {
		tag, err := pg.pool.Exec(ctx, insert+` ON CONFLICT (tenant_id) WHERE retired_at IS NULL DO NOTHING`, args...)
		if err != nil {
			return server.SigningKey{}, pg.signingKeyError(err)
		}
		if tag.RowsAffected() == 1 {
			return k, nil
		}
		cur, err := scanSigningKey(pg.pool.QueryRow(ctx, `SELECT `+signingKeyCols+` FROM signing_keys
			WHERE tenant_id = $1 AND retired_at IS NULL`, k.TenantID))
		if err != nil {
			// Retired between the two statements: the caller asks again.
			return server.SigningKey{}, pg.fail("read current signing key", err)
		}
		return cur, nil
	}
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`, k.TenantID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return server.ErrTenantNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE signing_keys SET retired_at = $2
			WHERE tenant_id = $1 AND retired_at IS NULL`, k.TenantID, k.CreatedAt); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, insert, args...)
		return err
	})
	if err != nil {
		return server.SigningKey{}, pg.signingKeyError(err)
	}
	return k, nil
}

func (pg *Postgres) signingKeyError(err error) error {
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
	return pg.fail("add signing key", err)
}

func (pg *Postgres) SigningKeys(ctx context.Context, tenantID string) ([]server.SigningKey, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT `+signingKeyCols+` FROM signing_keys WHERE tenant_id = $1
		ORDER BY created_at DESC, kid DESC`, tenantID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.SigningKey, error) { return scanSigningKey(r) })
	if err != nil {
		return nil, pg.fail("list signing keys", err)
	}
	if out == nil {
		out = []server.SigningKey{}
	}
	return out, nil
}
