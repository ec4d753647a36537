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
	// Delivered and failed deliveries made and last tried before $1
	// (migration 00017); a pending one is never removed. The last sequence
	// of each line they leave is kept (webhook_delivery_seqs), in the same
	// statement, so that FanOut numbers on from it.
	server.RecordWebhookDeliveries: `WITH doomed AS (
			SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND created_at < $1
				AND (last_at IS NULL OR last_at < $1)
			ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
		), gone AS (
			DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM doomed)
			RETURNING endpoint_id, order_key, seq
		), floors AS (
			INSERT INTO webhook_delivery_seqs (endpoint_id, order_key, last_seq)
			SELECT endpoint_id, order_key, max(seq) FROM gone GROUP BY endpoint_id, order_key
			ON CONFLICT (endpoint_id, order_key) DO UPDATE
				SET last_seq = GREATEST(webhook_delivery_seqs.last_seq, EXCLUDED.last_seq)
		)
		SELECT count(*) FROM gone`,
	// Events fanned out before $1 that no delivery references any more
	// (a pending one keeps its event): the deliveries go first. In a CTE,
	// so that the planner deletes by the primary key what the index on at
	// (and one probe of the deliveries' index each) found, rather than
	// hashing the whole table (EXPLAIN ANALYZE, 100,000 events).
	server.RecordWebhookEvents: `WITH doomed AS (
			SELECT seq FROM webhook_events e WHERE fanned_out AND at < $1
				AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = e.seq)
			ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED
		)
		DELETE FROM webhook_events WHERE seq IN (SELECT seq FROM doomed)`,
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
	if kind == server.RecordWebhookDeliveries { // a SELECT of what its CTE removed
		var n int
		if err := pg.pool.QueryRow(ctx, q, before.UTC(), limit).Scan(&n); err != nil {
			return 0, pg.fail("prune "+string(kind), err)
		}
		return n, nil
	}
	tag, err := pg.pool.Exec(ctx, q, before.UTC(), limit)
	if err != nil {
		return 0, pg.fail("prune "+string(kind), err)
	}
	return int(tag.RowsAffected()), nil
}
