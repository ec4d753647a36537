package record

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// Sessions are the record of leases. Every statement that locks several
// of them locks in id order, so that concurrent writers never deadlock.

// Lease reads the record of a lease: ErrLeaseNotFound if there is none.
func (pg *Postgres) Lease(ctx context.Context, leaseID string) (Session, error) {
	r, err := pg.Session(ctx, leaseID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, server.ErrLeaseNotFound
	}
	if err != nil {
		return Session{}, pg.fail("read lease", err)
	}
	return r, nil
}

// Session reads the record of a lease: ErrNotFound if there is none.
func (pg *Postgres) Session(ctx context.Context, leaseID string) (Session, error) {
	return scanSession(pg.pool.QueryRow(ctx, `SELECT `+sessionCols("")+` FROM sessions WHERE id = $1`, leaseID))
}

// Renewal is a lease handed back to a retry with a new token.
type Renewal struct {
	LeaseID, TokenHash  string
	TokenSeq            int64
	Heartbeat, Deadline time.Time
	Epoch, Version      int64 // of the live state and settings that granted it
	// Reclaimed: the live state handed back a lingering lease to its
	// client (server/linger.go): audited lease.reclaim with the renewal.
	Reclaimed bool
}

// RecordRenewal records the token rotation of a lease handed back, so that
// the new token survives a loss of the live state. A lease handed back no
// longer lingers (server/linger.go); one the live state took back from
// its linger (Reclaimed) is audited lease.reclaim in the same statement,
// once (a repeated renewal writes nothing). ErrNotFound
// if nothing was written: the lease is not recorded (yet), not active, has
// a later rotation recorded, or its license moved on (deleted, another
// epoch or version); Session tells which.
func (pg *Postgres) RecordRenewal(ctx context.Context, r Renewal) (Session, error) {
	return scanSession(pg.pool.QueryRow(ctx, `
		WITH renewed AS (
			UPDATE sessions s SET token_hash = $2, token_seq = $3, lingering = false,
				last_heartbeat_at = GREATEST(s.last_heartbeat_at, $4),
				expires_at = CASE WHEN $4 >= s.last_heartbeat_at THEN $5 ELSE s.expires_at END
			WHERE s.id = $1 AND s.state = 'active' AND s.token_seq < $3
			AND EXISTS (SELECT 1 FROM licenses l WHERE l.id = s.license_id AND l.live_epoch = $6
				AND l.version = $7 AND l.deleted_at IS NULL FOR KEY SHARE)
			RETURNING `+sessionCols("s")+`
		), audit AS (
			INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
			SELECT `+sqlAuditID+`, tenant_id, 'system', '`+server.AuditLeaseReclaim+`', 'lease', id,
				jsonb_build_object('license_id', license_id), last_heartbeat_at
			FROM renewed WHERE $8
		)
		SELECT `+sessionCols("")+` FROM renewed`,
		r.LeaseID, r.TokenHash, r.TokenSeq, r.Heartbeat, r.Deadline, r.Epoch, r.Version, r.Reclaimed))
}

// LingerSession records the release of a lease that lingers (check.lua
// released it: server/linger.go): its release as its last heartbeat, its
// deadline the linger's end, both written now (a rebuild after a loss of
// Redis brings them back as they are, with no slack). Only while the lease
// is active and no later token rotation is recorded (seq: the live
// state's when it was released; a later one took it back). Idempotent. ok
// is false if nothing was written; Session tells why.
func (pg *Postgres) LingerSession(ctx context.Context, leaseID string, released, deadline time.Time, seq int64) (l server.Lease, ok bool, err error) {
	r, err := scanSession(pg.pool.QueryRow(ctx, `UPDATE sessions s SET lingering = true,
			last_heartbeat_at = GREATEST(s.last_heartbeat_at, $2), expires_at = $3
		WHERE s.id = $1 AND s.state = 'active' AND s.token_seq <= $4
		RETURNING `+sessionCols("s"), leaseID, released, deadline, seq))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Lease{}, false, nil
	}
	if err != nil {
		return server.Lease{}, false, err
	}
	return r.Lease, true, nil
}

// EndLease records the end of an active lease (released or revoked) with
// its usage event and its note for the live state (live_ends, ends.go), in
// one statement; a borrowed lease released before its deadline is
// recorded as returned (returned_certificates) in the same statement. hb and deadline are the live values, if known. ok is
// false if the lease was not active.
func (pg *Postgres) EndLease(ctx context.Context, leaseID string, state server.LeaseState, now time.Time, hb, deadline *time.Time) (server.Lease, bool, error) {
	row, err := scanSession(pg.pool.QueryRow(ctx, `
		WITH ended AS (
			UPDATE sessions s SET state = $2, ended_at = GREATEST($3, s.acquired_at),
				last_heartbeat_at = GREATEST(s.last_heartbeat_at, $4::timestamptz),
				expires_at = COALESCE($5::timestamptz, s.expires_at)
			WHERE s.id = $1 AND s.state = 'active'
			RETURNING `+sessionCols("s")+`
		), usage AS (
			INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
			SELECT id, license_id, tenant_id, state, acquired_at, `+sqlSeatHeldUntil+`, `+sqlDurationUS(sqlSeatHeldUntil, "acquired_at")+`
			FROM ended ON CONFLICT (lease_id) DO NOTHING
		), noted AS (
			INSERT INTO live_ends (lease_id, license_id) SELECT id, license_id FROM ended
			ON CONFLICT (lease_id) DO NOTHING
		), returned AS (
			INSERT INTO returned_certificates (lease_id, tenant_id, license_id, expires_at, returned_at)
			SELECT id, tenant_id, license_id, expires_at, ended_at FROM ended
			WHERE state = 'released' AND borrowed AND expires_at > ended_at
			ON CONFLICT (lease_id) DO NOTHING
		), event AS (
			`+sqlLeaseEvent(server.EventLeaseRevoked, "ended", "state = 'revoked'", "ended_at")+`
		)
		SELECT `+sessionCols("")+` FROM ended`, leaseID, string(state), now, hb, deadline))
	if errors.Is(err, pgx.ErrNoRows) {
		return server.Lease{}, false, nil
	}
	if err != nil {
		return server.Lease{}, false, err
	}
	return row.Lease, true, nil
}

// ListSessions lists the leases of pools (a license's and its grants':
// PoolsOf), newest first, a page at a time.
func (pg *Postgres) ListSessions(ctx context.Context, poolIDs []string, state server.LeaseState, p server.Page) ([]server.Lease, string, error) {
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
	rows, _ := pg.pool.Query(ctx, `SELECT `+sessionCols("")+` FROM sessions
		WHERE license_id = ANY($1) AND ($2 = '' OR state = $2)
		AND ($3::timestamptz IS NULL OR (acquired_at, id) < ($3, $4::text))
		ORDER BY acquired_at DESC, id DESC LIMIT $5`, poolIDs, string(state), atFrom, idFrom, size+1)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Lease, error) {
		l, err := scanSession(r)
		return l.Lease, err
	})
	if err != nil {
		return nil, "", pg.fail("list leases", err)
	}
	page, next := pageOf(out, size, func(l server.Lease) cursor { return cursor{At: timeUS(l.AcquiredAt), ID: l.ID} })
	return page, next, nil
}

// Expiry is a lease the live state took out as past its deadline, with its
// last live values.
type Expiry struct {
	LeaseID             string
	Heartbeat, Deadline time.Time
	At                  time.Time // when the live state judged it
	// Lingering: the live state held it lingering (its release's record
	// may not have been written: a crash between check.lua and it).
	Lingering bool
}

// ExpireSessions records the expiry of leases still active, exactly once:
// their state, usage and cleanup events and audit entries, in one
// statement; a lingering lease's (its linger lapsed, server/linger.go:
// lingering in the record or in the live state) as released, with its
// usage event only: it is no zombie. It returns the leases it ended (not
// those ended before).
func (pg *Postgres) ExpireSessions(ctx context.Context, exps []Expiry) ([]server.Lease, error) {
	ids := make([]string, len(exps))
	hbs, dls, nows := make([]time.Time, len(exps)), make([]time.Time, len(exps)), make([]time.Time, len(exps))
	lingering := make([]bool, len(exps))
	for i, e := range exps {
		ids[i], hbs[i], dls[i], nows[i], lingering[i] = e.LeaseID, e.Heartbeat, e.Deadline, e.At, e.Lingering
	}
	rows, _ := pg.pool.Query(ctx, `
		WITH v AS (
			SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::boolean[])
				AS v(id, hb, dl, now, lingering)
		), licensed AS (
			-- The licenses first (the cleanup events' foreign key takes them
			-- FOR KEY SHARE anyway), as DeleteLicense and rebuilds do: taken
			-- after the sessions they could deadlock with a delete.
			SELECT l.id FROM licenses l
			WHERE l.id IN (SELECT license_id FROM sessions WHERE id IN (SELECT id FROM v))
			ORDER BY l.id FOR KEY SHARE
		), locked AS (
			-- Lock in id order, so that two cleaners never deadlock. The
			-- count (an InitPlan, run once before the scan) makes sure the
			-- licenses are locked before the sessions.
			SELECT s.id FROM sessions s WHERE s.id IN (SELECT id FROM v) AND s.state = 'active'
			AND (SELECT count(*) FROM licensed) >= 0
			ORDER BY s.id FOR UPDATE
		), ended AS (
			UPDATE sessions s SET state = CASE WHEN s.lingering OR v.lingering THEN 'released' ELSE 'expired' END,
				lingering = s.lingering OR v.lingering,
				ended_at = GREATEST(v.now, s.acquired_at),
				expired_at = CASE WHEN s.lingering OR v.lingering THEN NULL ELSE GREATEST(v.now, s.acquired_at) END,
				last_heartbeat_at = GREATEST(s.last_heartbeat_at, v.hb), expires_at = v.dl
			FROM v, locked WHERE s.id = v.id AND s.id = locked.id AND s.state = 'active'
			RETURNING `+sessionCols("s")+`
		), usage AS (
			INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
			SELECT id, license_id, tenant_id, state, acquired_at, `+sqlSeatHeldUntil+`,
				`+sqlDurationUS(sqlSeatHeldUntil, "acquired_at")+`
			FROM ended ON CONFLICT (lease_id) DO NOTHING
		), cleanup AS (
			INSERT INTO cleanup_events (lease_id, license_id, tenant_id, cleanup_type, last_heartbeat_at, expires_at, cleaned_at)
			SELECT id, license_id, tenant_id, 'zombie', last_heartbeat_at, expires_at, ended_at
			FROM ended WHERE state = 'expired' ON CONFLICT (lease_id) DO NOTHING
		), audit AS (
			INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
			SELECT `+sqlAuditID+`, tenant_id, 'system', 'lease.expire', 'lease', id,
				jsonb_build_object('license_id', license_id), ended_at
			FROM ended WHERE state = 'expired'
		), event AS (
			`+sqlLeaseEvent(server.EventLeaseExpired, "ended", "state = 'expired'", "ended_at")+`
		)
		SELECT `+sessionCols("")+` FROM ended`, ids, hbs, dls, nows, lingering)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Lease, error) {
		l, err := scanSession(r)
		return l.Lease, err
	})
}

// ActivePage is one page of the reconciliation's sweep over the active
// sessions, in id order: the first limit active sessions after the id
// after ("" from the start). It returns those of them whose recorded
// deadline is at or before now (at most maxOverdue: the page then ends at
// the last of them) and the id to continue after, "" when the sweep has
// reached the end. The sweep reads an index that no heartbeat changes
// (sessions_active_id_idx), so that heartbeats written behind stay HOT
// updates (migrations/00006_hot_heartbeats.sql).
func (pg *Postgres) ActivePage(ctx context.Context, after string, limit, maxOverdue int, now time.Time) (overdue []Session, next string, err error) {
	rows, _ := pg.pool.Query(ctx, `SELECT id, expires_at <= $3 FROM sessions
		WHERE state = 'active' AND id > $1 ORDER BY id LIMIT $2`, after, limit, now)
	var (
		id      string
		due     bool
		n       int
		dueIDs  []string
		stopped bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &due}, func() error {
		if stopped {
			return nil
		}
		n++
		next = id
		if due {
			dueIDs = append(dueIDs, id)
			stopped = len(dueIDs) == maxOverdue
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if n < limit && !stopped {
		next = "" // the end: start over
	}
	if len(dueIDs) == 0 {
		return nil, next, nil
	}
	rows, _ = pg.pool.Query(ctx, `SELECT `+sessionCols("")+` FROM sessions
		WHERE id = ANY($1) AND state = 'active' ORDER BY id`, dueIDs)
	overdue, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Session, error) { return scanSession(r) })
	if err != nil {
		return nil, "", err
	}
	return overdue, next, nil
}

// WithActiveSessions returns those of the licenses that have active
// sessions (one probe of sessions_active_license_idx each).
func (pg *Postgres) WithActiveSessions(ctx context.Context, licenseIDs []string) ([]string, error) {
	rows, _ := pg.pool.Query(ctx, `SELECT u.id FROM unnest($1::text[]) AS u(id)
		WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.license_id = u.id AND s.state = 'active')`, licenseIDs)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// WriteBeats writes heartbeats behind, moving a lease's last heartbeat
// only forward and touching only active leases that do not linger (a late
// or repeated write is harmless; a lingering lease's deadline is its
// linger's, written with its release). It returns the rows written and, per license, the leases
// of the batch the record says ended.
//
// The update changes no indexed column, so that PostgreSQL can write it
// as a HOT update (no index entries) on the row's own page: keep it so
// (migrations/00006_hot_heartbeats.sql). Only the rows it did not write
// are read again to find the ended ones.
func (pg *Postgres) WriteBeats(ctx context.Context, ids []string, hbs, dls []time.Time) (n int64, ended map[string][]string, err error) {
	rows, _ := pg.pool.Query(ctx, `WITH v AS (
			SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS v(id, hb, dl)
		), written AS (
			UPDATE sessions s SET last_heartbeat_at = v.hb, expires_at = v.dl FROM v
			WHERE s.id = v.id AND s.state = 'active' AND NOT s.lingering AND s.last_heartbeat_at < v.hb
			RETURNING s.id
		)
		SELECT '', '', (SELECT count(*) FROM written)
		UNION ALL
		SELECT s.id, s.license_id, 0 FROM sessions s
		JOIN (SELECT v.id FROM v WHERE NOT EXISTS (SELECT 1 FROM written w WHERE w.id = v.id)) u ON s.id = u.id
		WHERE s.state <> 'active'`, ids, hbs, dls)
	var (
		id, licenseID string
		count         int64
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &licenseID, &count}, func() error {
		if id == "" {
			n = count
		} else {
			if ended == nil {
				ended = map[string][]string{}
			}
			ended[licenseID] = append(ended[licenseID], id)
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return n, ended, nil
}
