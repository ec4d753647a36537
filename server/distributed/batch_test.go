package distributed

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestBatcher: every call gets its own answer, batches respect their
// bounds, and a failing batch fails only its own calls.
func TestBatcher(t *testing.T) {
	t.Parallel()
	var (
		batches, maxSize, running, maxRunning atomic.Int64
		mu                                    sync.Mutex
	)
	b := newBatcher(2, 4, 8, func(batch []*batchCall[int, int]) {
		batches.Add(1)
		n := running.Add(1)
		defer running.Add(-1)
		mu.Lock()
		maxSize.Store(max(maxSize.Load(), int64(len(batch))))
		maxRunning.Store(max(maxRunning.Load(), n))
		mu.Unlock()
		time.Sleep(100 * time.Microsecond)
		for _, c := range batch {
			if c.req < 0 {
				panic("negative")
			}
			c.res = 2 * c.req
		}
	})
	const callers, calls = 64, 200
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				req := g*calls + i
				got, err := b.do(t.Context(), req)
				if err != nil || got != 2*req {
					t.Errorf("do(%d) = %d, %v", req, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, maxSize.Load(), int64(8), "calls per batch")
	require.LessOrEqual(t, maxRunning.Load(), int64(2), "batches at once")
	require.Less(t, batches.Load(), int64(callers*calls), "calls were grouped")

	// A panic fails the calls of its batch, nothing else.
	_, err := b.do(t.Context(), -1)
	require.ErrorContains(t, err, "panicked")
	got, err := b.do(t.Context(), 21)
	require.NoError(t, err)
	require.Equal(t, 42, got)

	// A caller that gave up before its batch ran is answered with its
	// context's error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b2 := newBatcher(1, 1, 8, func(batch []*batchCall[int, int]) {
		for _, c := range liveCalls(batch) {
			c.res = c.req
		}
	})
	_, err = b2.do(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)

	b.stop()
	_, err = b.do(t.Context(), 1)
	require.ErrorIs(t, err, errBatcherStopped)
}

// TestConcurrentHotPath: many concurrent acquisitions, heartbeats and
// releases on several licenses (so batches mix licenses) keep every seat
// limit, record every granted lease once, and give each call its own
// answer, including failures mixed into the same batches.
func TestConcurrentHotPath(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	const seats, perLicense = 5, 12
	var lics []server.License
	for range 3 {
		lics = append(lics, mkLicense(t, s, tn.ID, seats, time.Hour))
	}

	type held struct {
		lease server.Lease
		token string
	}
	var (
		mu      sync.Mutex
		granted = map[string][]held{}
		wg      sync.WaitGroup
	)
	for _, l := range lics {
		for i := range perLicense {
			wg.Go(func() {
				r, tok, err := tryAcq(t.Context(), s, l.Key, fmt.Sprintf("fp-%d", i))
				if err != nil {
					if server.ErrorReason(err) != server.ReasonSeatsExhausted {
						t.Errorf("acquire on %s: %v", l.ID, err)
					}
					return
				}
				mu.Lock()
				granted[l.ID] = append(granted[l.ID], held{r.Lease, tok})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	pg, _ := testServers(t)
	for _, l := range lics {
		require.Len(t, granted[l.ID], seats, "seats granted on %s", l.ID)
		var active int
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.sessions
			WHERE license_id = $1 AND state = 'active'`, l.ID).Scan(&active))
		require.Equal(t, seats, active, "recorded active leases on %s", l.ID)
		n, err := s.SeatsInUse(t.Context(), tn.ID, l.ID)
		require.NoError(t, err)
		require.Equal(t, seats, n)
	}

	// Heartbeats, good and bad, at once.
	for _, l := range lics {
		for i, h := range granted[l.ID] {
			wg.Go(func() {
				got, err := s.Heartbeat(t.Context(), h.lease.ID, server.HashSecret(h.token))
				if err != nil || got.ID != h.lease.ID || got.LicenseID != l.ID || !got.ExpiresAt.After(h.lease.ExpiresAt.Add(-time.Millisecond)) {
					t.Errorf("heartbeat %s: %+v, %v", h.lease.ID, got, err)
				}
			})
			if i == 0 {
				wg.Go(func() {
					_, err := s.Heartbeat(t.Context(), h.lease.ID, server.HashSecret("wrong"))
					if server.ErrorReason(err) != server.ReasonLeaseTokenWrong {
						t.Errorf("heartbeat with a wrong token: %v", err)
					}
				})
			}
		}
	}
	wg.Wait()

	// Releases at once, each lease twice: one release ends it, the other
	// finds it released (idempotent); a wrong token is refused.
	var releasedOK atomic.Int64
	for _, l := range lics {
		for _, h := range granted[l.ID] {
			for range 2 {
				wg.Go(func() {
					got, err := s.Release(t.Context(), h.lease.ID, server.HashSecret(h.token))
					if err != nil || got.State != server.LeaseReleased || got.ID != h.lease.ID {
						t.Errorf("release %s: %+v, %v", h.lease.ID, got, err)
						return
					}
					releasedOK.Add(1)
				})
			}
			wg.Go(func() {
				_, err := s.Release(t.Context(), h.lease.ID, server.HashSecret("wrong"))
				if server.ErrorReason(err) != server.ReasonLeaseTokenWrong {
					t.Errorf("release with a wrong token: %v", err)
				}
			})
		}
	}
	wg.Wait()
	require.EqualValues(t, 2*seats*len(lics), releasedOK.Load())
	var usage int
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.usage_events`).Scan(&usage))
	require.Equal(t, seats*len(lics), usage, "one usage event per lease")
	for _, l := range lics {
		n, err := s.SeatsInUse(t.Context(), tn.ID, l.ID)
		require.NoError(t, err)
		require.Zero(t, n, "seats in use on %s after the releases", l.ID)
	}
}

// TestGroupInsertKeepsEachRowsConditions: a group of inserts where one
// grant is from an outdated live state and one lease id is taken records
// the others and refuses those two exactly as alone.
func TestGroupInsertKeepsEachRowsConditions(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	a, b := mkLicense(t, s, tn.ID, 10, time.Hour), mkLicense(t, s, tn.ID, 10, time.Hour)
	require.NoError(t, s.ensureLive(t.Context(), a.ID))
	require.NoError(t, s.ensureLive(t.Context(), b.ID))
	taken, _ := acq(t, s, a.Key, "taken")

	var epochA, epochB, versionA, versionB int64
	pg, _ := testServers(t)
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch, version FROM `+loc.schema+`.licenses WHERE id = $1`, a.ID).Scan(&epochA, &versionA))
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch, version FROM `+loc.schema+`.licenses WHERE id = $1`, b.ID).Scan(&epochB, &versionB))
	now := time.Now().UTC().Truncate(time.Microsecond)
	lease := func(lic server.License, id string) *server.Lease {
		return &server.Lease{ID: id, LicenseID: lic.ID, TenantID: tn.ID, TokenHash: "h", Fingerprint: id,
			State: server.LeaseActive, AcquiredAt: now, LastHeartbeatAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	calls := []*batchCall[newSession, bool]{
		{ctx: t.Context(), req: newSession{lease(a, server.NewID(server.PrefixLeaseID)), epochA, versionA}},
		{ctx: t.Context(), req: newSession{lease(b, server.NewID(server.PrefixLeaseID)), epochB - 1, versionB}}, // outdated
		{ctx: t.Context(), req: newSession{lease(a, taken.Lease.ID), epochA, versionA}},                         // id taken
		{ctx: t.Context(), req: newSession{lease(b, server.NewID(server.PrefixLeaseID)), epochB, versionB - 1}}, // old settings
		{ctx: t.Context(), req: newSession{lease(b, server.NewID(server.PrefixLeaseID)), epochB, versionB}},
	}
	s.runInserts(calls)
	require.NoError(t, calls[0].err)
	require.True(t, calls[0].res)
	require.NoError(t, calls[1].err)
	require.False(t, calls[1].res, "outdated grant not recorded")
	require.True(t, isCode(calls[2].err, pgUniqueViolation), "taken id: %v", calls[2].err)
	require.NoError(t, calls[3].err)
	require.False(t, calls[3].res, "grant judged by old settings not recorded")
	require.NoError(t, calls[4].err)
	require.True(t, calls[4].res)
	for i, want := range []bool{true, false, true, false, true} {
		var n int
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.sessions WHERE id = $1`,
			calls[i].req.lease.ID).Scan(&n))
		require.Equal(t, want, n == 1, "row of call %d", i)
	}
}

// TestHotScriptsAfterScriptFlush: a pipeline whose scripts Redis no longer
// knows (restart, SCRIPT FLUSH) falls back to EVAL for each run.
func TestHotScriptsAfterScriptFlush(t *testing.T) {
	_, s, tn := openStore(t, nil)
	type held struct{ id, tokenHash string }
	var leases []held
	for range 3 {
		l := mkLicense(t, s, tn.ID, 5, time.Hour)
		for i := range 3 {
			r, tok := acq(t, s, l.Key, fmt.Sprint(i))
			leases = append(leases, held{r.Lease.ID, server.HashSecret(tok)})
		}
	}
	_, rdb := testServers(t)
	require.NoError(t, rdb.ScriptFlush(t.Context()).Err())
	// One batch with runs for three licenses: a pipeline.
	var calls []*batchCall[licReq, licRes]
	for _, l := range leases {
		info, err := s.leaseInfoOf(t.Context(), l.id)
		require.NoError(t, err)
		calls = append(calls, &batchCall[licReq, licRes]{ctx: t.Context(),
			req: licReq{scriptHeartbeat, info.LicenseID, []any{l.id, l.tokenHash}}})
	}
	s.runLicenseScripts(calls)
	for _, c := range calls {
		require.NoError(t, c.err)
		require.EqualValues(t, 0, num(c.res.own[0]), "renewed")
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(leases))
	require.NoError(t, rdb.ScriptFlush(t.Context()).Err())
	for _, l := range leases {
		wg.Go(func() {
			_, err := s.Heartbeat(t.Context(), l.id, l.tokenHash)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestGroupsDoNotWaitForOthersLocks: a group insert does not wait for a
// license row another transaction holds (a rebuild, a delete) before
// recording the rows of other licenses, and a group release does not wait
// for a lease row another transaction holds before ending the others; the
// held rows are written once the lock goes, as alone.
func TestGroupsDoNotWaitForOthersLocks(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	a, b := mkLicense(t, s, tn.ID, 10, time.Hour), mkLicense(t, s, tn.ID, 10, time.Hour)
	require.NoError(t, s.ensureLive(t.Context(), a.ID))
	require.NoError(t, s.ensureLive(t.Context(), b.ID))
	pg, _ := testServers(t)
	exists := func(id string) bool {
		var n int
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.sessions WHERE id = $1`, id).Scan(&n))
		return n == 1
	}
	at := func(id string) (e, v int64) {
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch, version FROM `+loc.schema+`.licenses WHERE id = $1`, id).Scan(&e, &v))
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
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM `+loc.schema+`.licenses WHERE id = $1 FOR UPDATE`, b.ID)
	require.NoError(t, err)
	insertWaits := waitingFor(tx, "INSERT INTO sessions")
	calls := []*batchCall[newSession, bool]{
		{ctx: t.Context(), req: newSess(a)},
		{ctx: t.Context(), req: newSess(b)},
		{ctx: t.Context(), req: newSess(a)},
	}
	done := make(chan struct{})
	go func() { s.runInserts(calls); close(done) }()
	require.Eventually(t, func() bool { return exists(calls[0].req.lease.ID) && exists(calls[2].req.lease.ID) },
		5*time.Second, 10*time.Millisecond, "license a's rows recorded while b's row is held")
	require.Eventually(t, func() bool { return insertWaits() || closed(done) },
		10*time.Second, 10*time.Millisecond, "b's insert waits for its license row")
	require.False(t, closed(done), "b's row recorded while its license row is held")
	require.False(t, exists(calls[1].req.lease.ID), "b's row recorded while its license row is held")
	require.NoError(t, tx.Rollback(t.Context()))
	<-done
	for _, c := range calls {
		require.NoError(t, c.err)
		require.True(t, c.res)
		require.True(t, exists(c.req.lease.ID))
	}

	// Releases: the row of one lease is held.
	var held []struct{ id, tok string }
	for i := range 3 {
		r, tok := acq(t, s, a.Key, fmt.Sprint("rel-", i))
		held = append(held, struct{ id, tok string }{r.Lease.ID, tok})
	}
	tx2, err := pg.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx2.Rollback(context.Background()) })
	_, err = tx2.Exec(t.Context(), `SELECT 1 FROM `+loc.schema+`.sessions WHERE id = $1 FOR UPDATE`, held[1].id)
	require.NoError(t, err)
	releaseWaits := waitingFor(tx2, "UPDATE sessions")
	outs := make([]server.Lease, len(held))
	var rels []*batchCall[releaseReq, bool]
	for i, h := range held {
		rels = append(rels, &batchCall[releaseReq, bool]{ctx: t.Context(),
			req: releaseReq{leaseID: h.id, now: time.Now(), hb: now, deadline: now.Add(time.Hour), out: &outs[i]}})
	}
	done = make(chan struct{})
	go func() { s.runReleases(rels); close(done) }()
	state := func(id string) (st string) {
		require.NoError(t, pg.QueryRow(t.Context(), `SELECT state FROM `+loc.schema+`.sessions WHERE id = $1`, id).Scan(&st))
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
		require.NoError(t, c.err)
		require.True(t, c.res, "release %d", i)
		require.Equal(t, server.LeaseReleased, outs[i].State)
		require.Equal(t, held[i].id, outs[i].ID)
	}
}

// TestHeartbeatsOfOneLeaseTogether: heartbeats of one lease that arrive
// together run in one heartbeat.lua call, which writes its renewals once at
// the end: every one of them is renewed, and the live deadline is the
// latest one answered.
func TestHeartbeatsOfOneLeaseTogether(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	r, tok := acq(t, s, lic.Key, "together")
	other, otherTok := acq(t, s, lic.Key, "other")

	var (
		mu     sync.Mutex
		latest time.Time
		wg     sync.WaitGroup
	)
	for i := range 64 {
		wg.Go(func() {
			id, hash := r.Lease.ID, server.HashSecret(tok)
			if i%4 == 3 {
				id, hash = other.Lease.ID, server.HashSecret(otherTok)
			}
			got, err := s.Heartbeat(t.Context(), id, hash)
			if err != nil {
				t.Errorf("heartbeat %d of %s: %v", i, id, err)
				return
			}
			if id == r.Lease.ID {
				mu.Lock()
				if got.ExpiresAt.After(latest) {
					latest = got.ExpiresAt
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	_, rdb := testServers(t)
	score, err := rdb.ZScore(t.Context(), keyspace{loc.prefix}.license(lic.ID)[2], r.Lease.ID).Result()
	require.NoError(t, err)
	require.Equal(t, latest.UnixMicro(), int64(score), "live deadline, latest renewal answered %s", latest)
}

// TestBatcherStopWaitsForTheRunningBatch: stop returns only once the batch
// in flight has answered its callers (a store closes its pools after it).
func TestBatcherStopWaitsForTheRunningBatch(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	b := newBatcher(1, 1, 8, func(batch []*batchCall[int, int]) {
		close(started)
		<-release
		for _, c := range batch {
			c.res = c.req
		}
	})
	answered := make(chan error, 1)
	go func() {
		_, err := b.do(t.Context(), 1)
		answered <- err
	}()
	<-started
	var released atomic.Bool
	stopped := make(chan bool, 1)
	go func() {
		b.stop()
		stopped <- released.Load()
	}()
	// stop holds the lock until it waits: once it has marked the batcher
	// stopped and let go of the lock, it is waiting.
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.stopped
	}, 10*time.Second, time.Millisecond)
	released.Store(true)
	close(release)
	select {
	case afterRelease := <-stopped:
		require.True(t, afterRelease, "stop returned while the batch was running")
	case <-time.After(30 * time.Second):
		t.Fatal("stop did not return after the running batch ended")
	}
	require.NoError(t, <-answered)
}
