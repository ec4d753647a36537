package record

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Ends noted for the live state. The statements that record a release or
// a revoke (EndLease, the group release) note the lease in live_ends in
// the same transaction; the cleanup leader runs end.lua for the noted
// leases and then clears their notes (migrations/00007_live_ends.sql). A
// process that died between the record and end.lua, or an end.lua that
// failed, leaves its note behind: removing the lease from Redis then
// needs no heartbeat, no retry by its client and no memory of the process.

// PendingEnd is a lease whose end is recorded and that the live state may
// still hold.
type PendingEnd struct {
	LeaseID, LicenseID string
}

// PendingEnds returns up to limit noted ends after the lease id after ("":
// from the start), in lease id order.
func (pg *Postgres) PendingEnds(ctx context.Context, after string, limit int) ([]PendingEnd, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT lease_id, license_id FROM live_ends
		WHERE lease_id > $1 ORDER BY lease_id LIMIT $2`, after, limit)
	return pgx.CollectRows(rows, pgx.RowToStructByPos[PendingEnd])
}

// ClearEnds removes the notes of leases whose live state is gone.
func (pg *Postgres) ClearEnds(ctx context.Context, leaseIDs []string) error {
	if len(leaseIDs) == 0 {
		return nil
	}
	_, err := pg.pool.Exec(ctx, `DELETE FROM live_ends WHERE lease_id = ANY($1)`, leaseIDs)
	return err
}
