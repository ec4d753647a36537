package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// The site key and the license file in force: one row each
// (migrations/00012_license_file.sql).

// EnsureSiteKey inserts k unless a site key is stored, then reads the
// one stored: instances that ensure one at once get the same key.
func (pg *Postgres) EnsureSiteKey(ctx context.Context, k server.SigningKey) (server.SigningKey, error) {
	if k.ID != "" {
		_, err := pg.pool.Exec(ctx, `INSERT INTO site_key (singleton, kid, public_key, private_key, created_at)
			VALUES (true, $1, $2, $3, $4) ON CONFLICT (singleton) DO NOTHING`,
			k.ID, k.PublicKey, k.PrivateKey, k.CreatedAt.UTC().Truncate(time.Microsecond))
		if err != nil {
			return server.SigningKey{}, pg.fail("ensure site key", err)
		}
	}
	var out server.SigningKey
	err := pg.pool.QueryRow(ctx, `SELECT kid, public_key, private_key, created_at FROM site_key`).
		Scan(&out.ID, &out.PublicKey, &out.PrivateKey, &out.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return server.SigningKey{}, nil
	}
	if err != nil {
		return server.SigningKey{}, pg.fail("read site key", err)
	}
	out.CreatedAt = out.CreatedAt.UTC()
	return out, nil
}

func (pg *Postgres) FileInForce(ctx context.Context) (server.LicenseFileRecord, error) {
	f, err := fileInForce(ctx, pg.pool, "")
	if err != nil {
		return server.LicenseFileRecord{}, pg.fail("read license file in force", err)
	}
	return f, nil
}

// SetFileInForce: one transaction that locks the row, judges f against
// it (server.NextFileInForce) and writes f, set_at the database's clock.
func (pg *Postgres) SetFileInForce(ctx context.Context, f server.LicenseFileRecord) (server.LicenseFileRecord, error) {
	var out server.LicenseFileRecord
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		cur, err := fileInForce(ctx, tx, " FOR UPDATE")
		if err != nil {
			return err
		}
		changed, err := server.NextFileInForce(cur, f)
		if err != nil || !changed {
			out = cur
			return err
		}
		var setAt time.Time
		if err := tx.QueryRow(ctx, `UPDATE license_file SET serial = $1, hash = $2, set_at = now() RETURNING set_at`,
			f.Serial, f.Hash).Scan(&setAt); err != nil {
			return err
		}
		out = server.LicenseFileRecord{Serial: f.Serial, Hash: f.Hash, SetAt: setAt.UTC()}
		return nil
	})
	if err != nil {
		var e *server.Error
		if errors.As(err, &e) {
			return server.LicenseFileRecord{}, err
		}
		return server.LicenseFileRecord{}, pg.fail("set license file in force", err)
	}
	return out, nil
}

func fileInForce(ctx context.Context, q querier, lock string) (server.LicenseFileRecord, error) {
	var (
		f     server.LicenseFileRecord
		setAt *time.Time
	)
	if err := q.QueryRow(ctx, `SELECT serial, hash, set_at FROM license_file`+lock).Scan(&f.Serial, &f.Hash, &setAt); err != nil {
		return server.LicenseFileRecord{}, err
	}
	f.SetAt = fromOpt(setAt)
	return f, nil
}
