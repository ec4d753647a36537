package distributed

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Observed ends are final: once anyone was told that a lease ended, or its
// seat went to another client because it lapsed, no rebuild (Redis loss, or
// a forced rebuild while Redis is intact), revival or retry brings it back.

// epochOf reads a license's live epoch from the record.
func (loc location) epochOf(t *testing.T, licenseID string) (epoch int64) {
	t.Helper()
	pg, _ := testServers(t)
	require.NoError(t, pg.QueryRow(t.Context(), `SELECT live_epoch FROM `+loc.schema+`.licenses WHERE id = $1`, licenseID).Scan(&epoch))
	return epoch
}

// loseRedis drops every key of the location, as Redis restarting empty.
func (loc location) loseRedis(t *testing.T) {
	t.Helper()
	_, rdb := testServers(t)
	require.NoError(t, deletePrefix(t.Context(), rdb, loc.prefix))
}

// TestToldExpiredStaysExpired: a heartbeat answered LEASE_EXPIRED; neither a
// forced rebuild nor a Redis loss revives the lease, although its recorded
// deadline plus the rebuild slack is still ahead.
func TestToldExpiredStaysExpired(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"forced rebuild", "Redis loss"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			loc, s, tn := openStore(t, nil)
			lic := mkLicense(t, s, tn.ID, 1, time.Second)
			res, tok := acq(t, s, lic.Key, "a")
			require.Eventually(t, func() bool {
				_, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret("wrong"))
				return server.ErrorReason(err) == server.ReasonLeaseTokenWrong && time.Now().After(res.Lease.ExpiresAt.Add(50*time.Millisecond))
			}, 5*time.Second, 20*time.Millisecond)
			_, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
			requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)

			if how == "Redis loss" {
				loc.loseRedis(t)
				require.NoError(t, s.ensureLive(t.Context(), lic.ID))
			} else {
				require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
			}
			_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
			requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "an observed expiry is final")
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// TestForcedRebuildKeepsLapsedLeasesLapsed: a rebuild while Redis still
// holds the license's state keeps Redis's deadlines; only leases Redis lost
// get the write-behind slack.
func TestForcedRebuildKeepsLapsedLeasesLapsed(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Second)
	res, tok := acq(t, s, lic.Key, "a")
	require.Eventually(t, func() bool { return time.Now().After(res.Lease.ExpiresAt.Add(50 * time.Millisecond)) },
		5*time.Second, 10*time.Millisecond)
	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n, "a lapsed lease does not count again after a rebuild")
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
}

// TestSeatTakenFromLapsedLeaseIsFinal: a grant that takes a lapsed lease's
// seat records that lease expired, so that a Redis loss right after does
// not count both (the limit) nor let the lapsed one heartbeat.
func TestSeatTakenFromLapsedLeaseIsFinal(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Second)
	a, tokA := acq(t, s, lic.Key, "a")
	_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.LeaseTTL = time.Hour; return nil })
	require.NoError(t, err)
	var b server.AcquireResult
	require.Eventually(t, func() bool {
		b, _, err = tryAcq(t.Context(), s, lic.Key, "b")
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "b gets the seat once a lapses")
	_, _, st := loc.recorded(t, a.Lease.ID)
	require.Equal(t, "expired", st, "the grant recorded the lapsed lease it took the seat of")

	loc.loseRedis(t)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only b counts after the rebuild")
	_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
	requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
	require.NotEqual(t, a.Lease.ID, b.Lease.ID)
}

// TestRebuildRacingAnEnd: a lease ends (release, revoke, expiry) after a
// rebuild read its snapshot of the record and before rebuild.lua writes
// it: the rebuild does not bring the ended lease back.
func TestRebuildRacingAnEnd(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"release", "revoke"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			loc := newLocation(t)
			s, other := loc.open(t, nil), loc.open(t, nil)
			t.Cleanup(func() { _ = s.Close(); _ = other.Close() })
			tn := mkTenant(t, s)
			lic := mkLicense(t, s, tn.ID, 1, time.Hour)
			res, tok := acq(t, s, lic.Key, "a")

			s.rdb.AddHook(onScript(live.Script("rebuild"), func() {
				var err error
				if end == "release" {
					_, err = other.Release(context.Background(), res.Lease.ID, server.HashSecret(tok))
				} else {
					_, err = other.Revoke(context.Background(), tn.ID, res.Lease.ID)
				}
				require.NoError(t, err, "the end racing the rebuild")
			}))
			require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))

			_, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
			require.Error(t, err, "the ended lease came back with the rebuild")
			require.Contains(t, []string{server.ReasonLeaseReleased, server.ReasonLeaseRevoked}, server.ErrorReason(err))
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// TestUpdateNotInRedisGrantsNothing: UpdateLicense deactivates a license
// while Redis refuses the copy of the new settings: no acquisition is
// granted under the old ones (UNAVAILABLE while Redis refuses, then the
// license's own answer).
func TestUpdateNotInRedisGrantsNothing(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	fail := newFailScript(live.Script("setconf"))
	s.rdb.AddHook(fail)
	lic := mkLicense(t, s, tn.ID, 3, time.Hour)
	acq(t, s, lic.Key, "a") // builds the live state

	fail.on.Store(true)
	_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Active = false; return nil })
	require.NoError(t, err)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable, "no grant under the old settings")
	fail.on.Store(false)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive)
}

// TestForcedRebuildGivesNoSlackToOrphans: a lease active in the record that
// Redis does not hold although it still holds the license (an orphan)
// gets its recorded deadline from a forced rebuild, no slack: slack is for
// heartbeats Redis lost, and Redis lost nothing here.
func TestForcedRebuildGivesNoSlackToOrphans(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Second)
	res, _ := acq(t, s, lic.Key, "a")
	keys := s.live.Keys().License(lic.ID)
	require.EqualValues(t, 1, s.rdb.HDel(t.Context(), keys[1], live.LeaseKey(res.Lease.ID)).Val(), "the lease taken out of the live state")
	require.EqualValues(t, 1, s.rdb.ZRem(t.Context(), keys[2], live.LeaseKey(res.Lease.ID)).Val())
	require.Eventually(t, func() bool { return time.Now().After(res.Lease.ExpiresAt.Add(50 * time.Millisecond)) },
		5*time.Second, 10*time.Millisecond)
	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n, "the orphan's recorded deadline has passed")
}

// TestReconcileAdoptsLeasesOfALicenseRedisLost: Redis lost a license's whole
// live state (its settings too) and nothing used the license since; the
// record's reconciliation finds its lapsed lease, rebuilds the license, and
// the cleaner then expires the lease. Reconciliation runs again at its
// interval: a second loss later is found the same way.
func TestReconcileAdoptsLeasesOfALicenseRedisLost(t *testing.T) {
	t.Parallel()
	// A short flush interval: the rebuild's slack is flush + 1 s.
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = 200 * time.Millisecond })
	s.reconcileEvery = 500 * time.Millisecond
	for round := range 2 {
		lic := mkLicense(t, s, tn.ID, 1, time.Second)
		res, _ := acq(t, s, lic.Key, "a")
		loc.loseRedis(t)
		require.Eventually(t, func() bool { return time.Now().After(res.Lease.ExpiresAt) }, 5*time.Second, 10*time.Millisecond)

		// Only the reconciliation can find it: the hints went with Redis.
		var due []server.LeaseRef
		require.Eventually(t, func() bool {
			var err error
			due, err = s.DueLeases(t.Context(), nil, 100)
			require.NoError(t, err)
			return len(due) == 1
		}, 30*time.Second, 50*time.Millisecond, "round %d: the lapsed lease becomes due once its rebuilt deadline passes", round)
		require.Equal(t, res.Lease.ID, due[0].LeaseID)
		ended, err := s.ExpireLeases(t.Context(), due)
		require.NoError(t, err)
		require.Len(t, ended, 1)
		require.Equal(t, server.LeaseExpired, ended[0].State)
	}
}
