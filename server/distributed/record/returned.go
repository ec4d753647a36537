package record

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// ReturnedCertificates lists the tenant's borrowed leases returned early
// (returned_certificates, written by the release: releaseManySQL), by
// expires_at.
func (pg *Postgres) ReturnedCertificates(ctx context.Context, tenantID string) ([]server.ReturnedCertificate, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT lease_id, tenant_id, license_id, expires_at, returned_at
		FROM returned_certificates WHERE tenant_id = $1 ORDER BY expires_at, lease_id`, tenantID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.ReturnedCertificate, error) {
		var rc server.ReturnedCertificate
		err := r.Scan(&rc.LeaseID, &rc.TenantID, &rc.LicenseID, &rc.ExpiresAt, &rc.ReturnedAt)
		rc.ExpiresAt, rc.ReturnedAt = rc.ExpiresAt.UTC(), rc.ReturnedAt.UTC()
		return rc, err
	})
	if err != nil {
		return nil, pg.fail("returned certificates", err)
	}
	return out, nil
}
