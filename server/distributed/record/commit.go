package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// Group commit in PostgreSQL (package groupcommit): the sessions that concurrent
// acquisitions record are inserted by one statement, and the sessions that
// concurrent releases end are ended by one statement, each its own
// transaction, committed before any of its callers returns. Each row keeps
// the conditions of the statement it would have had alone (the insert's
// license epoch check, the end's state check), so the outcome of every
// call is the one it would have had alone. Rows a batch did not write are
// tried again alone, which gives each its own answer (a taken lease id, a
// rebuilt live state, an ended lease); a batch PostgreSQL refused (it
// rolled back) is tried again row by row. A batch whose outcome is unknown
// (connection lost) fails every call, as the single statement would have.

const (
	// pgSlots bounds the batch statements of one kind in flight at once: a
	// second one starts while one commits only once pgMin calls wait for
	// it. pgMaxBatch bounds the rows of one statement.
	pgSlots    = 2
	pgMin      = 8
	pgMaxBatch = 256
	// pgBatchTimeout bounds a batch statement, which runs detached from
	// its callers (one caller giving up must not fail the others).
	pgBatchTimeout = 30 * time.Second
)

// newSession is a granted lease to record, with the live state epoch it
// was granted in.
type newSession struct {
	lease   *server.Lease
	epoch   int64
	version int64
}

// InsertSession records a granted lease, with the acquisitions that come
// at the same time (group commit): inserted is false if the license is
// deleted, its live state was rebuilt since the grant (epoch), or its
// settings changed since the ones the grant was judged by (version): a
// grant under old settings is never recorded, so never acknowledged.
func (pg *Postgres) InsertSession(ctx context.Context, l *server.Lease, epoch, version int64) (inserted bool, err error) {
	return pg.inserts.Do(ctx, newSession{l, epoch, version})
}

// insertOneSQL records one lease. The SELECT locks the license row (FOR
// KEY SHARE): a delete or a rebuild holding it FOR UPDATE makes the insert
// wait, and then the re-checked row no longer matches, so nothing is
// recorded.
//
// A borrowed lease's lease.borrowed event is inserted by the same
// statement (invariant 14): insertOneBorrowedSQL, the insert as a CTE
// with the event's beside it. Other leases write no event and take the
// plain insert, so that the seat path pays nothing for webhooks (the CTE
// form costs even with no row to write: the outbox table and its indexes
// opened, every column returned).
var (
	insertOneSQL         = insertOneRows + ` RETURNING id`
	insertOneBorrowedSQL = withBorrowedEvents(insertOneRows)
)

const insertOneRows = `INSERT INTO sessions (id, license_id, tenant_id, token_hash, token_seq,
		fingerprint, "user", hostname, metadata, idempotency_key, dedupe_key, state, acquired_at,
		last_heartbeat_at, expires_at, borrowed, feature, version, reservation)
	SELECT $1, l.id, l.tenant_id, $3, 0, $4, $5, $6, $7::jsonb, $8, $9, 'active', $10, $10, $11, $14, $15, $16, $17
	FROM licenses l WHERE l.id = $2 AND l.deleted_at IS NULL AND l.live_epoch = $12 AND l.version = $13
	FOR KEY SHARE`

// insertManySQL is insertOneSQL for many leases: the same conditions and
// lock, per row. The licenses are read by the group's own ids (ANY($2)):
// joined on v.lic alone, PostgreSQL could scan every license and grant
// row and unpack the group's arrays again for each of them
// (TestGroupInsertReadsItsRowsOnce). It returns the ids it inserted. It skips (SKIP LOCKED)
// the licenses whose row a delete or a rebuild holds, instead of waiting:
// their rows are then inserted alone, waiting as they would have, and the
// other licenses of the group are not held up. insertManyBorrowedSQL, for
// a group with a borrowed lease, writes their lease.borrowed events too.
var (
	insertManySQL         = insertManyRows + ` RETURNING id`
	insertManyBorrowedSQL = withBorrowedEvents(insertManyRows)
)

const insertManyRows = `INSERT INTO sessions (id, license_id, tenant_id, token_hash, token_seq,
		fingerprint, "user", hostname, metadata, idempotency_key, dedupe_key, state, acquired_at,
		last_heartbeat_at, expires_at, borrowed, feature, version, reservation)
	SELECT v.id, l.id, l.tenant_id, v.token_hash, 0, v.fp, v.usr, v.host, v.md::jsonb, v.idem, v.dk,
		'active', v.acq, v.acq, v.exp, v.borrowed, v.feature, v.fversion, v.reservation
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::text[], $9::text[], $10::timestamptz[], $11::timestamptz[], $12::bigint[], $13::bigint[],
		$14::boolean[], $15::text[], $16::text[], $17::bytea[])
		AS v(id, lic, token_hash, fp, usr, host, md, idem, dk, acq, exp, epoch, version, borrowed, feature, fversion,
			reservation)
	JOIN licenses l ON l.id = v.lic
	WHERE l.id = ANY($2::text[]) AND l.deleted_at IS NULL AND l.live_epoch = v.epoch AND l.version = v.version
	FOR KEY SHARE OF l SKIP LOCKED`

// withBorrowedEvents is an insert of sessions as a CTE (ins) beside the
// insert of the lease.borrowed events of its borrowed rows; it returns
// the ids inserted.
func withBorrowedEvents(insert string) string {
	return `WITH ins AS (` + insert + `
	RETURNING *), event AS (
		` + borrowedEventSQL + `
	)
	SELECT id FROM ins`
}

// borrowedEventSQL writes the lease.borrowed events of the rows of ins.
var borrowedEventSQL = sqlLeaseEvent(server.EventLeaseBorrowed, "ins", "borrowed", "acquired_at")

func (pg *Postgres) insertOne(ctx context.Context, n newSession) (bool, error) {
	l := n.lease
	conn, err := pg.pool.Acquire(ctx)
	if err != nil {
		return false, notSent(err)
	}
	defer conn.Release()
	sql := insertOneSQL
	if l.Borrowed {
		sql = insertOneBorrowedSQL
	}
	rows, _ := conn.Query(ctx, sql,
		l.ID, l.LicenseID, l.TokenHash, l.Fingerprint, l.User, l.Hostname, jsonMap(l.Metadata),
		l.IdempotencyKey, l.DedupeKey, l.AcquiredAt, l.ExpiresAt, n.epoch, n.version, l.Borrowed, l.Feature, l.Version,
		[]byte(l.Reservation))
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, err
	}
	return len(ids) == 1, nil
}

func (pg *Postgres) runInserts(batch []*groupcommit.Call[newSession, bool]) {
	live := liveCalls(batch)
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgBatchTimeout)
	defer cancel()
	if len(live) == 1 {
		c := live[0]
		c.Res, c.Err = pg.insertOne(ctx, c.Req)
		return
	}
	// In license order, so that the row locks are taken in one order.
	slices.SortStableFunc(live, func(a, b *groupcommit.Call[newSession, bool]) int {
		return strings.Compare(a.Req.lease.LicenseID, b.Req.lease.LicenseID)
	})
	n := len(live)
	var (
		ids, lics, toks, fps, users, hosts = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		mds, idems, dks                    = make([]string, n), make([]string, n), make([]string, n)
		acqs, exps                         = make([]time.Time, n), make([]time.Time, n)
		epochs, versions                   = make([]int64, n), make([]int64, n)
		borrowed                           = make([]bool, n)
		features, fversions                = make([]string, n), make([]string, n)
		reservations                       = make([][]byte, n)
	)
	for i, c := range live {
		l := c.Req.lease
		ids[i], lics[i], toks[i], fps[i], users[i], hosts[i] = l.ID, l.LicenseID, l.TokenHash, l.Fingerprint, l.User, l.Hostname
		mds[i], idems[i], dks[i] = jsonMap(l.Metadata), l.IdempotencyKey, l.DedupeKey
		acqs[i], exps[i], epochs[i], versions[i] = l.AcquiredAt, l.ExpiresAt, c.Req.epoch, c.Req.version
		borrowed[i], features[i], fversions[i], reservations[i] = l.Borrowed, l.Feature, l.Version, []byte(l.Reservation)
	}
	conn, err := pg.pool.Acquire(ctx)
	if err != nil {
		for _, c := range live {
			c.Err = notSent(err)
		}
		return
	}
	sql := insertManySQL
	if slices.Contains(borrowed, true) {
		sql = insertManyBorrowedSQL
	}
	rows, _ := conn.Query(ctx, sql, ids, lics, toks, fps, users, hosts, mds, idems, dks, acqs, exps, epochs, versions, borrowed, features, fversions,
		reservations)
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	conn.Release()
	if err != nil {
		if pgError(err) == nil { // outcome unknown
			for _, c := range live {
				c.Err = err
			}
			return
		}
		inserted = nil // refused and rolled back: each alone
	}
	done := make(map[string]bool, len(inserted))
	for _, id := range inserted {
		done[id] = true
	}
	for _, c := range live {
		if done[c.Req.lease.ID] {
			c.Res = true
			continue
		}
		c.Res, c.Err = pg.insertOne(ctx, c.Req)
	}
}

// errNotSent marks a failed write that never reached PostgreSQL.
var errNotSent = errors.New("not sent")

func notSent(err error) error { return fmt.Errorf("%w: %w", errNotSent, err) }

// SurelyNotWritten reports whether a failed write certainly changed
// nothing: it never reached PostgreSQL, or PostgreSQL refused it (and
// rolled it back). Otherwise its outcome is unknown: the connection was
// lost with the statement on its way or in flight, and it may have
// committed.
func SurelyNotWritten(err error) bool {
	return errors.Is(err, errNotSent) || errors.Is(err, groupcommit.ErrStopped) ||
		pgError(err) != nil || pgconn.SafeToRetry(err)
}

// liveCalls returns the calls whose callers still wait; the others fail
// with their context's error.
func liveCalls[Q, R any](batch []*groupcommit.Call[Q, R]) []*groupcommit.Call[Q, R] {
	live := make([]*groupcommit.Call[Q, R], 0, len(batch))
	for _, c := range batch {
		if err := c.Ctx.Err(); err != nil {
			c.Err = notSent(err)
			continue
		}
		live = append(live, c)
	}
	return live
}

// releaseReq ends an active lease as released, with its live values; the
// ended lease goes to out.
type releaseReq struct {
	leaseID           string
	now, hb, deadline time.Time
	out               *server.Lease
}

// ReleaseSession records a release (see EndLease), grouped with the
// concurrent ones: ok is false if the lease was not active, else the ended
// lease is in out.
func (pg *Postgres) ReleaseSession(ctx context.Context, leaseID string, now, hb, deadline time.Time, out *server.Lease) (ok bool, err error) {
	return pg.releases.Do(ctx, releaseReq{leaseID, now, hb, deadline, out})
}

// releaseManySQL is EndLease's statement for many leases, all released:
// the same conditions per row. It returns the leases it ended. It locks
// the rows first, in id order (as every statement that locks several
// leases, so that concurrent writers never deadlock), and skips (SKIP
// LOCKED) the ones another transaction holds, instead of waiting: those
// are then ended alone, waiting as they would have, and the other leases
// of the group are not held up.
func releaseManySQL() string {
	return `
		WITH v AS (
			SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[])
				AS v(id, now, hb, dl)
		), locked AS (
			SELECT s.id FROM sessions s JOIN v ON v.id = s.id
			WHERE s.state = 'active'
			ORDER BY s.id
			FOR NO KEY UPDATE OF s SKIP LOCKED
		), ended AS (
			UPDATE sessions s SET state = 'released', ended_at = GREATEST(v.now, s.acquired_at),
				last_heartbeat_at = GREATEST(s.last_heartbeat_at, v.hb),
				expires_at = COALESCE(v.dl, s.expires_at)
			FROM v, locked WHERE s.id = v.id AND s.id = locked.id AND s.state = 'active'
			RETURNING ` + sessionCols("s") + `
		), usage AS (
			INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
			SELECT id, license_id, tenant_id, state, acquired_at, ` + sqlSeatHeldUntil + `, ` + sqlDurationUS(sqlSeatHeldUntil, "acquired_at") + `
			FROM ended ON CONFLICT (lease_id) DO NOTHING
		), noted AS (
			INSERT INTO live_ends (lease_id, license_id) SELECT id, license_id FROM ended
			ON CONFLICT (lease_id) DO NOTHING
		), returned AS (
			INSERT INTO returned_certificates (lease_id, tenant_id, license_id, expires_at, returned_at)
			SELECT id, tenant_id, license_id, expires_at, ended_at FROM ended
			WHERE borrowed AND expires_at > ended_at
			ON CONFLICT (lease_id) DO NOTHING
		)
		SELECT ` + sessionCols("") + ` FROM ended`
}

var releaseMany = releaseManySQL()

func (pg *Postgres) runReleases(batch []*groupcommit.Call[releaseReq, bool]) {
	live := liveCalls(batch)
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgBatchTimeout)
	defer cancel()
	alone := func(c *groupcommit.Call[releaseReq, bool]) {
		hb, dl := c.Req.hb, c.Req.deadline
		var l server.Lease
		l, c.Res, c.Err = pg.EndLease(ctx, c.Req.leaseID, server.LeaseReleased, c.Req.now, &hb, &dl)
		if c.Res {
			*c.Req.out = l
		}
	}
	if len(live) == 1 {
		alone(live[0])
		return
	}
	// In id order, as every statement that locks several leases, so that
	// concurrent writers never deadlock. A lease released twice at once is
	// ended by the first call; the second finds it ended, as it would
	// alone.
	slices.SortStableFunc(live, func(a, b *groupcommit.Call[releaseReq, bool]) int {
		return strings.Compare(a.Req.leaseID, b.Req.leaseID)
	})
	var (
		ids            []string
		nows, hbs, dls []time.Time
	)
	for i, c := range live {
		if i > 0 && c.Req.leaseID == live[i-1].Req.leaseID {
			continue
		}
		ids, nows, hbs, dls = append(ids, c.Req.leaseID), append(nows, c.Req.now), append(hbs, c.Req.hb), append(dls, c.Req.deadline)
	}
	rows, _ := pg.pool.Query(ctx, releaseMany, ids, nows, hbs, dls)
	ended, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.Lease, error) {
		l, err := scanSession(r)
		return l.Lease, err
	})
	if err != nil {
		if pgError(err) == nil { // outcome unknown
			for _, c := range live {
				c.Err = err
			}
			return
		}
		for _, c := range live { // refused and rolled back: each alone
			alone(c)
		}
		return
	}
	byID := make(map[string]server.Lease, len(ended))
	for _, l := range ended {
		byID[l.ID] = l
	}
	for i, c := range live {
		if i > 0 && live[i-1].Req.leaseID == c.Req.leaseID {
			continue // a second release of the lease: it finds it ended
		}
		if l, ok := byID[c.Req.leaseID]; ok {
			*c.Req.out, c.Res = l, true
		} else {
			alone(c) // skipped (locked elsewhere) or not active: as alone
		}
	}
}
