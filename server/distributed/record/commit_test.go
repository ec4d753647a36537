package record

import (
	"context"
	"encoding/json"
	neturl "net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// The tests need a PostgreSQL server; they never skip (a missing server
// fails them with what to start).
func testPostgresURL() string {
	if u := os.Getenv("SEATD_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// testRecord is a record in a fresh schema, dropped when the test ends.
type testRecord struct {
	pg     *Postgres
	admin  *pgxpool.Pool // for setting up and inspecting the schema
	schema string
}

// newSchema creates an empty schema, dropped when the test ends, and
// returns a pool for inspecting it and the URL that selects it.
func newSchema(t *testing.T) (admin *pgxpool.Pool, schema, url string) {
	t.Helper()
	// At most 2 connections: the shared PostgreSQL's 100 serve every
	// package go test runs at once (pgxpool's default grows with the CPUs).
	cfg, err := pgxpool.ParseConfig(testPostgresURL())
	require.NoError(t, err)
	cfg.MaxConns = 2
	admin, err = pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	require.NoError(t, admin.Ping(t.Context()),
		"PostgreSQL is not reachable at %s: start PostgreSQL 15+ there (make services) or set SEATD_TEST_POSTGRES_URL", testPostgresURL())
	schema = "seatd_r_" + strings.ToLower(server.NewID(""))
	_, err = admin.Exec(t.Context(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	u, err := neturl.Parse(testPostgresURL())
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return admin, schema, u.String()
}

func openRecord(t *testing.T) testRecord {
	t.Helper()
	admin, schema, url := newSchema(t)
	pg, err := Open(t.Context(), Options{URL: url, MaxConns: 6, ConnectTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { pg.StopBatches(); pg.Close() })
	return testRecord{pg: pg, admin: admin, schema: schema}
}

func (r testRecord) tenant(t *testing.T) server.Tenant {
	t.Helper()
	tn, err := r.pg.CreateTenant(t.Context(), server.Tenant{ID: server.NewID("tn_"), Name: "t", CreatedAt: time.Now()})
	require.NoError(t, err)
	return tn
}

func (r testRecord) license(t *testing.T, tenantID string) server.License {
	t.Helper()
	now := time.Now()
	l, err := r.pg.CreateLicense(t.Context(), server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: tenantID,
		Key: server.NewID(server.PrefixLicenseKey), Name: "l", Seats: 10, LeaseTTL: time.Hour, LeasingStrategy: server.PerAcquisition,
		Active: true, CreatedAt: now, UpdatedAt: now})
	require.NoError(t, err)
	return l
}

// active records an active lease of lic, as an acquisition alone does.
func (r testRecord) active(t *testing.T, lic server.License, tenantID string) string {
	t.Helper()
	row, err := r.pg.License(t.Context(), lic.ID)
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Microsecond)
	id := server.NewID(server.PrefixLeaseID)
	ok, err := r.pg.InsertSession(t.Context(), &server.Lease{ID: id, LicenseID: lic.ID, TenantID: tenantID, TokenHash: "h",
		Fingerprint: id, State: server.LeaseActive, AcquiredAt: now, LastHeartbeatAt: now, ExpiresAt: now.Add(time.Hour)},
		row.Epoch, row.Version)
	require.NoError(t, err)
	require.True(t, ok)
	return id
}

// TestGroupInsertKeepsEachRowsConditions: a group of inserts where one
// grant is from an outdated live state and one lease id is taken records
// the others and refuses those two exactly as alone.
func TestGroupInsertKeepsEachRowsConditions(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	a, b := r.license(t, tn.ID), r.license(t, tn.ID)
	taken := r.active(t, a, tn.ID)

	var epochA, epochB, versionA, versionB int64
	pg := r.admin
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch, version FROM `+r.schema+`.licenses WHERE id = $1`, a.ID).Scan(&epochA, &versionA))
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch, version FROM `+r.schema+`.licenses WHERE id = $1`, b.ID).Scan(&epochB, &versionB))
	now := time.Now().UTC().Truncate(time.Microsecond)
	lease := func(lic server.License, id string) *server.Lease {
		return &server.Lease{ID: id, LicenseID: lic.ID, TenantID: tn.ID, TokenHash: "h", Fingerprint: id,
			State: server.LeaseActive, AcquiredAt: now, LastHeartbeatAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	calls := []*groupcommit.Call[newSession, bool]{
		{Ctx: t.Context(), Req: newSession{lease(a, server.NewID(server.PrefixLeaseID)), epochA, versionA}},
		{Ctx: t.Context(), Req: newSession{lease(b, server.NewID(server.PrefixLeaseID)), epochB - 1, versionB}}, // outdated
		{Ctx: t.Context(), Req: newSession{lease(a, taken), epochA, versionA}},                                  // id taken
		{Ctx: t.Context(), Req: newSession{lease(b, server.NewID(server.PrefixLeaseID)), epochB, versionB - 1}}, // old settings
		{Ctx: t.Context(), Req: newSession{lease(b, server.NewID(server.PrefixLeaseID)), epochB, versionB}},
	}
	r.pg.runInserts(calls)
	require.NoError(t, calls[0].Err)
	require.True(t, calls[0].Res)
	require.NoError(t, calls[1].Err)
	require.False(t, calls[1].Res, "outdated grant not recorded")
	require.True(t, IsUniqueViolation(calls[2].Err), "taken id: %v", calls[2].Err)
	require.NoError(t, calls[3].Err)
	require.False(t, calls[3].Res, "grant judged by old settings not recorded")
	require.NoError(t, calls[4].Err)
	require.True(t, calls[4].Res)
	for i, want := range []bool{true, false, true, false, true} {
		var n int
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+r.schema+`.sessions WHERE id = $1`,
			calls[i].Req.lease.ID).Scan(&n))
		require.Equal(t, want, n == 1, "row of call %d", i)
	}
}

// TestGroupsDoNotWaitForOthersLocks: a group insert does not wait for a
// license row another transaction holds (a rebuild, a delete) before
// recording the rows of other licenses, and a group release does not wait
// for a lease row another transaction holds before ending the others; the
// held rows are written once the lock goes, as alone.
func TestGroupsDoNotWaitForOthersLocks(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	a, b := r.license(t, tn.ID), r.license(t, tn.ID)
	pg := r.admin
	exists := func(id string) bool {
		var n int
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+r.schema+`.sessions WHERE id = $1`, id).Scan(&n))
		return n == 1
	}
	at := func(id string) (e, v int64) {
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch, version FROM `+r.schema+`.licenses WHERE id = $1`, id).Scan(&e, &v))
		return e, v
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	lease := func(lic server.License) *server.Lease {
		id := server.NewID(server.PrefixLeaseID)
		return &server.Lease{ID: id, LicenseID: lic.ID, TenantID: tn.ID, TokenHash: "h", Fingerprint: id,
			State: server.LeaseActive, AcquiredAt: now, LastHeartbeatAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	newSess := func(lic server.License) newSession {
		e, v := at(lic.ID)
		return newSession{lease(lic), e, v}
	}

	// waitingFor reports whether a statement of the store (query holds
	// its text) waits for a lock that tx holds: a sign that the store got
	// as far as the held row, and that it cannot write that row before
	// the lock goes.
	waitingFor := func(tx pgx.Tx, query string) func() bool {
		var pid int
		require.NoError(t, tx.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
		return func() bool {
			var n int
			err := pg.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
				WHERE $1 = ANY(pg_blocking_pids(pid)) AND position($2 in query) > 0`, pid, query).Scan(&n)
			return err == nil && n > 0
		}
	}
	closed := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}

	// Inserts: license b's row is held FOR UPDATE.
	tx, err := pg.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // also when a check fails
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM `+r.schema+`.licenses WHERE id = $1 FOR UPDATE`, b.ID)
	require.NoError(t, err)
	insertWaits := waitingFor(tx, "INSERT INTO sessions")
	calls := []*groupcommit.Call[newSession, bool]{
		{Ctx: t.Context(), Req: newSess(a)},
		{Ctx: t.Context(), Req: newSess(b)},
		{Ctx: t.Context(), Req: newSess(a)},
	}
	done := make(chan struct{})
	go func() { r.pg.runInserts(calls); close(done) }()
	require.Eventually(t, func() bool { return exists(calls[0].Req.lease.ID) && exists(calls[2].Req.lease.ID) },
		5*time.Second, 10*time.Millisecond, "license a's rows recorded while b's row is held")
	require.Eventually(t, func() bool { return insertWaits() || closed(done) },
		10*time.Second, 10*time.Millisecond, "b's insert waits for its license row")
	require.False(t, closed(done), "b's row recorded while its license row is held")
	require.False(t, exists(calls[1].Req.lease.ID), "b's row recorded while its license row is held")
	require.NoError(t, tx.Rollback(t.Context()))
	<-done
	for _, c := range calls {
		require.NoError(t, c.Err)
		require.True(t, c.Res)
		require.True(t, exists(c.Req.lease.ID))
	}

	// Releases: the row of one lease is held.
	var held []struct{ id, tok string }
	for range 3 {
		held = append(held, struct{ id, tok string }{r.active(t, a, tn.ID), ""})
	}
	tx2, err := pg.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx2.Rollback(context.Background()) })
	_, err = tx2.Exec(t.Context(), `SELECT 1 FROM `+r.schema+`.sessions WHERE id = $1 FOR UPDATE`, held[1].id)
	require.NoError(t, err)
	releaseWaits := waitingFor(tx2, "UPDATE sessions")
	outs := make([]server.Lease, len(held))
	var rels []*groupcommit.Call[releaseReq, bool]
	for i, h := range held {
		rels = append(rels, &groupcommit.Call[releaseReq, bool]{Ctx: t.Context(),
			Req: releaseReq{leaseID: h.id, now: time.Now(), hb: now, deadline: now.Add(time.Hour), out: &outs[i]}})
	}
	done = make(chan struct{})
	go func() { r.pg.runReleases(rels); close(done) }()
	state := func(id string) (st string) {
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT state FROM `+r.schema+`.sessions WHERE id = $1`, id).Scan(&st))
		return st
	}
	require.Eventually(t, func() bool { return state(held[0].id) == "released" && state(held[2].id) == "released" },
		5*time.Second, 10*time.Millisecond, "the other leases released while one row is held")
	require.Eventually(t, func() bool { return releaseWaits() || closed(done) },
		10*time.Second, 10*time.Millisecond, "the held lease's release waits for its row")
	require.False(t, closed(done), "the held lease released while its row is held")
	require.Equal(t, "active", state(held[1].id))
	require.NoError(t, tx2.Rollback(t.Context()))
	<-done
	for i, c := range rels {
		require.NoError(t, c.Err)
		require.True(t, c.Res, "release %d", i)
		require.Equal(t, server.LeaseReleased, outs[i].State)
		require.Equal(t, held[i].id, outs[i].ID)
	}
}

// TestInsertsWriteTheBorrowedEventsOnly: a borrowed lease's insert writes
// its lease.borrowed event in the same statement, alone or in a group,
// and the other leases' inserts (the plain statement, without the event's
// CTE) write none.
func TestInsertsWriteTheBorrowedEventsOnly(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	lic := r.license(t, tn.ID)
	row, err := r.pg.License(t.Context(), lic.ID)
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Microsecond)
	lease := func(borrowed bool) *server.Lease {
		id := server.NewID(server.PrefixLeaseID)
		return &server.Lease{ID: id, LicenseID: lic.ID, TenantID: tn.ID, TokenHash: "h", Fingerprint: id,
			State: server.LeaseActive, AcquiredAt: now, LastHeartbeatAt: now, ExpiresAt: now.Add(time.Hour), Borrowed: borrowed}
	}
	var borrowed, all []string
	group := func(kinds ...bool) {
		var calls []*groupcommit.Call[newSession, bool]
		for _, b := range kinds {
			l := lease(b)
			all = append(all, l.ID)
			if b {
				borrowed = append(borrowed, l.ID)
			}
			calls = append(calls, &groupcommit.Call[newSession, bool]{Ctx: t.Context(), Req: newSession{l, row.Epoch, row.Version}})
		}
		r.pg.runInserts(calls)
		for _, c := range calls {
			require.NoError(t, c.Err)
			require.True(t, c.Res)
		}
	}
	group(false)               // alone, plain
	group(true)                // alone, borrowed
	group(false, false, false) // a group without a borrow
	group(false, true, false, true)

	var n int
	require.NoError(t, r.admin.QueryRow(t.Context(), `SELECT count(*) FROM `+r.schema+`.sessions WHERE id = ANY($1)`, all).Scan(&n))
	require.Equal(t, len(all), n, "every lease recorded")
	rows, err := r.admin.Query(t.Context(), `SELECT subject_id FROM `+r.schema+`.webhook_events WHERE type = 'lease.borrowed' ORDER BY subject_id`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.ElementsMatch(t, borrowed, got, "one lease.borrowed per borrowed lease, none for the others")
	require.NoError(t, r.admin.QueryRow(t.Context(), `SELECT count(*) FROM `+r.schema+`.webhook_events WHERE type <> 'license.created'`).Scan(&n))
	require.Equal(t, len(borrowed), n, "no other event")
}

// TestGroupInsertReadsItsRowsOnce: a group of inserts reads its rows (the
// unnest of its arrays) once, whatever the number of licenses. Without
// the licenses of the group named for the licenses' scan, PostgreSQL
// planned the licenses table (a hundred rows: licenses and their grants)
// as the outer side of a nested loop and unpacked the group's arrays once
// for each of its rows: a group of 14 cost 1.1 ms instead of 0.25 ms there,
// and a feature's acquisition (50 grants: 51 more rows) paid it in make
// bench where the base pool's did not.
func TestGroupInsertReadsItsRowsOnce(t *testing.T) {
	t.Parallel()
	r := openRecord(t)
	tn := r.tenant(t)
	var lic server.License
	for range 100 {
		lic = r.license(t, tn.ID)
	}
	ctx := t.Context()
	var epoch, version int64
	require.NoError(t, r.admin.QueryRow(ctx, `SELECT live_epoch, version FROM `+r.schema+`.licenses WHERE id = $1`, lic.ID).Scan(&epoch, &version))

	const n = 14
	now := time.Now().UTC().Truncate(time.Microsecond)
	args := make([]any, 17)
	cols := func(v string) []string { return slices.Repeat([]string{v}, n) }
	ids := make([]string, n)
	for i := range ids {
		ids[i] = server.NewID(server.PrefixLeaseID)
	}
	args[0], args[1], args[2], args[3], args[4], args[5] = ids, cols(lic.ID), cols("h"), ids, cols(""), cols("")
	args[6], args[7], args[8] = cols("{}"), cols(""), cols("")
	args[9], args[10] = slices.Repeat([]time.Time{now}, n), slices.Repeat([]time.Time{now.Add(time.Hour)}, n)
	args[11], args[12], args[13] = slices.Repeat([]int64{epoch}, n), slices.Repeat([]int64{version}, n), make([]bool, n)
	args[14], args[15], args[16] = cols(""), cols(""), make([][]byte, n)
	for i := range args[16].([][]byte) {
		args[16].([][]byte)[i] = []byte{}
	}

	tx, err := r.pg.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	var plan []byte
	require.NoError(t, tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+insertManySQL, args...).Scan(&plan))
	var root []struct{ Plan planNode }
	require.NoError(t, json.Unmarshal(plan, &root))
	scans := root[0].Plan.find("Function Scan")
	require.NotEmpty(t, scans, "no Function Scan in the plan: %s", plan)
	for _, s := range scans {
		require.Equal(t, 1.0, s.Loops, "the group's rows were unpacked %v times: %s", s.Loops, plan)
	}
	var inserted int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE id = ANY($1)`, ids).Scan(&inserted))
	require.Equal(t, n, inserted)
}

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	Type  string     `json:"Node Type"`
	Loops float64    `json:"Actual Loops"`
	Plans []planNode `json:"Plans"`
}

// find returns the nodes of the tree of the type.
func (p planNode) find(typ string) []planNode {
	var out []planNode
	if p.Type == typ {
		out = append(out, p)
	}
	for _, c := range p.Plans {
		out = append(out, c.find(typ)...)
	}
	return out
}
