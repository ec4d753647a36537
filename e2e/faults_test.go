package e2e

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// Phases of a fault test. Calls are judged by the phase they started in.
const (
	phaseBefore int32 = iota // all backends up
	phaseFault               // from the fault until the service has recovered
	phaseAfter               // recovered
)

var phaseNames = [...]string{"before", "fault", "after"}

// load runs background clients until stopped.
type load struct {
	phase    atomic.Int32
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	out      *tally
}

// newLoad returns a load that ends, at the latest, when the test does.
func newLoad(t testing.TB) *load {
	l := &load{stop: make(chan struct{}), out: newTally()}
	t.Cleanup(l.end)
	return l
}

// loop runs f every pause until the load stops.
func (l *load) loop(pause time.Duration, f func(n int, phase int32)) {
	l.wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-l.stop:
				return
			default:
			}
			f(n, l.phase.Load())
			select {
			case <-l.stop:
				return
			case <-time.After(pause):
			}
		}
	})
}

// note counts the outcome of a call as "<phase> <what> <outcome>", flags
// internal detail in its message, and returns the outcome.
func (l *load) note(phase int32, what string, err error) string {
	out := outcome(err)
	l.out.add(phaseNames[phase] + " " + what + " " + out)
	if leak := leakedDetail(err); leak != "" {
		l.out.bad("%s %s: the error message shows internal detail %q: %v", phaseNames[phase], what, leak, err)
	}
	return out
}

func (l *load) count(phase int32, what, out string) int {
	return l.out.get(phaseNames[phase] + " " + what + " " + out)
}

// overlapsFault tells whether a call that started in phase start and ends
// now overlapped the fault (so UNAVAILABLE is allowed).
func (l *load) overlapsFault(start int32) bool {
	return start <= phaseFault && l.phase.Load() >= phaseFault
}

func (l *load) end() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// TestDistributedRedisRestartEmpty: Redis is killed under load and a new,
// empty one takes its place (invariant 7). While it is gone, calls fail with
// UNAVAILABLE only; afterwards the live leases are rebuilt from
// PostgreSQL: the held leases heartbeat on with their old tokens, the
// license stays full, and one released seat goes to exactly one client.
func TestDistributedRedisRestartEmpty(t *testing.T) {
	t.Parallel()
	const seats = 10
	rs := startPrivateRedis(t)
	b := sharedBackend(t, rs.URL())
	procs := b.startCluster(t, 3, "redisloss", "--heartbeat-flush-interval", "500ms")
	ctx := t.Context()
	lic := newLicense(t, procs[0], seats, 30*time.Second, "redis-loss")

	held := make([]*seatdv1.AcquireSeatResponse, seats)
	for i := range held {
		a, err := procs[i%3].acquire(ctx, lic.GetKey(), fmt.Sprintf("held-%d", i))
		require.NoError(t, err)
		held[i] = a
		for _, p := range procs { // every instance knows the lease
			_, err := p.heartbeat(ctx, a)
			require.NoError(t, err)
		}
	}

	ld := newLoad(t)
	granted := make(chan *seatdv1.AcquireSeatResponse, 100)
	for i, h := range held {
		ld.loop(100*time.Millisecond, func(n int, phase int32) {
			_, err := procs[(i+n)%3].heartbeat(ctx, h)
			out := ld.note(phase, "heartbeat", err)
			if out != outOK && !(ld.overlapsFault(phase) && isUnavailable(out)) {
				ld.out.bad("%s: heartbeat of held lease %d: %v", phaseNames[phase], i, err)
			}
		})
	}
	for k := range 5 {
		ld.loop(20*time.Millisecond, func(n int, phase int32) {
			a, err := procs[(k+n)%3].acquire(ctx, lic.GetKey(), fmt.Sprintf("hammer-%d-%d", k, n))
			out := ld.note(phase, "acquire", err)
			switch {
			case err == nil:
				select {
				case granted <- a:
				default:
				}
				ld.out.bad("%s: a seat beyond the limit was granted: %v", phaseNames[phase], a.GetLease().GetId())
			case out == outExhausted:
			case ld.overlapsFault(phase) && isUnavailable(out):
			default:
				ld.out.bad("%s: acquire: %v", phaseNames[phase], err)
			}
		})
	}
	eventually(t, eventTimeout, "load before the fault", func() bool {
		return ld.count(phaseBefore, "heartbeat", outOK) >= 30 && ld.count(phaseBefore, "acquire", outExhausted) >= 20
	})

	// Zombies-to-be on a license nobody uses after Redis is lost: only the
	// record knows them then, and cleanup must still find them.
	idle := newLicense(t, procs[0], 5, time.Second, "idle")
	idleIDs := map[string]bool{}
	for i := range 2 {
		a, err := procs[i].acquire(ctx, idle.GetKey(), fmt.Sprintf("idle-%d", i))
		require.NoError(t, err)
		idleIDs[a.GetLease().GetId()] = true
	}

	ld.phase.Store(phaseFault)
	rs.kill()
	killedAt := time.Now()
	eventually(t, eventTimeout, "UNAVAILABLE while Redis is gone", func() bool {
		return ld.count(phaseFault, "heartbeat", "UNAVAILABLE/BACKEND_UNAVAILABLE")+ld.count(phaseFault, "heartbeat", "UNAVAILABLE") > 0 &&
			ld.count(phaseFault, "acquire", "UNAVAILABLE/BACKEND_UNAVAILABLE")+ld.count(phaseFault, "acquire", "UNAVAILABLE") > 0
	})
	rs.restartEmpty()
	restartedAt := time.Now()
	t.Logf("Redis was down for %s", restartedAt.Sub(killedAt).Round(time.Millisecond))

	// Recovered: every held lease heartbeats through every instance, and
	// the license is still full.
	recovered := func() bool {
		for _, h := range held {
			for _, p := range procs {
				_, err := p.heartbeat(ctx, h)
				if out := outcome(err); out != outOK {
					if !isUnavailable(out) {
						ld.out.bad("recovery: heartbeat: %v", err)
					}
					return false
				}
			}
		}
		for i, p := range procs {
			a, err := p.acquire(ctx, lic.GetKey(), fmt.Sprintf("probe-%d", i))
			switch out := outcome(err); {
			case err == nil:
				select {
				case granted <- a:
				default:
				}
				ld.out.bad("recovery: a seat beyond the limit was granted")
			case out != outExhausted:
				if !isUnavailable(out) {
					ld.out.bad("recovery: acquire: %v", err)
				}
				return false
			}
		}
		return true
	}
	eventually(t, eventTimeout, "recovery after Redis restarted empty", recovered)
	t.Logf("recovered %s after Redis restarted", time.Since(restartedAt).Round(time.Millisecond))
	ld.phase.Store(phaseAfter)
	eventually(t, eventTimeout, "load after recovery", func() bool {
		return ld.count(phaseAfter, "heartbeat", outOK) >= 30 && ld.count(phaseAfter, "acquire", outExhausted) >= 20
	})
	ld.end()
	t.Logf("outcomes:\n%s", ld.out)
	ld.out.requireNoUnexpected(t)
	require.Empty(t, granted, "no seat beyond the limit")

	rebuilt := false
	for _, p := range procs {
		rebuilt = rebuilt || strings.Contains(p.Output(), "built live state of license from PostgreSQL")
	}
	require.True(t, rebuilt, "an instance rebuilt the license's live state from PostgreSQL")
	var rebuilds, flushed float64
	for _, p := range procs {
		rebuilds += p.metricSum(t, "seatd_live_state_rebuilds_total")
		flushed += p.metricSum(t, "seatd_heartbeats_flushed_total")
	}
	require.GreaterOrEqual(t, rebuilds, 1.0, "/metrics counts the rebuild")
	require.Positive(t, flushed, "/metrics counts heartbeats written behind")

	// Old tokens still work everywhere; the record agrees.
	for i, h := range held {
		for _, p := range procs {
			_, err := p.heartbeat(ctx, h)
			require.NoError(t, err, "held lease %d with its old token", i)
		}
	}
	db := b.db(t)
	require.Equal(t, seats, countActive(t, db, lic.GetId()))
	require.Len(t, procs[2].leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE), seats)

	// One seat freed: exactly one of many clients gets it.
	_, err := procs[1].release(ctx, held[0])
	require.NoError(t, err)
	w := acquireWave(t, procs, lic.GetKey(), "after", 60)
	require.Len(t, w.granted, 1, "the one free seat goes to exactly one client")
	require.Equal(t, 59, w.exhausted)
	require.LessOrEqual(t, w.maxInUse, int32(seats))
	require.Equal(t, seats, countActive(t, db, lic.GetId()))

	// The idle license's zombies, forgotten by Redis, are found from the
	// record and expired once.
	idleFrom := time.Now()
	eventually(t, eventTimeout, "cleanup of zombies Redis forgot", func() bool {
		if countActive(t, db, idle.GetId()) == 0 {
			return true
		}
		for _, p := range procs {
			run, err := p.cleanupNow(ctx)
			require.NoError(t, err)
			require.NotEqual(t, "failed", run.GetResult(), "%v", run)
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})
	t.Logf("zombies Redis forgot were expired %s after the first cleanup call", time.Since(idleFrom).Round(time.Millisecond))
	idleRecs := leaseRecords(t, db, idle.GetId())
	require.Len(t, idleRecs, len(idleIDs), "the record holds every idle lease, and no other")
	for id, r := range idleRecs {
		require.True(t, idleIDs[id])
		require.Equal(t, "expired", r.State, "idle lease %s", id)
		require.Equal(t, 1, r.CleanupEvents, "idle lease %s", id)
	}
	requireExactlyOnceRecords(t, db)
	stopAllOK(t, procs...)
}

// TestDistributedPostgresRestart: PostgreSQL crashes (immediate stop, every
// connection dropped) under load and comes back 3s later. Meanwhile calls
// succeed or fail with UNAVAILABLE only; seatd recovers by itself; every
// granted lease is recorded, ends in one state, and has at most (after its
// end exactly) one usage event.
func TestDistributedPostgresRestart(t *testing.T) {
	t.Parallel()
	const (
		ttl    = 5 * time.Second
		outage = 3 * time.Second
	)
	pgc := startPrivatePostgres(t)
	rs := startPrivateRedis(t)
	b := privateBackend(pgc, rs.URL())
	procs := b.startCluster(t, 2, "pgrestart",
		"--heartbeat-flush-interval", "500ms",
		"--leader-ping-interval", "500ms", "--leader-retry-interval", "500ms")
	ctx := t.Context()
	lic := newLicense(t, procs[0], 40, ttl, "pg-restart")
	waitForOneLeader(t, procs, eventTimeout)

	held := make([]*seatdv1.AcquireSeatResponse, 3)
	for i := range held {
		a, err := procs[i%2].acquire(ctx, lic.GetKey(), fmt.Sprintf("held-%d", i))
		require.NoError(t, err)
		held[i] = a
		for _, p := range procs {
			_, err := p.heartbeat(ctx, a)
			require.NoError(t, err)
		}
	}

	ld := newLoad(t)
	allowed := func(phase int32, out string, ok ...string) bool {
		for _, o := range ok {
			if out == o {
				return true
			}
		}
		return ld.overlapsFault(phase) && isUnavailable(out)
	}
	for i, h := range held {
		ld.loop(150*time.Millisecond, func(n int, phase int32) {
			_, err := procs[(i+n)%2].heartbeat(ctx, h)
			out := ld.note(phase, "heartbeat", err)
			if !allowed(phase, out, outOK) {
				ld.out.bad("%s: heartbeat of held lease %d: %v", phaseNames[phase], i, err)
			}
		})
	}
	var (
		recMu    sync.Mutex
		grants   = map[string]bool{} // lease id -> released
		released = map[string]bool{}
		// Releases retried past the lease's deadline (LEASE_EXPIRED).
		expiredUnreleased = map[string]bool{}
	)
	for k := range 4 {
		ld.loop(30*time.Millisecond, func(n int, phase int32) {
			a, err := procs[(k+n)%2].acquire(ctx, lic.GetKey(), fmt.Sprintf("churn-%d-%d", k, n))
			out := ld.note(phase, "acquire", err)
			if !allowed(phase, out, outOK, outExhausted) {
				ld.out.bad("%s: acquire: %v", phaseNames[phase], err)
			}
			if err != nil {
				return
			}
			id := a.GetLease().GetId()
			recMu.Lock()
			grants[id] = true
			recMu.Unlock()
			// The earliest deadline the lease can have: a heartbeat that
			// failed may or may not have renewed it, so past the acquire's
			// deadline LEASE_EXPIRED may be the truth.
			deadline := a.GetLease().GetExpiresAt().AsTime()
			hbPhase := ld.phase.Load()
			hb, err := procs[(k+n+1)%2].heartbeat(ctx, a)
			out = ld.note(hbPhase, "heartbeat", err)
			if !allowed(hbPhase, out, outOK) {
				ld.out.bad("%s: heartbeat of a new lease: %v", phaseNames[hbPhase], err)
			}
			if err == nil {
				deadline = hb.GetExpiresAt().AsTime()
			}
			// Release it, retrying UNAVAILABLE as the shipped client does,
			// for as long as the outage may last.
			for try := 0; ; try++ {
				p := ld.phase.Load()
				_, err := procs[(k+n+try+1)%2].release(ctx, a)
				out := ld.note(p, "release", err)
				if err == nil {
					recMu.Lock()
					released[id] = true
					recMu.Unlock()
					return
				}
				if expiredWhileRetrying(out, deadline) {
					recMu.Lock()
					expiredUnreleased[id] = true
					recMu.Unlock()
					return
				}
				if !allowed(p, out) {
					ld.out.bad("%s: release: %v", phaseNames[p], err)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	eventually(t, eventTimeout, "load before the fault", func() bool {
		return ld.count(phaseBefore, "release", outOK) >= 10 && ld.count(phaseBefore, "heartbeat", outOK) >= 10
	})

	ld.phase.Store(phaseFault)
	pgc.stop("immediate")
	stoppedAt := time.Now()
	// Probed here, not left to the churn: its callers may all be retrying
	// releases, which answer UNAVAILABLE until PostgreSQL is back (an
	// expiry is recorded before anyone is told).
	probes := 0
	eventually(t, eventTimeout, "an UNAVAILABLE acquire while PostgreSQL is down", func() bool {
		probes++
		a, err := procs[probes%2].acquire(ctx, lic.GetKey(), fmt.Sprintf("outage-probe-%d", probes))
		if err == nil { // PostgreSQL not down yet: a grant like the others
			recMu.Lock()
			grants[a.GetLease().GetId()] = true
			recMu.Unlock()
		}
		return isUnavailable(ld.note(phaseFault, "acquire", err))
	})
	time.Sleep(time.Until(stoppedAt.Add(outage))) // the outage lasts 3s
	pgc.start()
	startedAt := time.Now()

	// Recovery: acquire and release work through every instance, 10 times
	// in a row, without restarting seatd.
	fp := 0
	eventually(t, eventTimeout, "acquire and release working again", func() bool {
		for _, p := range procs {
			for range 10 {
				fp++
				a, err := p.acquire(ctx, lic.GetKey(), fmt.Sprintf("probe-%d", fp))
				if err != nil {
					if !isUnavailable(outcome(err)) {
						ld.out.bad("recovery: acquire: %v", err)
					}
					return false
				}
				recMu.Lock()
				grants[a.GetLease().GetId()] = true
				recMu.Unlock()
				if _, err := p.release(ctx, a); err != nil {
					// Retried by the churn check below: the release must
					// succeed eventually.
					for try := 0; err != nil && isUnavailable(outcome(err)) && try < 100; try++ {
						time.Sleep(100 * time.Millisecond)
						_, err = p.release(ctx, a)
					}
					expired := err != nil && expiredWhileRetrying(outcome(err), a.GetLease().GetExpiresAt().AsTime())
					if err != nil && !expired {
						ld.out.bad("recovery: release: %v", err)
					}
					recMu.Lock()
					released[a.GetLease().GetId()] = err == nil
					expiredUnreleased[a.GetLease().GetId()] = expired
					recMu.Unlock()
					return false
				}
				recMu.Lock()
				released[a.GetLease().GetId()] = true
				recMu.Unlock()
			}
		}
		return true
	})
	t.Logf("PostgreSQL was down %s; seatd recovered %s after it came back", startedAt.Sub(stoppedAt).Round(time.Millisecond), time.Since(startedAt).Round(time.Millisecond))
	ld.phase.Store(phaseAfter)
	afterFrom := ld.count(phaseAfter, "release", outOK)
	eventually(t, eventTimeout, "load after recovery", func() bool {
		return ld.count(phaseAfter, "release", outOK) >= afterFrom+10
	})
	ld.end()
	t.Logf("outcomes:\n%s", ld.out)
	ld.out.requireNoUnexpected(t)
	for i, h := range held {
		_, err := procs[i%2].release(ctx, h)
		require.NoError(t, err, "release held lease %d", i)
		released[h.GetLease().GetId()] = true
		grants[h.GetLease().GetId()] = true
	}

	// Leases whose acquisition failed in the outage may be recorded as
	// active and hold no seat; cleanup expires them after their deadline.
	db := b.db(t)
	eventually(t, ttl+eventTimeout, "no active lease left", func() bool {
		if countActive(t, db, lic.GetId()) == 0 {
			return true
		}
		for _, p := range procs {
			_, _ = p.cleanupNow(ctx)
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})
	recs := leaseRecords(t, db, lic.GetId())
	for id := range grants {
		r, ok := recs[id]
		require.True(t, ok, "granted lease %s is recorded", id)
		if released[id] {
			require.Equal(t, "released", r.State, "lease %s was released", id)
		}
		if expiredUnreleased[id] {
			require.Equal(t, "expired", r.State, "lease %s: its release came after its deadline", id)
		}
	}
	ends := map[string]int{}
	for id, r := range recs {
		require.NotEqual(t, "active", r.State, "lease %s", id)
		require.Equal(t, 1, r.UsageEvents, "lease %s (%s): usage events", id, r.State)
		ends[r.State]++
	}
	t.Logf("%d leases recorded, %d granted to clients; end states %v", len(recs), len(grants), ends)
	requireExactlyOnceRecords(t, db)
	waitForOneLeader(t, procs, eventTimeout)
	stopAllOK(t, procs...)
}

// expiredWhileRetrying: a release retried through an outage that outlasted
// the lease finds it expired. That is strict expiry at work, not a failure:
// nobody renewed the lease before its deadline, so the seat is gone.
func expiredWhileRetrying(out string, deadline time.Time) bool {
	return out == outExpired && time.Now().After(deadline)
}

// TestDistributedCleanupPostgresDown: a cleanup pass while PostgreSQL is
// down reports failure and removes nothing (invariant 6): live leases keep
// heartbeating (Redis only) and the zombies stay for the next pass, which,
// once PostgreSQL is back, expires each of them exactly once.
func TestDistributedCleanupPostgresDown(t *testing.T) {
	t.Parallel()
	const zombies, live = 5, 3
	pgc := startPrivatePostgres(t)
	rs := startPrivateRedis(t)
	b := privateBackend(pgc, rs.URL())
	// A long retry interval: after PostgreSQL comes back no instance
	// leads (and runs a scheduled pass) within the test, so the manual
	// passes account for every zombie.
	procs := b.startCluster(t, 2, "pgdown",
		"--heartbeat-flush-interval", "500ms",
		"--leader-ping-interval", "500ms", "--leader-retry-interval", "1h")
	ctx := t.Context()
	zlic := newLicense(t, procs[0], 10, time.Second, "zombies")
	llic := newLicense(t, procs[1], 10, time.Minute, "live")

	var latest time.Time
	zombieIDs := map[string]bool{}
	for i := range zombies {
		a, err := procs[i%2].acquire(ctx, zlic.GetKey(), fmt.Sprintf("zombie-%d", i))
		require.NoError(t, err)
		zombieIDs[a.GetLease().GetId()] = true
		latest = maxTime(latest, a.GetLease().GetExpiresAt().AsTime())
	}
	liveLeases := make([]*seatdv1.AcquireSeatResponse, live)
	for i := range liveLeases {
		a, err := procs[i%2].acquire(ctx, llic.GetKey(), fmt.Sprintf("live-%d", i))
		require.NoError(t, err)
		liveLeases[i] = a
		for _, p := range procs {
			_, err := p.heartbeat(ctx, a)
			require.NoError(t, err)
		}
	}
	time.Sleep(time.Until(latest) + 200*time.Millisecond) // TTL wait: the zombies are due

	pgc.stop("fast")
	stoppedAt := time.Now()
	for i, p := range procs {
		run, err := p.cleanupNow(ctx)
		require.NoError(t, err, "Cleanup answers with its run even when PostgreSQL is down")
		require.Contains(t, []string{"failed", "partial"}, run.GetResult(), "instance %d: %v", i, run)
		require.Positive(t, run.GetErrors(), "instance %d: %v", i, run)
		require.Zero(t, run.GetExpired(), "nothing can be recorded without PostgreSQL: %v", run)
	}
	outageDeadline := map[string]time.Time{} // the newest deadline each live lease got meanwhile
	for i, l := range liveLeases {
		for _, p := range procs {
			resp, err := p.heartbeat(ctx, l)
			require.NoError(t, err, "live lease %d heartbeats while PostgreSQL is down", i)
			require.True(t, resp.GetExpiresAt().AsTime().After(l.GetLease().GetExpiresAt().AsTime()))
			outageDeadline[l.GetLease().GetId()] = maxTime(outageDeadline[l.GetLease().GetId()], resp.GetExpiresAt().AsTime())
		}
	}
	_, err := procs[0].acquire(ctx, zlic.GetKey(), "zombie-0")
	require.Equal(t, "UNAVAILABLE/BACKEND_UNAVAILABLE", outcome(err), "acquire without PostgreSQL: %v", err)
	require.Empty(t, leakedDetail(err), "%v", err)
	// Cleanup status still answers what the instance knows locally; only
	// who leads (asked of PostgreSQL) may be missing.
	st, err := procs[1].cleanupStatus(ctx)
	require.NoError(t, err, "cleanup status without PostgreSQL")
	require.NotEmpty(t, st.GetInstanceId())
	if st.GetIsLeader() {
		require.Equal(t, st.GetInstanceId(), st.GetLeaderId())
	}

	pgc.start()
	startedAt := time.Now()
	var expired int64
	var runs []*seatdv1.CleanupRun
	eventually(t, eventTimeout, "a complete cleanup pass after PostgreSQL came back", func() bool {
		run, err := procs[0].cleanupNow(ctx)
		require.NoError(t, err)
		runs = append(runs, run)
		expired += run.GetExpired()
		return run.GetResult() == "ok" && run.GetErrors() == 0
	})
	t.Logf("cleanup complete %s after PostgreSQL came back; runs: %v", time.Since(startedAt).Round(time.Millisecond), runs)
	require.EqualValues(t, zombies, expired, "the zombies are expired once: %v", runs)
	run, err := procs[1].cleanupNow(ctx)
	require.NoError(t, err)
	require.Equal(t, "ok", run.GetResult(), "%v", run)
	require.Zero(t, run.GetExpired(), "nothing left: %v", run)

	t.Logf("PostgreSQL was down %s", startedAt.Sub(stoppedAt).Round(time.Millisecond))
	db := b.db(t)
	// The heartbeats written behind while PostgreSQL was down were kept and
	// reach it now (--heartbeat-flush-interval 500ms).
	flushFrom := time.Now()
	eventually(t, eventTimeout, "heartbeats of the outage written behind", func() bool {
		for id, dl := range outageDeadline {
			var recorded time.Time
			require.NoError(t, db.QueryRow(ctx, `SELECT expires_at FROM sessions WHERE id = $1`, id).Scan(&recorded))
			if recorded.Before(dl) {
				return false
			}
		}
		return true
	})
	t.Logf("heartbeats of the outage reached PostgreSQL within %s", time.Since(flushFrom).Round(time.Millisecond))
	recs := leaseRecords(t, db, zlic.GetId(), llic.GetId())
	require.Len(t, recs, zombies+live)
	for id, r := range recs {
		if zombieIDs[id] {
			require.Equal(t, "expired", r.State, "zombie %s", id)
			require.Equal(t, 1, r.UsageEvents, "zombie %s", id)
			require.Equal(t, 1, r.CleanupEvents, "zombie %s", id)
		} else {
			require.Equal(t, "active", r.State, "live lease %s is untouched", id)
			require.Zero(t, r.UsageEvents+r.CleanupEvents, "live lease %s", id)
		}
	}
	requireExactlyOnceRecords(t, db)
	for i, l := range liveLeases {
		_, err := procs[(i+1)%2].heartbeat(ctx, l)
		require.NoError(t, err, "live lease %d after the outage", i)
	}
	require.Len(t, procs[0].leases(t, llic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE), live)
	stopping := time.Now()
	stopAllOK(t, procs...)
	t.Logf("instances stopped in %s", time.Since(stopping).Round(time.Millisecond))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
