package record

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/server"
)

// RecordSeatEvent stores a denial or a wait.
func (pg *Postgres) RecordSeatEvent(ctx context.Context, e server.SeatEvent) error {
	_, err := pg.pool.Exec(ctx, `INSERT INTO seat_events (id, tenant_id, license_id, kind, at, wait_us, feature, reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.ID, e.TenantID, e.LicenseID, string(e.Kind), e.At.UTC().Truncate(time.Microsecond), e.Wait.Microseconds(), e.Feature,
		e.Reason)
	if isCode(err, pgUniqueViolation) {
		return server.AlreadyExists("seat_event.id", "seat event")
	}
	if err != nil {
		return pg.fail("record seat event", err)
	}
	return nil
}

// usageIntervals are the report's leases: $1 tenant, $2 license (” for
// all; a license's include its grants'), $3-$4 the range, $5 the bucket in
// seconds, $7 the feature (” for every one and the base pools). A row is a
// license's base pool or one feature of it (all its grants): a lease
// counts under its license's id (the part of its pool's id before the dot)
// and its feature. A lease holds its seat
// over [st, en): en is the earliest of its deadline and its end (now while
// active), as server.SeatHeldUntil says; its user is the fingerprint when it
// has none (server.LeaseUser). Only leases that held a seat in the range,
// or were acquired in it, are kept.
const usageIntervals = `
	b AS (
		SELECT g AS bs, g + $5::bigint * interval '1 second' AS be
		FROM generate_series($3::timestamptz, $4::timestamptz - $5::bigint * interval '1 second', $5::bigint * interval '1 second') g
	),
	iv AS (
		SELECT split_part(license_id, '.', 1) AS license_id, feature,
			CASE WHEN "user" <> '' THEN "user" ELSE fingerprint END AS who,
			acquired_at AS st, LEAST(expires_at, COALESCE(ended_at, now())) AS en
		FROM sessions
		WHERE tenant_id = $1 AND ($2 = '' OR license_id IN (` + poolsOfArg2 + `))
			AND ($7 = '' OR feature = $7) AND acquired_at < $4
	),
	iv2 AS (SELECT * FROM iv WHERE en > $3 OR st >= $3)`

// usageRows: one row per license (or feature of it) and bucket with something to say. Peak
// concurrency is a running sum (a window function) over the leases' starts
// (+1) and ends (-1), ends first at one instant: the most seats held at an
// event inside the bucket, or at its start.
const usageRows = `WITH ` + usageIntervals + `,
	ev AS (
		SELECT license_id, feature, st AS t, 1 AS d FROM iv2 WHERE en > st
		UNION ALL
		SELECT license_id, feature, en, -1 FROM iv2 WHERE en > st
	),
	run AS (
		SELECT license_id, feature, t, sum(d) OVER (PARTITION BY license_id, feature ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS c FROM ev
	),
	peak_in AS (
		SELECT r.license_id, r.feature, b.bs, max(r.c) AS peak FROM run r JOIN b ON r.t > b.bs AND r.t < b.be GROUP BY 1, 2, 3
	),
	peak_at AS (
		SELECT iv2.license_id, iv2.feature, b.bs, count(*) AS peak FROM iv2 JOIN b ON iv2.st <= b.bs AND iv2.en > b.bs GROUP BY 1, 2, 3
	),
	ov AS (
		SELECT iv2.license_id, iv2.feature, b.bs, iv2.who, iv2.st >= b.bs AS acquired,
			GREATEST(EXTRACT(EPOCH FROM LEAST(iv2.en, b.be) - GREATEST(iv2.st, b.bs)), 0) AS secs
		FROM iv2 JOIN b ON iv2.st < b.be AND (iv2.en > b.bs OR iv2.st >= b.bs)
	),
	agg AS (
		SELECT license_id, feature, bs, sum(secs) / 3600 AS seat_hours, count(*) FILTER (WHERE acquired) AS acq,
			count(DISTINCT who) AS users
		FROM ov GROUP BY 1, 2, 3
	),
	sev AS (
		SELECT e.license_id, e.feature, b.bs, count(*) FILTER (WHERE e.kind = 'denied') AS denials,
			count(*) FILTER (WHERE e.kind = 'waited') AS waits,
			COALESCE(sum(e.wait_us) FILTER (WHERE e.kind = 'waited'), 0) AS wait_us
		FROM seat_events e JOIN b ON e.at >= b.bs AND e.at < b.be
		WHERE e.tenant_id = $1 AND ($2 = '' OR e.license_id = $2) AND ($7 = '' OR e.feature = $7)
			AND e.at >= $3 AND e.at < $4
		GROUP BY 1, 2, 3
	),
	pdn AS (
		SELECT e.license_id, e.feature, b.bs, e.reason, count(*) AS n
		FROM seat_events e JOIN b ON e.at >= b.bs AND e.at < b.be
		WHERE e.tenant_id = $1 AND ($2 = '' OR e.license_id = $2) AND ($7 = '' OR e.feature = $7)
			AND e.at >= $3 AND e.at < $4 AND e.kind = 'denied' AND e.reason NOT IN ('', 'SEATS_EXHAUSTED')
		GROUP BY 1, 2, 3, 4
	),
	pd AS (SELECT license_id, feature, bs, jsonb_object_agg(reason, n) AS reasons FROM pdn GROUP BY 1, 2, 3),
	keys AS (SELECT license_id, feature, bs FROM agg UNION SELECT license_id, feature, bs FROM sev)
	SELECT k.license_id, k.feature, k.bs, GREATEST(COALESCE(pi.peak, 0), COALESCE(pa.peak, 0))::int8,
		COALESCE(a.seat_hours, 0)::float8, COALESCE(a.acq, 0), COALESCE(s.denials, 0), COALESCE(a.users, 0),
		COALESCE(s.waits, 0), COALESCE(s.wait_us, 0)::int8, pd.reasons
	FROM keys k
		LEFT JOIN agg a USING (license_id, feature, bs)
		LEFT JOIN peak_in pi USING (license_id, feature, bs)
		LEFT JOIN peak_at pa USING (license_id, feature, bs)
		LEFT JOIN sev s USING (license_id, feature, bs)
		LEFT JOIN pd USING (license_id, feature, bs)
	ORDER BY k.license_id COLLATE "C", k.feature COLLATE "C", k.bs
	LIMIT $6`

// usageUsers: seat-hours and leases per user over the whole range.
const usageUsers = `WITH ` + usageIntervals + `
	SELECT who, (COALESCE(sum(GREATEST(EXTRACT(EPOCH FROM LEAST(en, $4) - GREATEST(st, $3)), 0)), 0) / 3600)::float8 AS h,
		count(*)
	FROM iv2 GROUP BY who ORDER BY h DESC, who COLLATE "C" LIMIT $6`

// usageArgs are the arguments of usageRows and usageUsers: limit is $6.
func usageArgs(q server.UsageQuery, limit int) []any {
	return []any{q.TenantID, q.LicenseID, q.Start.UTC(), q.End.UTC(), int64(q.Bucket / time.Second), limit, q.Feature}
}

// UsageReport answers q in one read-only snapshot.
func (pg *Postgres) UsageReport(ctx context.Context, q server.UsageQuery) (server.UsageReport, error) {
	if q.LicenseID != "" {
		if err := pg.historyOf(ctx, q.TenantID, q.LicenseID); err != nil {
			return server.UsageReport{}, err
		}
	}
	tx, err := pg.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return server.UsageReport{}, pg.fail("usage report", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, _ := tx.Query(ctx, usageRows, usageArgs(q, q.MaxRows+1)...)
	var rep server.UsageReport
	rep.Rows, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.UsageRow, error) {
		var (
			u      server.UsageRow
			peak   int64
			waitUS int64
		)
		err := r.Scan(&u.LicenseID, &u.Feature, &u.BucketStart, &peak, &u.SeatHours, &u.Acquisitions, &u.Denials,
			&u.DistinctUsers, &u.QueueWaits, &waitUS, &u.PolicyDenials)
		u.BucketStart = u.BucketStart.UTC()
		u.PeakSeats = int(peak)
		if u.QueueWaits > 0 {
			u.MeanWait = time.Duration(waitUS/u.QueueWaits) * time.Microsecond
		}
		return u, err
	})
	if err != nil {
		return server.UsageReport{}, pg.fail("usage report", err)
	}
	if q.MaxRows > 0 && len(rep.Rows) > q.MaxRows {
		return server.UsageReport{}, server.ErrUsageReportTooLarge(q.MaxRows)
	}
	rows, _ = tx.Query(ctx, usageUsers, usageArgs(q, q.Users)...)
	rep.Users, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (server.UserUsage, error) {
		var u server.UserUsage
		err := r.Scan(&u.User, &u.SeatHours, &u.Sessions)
		return u, err
	})
	if err != nil {
		return server.UsageReport{}, pg.fail("usage report", err)
	}
	if len(rep.Rows) == 0 {
		rep.Rows = nil
	}
	if len(rep.Users) == 0 {
		rep.Users = nil
	}
	return rep, nil
}
