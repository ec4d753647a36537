package record

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// tableStats reads the row updates of a table that PostgreSQL counted,
// once it has counted at least min of them (a backend reports its counts
// when it goes idle, up to 10 s later).
func (r testRecord) tableStats(t *testing.T, table string, atLeast int64) (updates, hot int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		require.NoError(t, r.admin.QueryRow(t.Context(), `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname = $2`, r.schema, table).Scan(&updates, &hot))
		return updates >= atLeast
	}, 20*time.Second, 50*time.Millisecond, "PostgreSQL counts the updates of %s", table)
	return updates, hot
}

// TestWriteBeatsAreHOTUpdates: writing heartbeats behind updates no index
// (no indexed column changes) and finds room on the row's own page, full
// pages included: every update is HOT. With an index on expires_at, or
// pages filled to the brim, each heartbeat would also write an entry in
// every index of the table (five times the cost at a million leases).
func TestWriteBeatsAreHOTUpdates(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	lic := r.license(t, tn.ID)
	for range 200 {
		r.active(t, lic, tn.ID)
	}
	// One lease of each page but the last: the pages before it are as
	// full as inserts fill them.
	rows, err := r.admin.Query(t.Context(), `SELECT id, (ctid::text::point)[0] AS page FROM `+r.schema+`.sessions
		ORDER BY page, id`)
	require.NoError(t, err)
	var ids []string
	var pages []float64
	for rows.Next() {
		var id string
		var page float64
		require.NoError(t, rows.Scan(&id, &page))
		if len(pages) == 0 || pages[len(pages)-1] != page {
			ids, pages = append(ids, id), append(pages, page)
		}
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, len(pages), 3, "the leases fill several pages")
	ids = ids[:len(ids)-1]
	slices.Sort(ids)

	hb := time.Now().UTC().Truncate(time.Microsecond).Add(time.Second)
	hbs, dls := make([]time.Time, len(ids)), make([]time.Time, len(ids))
	for i := range ids {
		hbs[i], dls[i] = hb, hb.Add(time.Hour)
	}
	n, ended, err := r.pg.WriteBeats(t.Context(), ids, hbs, dls)
	require.NoError(t, err)
	require.EqualValues(t, len(ids), n)
	require.Empty(t, ended)
	updates, hot := r.tableStats(t, "sessions", int64(len(ids)))
	require.EqualValues(t, len(ids), updates)
	require.Equal(t, updates, hot, "every heartbeat written behind is a HOT update")
}

// TestWriteBeatsReportsOnlyEndedLeases: of a batch, the active leases with
// an older heartbeat are written; a heartbeat older than the recorded one
// changes nothing and is not taken for an end; ended leases are returned
// (per license) and left alone; unknown ids are ignored.
func TestWriteBeatsReportsOnlyEndedLeases(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	a, b := r.license(t, tn.ID), r.license(t, tn.ID)
	fresh, stale, endedA, endedB := r.active(t, a, tn.ID), r.active(t, a, tn.ID), r.active(t, a, tn.ID), r.active(t, b, tn.ID)
	for _, id := range []string{endedA, endedB} {
		_, ok, err := r.pg.EndLease(t.Context(), id, server.LeaseReleased, time.Now(), nil, nil)
		require.NoError(t, err)
		require.True(t, ok)
	}
	before, err := r.pg.Session(t.Context(), stale)
	require.NoError(t, err)

	now := time.Now().UTC().Truncate(time.Microsecond)
	beats := map[string]time.Time{
		fresh: now.Add(time.Second), stale: before.LastHeartbeatAt.Add(-time.Second),
		endedA: now.Add(time.Second), endedB: now.Add(time.Second), server.NewID(server.PrefixLeaseID): now,
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range beats {
			if !yield(id) {
				return
			}
		}
	})
	hbs, dls := make([]time.Time, len(ids)), make([]time.Time, len(ids))
	for i, id := range ids {
		hbs[i], dls[i] = beats[id], beats[id].Add(time.Hour)
	}
	n, ended, err := r.pg.WriteBeats(t.Context(), ids, hbs, dls)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the active lease with an older heartbeat is written")
	require.Equal(t, map[string][]string{a.ID: {endedA}, b.ID: {endedB}}, ended)

	got, err := r.pg.Session(t.Context(), fresh)
	require.NoError(t, err)
	require.Equal(t, beats[fresh], got.LastHeartbeatAt)
	require.Equal(t, beats[fresh].Add(time.Hour), got.ExpiresAt)
	got, err = r.pg.Session(t.Context(), stale)
	require.NoError(t, err)
	require.Equal(t, before.LastHeartbeatAt, got.LastHeartbeatAt, "a heartbeat only moves forward")
	got, err = r.pg.Session(t.Context(), endedA)
	require.NoError(t, err)
	require.Equal(t, server.LeaseReleased, got.State)
	require.NotEqual(t, beats[endedA], got.LastHeartbeatAt, "an ended lease is not written")
}

// TestActivePageSweepsActiveSessionsInIDOrder: the sweep reads the active
// sessions a page at a time in id order and starts over at the end; of
// each page it returns those past their recorded deadline, at most
// maxOverdue (the page then ends at the last of them, so that the next
// continues right after it).
func TestActivePageSweepsActiveSessionsInIDOrder(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	lic := r.license(t, tn.ID)
	var ids []string
	for range 7 {
		ids = append(ids, r.active(t, lic, tn.ID))
	}
	slices.Sort(ids)
	now := time.Now().UTC().Truncate(time.Microsecond)
	overdue := []string{ids[1], ids[2], ids[5]}
	_, err := r.admin.Exec(t.Context(), `UPDATE `+r.schema+`.sessions SET expires_at = $2 WHERE id = ANY($1)`,
		overdue, now.Add(-time.Minute))
	require.NoError(t, err)
	_, ok, err := r.pg.EndLease(t.Context(), ids[6], server.LeaseRevoked, now, nil, nil)
	require.NoError(t, err)
	require.True(t, ok, "an ended lease is not swept")
	_, err = r.admin.Exec(t.Context(), `UPDATE `+r.schema+`.sessions SET expires_at = $2 WHERE id = $1`,
		ids[6], now.Add(-time.Minute))
	require.NoError(t, err)

	sweep := func(limit, maxOverdue int) (pages [][]string, nexts []string) {
		after := ""
		for range 10 {
			got, next, err := r.pg.ActivePage(t.Context(), after, limit, maxOverdue, now)
			require.NoError(t, err)
			var gotIDs []string
			for _, s := range got {
				require.Equal(t, server.LeaseActive, s.State)
				require.Equal(t, lic.ID, s.LicenseID)
				gotIDs = append(gotIDs, s.ID)
			}
			pages, nexts = append(pages, gotIDs), append(nexts, next)
			if next == "" {
				return pages, nexts
			}
			after = next
		}
		t.Fatal("the sweep never ends")
		return nil, nil
	}
	pages, nexts := sweep(4, 100)
	require.Equal(t, [][]string{{ids[1], ids[2]}, {ids[5]}}, pages, "6 active sessions, 4 a page")
	require.Equal(t, []string{ids[3], ""}, nexts, "the last page is short: the sweep starts over")

	pages, nexts = sweep(3, 100)
	require.Equal(t, [][]string{{ids[1], ids[2]}, {ids[5]}, nil}, pages)
	require.Equal(t, []string{ids[2], ids[5], ""}, nexts, "a full last page is followed by an empty one")

	pages, nexts = sweep(100, 1)
	require.Equal(t, [][]string{{ids[1]}, {ids[2]}, {ids[5]}, nil}, pages, "at most one overdue lease a page")
	require.Equal(t, []string{ids[1], ids[2], ids[5], ""}, nexts, "a page that stopped at its last overdue lease")
}

// TestWithActiveSessions: the licenses of a list that have active leases.
func TestWithActiveSessions(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	withLease, none, allEnded := r.license(t, tn.ID), r.license(t, tn.ID), r.license(t, tn.ID)
	r.active(t, withLease, tn.ID)
	_, ok, err := r.pg.EndLease(t.Context(), r.active(t, allEnded, tn.ID), server.LeaseReleased, time.Now(), nil, nil)
	require.NoError(t, err)
	require.True(t, ok)
	got, err := r.pg.WithActiveSessions(t.Context(), []string{none.ID, withLease.ID, allEnded.ID, "lic_unknown"})
	require.NoError(t, err)
	require.Equal(t, []string{withLease.ID}, got)
}

// TestHOTMigrationKeepsExistingSessions: migration 6 applies to a schema
// that holds sessions (they stay, the sweep finds the active ones, their
// heartbeats are written), and its Down restores the index it dropped
// (the Downs of the later ones run too).
func TestHOTMigrationKeepsExistingSessions(t *testing.T) {
	t.Parallel()
	admin, schema, url := newSchema(t)
	db, err := sql.Open("pgx", url)
	require.NoError(t, err)
	defer db.Close()
	p, err := newMigrator(t.Context(), db, nil)
	require.NoError(t, err)
	_, err = p.UpTo(t.Context(), 5)
	require.NoError(t, err)

	_, err = admin.Exec(t.Context(), `SET search_path = `+schema+`;
		INSERT INTO tenants VALUES ('tn_m', 'm', now());
		INSERT INTO licenses (id, tenant_id, key, seats, lease_ttl_us, leasing_strategy, active, created_at, updated_at)
			VALUES ('lic_m', 'tn_m', 'key_m', 100, 60000000, 'acquisition', true, now(), now());
		INSERT INTO sessions (id, license_id, tenant_id, token_hash, fingerprint, acquired_at, last_heartbeat_at, expires_at)
			SELECT 'ls_m' || i, 'lic_m', 'tn_m', 'h', 'fp' || i, now(), now(), now() - interval '1 minute'
			FROM generate_series(1, 50) i;
		UPDATE sessions SET state = 'released', ended_at = now() WHERE id = 'ls_m1'`)
	require.NoError(t, err)

	_, err = p.UpTo(t.Context(), 6)
	require.NoError(t, err)
	index := func(name string) bool {
		var n int
		require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2`,
			schema, name).Scan(&n))
		return n == 1
	}
	require.True(t, index("sessions_active_id_idx"))
	require.False(t, index("sessions_active_expires_idx"))
	// The code reads the newest schema; the later migrations keep the rows
	// too (and their Downs run below).
	_, err = p.Up(t.Context())
	require.NoError(t, err)

	pg, err := Open(t.Context(), Options{URL: url, MaxConns: 2, ConnectTimeout: 5 * time.Second, SkipMigrations: true})
	require.NoError(t, err)
	defer pg.Close()
	overdue, next, err := pg.ActivePage(t.Context(), "", 100, 100, time.Now())
	require.NoError(t, err)
	require.Len(t, overdue, 49, "every active session of before, overdue")
	require.Empty(t, next)
	n, _, err := pg.WriteBeats(t.Context(), []string{"ls_m2"}, []time.Time{time.Now()}, []time.Time{time.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	_, err = p.DownTo(t.Context(), 5)
	require.NoError(t, err)
	require.True(t, index("sessions_active_expires_idx"))
	require.False(t, index("sessions_active_id_idx"))
	var count int
	require.NoError(t, admin.QueryRow(t.Context(), `SELECT count(*) FROM `+schema+`.sessions`).Scan(&count))
	require.Equal(t, 50, count)
}
