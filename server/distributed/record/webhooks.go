package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatd/seatd/server"
)

// The outbox and the webhooks' deliveries (server.WebhookStore, migrations/
// 00015_webhooks.sql). The statements that change the record insert their
// events themselves (sqlLeaseEvent, insertEvent), in their transaction.

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// sqlEventID generates an event id in SQL, in the shape of
// server.NewID("evt_").
const sqlEventID = `'evt_' || encode(substr(uuid_send(gen_random_uuid()), 1, 12), 'hex')`

// sqlLeaseEvent is an INSERT of the outbox event of type t for each row of
// the CTE from (rows of sessions, sessionCols) that where selects, at the
// column at. Its data is server.EventOfLease's, with the same keys (the
// renderer re-encodes it: server/webhooks).
func sqlLeaseEvent(t server.EventType, from, where, at string) string {
	return `INSERT INTO webhook_events (id, type, at, tenant_id, license_id, subject_id, data)
		SELECT ` + sqlEventID + `, '` + string(t) + `', ` + at + `, tenant_id, split_part(license_id, '.', 1), id,
			jsonb_build_object('lease', jsonb_strip_nulls(jsonb_build_object(
				'id', id, 'license_id', split_part(license_id, '.', 1),
				'grant_id', CASE WHEN strpos(license_id, '.') > 0 THEN license_id END,
				'feature', NULLIF(feature, ''), 'user', NULLIF("user", ''), 'hostname', NULLIF(hostname, ''),
				'state', state, 'borrowed', NULLIF(borrowed, false), 'acquired_at', acquired_at,
				'last_heartbeat_at', last_heartbeat_at, 'expires_at', expires_at, 'ended_at', ended_at)))
		FROM ` + from + ` WHERE ` + where
}

// insertEvent writes e into the outbox in tx; with a DedupeKey already
// written, nothing (written false).
func insertEvent(ctx context.Context, q execer, e server.Event) (written bool, err error) {
	var dedupe *string
	if e.DedupeKey != "" {
		dedupe = &e.DedupeKey
	}
	tag, err := q.Exec(ctx, `INSERT INTO webhook_events (id, type, at, tenant_id, license_id, subject_id, dedupe_key, data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) ON CONFLICT (dedupe_key) DO NOTHING`,
		e.ID, string(e.Type), e.At, e.TenantID, e.LicenseID, e.SubjectID, dedupe, string(e.Data))
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

func (pg *Postgres) AppendEvent(ctx context.Context, e server.Event) (bool, error) {
	written, err := insertEvent(ctx, pg.pool, e)
	if err != nil {
		return false, pg.fail("append event", err)
	}
	return written, nil
}

const eventCols = `e.seq, e.id, e.type, e.at, e.tenant_id, e.license_id, e.subject_id, COALESCE(e.dedupe_key, ''), e.data`

func scanEvent(row pgx.Row, more ...any) (server.Event, error) {
	var (
		e    server.Event
		t    string
		data []byte
	)
	err := row.Scan(append([]any{&e.Seq, &e.ID, &t, &e.At, &e.TenantID, &e.LicenseID, &e.SubjectID, &e.DedupeKey, &data}, more...)...)
	e.Type, e.Data, e.At = server.EventType(t), data, e.At.UTC()
	return e, err
}

func (pg *Postgres) EventsAfter(ctx context.Context, after int64, limit int) ([]server.Event, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT `+eventCols+` FROM webhook_events e WHERE e.seq > $1 ORDER BY e.seq LIMIT $2`, after, limit)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, pg.fail("list events", err)
	}
	return out, nil
}

const endpointCols = `id, tenant_id, url, types, secrets, previous_until, description, disabled, disabled_reason,
	failing_since, created_at, updated_at`

func scanEndpoint(row pgx.Row) (server.Endpoint, error) {
	var (
		ep             server.Endpoint
		types          []string
		prev, failing  *time.Time
		created, updat time.Time
	)
	err := row.Scan(&ep.ID, &ep.TenantID, &ep.URL, &types, &ep.Secrets, &prev, &ep.Description, &ep.Disabled,
		&ep.DisabledReason, &failing, &created, &updat)
	if err != nil {
		return server.Endpoint{}, err
	}
	for _, t := range types {
		ep.Types = append(ep.Types, server.EventType(t))
	}
	ep.PreviousUntil, ep.FailingSince = fromOpt(prev), fromOpt(failing)
	ep.CreatedAt, ep.UpdatedAt = created.UTC(), updat.UTC()
	return ep, nil
}

func typeStrings(ts []server.EventType) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func (pg *Postgres) CreateEndpoint(ctx context.Context, ep server.Endpoint) (server.Endpoint, error) {
	out, err := scanEndpoint(pg.pool.QueryRow(ctx, `INSERT INTO webhook_endpoints (id, tenant_id, url, types, secrets,
		previous_until, description, disabled, disabled_reason, failing_since, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING `+endpointCols,
		ep.ID, ep.TenantID, ep.URL, typeStrings(ep.Types), ep.Secrets, optTime(ep.PreviousUntil), ep.Description,
		ep.Disabled, ep.DisabledReason, optTime(ep.FailingSince), ep.CreatedAt, ep.UpdatedAt))
	if pe := pgError(err); pe != nil {
		switch pe.Code {
		case pgForeignKeyViolation:
			return server.Endpoint{}, server.ErrTenantNotFound
		case pgUniqueViolation:
			return server.Endpoint{}, server.AlreadyExists("endpoint.id", "webhook endpoint")
		}
	}
	if err != nil {
		return server.Endpoint{}, pg.fail("create endpoint", err)
	}
	return out, nil
}

func (pg *Postgres) GetEndpoint(ctx context.Context, tenantID, id string) (server.Endpoint, error) {
	ep, err := scanEndpoint(pg.pool.QueryRow(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints
		WHERE id = $1 AND tenant_id = $2`, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Endpoint{}, server.ErrEndpointNotFound
	}
	if err != nil {
		return server.Endpoint{}, pg.fail("get endpoint", err)
	}
	return ep, nil
}

func (pg *Postgres) ListEndpoints(ctx context.Context, tenantID string) ([]server.Endpoint, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints
		WHERE $1 = '' OR tenant_id = $1 ORDER BY created_at, id`, tenantID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, pg.fail("list endpoints", err)
	}
	return out, nil
}

func (pg *Postgres) UpdateEndpoint(ctx context.Context, tenantID, id string, update func(*server.Endpoint) error) (server.Endpoint, error) {
	var (
		out       server.Endpoint
		updateErr error
	)
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		cur, err := scanEndpoint(tx.QueryRow(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints
			WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, id, tenantID))
		if errors.Is(err, pgx.ErrNoRows) {
			updateErr = server.ErrEndpointNotFound
			return updateErr
		}
		if err != nil {
			return err
		}
		next := cur
		next.Types, next.Secrets = append([]server.EventType(nil), cur.Types...), append([]string(nil), cur.Secrets...)
		if updateErr = update(&next); updateErr != nil {
			return updateErr
		}
		if out, err = scanEndpoint(tx.QueryRow(ctx, `UPDATE webhook_endpoints SET url = $2, types = $3, secrets = $4,
			previous_until = $5, description = $6, disabled = $7, disabled_reason = $8, failing_since = $9,
			updated_at = date_trunc('microseconds', clock_timestamp())
			WHERE id = $1 RETURNING `+endpointCols, id, next.URL, typeStrings(next.Types), next.Secrets,
			optTime(next.PreviousUntil), next.Description, next.Disabled, next.DisabledReason, optTime(next.FailingSince))); err != nil {
			return err
		}
		if !cur.Disabled && out.Disabled && out.DisabledReason != "" {
			// Disabled for failing: say so with an event, in the same transaction.
			e := server.NewEvent(server.EventEndpointDisabled, out.UpdatedAt, out.TenantID, "", out.ID, "",
				server.EventData{Endpoint: &server.EventEndpoint{ID: out.ID, URL: out.URL, Reason: out.DisabledReason}})
			_, err = insertEvent(ctx, tx, e)
		}
		return err
	})
	if updateErr != nil {
		return server.Endpoint{}, updateErr
	}
	if err != nil {
		return server.Endpoint{}, pg.fail("update endpoint", err)
	}
	return out, nil
}

func (pg *Postgres) DeleteEndpoint(ctx context.Context, tenantID, id string) error {
	tag, err := pg.pool.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2`, id, tenantID)
	if err != nil {
		return pg.fail("delete endpoint", err)
	}
	if tag.RowsAffected() == 0 {
		return server.ErrEndpointNotFound
	}
	return nil
}

// fanOutLock is the transaction-level advisory lock that makes fan-outs
// take turns (two leaders at once: the second waits, then finds the
// events fanned out). Two-integer form, namespaced as the leader's lock.
const fanOutLock = `SELECT pg_advisory_xact_lock(1936024932, 29)`

func (pg *Postgres) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, pg.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fanOutLock); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `
			WITH ev AS (
				SELECT seq, tenant_id, type, CASE WHEN license_id <> '' THEN license_id ELSE subject_id END AS okey
				FROM webhook_events WHERE NOT fanned_out ORDER BY seq LIMIT $2 FOR UPDATE
			), pairs AS (
				SELECT ev.seq, ev.okey, ep.id AS endpoint_id, ep.tenant_id,
					row_number() OVER (PARTITION BY ep.id, ev.okey ORDER BY ev.seq) AS n
				FROM ev JOIN webhook_endpoints ep ON ep.tenant_id = ev.tenant_id AND NOT ep.disabled
					AND (cardinality(ep.types) = 0 OR ev.type = ANY(ep.types))
			), ins AS (
				INSERT INTO webhook_deliveries (id, endpoint_id, tenant_id, event_seq, order_key, seq, state, created_at, next_at)
				SELECT 'dlv_' || encode(substr(uuid_send(gen_random_uuid()), 1, 12), 'hex'), p.endpoint_id, p.tenant_id,
					p.seq, p.okey, p.n + GREATEST(COALESCE((SELECT max(d.seq) FROM webhook_deliveries d
						WHERE d.endpoint_id = p.endpoint_id AND d.order_key = p.okey), 0),
						COALESCE((SELECT f.last_seq FROM webhook_delivery_seqs f
						WHERE f.endpoint_id = p.endpoint_id AND f.order_key = p.okey), 0)), 'pending', $1, $1
				FROM pairs p
				ON CONFLICT (endpoint_id, event_seq) DO NOTHING
			), marked AS (
				UPDATE webhook_events e SET fanned_out = true FROM ev WHERE e.seq = ev.seq RETURNING e.seq
			)
			SELECT count(*) FROM marked`, now, limit).Scan(&n)
	})
	if err != nil {
		return 0, pg.fail("fan out events", err)
	}
	return n, nil
}

const deliveryCols = `d.id, d.endpoint_id, d.tenant_id, d.order_key, d.seq, d.state, d.attempts, d.created_at,
	d.next_at, d.last_status, d.last_error, d.last_latency_us, d.last_at`

func scanDelivery(row pgx.Row) (server.Delivery, error) {
	var (
		d             server.Delivery
		state         string
		next, last    *time.Time
		latencyUS     int64
		created       time.Time
		eventDelivery server.Event
	)
	eventDelivery, err := scanEvent(row, &d.ID, &d.EndpointID, &d.TenantID, &d.OrderKey, &d.Seq, &state, &d.Attempts,
		&created, &next, &d.LastStatus, &d.LastError, &latencyUS, &last)
	if err != nil {
		return server.Delivery{}, err
	}
	d.Event, d.State, d.CreatedAt = eventDelivery, server.DeliveryState(state), created.UTC()
	d.NextAt, d.LastAt, d.LastLatency = fromOpt(next), fromOpt(last), time.Duration(latencyUS)*time.Microsecond
	return d, nil
}

const deliveryFrom = ` FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq `

func (pg *Postgres) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]server.Delivery, error) {
	// The heads of the lines by a skip scan of the pending index: one
	// probe per (endpoint, order key), whatever waits behind each head.
	rows, _ := pg.pool.Query(ctx, `WITH RECURSIVE heads AS (
			(SELECT endpoint_id, order_key, id FROM webhook_deliveries WHERE state = 'pending'
				ORDER BY endpoint_id, order_key, seq LIMIT 1)
			UNION ALL
			SELECT n.endpoint_id, n.order_key, n.id FROM heads h, LATERAL (
				SELECT endpoint_id, order_key, id FROM webhook_deliveries d
				WHERE d.state = 'pending' AND (d.endpoint_id, d.order_key) > (h.endpoint_id, h.order_key)
				ORDER BY endpoint_id, order_key, seq LIMIT 1) n
		)
		SELECT `+eventCols+`, `+deliveryCols+deliveryFrom+`
		WHERE d.id IN (SELECT id FROM heads) AND d.next_at <= $1 ORDER BY d.next_at, d.id LIMIT $2`, now, limit)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, pg.fail("due deliveries", err)
	}
	return out, nil
}

func (pg *Postgres) RecordAttempt(ctx context.Context, id string, a server.Attempt) (server.Delivery, error) {
	var next *time.Time
	if a.Next == server.DeliveryPending {
		next = &a.NextAt
	}
	d, err := scanDelivery(pg.pool.QueryRow(ctx, `WITH u AS (
			UPDATE webhook_deliveries SET attempts = attempts + 1, last_at = $2, last_status = $3, last_error = $4,
				last_latency_us = $5, state = $6, next_at = $7
			WHERE id = $1 AND state = 'pending' RETURNING *
		)
		SELECT `+eventCols+`, `+deliveryCols+` FROM u d JOIN webhook_events e ON e.seq = d.event_seq`,
		id, a.At, a.Status, a.Error, a.Latency.Microseconds(), string(a.Next), next))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Delivery{}, server.ErrDeliveryNotFound
	}
	if err != nil {
		return server.Delivery{}, pg.fail("record attempt", err)
	}
	return d, nil
}

func (pg *Postgres) ListDeliveries(ctx context.Context, tenantID, endpointID string, p server.Page) ([]server.Delivery, string, error) {
	if _, err := pg.GetEndpoint(ctx, tenantID, endpointID); err != nil {
		return nil, "", err
	}
	after, err := decodeToken(p.Token)
	if err != nil {
		return nil, "", err
	}
	size := p.PageSize()
	var (
		atFrom *time.Time
		idFrom *string
	)
	if after != nil {
		t := after.time()
		atFrom, idFrom = &t, &after.ID
	}
	rows, _ := pg.pool.Query(ctx, `SELECT `+eventCols+`, `+deliveryCols+deliveryFrom+`
		WHERE d.endpoint_id = $1 AND ($2::timestamptz IS NULL OR (d.created_at, d.id) < ($2, $3::text))
		ORDER BY d.created_at DESC, d.id DESC LIMIT $4`, endpointID, atFrom, idFrom, size+1)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, "", pg.fail("list deliveries", err)
	}
	page, next := pageOf(out, size, func(d server.Delivery) cursor { return cursor{At: timeUS(d.CreatedAt), ID: d.ID} })
	return page, next, nil
}

func (pg *Postgres) GetDelivery(ctx context.Context, tenantID, id string) (server.Delivery, error) {
	d, err := scanDelivery(pg.pool.QueryRow(ctx, `SELECT `+eventCols+`, `+deliveryCols+deliveryFrom+`
		WHERE d.id = $1 AND d.tenant_id = $2`, id, tenantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Delivery{}, server.ErrDeliveryNotFound
	}
	if err != nil {
		return server.Delivery{}, pg.fail("get delivery", err)
	}
	return d, nil
}

func (pg *Postgres) ReplayDelivery(ctx context.Context, tenantID, id string, now time.Time) (server.Delivery, error) {
	d, err := scanDelivery(pg.pool.QueryRow(ctx, `WITH u AS (
			UPDATE webhook_deliveries SET state = 'pending', next_at = $3
			WHERE id = $1 AND tenant_id = $2 RETURNING *
		)
		SELECT `+eventCols+`, `+deliveryCols+` FROM u d JOIN webhook_events e ON e.seq = d.event_seq`, id, tenantID, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Delivery{}, server.ErrDeliveryNotFound
	}
	if err != nil {
		return server.Delivery{}, pg.fail("replay delivery", err)
	}
	return d, nil
}
