package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/distributed/live"
)

// The record is the truth (PostgreSQL wins over Redis): these tests put the
// two in the states a crash or a failed Redis call leaves behind and check
// that the store repairs them by design, not by a retry list held in memory.

// endInRecordOnly ends a lease in PostgreSQL the way Release or Revoke do,
// without the Redis step after it: what a process that died between the
// two leaves behind.
func (loc location) endInRecordOnly(t *testing.T, leaseID, state string) {
	t.Helper()
	pg, _ := testServers(t)
	tag, err := pg.Exec(t.Context(), `UPDATE `+loc.schema+`.sessions SET state = $2, ended_at = now()
		WHERE id = $1 AND state = 'active'`, leaseID, state)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// TestEndedInRecordStopsHeartbeating: a lease revoked in the record but
// still live in Redis stops heartbeating within a flush interval (the
// write-behind learns that it ended and drops it), and its seat frees.
func TestEndedInRecordStopsHeartbeating(t *testing.T) {
	t.Parallel()
	for state, reason := range map[string]string{
		"revoked":  server.ReasonLeaseRevoked,
		"released": server.ReasonLeaseReleased,
		"expired":  server.ReasonLeaseExpired,
	} {
		t.Run(state, func(t *testing.T) {
			t.Parallel()
			loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = 100 * time.Millisecond })
			lic := mkLicense(t, s, tn.ID, 1, time.Hour)
			res, tok := acq(t, s, lic.Key, "a")
			loc.endInRecordOnly(t, res.Lease.ID, state)

			var err error
			require.Eventually(t, func() bool {
				_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
				return err != nil
			}, 10*time.Second, 20*time.Millisecond, "heartbeats of a lease ended in the record stop")
			require.Equal(t, reason, server.ErrorReason(err), "%v", err)
			_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
			require.Error(t, err, "and stay stopped")
			_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
			require.NoError(t, err, "the seat of the ended lease is free")
		})
	}
}

// TestRevokeAnswersOnceRedisDroppedTheLease: while Redis refuses to drop a
// revoked lease, Revoke does not say it is done (nobody may be told a lease
// ended while it can still heartbeat); once Redis answers, it does, and
// the lease stops at once.
func TestRevokeAnswersOnceRedisDroppedTheLease(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	fail := newFailScript(live.Script("end"))
	s.rdb.AddHook(fail)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")

	fail.on.Store(true)
	_, err := s.Revoke(t.Context(), tn.ID, res.Lease.ID)
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "not acknowledged while the lease is live in Redis")
	_, err = s.Revoke(t.Context(), tn.ID, res.Lease.ID)
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "a retry finds it revoked in the record, and still cannot drop it")

	fail.on.Store(false)
	l, err := s.Revoke(t.Context(), tn.ID, res.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseRevoked, l.State)
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	require.NoError(t, err, "the seat is free")
}

// TestReleaseAnswersOnceRedisDroppedTheLease: as for Revoke.
func TestReleaseAnswersOnceRedisDroppedTheLease(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	fail := newFailScript(live.Script("end"))
	s.rdb.AddHook(fail)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")

	fail.on.Store(true)
	_, err := s.Release(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "not acknowledged while the lease is live in Redis")

	fail.on.Store(false)
	l, err := s.Release(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err, "the retry is acknowledged once Redis dropped the lease")
	require.Equal(t, server.LeaseReleased, l.State)
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	require.NoError(t, err, "the seat is free")
}

// TestDeleteLicenseAnswersOnceTombstoned: while Redis refuses the
// tombstone, DeleteLicense is not acknowledged; the reconciliation the
// cleanup leader runs applies it, whoever made the change.
func TestDeleteLicenseAnswersOnceTombstoned(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	fail := newFailScript(live.Script("tombstone"))
	s.rdb.AddHook(fail)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")

	fail.on.Store(true)
	_, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable)
	fail.on.Store(false)

	require.NoError(t, s.syncConf(t.Context()))
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
}

// TestDeletedInRecordOnlyIsTombstoned: a license deleted in the record whose
// process died before the tombstone: the reconciliation tombstones it.
func TestDeletedInRecordOnlyIsTombstoned(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")
	pg, _ := testServers(t)
	_, err := pg.Exec(t.Context(), `UPDATE `+loc.schema+`.licenses SET deleted_at = now(), version = version + 1 WHERE id = $1`, lic.ID)
	require.NoError(t, err)
	loc.endInRecordOnly(t, res.Lease.ID, "revoked")
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err, "Redis does not know yet")

	require.NoError(t, s.syncConf(t.Context()))
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
}

// TestAcquireAgainDropsLeaseEndedInRecordOnly: a lease revoked in the record
// whose Redis step never ran, and whose client no longer heartbeats but
// acquires again with the same fingerprint (it restarted): handing the
// lease back would move its deadline at every retry, so that it never
// lapses and holds its seat for good. The record wins: the lease is
// dropped and the client gets a new one.
func TestAcquireAgainDropsLeaseEndedInRecordOnly(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")
	loc.endInRecordOnly(t, res.Lease.ID, "revoked")

	again, _, err := tryAcq(t.Context(), s, lic.Key, "a")
	require.NoError(t, err, "the client that restarted gets a seat")
	require.NotEqual(t, res.Lease.ID, again.Lease.ID, "not the lease the record says is revoked")
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the new lease counts")
}

// TestEndedLeaseLeavesRedisWithoutItsClient: a release (a borrowed lease:
// a revoke) recorded in
// PostgreSQL whose end.lua failed, and whose client never retries (it went
// away, or the instance died between the two steps). A borrowed lease
// never heartbeats and an abandoned one stopped, so the flush never learns
// of it; the leader's cleanup passes must find the end in the record and
// free the seat, long before the lease's deadline (a borrowed one: 20 h).
func TestEndedLeaseLeavesRedisWithoutItsClient(t *testing.T) {
	t.Parallel()
	for _, borrow := range []time.Duration{20 * time.Hour, 0} {
		name := "borrowed"
		if borrow == 0 {
			name = "normal"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, s, tn := openStore(t, nil)
			fail := newFailScript(live.Script("end"))
			s.rdb.AddHook(fail)
			lic := mkBorrowLicense(t, s, tn.ID, 1, 24*time.Hour, 1)
			res, tok, err := tryBorrow(t.Context(), s, lic.Key, "laptop", "", borrow)
			require.NoError(t, err)

			// A borrowed lease cannot be released before its deadline (its
			// certificate stays valid offline): an operator's revoke ends it.
			fail.on.Store(true)
			wantState := server.LeaseReleased
			if borrow > 0 {
				wantState = server.LeaseRevoked
				_, err = s.Revoke(t.Context(), tn.ID, res.Lease.ID)
			} else {
				_, err = s.Release(t.Context(), res.Lease.ID, server.HashSecret(tok))
			}
			requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "end.lua failed: not acknowledged")
			fail.on.Store(false)
			_, _, state := s.recordedOf(t, res.Lease.ID)
			require.Equal(t, wantState, state, "the end is in the record")

			c := cleanup.NewCleaner(s, cleanup.Config{}, nil, nil)
			for range 3 {
				run := c.Pass(t.Context(), cleanup.TriggerManual)
				require.Equal(t, cleanup.ResultOK, run.Result, "%+v", run)
			}
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Zero(t, n, "the released lease holds no seat after the cleanup passes")
			_, _, err = tryAcq(t.Context(), s, lic.Key, "desktop")
			require.NoError(t, err, "its seat goes to another client")
		})
	}
}

// TestRecordedEndsAreRepairedInBatches: the reconciliation's repair of
// recorded ends goes through the notes a batch at a time; a note whose
// end.lua failed stays (and is counted behind) until a pass removes its
// lease, and then it is gone.
func TestRecordedEndsAreRepairedInBatches(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	s.endBatch = 2
	fail := newFailScript(live.Script("end"))
	s.rdb.AddHook(fail)
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	leases, toks := fill(t, s, lic, 5)
	notes := func() int {
		var n int
		require.NoError(t, loc.db(t).QueryRow(t.Context(), `SELECT count(*) FROM live_ends`).Scan(&n))
		return n
	}

	fail.on.Store(true)
	for i, l := range leases {
		_, err := s.Release(t.Context(), l.ID, server.HashSecret(toks[i]))
		requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable)
	}
	require.Error(t, s.dropRecordedEnds(t.Context()), "end.lua still fails")
	require.Equal(t, 5, notes(), "the notes stay while Redis refuses")
	require.EqualValues(t, 5, s.BackgroundStats().EndedLeasesBehind)

	fail.on.Store(false)
	require.NoError(t, s.dropRecordedEnds(t.Context()))
	require.Zero(t, notes(), "every note cleared, three batches of two")
	stats := s.BackgroundStats()
	require.EqualValues(t, 5, stats.EndedLeasesDropped)
	require.Zero(t, stats.EndedLeasesBehind)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n)

	// A release whose end.lua ran leaves a note too; the repair clears it
	// and counts nothing dropped (Redis held nothing).
	res, tok := acq(t, s, lic.Key, "again")
	_, err = s.Release(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	require.Equal(t, 1, notes())
	require.NoError(t, s.dropRecordedEnds(t.Context()))
	require.Zero(t, notes())
	require.EqualValues(t, 5, s.BackgroundStats().EndedLeasesDropped)
}

// TestReleaseOfALeaseRevokedInTheRecordOnlyDropsIt: a lease revoked in the
// record whose removal from Redis never ran; its client releases it. The
// answer is LEASE_REVOKED, and only once Redis dropped it: its next
// heartbeat is refused at once (not one flush later).
func TestReleaseOfALeaseRevokedInTheRecordOnlyDropsIt(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")
	loc.endInRecordOnly(t, res.Lease.ID, "revoked")

	_, err := s.Release(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked, "told revoked, the lease heartbeats no more")
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	require.NoError(t, err, "the seat is free")
}
