package distributed

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Interleavings a second review found: an acquisition whose record's
// outcome is unknown, a call told LEASE_EXPIRED while a rebuild raced it
// and Redis refused to drop the lease, and a rebuild written into a Redis
// that lost its data after the snapshot was read. Each failed before its
// fix (the record-only revocation kept alive by retried acquisitions is in
// truth_test.go).

// TestInsertOutcomeUnknown: the connection is lost with a grant's insert in
// flight, so the acquisition cannot tell whether the lease is recorded; the
// client retries with its idempotency key, then Redis is lost. Whether the
// insert committed or not, the client holds one seat, in Redis and in the
// record, and a rebuild counts one. (Taking the grant back, as for a
// refused insert, left a committed session that Redis did not hold: the
// retry got a second lease, and the rebuild counted both.)
func TestInsertOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for name, committed := range map[string]bool{"committed": true, "not committed": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			loc, s, tn := openStore(t, nil)
			lic := mkLicense(t, s, tn.ID, 1, time.Hour)
			acquire := func(leaseID string) (server.AcquireResult, error) {
				return s.Acquire(t.Context(), server.AcquireRequest{LicenseKey: lic.Key, Fingerprint: "a", IdempotencyKey: "k1",
					LeaseID: leaseID, TokenHash: server.HashSecret(server.NewSecret(server.PrefixLeaseToken))})
			}
			var lose atomic.Bool
			lose.Store(true)
			s.insertHook = func(insert func() (bool, error)) (bool, error) {
				if !lose.CompareAndSwap(true, false) {
					return insert()
				}
				if committed {
					if ok, err := insert(); !ok || err != nil {
						return ok, err
					}
				}
				return false, errors.New("injected: connection lost with the insert in flight")
			}

			first := server.NewID(server.PrefixLeaseID)
			_, err := acquire(first)
			requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable)
			retry, err := acquire(server.NewID(server.PrefixLeaseID))
			require.NoError(t, err, "the retry with the same idempotency key")
			if committed {
				require.Equal(t, first, retry.Lease.ID, "the recorded lease is handed back")
			}
			pg, _ := testServers(t)
			var active int
			require.NoError(t, pg.QueryRow(t.Context(), `SELECT count(*) FROM `+loc.schema+`.sessions
				WHERE license_id = $1 AND state = 'active'`, lic.ID).Scan(&active))
			require.Equal(t, 1, active, "one active session in the record for one client")

			loc.loseRedis(t)
			n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
			require.NoError(t, err)
			require.Equal(t, 1, n, "a rebuild counts one seat")
		})
	}
}

// TestToldExpiredWhileARebuildRaces: a heartbeat finds its lease lapsed;
// meanwhile Redis restarts empty and another instance rebuilds the license
// from a snapshot read before the expiry was recorded; Redis refuses to
// drop the lease. The heartbeat must not say LEASE_EXPIRED then: the
// rebuild is about to put the lease back, and an observed end is final.
// Once the caller is told, the lease stays ended.
func TestToldExpiredWhileARebuildRaces(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	fast := func(o *Options) { o.HeartbeatFlushInterval = 100 * time.Millisecond }
	x, y := loc.open(t, fast), loc.open(t, fast)
	t.Cleanup(func() { _ = x.Close(); _ = y.Close() })
	tn := mkTenant(t, x)
	lic := mkLicense(t, x, tn.ID, 1, time.Second)
	res, tok := acq(t, x, lic.Key, "a")
	require.Eventually(t, func() bool { return time.Now().After(res.Lease.ExpiresAt.Add(50 * time.Millisecond)) },
		5*time.Second, 10*time.Millisecond)

	// y's rebuild waits before rebuild.lua until released.
	snapshotRead, release := make(chan struct{}), make(chan struct{})
	var yOnce sync.Once
	y.rdb.AddHook(&scriptHook{sha: live.Script("rebuild").Hash(), before: func() error {
		yOnce.Do(func() { close(snapshotRead); <-release })
		return nil
	}})
	var refuseEnd atomic.Bool
	x.rdb.AddHook(&scriptHook{sha: live.Script("end").Hash(), before: func() error {
		if refuseEnd.Load() {
			return errors.New("injected: end.lua refused")
		}
		return nil
	}})
	rebuilt := make(chan error, 1)
	var xOnce sync.Once
	x.rdb.AddHook(&scriptHook{sha: live.Script("expire").Hash(), after: func() {
		xOnce.Do(func() {
			loc.loseRedis(t)
			go func() { rebuilt <- y.ensureLive(context.Background(), lic.ID) }()
			<-snapshotRead
			refuseEnd.Store(true)
		})
	}})

	_, err := x.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EUNAVAILABLE, server.ReasonUnavailable,
		"not told LEASE_EXPIRED while Redis may still bring the lease back")
	refuseEnd.Store(false)
	close(release)
	require.NoError(t, <-rebuilt)

	// The rebuild put the lease back; the record says expired, so the
	// lease stops within a flush interval, and once told, it stays told.
	require.Eventually(t, func() bool {
		_, err = x.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
		return err != nil
	}, 10*time.Second, 20*time.Millisecond)
	requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
	for range 3 {
		_, err = x.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "an observed expiry is final")
	}
	n, err := x.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestRebuildIntoARedisThatLostItsData: a rebuild reads its snapshot (the
// lease active), then the lease is released (end.lua remembers the end in
// Redis) and Redis loses its data, and only then does rebuild.lua run: it
// must not write the snapshot, which would bring back a lease whose
// client was told it ended.
func TestRebuildIntoARedisThatLostItsData(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	s, other := loc.open(t, nil), loc.open(t, nil)
	t.Cleanup(func() { _ = s.Close(); _ = other.Close() })
	tn := mkTenant(t, s)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")

	s.rdb.AddHook(onScript(live.Script("rebuild"), func() {
		_, err := other.Release(context.Background(), res.Lease.ID, server.HashSecret(tok))
		require.NoError(t, err, "the release racing the rebuild")
		loc.loseRedis(t)
	}))
	// The rebuild may fail (its snapshot is refused): what matters is what
	// the clients see after it.
	_ = s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID))

	_, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "the released lease came back with the rebuild")
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestGetLeaseAfterRedisLossShowsTheEnforcedDeadline: a heartbeat on one
// instance acknowledged a deadline not yet written behind; Redis loses its
// data; another instance's GetLease (what admins and the wait-hold check
// read) shows a deadline at or after the acknowledged one. It showed the
// record's older values: the wait-hold check took the waiter's heartbeat
// for missing and revoked a confirmed grant (make chaos, seed 31337).
func TestGetLeaseAfterRedisLossShowsTheEnforcedDeadline(t *testing.T) {
	t.Parallel()
	loc := newLocation(t)
	x := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	y := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = 2 * time.Second })
	t.Cleanup(func() { _ = x.Close(); _ = y.Close() })
	tn := mkTenant(t, x)
	lic := mkLicense(t, x, tn.ID, 1, time.Minute)
	res, tok := acq(t, x, lic.Key, "a")
	beat, err := x.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	require.True(t, beat.ExpiresAt.After(res.Lease.ExpiresAt))

	loc.loseRedis(t)
	l, err := y.GetLease(t.Context(), tn.ID, res.Lease.ID)
	require.NoError(t, err)
	require.False(t, l.ExpiresAt.Before(beat.ExpiresAt),
		"GetLease shows %v, before the deadline a heartbeat acknowledged (%v)", l.ExpiresAt, beat.ExpiresAt)
}

// TestDeleteOfAnotherTenantsLicenseRebuildsNothing: after a Redis loss, a
// DeleteLicense naming another tenant's license answers NOT_FOUND without
// touching it: no rebuild, whose new epoch would make the owner's grants
// in flight be refused and granted again.
func TestDeleteOfAnotherTenantsLicenseRebuildsNothing(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := mkTenant(t, s)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	acq(t, s, lic.Key, "a")
	epoch := loc.epochOf(t, lic.ID)
	loc.loseRedis(t)
	_, err := s.DeleteLicense(t.Context(), other.ID, lic.ID)
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
	require.Equal(t, epoch, loc.epochOf(t, lic.ID), "another tenant's call rebuilt the license")
}

// TestRedisLossKeepsDeadlinesAcrossAHeartbeatInterval: as for a crash of
// the embedded store: the heartbeat in the record before the one a Redis
// loss forgot may be a heartbeat interval older; the rebuild gives that
// much back, so the deadline told holds to within a flush interval.
func TestRedisLossKeepsDeadlinesAcrossAHeartbeatInterval(t *testing.T) {
	t.Parallel()
	const flush = time.Second
	loc := newLocation(t)
	x := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour }) // its heartbeat stays unwritten
	y := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = flush })
	t.Cleanup(func() { _ = x.Close(); _ = y.Close() })
	tn := mkTenant(t, x)
	lic := mkLicense(t, x, tn.ID, 1, time.Minute) // heartbeat interval 10 s
	res, tok := acq(t, x, lic.Key, "a")
	require.Eventually(t, func() bool { return time.Since(res.Lease.AcquiredAt) > 4*time.Second }, 10*time.Second, 50*time.Millisecond)
	beat, err := x.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)

	loc.loseRedis(t)
	l, err := y.GetLease(t.Context(), tn.ID, res.Lease.ID)
	require.NoError(t, err)
	require.False(t, l.ExpiresAt.Before(beat.ExpiresAt.Add(-flush)),
		"deadline %v after the Redis loss; told %v", l.ExpiresAt, beat.ExpiresAt)
}
