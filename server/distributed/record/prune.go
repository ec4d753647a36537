package record

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// pruneSQL removes at most $2 records older than $1, oldest first, through
// the index on their time (migration 00008). An ended lease goes with its
// usage event, which references it: both in one statement.
var pruneSQL = map[server.RecordKind]string{
	server.RecordLeases: `WITH doomed AS (
			SELECT id FROM sessions WHERE state <> 'active' AND ended_at < $1
			ORDER BY ended_at LIMIT $2 FOR UPDATE SKIP LOCKED
		), usage AS (
			DELETE FROM usage_events WHERE lease_id IN (SELECT id FROM doomed)
		)
		DELETE FROM sessions WHERE id IN (SELECT id FROM doomed)`,
	server.RecordCleanupEvents: `DELETE FROM cleanup_events WHERE id IN (
			SELECT id FROM cleanup_events WHERE cleaned_at < $1
			ORDER BY cleaned_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
	server.RecordSeatEvents: `DELETE FROM seat_events WHERE id IN (
			SELECT id FROM seat_events WHERE at < $1
			ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
	server.RecordAudit: `DELETE FROM audit_log WHERE id IN (
			SELECT id FROM audit_log WHERE at < $1
			ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
	// By the certificate's exp (migration 00009).
	server.RecordReturnedCertificates: `DELETE FROM returned_certificates WHERE lease_id IN (
			SELECT lease_id FROM returned_certificates WHERE expires_at < $1
			ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
}

// PruneRecords removes at most limit records of kind older than before
// (server.RetentionStore). SKIP LOCKED: two leaders at once share the work
// instead of waiting on each other.
func (pg *Postgres) PruneRecords(ctx context.Context, kind server.RecordKind, before time.Time, limit int) (int, error) {
	q, ok := pruneSQL[kind]
	if !ok {
		return 0, server.ErrUnknownRecordKind(kind)
	}
	if limit <= 0 {
		return 0, nil
	}
	tag, err := pg.pool.Exec(ctx, q, before.UTC(), limit)
	if err != nil {
		return 0, pg.fail("prune "+string(kind), err)
	}
	return int(tag.RowsAffected()), nil
}
