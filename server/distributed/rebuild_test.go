package distributed

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/storetest"
)

// A rebuild writes a license's live state a chunk of leases per script
// call (live.Redis.Rebuild, rebuild.lua), so that a large license never
// holds Redis for long. These tests run rebuilds of a few leases in
// chunks of two or three, and act between the chunks.

// chunked sets the rebuild chunk of s and runs before(start) before
// every chunk but the first (start: the index of its first lease).
func chunked(s *Store, n int, before func(start int)) {
	s.live.SetRebuildChunk(n, func(_ string, start int) {
		if start > 0 && before != nil {
			before(start)
		}
	})
}

// fill acquires n seats of lic on s, in order, and returns them with
// their tokens.
func fill(t *testing.T, s *Store, lic server.License, n int) ([]server.Lease, []string) {
	t.Helper()
	var ls []server.Lease
	var toks []string
	for i := range n {
		r, tok := acq(t, s, lic.Key, fmt.Sprintf("fp-%d", i))
		ls, toks = append(ls, r.Lease), append(toks, tok)
	}
	return ls, toks
}

// heartbeatAll heartbeats leases on s, in order, and returns the
// deadline each was told.
func heartbeatAll(t *testing.T, s *Store, leases []server.Lease, toks []string) map[string]time.Time {
	t.Helper()
	told := map[string]time.Time{}
	for i, l := range leases {
		b, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i]))
		require.NoError(t, err)
		told[l.ID] = b.ExpiresAt
	}
	return told
}

// requireDeadlines checks that the live state of a license holds n leases
// and, for each lease of told, the deadline its client was told.
func requireDeadlines(t *testing.T, s *Store, licenseID string, n int, told map[string]time.Time) {
	t.Helper()
	vals, _, err := s.peek(t.Context(), licenseID)
	require.NoError(t, err)
	require.Len(t, vals, n)
	for id, at := range told {
		require.True(t, vals[id].Deadline.Equal(at), "lease %s: deadline %s after the rebuild, %s acknowledged", id, vals[id].Deadline, at)
	}
}

// acquireScript runs acquire.lua on a license's keys for a new lease, as
// an acquisition of any instance would, and returns its first value: the
// status shared by the run, or 'OK'.
func acquireScript(t *testing.T, s *Store, licenseID string) string {
	args := []any{live.LeaseKey(server.NewID(server.PrefixLeaseID)), "tok", "", 0}
	for _, st := range []server.LeasingStrategy{server.PerFingerprint, server.PerUser, server.PerHostname, server.PerAcquisition} {
		args = append(args, string(st), server.DedupeKey(st, "partial-"+server.NewID(""), "", ""))
	}
	res, err := live.Script("acquire").Run(context.Background(), s.rdb, s.live.Keys().License(licenseID), args...).Slice()
	if !assert.NoError(t, err) {
		return ""
	}
	return fmt.Sprint(res[0])
}

// TestChunkedRebuildCountsNoPartialLeaseSet: after a Redis loss, a full
// license of 11 leases is rebuilt in chunks of 3. Between chunks no
// acquisition is judged (acquire.lua finds no state and answers NOCONF,
// so the caller waits for the rebuild), an acquisition that comes in the
// middle gets SEATS_EXHAUSTED once the state is back, and every lease
// heartbeats with its token afterwards (invariant 1 throughout).
func TestChunkedRebuildCountsNoPartialLeaseSet(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	const n = 11
	lic := mkLicense(t, s, tn.ID, n, time.Hour)
	leases, toks := fill(t, s, lic, n)
	epoch := loc.epochOf(t, lic.ID)

	// The other instance's look at the state (state.lua): it sees the
	// rebuild under way, then polls it.
	var looks atomic.Int64
	lookedTwice := make(chan struct{})
	other.rdb.AddHook(&scriptHook{sha: live.Script("state").Hash(), after: func() {
		if looks.Add(1) == 2 {
			close(lookedTwice)
		}
	}})
	var calls atomic.Int64
	late := make(chan error, 1)
	chunked(s, 3, func(start int) {
		calls.Add(1)
		assert.Equal(t, "NOCONF", acquireScript(t, s, lic.ID), "an acquisition judged against a partial state (before the chunk at %d)", start)
		st, err := s.live.State(context.Background(), lic.ID)
		assert.NoError(t, err)
		assert.Equal(t, epoch+1, st.Rebuilding, "the rebuild under way is visible")
		switch start {
		case 3:
			go func() { _, _, err := tryAcq(context.Background(), other, lic.Key, "late"); late <- err }()
		case 6: // go on once the other instance waits for this rebuild
			select {
			case <-lookedTwice:
			case <-t.Context().Done():
				assert.Fail(t, "the other instance never looked at the rebuild under way")
			}
		}
	})
	loc.loseRedis(t)
	inUse, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID) // rebuilds
	require.NoError(t, err)
	require.Equal(t, n, inUse)
	require.EqualValues(t, 3, calls.Load(), "11 leases in chunks of 3: the chunks at 3, 6 and 9 came after the first")
	requireCode(t, <-late, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the acquisition that came during the rebuild")
	require.Equal(t, epoch+1, loc.epochOf(t, lic.ID), "one snapshot: the other instance waited for the rebuild under way")
	for i, l := range leases {
		_, err := other.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i]))
		require.NoError(t, err, "lease %d after the rebuild", i)
	}
	st, err := s.live.State(t.Context(), lic.ID)
	require.NoError(t, err)
	require.EqualValues(t, -1, st.Rebuilding, "no rebuild under way once it switched in")
}

// TestLeaseEndedDuringAChunkedRebuildStaysEnded: a release passed its
// check just before a forced rebuild took the license's settings away; it
// is recorded and its lease removed (end.lua) after the rebuild staged
// that lease. The switch must leave the lease out: its client was told it
// ended (an observed end is final).
func TestLeaseEndedDuringAChunkedRebuildStaysEnded(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 6, time.Hour)
	leases, toks := fill(t, s, lic, 6)
	victim := leases[0] // staged by the first chunk

	checked, proceed := make(chan struct{}), make(chan struct{})
	var hookOnce sync.Once
	other.rdb.AddHook(&scriptHook{sha: live.Script("check").Hash(), after: func() {
		hookOnce.Do(func() { close(checked); <-proceed })
	}})
	released := make(chan error, 1)
	go func() {
		_, err := other.Release(context.Background(), victim.ID, server.HashSecret(toks[0]))
		released <- err
	}()
	<-checked

	staged, resume := make(chan struct{}), make(chan struct{})
	var chunkOnce sync.Once
	chunked(s, 2, func(int) { chunkOnce.Do(func() { close(staged); <-resume }) })
	rebuilt := make(chan error, 1)
	epoch := loc.epochOf(t, lic.ID)
	go func() { rebuilt <- s.rebuildFrom(context.Background(), lic.ID, epoch) }()
	<-staged
	close(proceed)
	require.NoError(t, <-released, "the release, recorded and dropped while the rebuild was under way")
	close(resume)
	require.NoError(t, <-rebuilt)

	_, err := s.Heartbeat(t.Context(), victim.ID, server.HashSecret(toks[0]))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "the released lease came back with the rebuild")
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	for i, l := range leases[1:] {
		_, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i+1]))
		require.NoError(t, err)
	}
}

// TestForcedChunkedRebuildKeepsAcknowledgedDeadlines: a forced rebuild
// (Redis intact) keeps the deadline a heartbeat acknowledged after the
// last flush, for leases staged in every chunk, and gives no slack; a
// heartbeat that comes while the rebuild is under way waits for it, so
// that the deadline it is told is the one the new state holds.
func TestForcedChunkedRebuildKeepsAcknowledgedDeadlines(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	other := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 5, time.Minute)
	leases, toks := fill(t, s, lic, 5)
	waitRedisPast(t, s, leases[4].AcquiredAt)
	told := heartbeatAll(t, s, leases, toks)
	beatRan := make(chan struct{})
	var beatOnce sync.Once
	other.rdb.AddHook(&scriptHook{sha: live.Script("heartbeat").Hash(), after: func() { beatOnce.Do(func() { close(beatRan) }) }})
	late := make(chan server.Lease, 1)
	var once sync.Once
	chunked(s, 2, func(int) {
		once.Do(func() {
			// leases[0] is staged; its heartbeat reaches Redis now, and must
			// not be answered with a deadline the switch would undo.
			go func() {
				b, err := other.Heartbeat(context.Background(), leases[0].ID, server.HashSecret(toks[0]))
				assert.NoError(t, err)
				late <- b
			}()
			select {
			case <-beatRan:
			case <-t.Context().Done():
				assert.Fail(t, "the heartbeat never reached Redis")
			}
		})
	})
	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
	b := <-late
	told[leases[0].ID] = b.ExpiresAt
	requireDeadlines(t, s, lic.ID, 5, told)
}

// TestDeadRebuildIsTakenOver: the instance rebuilding a license stops
// between two chunks (it died, or hangs). Another instance waits only as
// long as the rebuild shows no progress for rebuildStale, then rebuilds
// itself at a newer epoch; the first one, if it wakes up, finds itself
// superseded and writes nothing.
func TestDeadRebuildIsTakenOver(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	other.rebuildStale = 300 * time.Millisecond
	lic := mkLicense(t, s, tn.ID, 7, time.Hour)
	leases, toks := fill(t, s, lic, 7)
	epoch := loc.epochOf(t, lic.ID)

	hung, wake := make(chan struct{}), make(chan struct{})
	var once sync.Once
	chunked(s, 2, func(int) { once.Do(func() { close(hung); <-wake }) })
	loc.loseRedis(t)
	first := make(chan error, 1)
	go func() { _, err := s.SeatsInUse(context.Background(), tn.ID, lic.ID); first <- err }()
	<-hung

	n, err := other.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 7, n, "the other instance rebuilt the license")
	require.Equal(t, epoch+2, loc.epochOf(t, lic.ID), "it took over at a newer epoch")
	close(wake)
	require.NoError(t, <-first, "the woken rebuild, superseded, waits for the state that is there")
	n, err = s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	for i, l := range leases {
		_, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i]))
		require.NoError(t, err)
	}
	_, _, err = tryAcq(t.Context(), s, lic.Key, "one more")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
}

// TestDeleteDuringAChunkedRebuild: a delete that read the live values
// (peek) just before a forced rebuild took the settings away lands in the
// middle of that rebuild: the license stays deleted, the rebuild switches
// nothing in, and its staging keys are gone.
func TestDeleteDuringAChunkedRebuild(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	other.rebuildStale = time.Hour // nobody takes the paused rebuild over
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	leases, toks := fill(t, s, lic, 5)

	peeked, deleteOn := make(chan struct{}), make(chan struct{})
	var peekOnce sync.Once
	other.rdb.AddHook(&scriptHook{sha: live.Script("peek").Hash(), after: func() {
		peekOnce.Do(func() { close(peeked); <-deleteOn })
	}})
	deleted := make(chan error, 1)
	var revoked int
	go func() {
		var err error
		revoked, err = other.DeleteLicense(context.Background(), tn.ID, lic.ID)
		deleted <- err
	}()
	<-peeked

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	chunked(s, 2, func(int) { once.Do(func() { close(paused); <-resume }) })
	rebuilt := make(chan error, 1)
	epoch := loc.epochOf(t, lic.ID)
	go func() { rebuilt <- s.rebuildFrom(context.Background(), lic.ID, epoch) }()
	<-paused
	close(deleteOn)
	require.NoError(t, <-deleted, "the delete, recorded and tombstoned while the rebuild was under way")
	require.Equal(t, 5, revoked)
	close(resume)
	requireCode(t, <-rebuilt, server.ENOTFOUND, server.ReasonLicenseNotFound)

	_, rdb := testServers(t)
	for _, k := range s.live.Keys().RebuildKeys(lic.ID)[9:15] {
		require.Zero(t, rdb.Exists(t.Context(), k).Val(), "rebuild key %s left behind", k)
	}
	_, err := s.Heartbeat(t.Context(), leases[3].ID, server.HashSecret(toks[3]))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "after the delete")
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
}

// orphan makes lease id of a license an orphan: recorded active, held by
// the live state nowhere, lapsed in the record a minute ago.
func orphan(t *testing.T, loc location, s *Store, licenseID, id string) {
	t.Helper()
	keys := s.live.Keys().License(licenseID)
	require.EqualValues(t, 1, s.rdb.HDel(t.Context(), keys[1], live.LeaseKey(id)).Val())
	require.EqualValues(t, 1, s.rdb.ZRem(t.Context(), keys[2], live.LeaseKey(id)).Val())
	_, err := loc.db(t).Exec(t.Context(), `UPDATE sessions SET acquired_at = now() - interval '10 minutes',
		last_heartbeat_at = now() - interval '5 minutes', expires_at = now() - interval '1 minute' WHERE id = $1`, id)
	require.NoError(t, err)
}

// TestInterruptedForcedRebuildGivesOrphansNoSlack: a forced rebuild
// (Redis lost nothing) takes the settings away with its first call and
// fails on its second. The next rebuild finds no settings, but knows from
// the first that Redis lost nothing: the lapsed orphan gets no slack and
// does not count beside the lease that has its seat.
func TestInterruptedForcedRebuildGivesOrphansNoSlack(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	a, _ := acq(t, s, lic.Key, "a")
	orphan(t, loc, s, lic.ID, a.Lease.ID)
	acq(t, s, lic.Key, "b") // the seat the orphan no longer holds

	var failNext, failed atomic.Bool
	s.rdb.AddHook(&scriptHook{sha: live.Script("rebuild").Hash(), before: func() error {
		if failNext.CompareAndSwap(true, false) {
			return errScriptRefused
		}
		return nil
	}})
	chunked(s, 1, func(start int) {
		if start == 1 && !failed.Swap(true) {
			failNext.Store(true) // the forced rebuild's second call only
		}
	})
	require.Error(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)), "the second call failed")

	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID) // the next rebuild
	require.NoError(t, err)
	require.Equal(t, 1, n, "the lapsed orphan was given slack as if Redis had lost the state")
}

// TestSlowSnapshotIsNotTakenOver: reading a large license's snapshot
// takes longer than rebuildStale. A rebuild that has claimed its epoch but
// not begun writing is not taken for dead before the age a snapshot may
// have (snapshotLimit): two instances that lost the license's state wait
// for one rebuild instead of taking each other over for ever. The
// instance that claimed stays between its snapshot and its first write
// until its claim is older than rebuildStale by the store's clock and the
// other instance has looked at it twice since (it judged the claim and
// waited); its one call of rebuild.lua (a chunk of all four leases) then
// writes the state.
func TestSlowSnapshotIsNotTakenOver(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 4, time.Hour)
	fill(t, s, lic, 4)
	epoch := loc.epochOf(t, lic.ID)
	const stale = 300 * time.Millisecond
	var (
		looks   atomic.Int64 // state.lua calls, of either instance
		stalled atomic.Bool
	)
	slow := func(_ string, start int) {
		if start != 0 || !stalled.CompareAndSwap(false, true) {
			return // only the first rebuild to write stalls
		}
		now, err := s.live.Now(context.Background())
		if !assert.NoError(t, err) {
			return
		}
		waitRedisPast(t, s, now.Add(2*stale)) // the claim came before now
		n := looks.Load()
		assert.Eventually(t, func() bool {
			// Looked twice since (or took the rebuild over: the epoch moved).
			return looks.Load() >= n+2 || loc.epochOf(t, lic.ID) > epoch+1
		}, time.Minute, time.Millisecond, "the other instance looks at the rebuild under way")
	}
	stores := []*Store{s, other}
	for _, x := range stores {
		x.rebuildStale = stale
		x.live.SetRebuildChunk(4, slow)
		x.rdb.AddHook(&scriptHook{sha: live.Script("state").Hash(), after: func() { looks.Add(1) }})
	}
	loc.loseRedis(t)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i, x := range stores {
		wg.Go(func() {
			var n int
			n, errs[i] = x.SeatsInUse(t.Context(), tn.ID, lic.ID)
			if errs[i] == nil && n != 4 {
				errs[i] = fmt.Errorf("%d seats in use, want 4", n)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "instance %d", i)
	}
	require.True(t, stalled.Load(), "a rebuild stalled before its first write")
	require.Equal(t, epoch+1, loc.epochOf(t, lic.ID), "one rebuild: the other instance waited for it")
}

// TestOnTimeHeartbeatDuringASlowRebuild: a forced rebuild stalls between
// two calls (alive throughout: nobody takes it over) while a client
// heartbeats on time. The heartbeat waits for the rebuild; both leases'
// deadlines pass meanwhile (the stall lasts until the store's clock is
// past them), and the last call gives them the time the license waited:
// the heartbeat renews its lease, and the other lease heartbeats after.
// The heartbeat must reach Redis before its lease's deadline: a TTL the
// machine's load cannot outrun, doubled until that holds.
func TestOnTimeHeartbeatDuringASlowRebuild(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	s.rebuildStale, other.rebuildStale = time.Hour, time.Hour
	beatRan := make(chan struct{}, 1)
	other.rdb.AddHook(&scriptHook{sha: live.Script("heartbeat").Hash(), after: func() {
		select {
		case beatRan <- struct{}{}:
		default:
		}
	}})
	var (
		mu    sync.Mutex
		stall func() // run once, before the second call of the next rebuild
	)
	chunked(s, 1, func(int) {
		mu.Lock()
		f := stall
		stall = nil
		mu.Unlock()
		if f != nil {
			f()
		}
	})
	for ttl := 4 * time.Second; ; ttl *= 2 {
		require.LessOrEqual(t, ttl, 2*time.Minute, "no heartbeat reached Redis before its lease's deadline")
		lic := mkLicense(t, s, tn.ID, 2, ttl)
		leases, toks := fill(t, s, lic, 2)
		select { // a heartbeat of the attempt before
		case <-beatRan:
		default:
		}
		beat := make(chan error, 1)
		onTime := false
		mu.Lock()
		stall = func() {
			go func() {
				_, err := other.Heartbeat(context.Background(), leases[0].ID, server.HashSecret(toks[0]))
				beat <- err
			}()
			<-beatRan // heartbeat.lua ran, found no settings: the heartbeat waits for the rebuild
			now, err := s.live.Now(context.Background())
			require.NoError(t, err)
			onTime = now.Before(leases[0].ExpiresAt)
			waitRedisPast(t, s, leases[1].ExpiresAt)
		}
		mu.Unlock()
		require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
		err := <-beat
		if !onTime {
			t.Logf("TTL %v: the heartbeat reached Redis after its lease's deadline; trying a longer TTL", ttl)
			continue
		}
		require.NoError(t, err, "a heartbeat sent before the lease's deadline, during a rebuild that was alive throughout")
		// Both leases' deadlines came while the license waited; the last
		// call gives the time back one lease a call (the chunk), so it ran
		// again for the second.
		_, err = s.Heartbeat(t.Context(), leases[1].ID, server.HashSecret(toks[1]))
		require.NoError(t, err, "the second late lease was given the time back too")
		return
	}
}

// TestForcedRebuildKeepsAnotherInstancesHeartbeats: heartbeats another
// instance acknowledged and has not written behind yet are only in Redis
// (the rebuilding instance flushes only its own first). A forced rebuild,
// Redis still holding the license, keeps their deadlines, not the
// record's older ones.
func TestForcedRebuildKeepsAnotherInstancesHeartbeats(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	other := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 3, time.Minute)
	leases, toks := fill(t, s, lic, 3)
	waitRedisPast(t, s, leases[2].AcquiredAt)
	told := heartbeatAll(t, other, leases, toks)
	for _, l := range leases {
		require.True(t, told[l.ID].After(l.ExpiresAt), "the heartbeat moved the deadline past the recorded one")
	}
	chunked(s, 2, nil)
	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
	requireDeadlines(t, s, lic.ID, 3, told)
}

// TestRebuildLeavesExpiringLeasesExpired: a lapsed lease that a cleanup
// moved to the expiring hash, whose expiry PostgreSQL failed to record, is
// still active in the record's snapshot. A forced rebuild must not stage
// it: within the license's revival window a heartbeat would bring back a
// lease whose end was observed.
func TestRebuildLeavesExpiringLeasesExpired(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s := loc.openFaulty(t, nil)
	t.Cleanup(func() { _ = s.Close() })
	tn := mkTenant(t, s.Store)
	now := time.Now().UTC()
	lic, err := s.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tn.ID, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: 2, LeaseTTL: time.Second, RevivalWindow: time.Hour, LeasingStrategy: server.PerFingerprint,
		Active: true, CreatedAt: now, UpdatedAt: now,
	})
	require.NoError(t, err)
	res, tok := acq(t, s.Store, lic.Key, "a")
	waitRedisPast(t, s.Store, res.Lease.ExpiresAt)
	s.SetFault(storetest.FaultRecord, true)
	_, err = s.ExpireLeases(t.Context(), []server.LeaseRef{{LicenseID: lic.ID, LeaseID: res.Lease.ID}})
	require.Error(t, err)
	s.SetFault(storetest.FaultRecord, false)
	_, rdb := testServers(t)
	require.EqualValues(t, 1, rdb.HLen(t.Context(), loc.license(lic.ID)[5]).Val(), "the lease waits in the expiring hash")

	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
}

// TestLeaseExpiredDuringAChunkedRebuildStaysExpired: a forced rebuild read
// its snapshot while a lapsed lease was still active in the record; before
// its first write, the cleaner takes the lease into the expiring hash,
// records its expiry and drops it (end.lua, from the expiring hash). The
// rebuild must leave it out: end.lua remembers the end of a lease it took
// from the expiring hash as of one it took from the live hash. Else the
// lease comes back, and a heartbeat within the revival window revives a
// lease whose expiry was recorded (an observed end is final).
func TestLeaseExpiredDuringAChunkedRebuildStaysExpired(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	now := time.Now().UTC()
	lic, err := s.CreateLicense(t.Context(), server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: tn.ID, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: 2, LeaseTTL: time.Second, RevivalWindow: time.Hour, LeasingStrategy: server.PerFingerprint,
		Active: true, CreatedAt: now, UpdatedAt: now,
	})
	require.NoError(t, err)
	res, tok := acq(t, s, lic.Key, "a")
	waitRedisPast(t, s, res.Lease.ExpiresAt)

	var once sync.Once
	s.live.SetRebuildChunk(10, func(_ string, start int) {
		if start != 0 {
			return
		}
		once.Do(func() { // the snapshot is read; nothing is written yet
			ended, err := s.ExpireLeases(context.Background(), []server.LeaseRef{{LicenseID: lic.ID, LeaseID: res.Lease.ID}})
			assert.NoError(t, err)
			assert.Len(t, ended, 1, "the cleaner recorded the expiry")
		})
	})
	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))

	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "the expired lease came back with the rebuild")
	vals, _, err := s.peek(t.Context(), lic.ID)
	require.NoError(t, err)
	require.NotContains(t, vals, res.Lease.ID)
}
