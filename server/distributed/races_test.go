package distributed

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/syncbuffer"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Interleavings a review of the observed-ends-final change found: a replay
// of acquire.lua after a refused grant, a replay that loses the leases its
// grant displaced, a retried delete after a failed tombstone, and a plain
// release taken for a repair by the write-behind flush. Each failed before
// its fix.

// TestReplayAfterFailedTakeBackIgnoresNewSettings: a grant judged by
// settings older than the record's (the UpdateLicense copy to Redis
// failed) is refused by the record; if giving its seat back (end.lua)
// fails too, the next round pushes the new settings and runs acquire.lua
// again with the same lease id and token: replayed() answers the old grant
// as NEW without judging it by the new settings, and it is recorded under
// the new version. Here the update lowered seats 2 -> 1 while one lease
// is held: the acquisition must be refused, but is granted.
func TestReplayAfterFailedTakeBackIgnoresNewSettings(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	failConf := newFailScript(live.Script("setconf"))
	failEnd := newFailScript(live.Script("end"))
	s.rdb.AddHook(failConf)
	s.rdb.AddHook(failEnd)
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	acq(t, s, lic.Key, "a")

	failConf.on.Store(true)
	_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Seats = 1; return nil })
	require.NoError(t, err)
	// The flush loop would retry the push every tick; keep it out of
	// the way (its retries run setconf.lua too, and would succeed now).
	s.confBehindMu.Lock()
	clear(s.confBehind)
	s.confBehindMu.Unlock()
	failConf.on.Store(false)

	failEnd.on.Store(true) // the take-back of the refused grant fails
	b, _, err := tryAcq(t.Context(), s, lic.Key, "b")
	failEnd.on.Store(false)
	n, nerr := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, nerr)
	require.Error(t, err, "seats are 1 and a holds it; granted %s, %d seats in use", b.Lease.ID, n)
}

// replayHook runs the first matching script call twice, as go-redis does
// when the reply of a script that ran is lost on the network and the
// command is retried: the caller sees the second (replayed) reply.
type replayHook struct {
	sha  string
	once sync.Once
}

func (h *replayHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *replayHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		replay := false
		if len(args) > 1 && strings.EqualFold(cmd.Name(), "evalsha") {
			if sha, _ := args[1].(string); sha == h.sha {
				h.once.Do(func() { replay = true })
			}
		}
		if replay {
			_ = next(ctx, cmd) // the first run; its reply is "lost"
		}
		return next(ctx, cmd)
	}
}
func (h *replayHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestReplayedGrantLosesDisplaced: a grant that took a lapsed lease's
// seat names it in `displaced` so that its expiry is recorded before the
// new lease; a replay of acquire.lua answers the grant with no displaced
// leases, so the new lease is recorded while the lapsed one is still
// active in the record. A Redis loss then rebuilds both (the lapsed one
// with the write-behind slack): two live leases on one seat, and the
// lapsed lease heartbeats again although its seat went to b.
func TestReplayedGrantLosesDisplaced(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = 5 * time.Second })
	lic := mkLicense(t, s, tn.ID, 1, time.Second)
	a, tokA := acq(t, s, lic.Key, "a")
	require.Eventually(t, func() bool { return time.Now().After(a.Lease.ExpiresAt.Add(50 * time.Millisecond)) },
		5*time.Second, 10*time.Millisecond)

	s.rdb.AddHook(&replayHook{sha: live.Script("acquire").Hash()})
	b, _ := acq(t, s, lic.Key, "b") // takes a's seat; the reply is a replay
	_, _, st := loc.recorded(t, a.Lease.ID)
	assert.Equal(t, "expired", st, "b was recorded, so a's expiry must be recorded first")

	loc.loseRedis(t)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only b counts after the rebuild")
	_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
	assert.Error(t, err, "a, whose seat went to %s, heartbeats again", b.Lease.ID)
}

// TestDeleteLicenseRetryAfterFailedTombstone: DeleteLicense answered
// UNAVAILABLE because the tombstone failed; the admin retries once Redis
// answers. The retry says NOT_FOUND (the license is gone: the delete was
// observed) without tombstoning, so the revoked leases keep heartbeating
// until a flush or the leader's reconciliation drops them.
func TestDeleteLicenseRetryAfterFailedTombstone(t *testing.T) {
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

	_, err = s.DeleteLicense(t.Context(), tn.ID, lic.ID)
	t.Logf("retry of DeleteLicense: %v", err)
	if err != nil {
		// The retry is told the license is gone: it must be gone.
		require.Equal(t, server.ENOTFOUND, server.ErrorCode(err), "%v", err)
	}
	_, err = s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked,
		"the delete was acknowledged (retry: not found), yet its revoked lease heartbeats")
}

// TestPlainReleaseIsNotReportedAsRepair: a lease heartbeats and is
// then released normally (end recorded, end.lua succeeded). Its heartbeat
// is still in the write-behind buffer, so the next flush finds it ended in
// the record and warns that an ended lease was "still live in Redis" (and
// runs end.lua again): every release, revoke or expiry within a flush
// interval of a heartbeat is logged as a repair.
func TestPlainReleaseIsNotReportedAsRepair(t *testing.T) {
	t.Parallel()
	var logs syncbuffer.Buffer
	_, s, tn := openStore(t, func(o *Options) {
		o.HeartbeatFlushInterval = time.Hour // flushed by hand below
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	res, tok := acq(t, s, lic.Key, "a")
	_, err := s.Heartbeat(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	_, err = s.Release(t.Context(), res.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	require.NoError(t, s.flush(t.Context()))
	require.NotContains(t, logs.String(), "still live in Redis", "a normal release is reported as a repair")
}

// TestGrantAfterUnrecordedExpiry: a lapsed lease is in the expiring hash
// but its expiry is not recorded (the cleaner died between expire.lua and
// its statement, or its statement failed). The next grant does not need
// its seat in the deadlines set, but must record its expiry first all the
// same: otherwise a Redis loss rebuilds both, two leases on one seat.
func TestGrantAfterUnrecordedExpiry(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = 5 * time.Second })
	lic := mkLicense(t, s, tn.ID, 1, time.Second)
	a, tokA := acq(t, s, lic.Key, "a")
	require.Eventually(t, func() bool { return time.Now().After(a.Lease.ExpiresAt.Add(50 * time.Millisecond)) },
		5*time.Second, 10*time.Millisecond)
	// The first step of ExpireLeases, and then nothing (crash or failed record).
	res, err := live.Script("expire").Run(t.Context(), s.rdb, s.live.Keys().License(lic.ID), live.LeaseKey(a.Lease.ID)).Slice()
	require.NoError(t, err)
	require.Len(t, res, 7, "a moved to the expiring hash: %v", res)

	b, _ := acq(t, s, lic.Key, "b")
	_, _, st := loc.recorded(t, a.Lease.ID)
	assert.Equal(t, "expired", st, "b took a's seat and was recorded, so a's expiry must be recorded first")

	loc.loseRedis(t)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only b counts after the rebuild")
	_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
	assert.Error(t, err, "a, whose seat went to %s, heartbeats again", b.Lease.ID)
}
