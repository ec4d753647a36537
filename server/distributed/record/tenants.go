package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Tenants and API keys live in PostgreSQL only.

func (pg *Postgres) CreateTenant(ctx context.Context, t server.Tenant) (server.Tenant, error) {
	t.CreatedAt = t.CreatedAt.UTC().Truncate(time.Microsecond)
	_, err := pg.pool.Exec(ctx, `INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3)`, t.ID, t.Name, t.CreatedAt)
	if isCode(err, pgUniqueViolation) {
		return server.Tenant{}, server.AlreadyExists("tenant.id", "tenant")
	}
	if err != nil {
		return server.Tenant{}, pg.fail("create tenant", err)
	}
	return t, nil
}

func (pg *Postgres) GetTenant(ctx context.Context, id string) (server.Tenant, error) {
	var t server.Tenant
	err := pg.pool.QueryRow(ctx, `SELECT id, name, created_at FROM tenants WHERE id = $1`, id).Scan(&t.ID, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Tenant{}, server.ErrTenantNotFound
	}
	if err != nil {
		return server.Tenant{}, pg.fail("get tenant", err)
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, nil
}

func (pg *Postgres) ListTenants(ctx context.Context, p server.Page) ([]server.Tenant, string, error) {
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, "", err
	}
	var from *string
	if after != nil {
		from = &after.ID
	}
	size := p.PageSize()
	rows, _ := pg.pool.Query(ctx, `SELECT id, name, created_at FROM tenants
		WHERE $1::text IS NULL OR id > $1 ORDER BY id LIMIT $2`, from, size+1)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Tenant, error) {
		var t server.Tenant
		err := r.Scan(&t.ID, &t.Name, &t.CreatedAt)
		t.CreatedAt = t.CreatedAt.UTC()
		return t, err
	})
	if err != nil {
		return nil, "", pg.fail("list tenants", err)
	}
	page, next := pageOf(out, size, func(t server.Tenant) cursor { return cursor{ID: t.ID} })
	return page, next, nil
}

const apiKeyCols = `id, tenant_id, name, secret_hash, created_at, revoked_at, role`

func scanAPIKey(row pgx.Row) (server.APIKey, error) {
	var (
		k       server.APIKey
		revoked *time.Time
	)
	if err := row.Scan(&k.ID, &k.TenantID, &k.Name, &k.SecretHash, &k.CreatedAt, &revoked, &k.Role); err != nil {
		return server.APIKey{}, err
	}
	k.CreatedAt = k.CreatedAt.UTC()
	k.RevokedAt = fromOpt(revoked)
	return k, nil
}

func (pg *Postgres) CreateAPIKey(ctx context.Context, k server.APIKey) (server.APIKey, error) {
	k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Microsecond)
	if !k.RevokedAt.IsZero() {
		k.RevokedAt = k.RevokedAt.UTC().Truncate(time.Microsecond)
	}
	_, err := pg.pool.Exec(ctx, `INSERT INTO api_keys (`+apiKeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.TenantID, k.Name, k.SecretHash, k.CreatedAt, optTime(k.RevokedAt), k.KeyRole())
	switch {
	case isCode(err, pgForeignKeyViolation):
		return server.APIKey{}, server.ErrTenantNotFound
	case isCode(err, pgUniqueViolation):
		return server.APIKey{}, server.AlreadyExists("api_key.id", "api key")
	case err != nil:
		return server.APIKey{}, pg.fail("create api key", err)
	}
	return k, nil
}

func (pg *Postgres) ListAPIKeys(ctx context.Context, tenantID string, p server.Page) ([]server.APIKey, string, error) {
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var rows pgx.Rows
	if after == nil {
		rows, _ = pg.pool.Query(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE tenant_id = $1
			ORDER BY created_at, id LIMIT $2`, tenantID, size+1)
	} else {
		rows, _ = pg.pool.Query(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE tenant_id = $1
			AND (created_at, id) > ($2, $3) ORDER BY created_at, id LIMIT $4`, tenantID, after.time(), after.ID, size+1)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.APIKey, error) { return scanAPIKey(r) })
	if err != nil {
		return nil, "", pg.fail("list api keys", err)
	}
	page, next := pageOf(out, size, func(k server.APIKey) cursor { return cursor{At: timeUS(k.CreatedAt), ID: k.ID} })
	return page, next, nil
}

func (pg *Postgres) RevokeAPIKey(ctx context.Context, id string) (server.APIKey, error) {
	// The first revocation writes its event (EventOfAPIKey's data) in the
	// same statement; a repeated one changes nothing.
	k, err := scanAPIKey(pg.pool.QueryRow(ctx, `WITH cur AS (
			SELECT id, revoked_at FROM api_keys WHERE id = $1 FOR UPDATE
		), revoked AS (
			UPDATE api_keys k SET revoked_at = COALESCE(k.revoked_at, date_trunc('microseconds', clock_timestamp()))
			FROM cur WHERE k.id = cur.id RETURNING k.*, cur.revoked_at IS NULL AS first
		), event AS (
			INSERT INTO webhook_events (id, type, at, tenant_id, license_id, subject_id, data)
			SELECT `+sqlEventID+`, '`+string(server.EventAPIKeyRevoked)+`', revoked_at, tenant_id, '', id,
				jsonb_build_object('api_key', jsonb_strip_nulls(jsonb_build_object('id', id, 'name', NULLIF(name, ''),
					'revoked_at', revoked_at)))
			FROM revoked WHERE first
		)
		SELECT `+apiKeyCols+` FROM revoked`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.APIKey{}, server.ErrAPIKeyNotFound
	}
	if err != nil {
		return server.APIKey{}, pg.fail("revoke api key", err)
	}
	return k, nil
}

func (pg *Postgres) APIKeyBySecretHash(ctx context.Context, hash string) (server.APIKey, error) {
	k, err := scanAPIKey(pg.pool.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE secret_hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.APIKey{}, server.ErrAPIKeyNotFound
	}
	if err != nil {
		return server.APIKey{}, pg.fail("api key by secret", err)
	}
	return k, nil
}
