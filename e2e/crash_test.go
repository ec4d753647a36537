package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// The persistence tests restart through a clean shutdown, which flushes
// everything. These kill seatd with SIGKILL instead: what was acknowledged
// (grants, releases, deadlines) must survive (invariant 9).

// TestKill9Embedded: a lease heartbeated right before the kill still
// heartbeats after the restart, past the deadline the disk had before the
// kill; a released lease stays released with its usage record; the seats
// in use are right.
func TestKill9Embedded(t *testing.T) {
	t.Parallel()
	// The check falls between the deadline on disk (a TTL after the grant)
	// and the one told (half a TTL later); the restart, from half a TTL
	// on, and the check have a TTL to be done by the told deadline. A
	// machine too slow for that tries again with twice the TTL.
	widenWindow(t, 6*time.Second, func(ttl time.Duration) string {
		// Nothing is written behind before the kill.
		p := start(t, options{args: []string{"--heartbeat-flush-interval", "1h"}})
		lic := newLicense(t, p, 3, ttl, "kill-9")
		ctx := t.Context()
		kept, err := p.acquire(ctx, lic.GetKey(), "kept")
		require.NoError(t, err)
		released, err := p.acquire(ctx, lic.GetKey(), "released")
		require.NoError(t, err)
		_, err = p.release(ctx, released)
		require.NoError(t, err)

		onDisk := kept.GetLease().GetExpiresAt().AsTime()
		sleepUntil(kept.GetLease().GetAcquiredAt().AsTime().Add(ttl / 2))
		hb, err := p.heartbeat(ctx, kept)
		if err != nil && !time.Now().Before(onDisk) {
			return fmt.Sprintf("the heartbeat half a TTL in came after the deadline (%v)", err)
		}
		require.NoError(t, err)
		told := hb.GetExpiresAt().AsTime()
		p.kill9()

		again := start(t, options{dataDir: p.DataDir, args: []string{"--heartbeat-flush-interval", "1h"}})
		require.Contains(t, again.Output(), "did not shut down cleanly", "the restart notices the crash")
		// Past the deadline the disk holds, before the one the client was told.
		sleepUntil(onDisk.Add(500 * time.Millisecond))
		_, err = again.heartbeat(ctx, kept)
		if checked := time.Now(); !checked.Before(told) {
			return fmt.Sprintf("the restart and heartbeat ended %s after the told deadline", checked.Sub(told).Round(time.Millisecond))
		}
		require.NoError(t, err, "a lease heartbeated on time survives kill -9")
		_, err = again.heartbeat(ctx, released)
		requireStatus(t, err, codes.FailedPrecondition, "LEASE_RELEASED")
		listed := again.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_RELEASED)
		require.Len(t, listed, 1)
		require.Equal(t, released.GetLease().GetId(), listed[0].GetId())
		a, err := again.acquire(ctx, lic.GetKey(), "new")
		require.NoError(t, err)
		require.EqualValues(t, 2, a.GetSeatsInUse(), "kept and new")
		again.stopOK()
		return ""
	})
}

// TestKill9Distributed: an instance killed right after acknowledging a
// grant, a release and a heartbeat; another instance, and the killed one
// restarted, agree on all three.
func TestKill9Distributed(t *testing.T) {
	t.Parallel()
	widenWindow(t, 6*time.Second, func(ttl time.Duration) string { // as TestKill9Embedded
		b := sharedBackend(t, "")
		procs := b.startCluster(t, 2, "kill9", "--heartbeat-flush-interval", "1h")
		lic := newLicense(t, procs[0], 3, ttl, "kill-9")
		ctx := t.Context()
		kept, err := procs[0].acquire(ctx, lic.GetKey(), "kept")
		require.NoError(t, err)
		released, err := procs[0].acquire(ctx, lic.GetKey(), "released")
		require.NoError(t, err)
		_, err = procs[0].release(ctx, released)
		require.NoError(t, err)
		onDisk := kept.GetLease().GetExpiresAt().AsTime()
		sleepUntil(kept.GetLease().GetAcquiredAt().AsTime().Add(ttl / 2))
		hb, err := procs[0].heartbeat(ctx, kept)
		if err != nil && !time.Now().Before(onDisk) {
			return fmt.Sprintf("the heartbeat half a TTL in came after the deadline (%v)", err)
		}
		require.NoError(t, err)
		told := hb.GetExpiresAt().AsTime()
		procs[0].kill9()

		sleepUntil(onDisk.Add(500 * time.Millisecond))
		_, err = procs[1].heartbeat(ctx, kept)
		if checked := time.Now(); !checked.Before(told) {
			stopAllOK(t, procs[1])
			return fmt.Sprintf("the heartbeat on the other instance ended %s after the told deadline", checked.Sub(told).Round(time.Millisecond))
		}
		require.NoError(t, err, "the other instance keeps the lease")
		toldAgain := time.Now().Add(ttl) // at least: the deadline procs[1] told
		_, err = procs[1].heartbeat(ctx, released)
		requireStatus(t, err, codes.FailedPrecondition, "LEASE_RELEASED")

		restarted := b.startSeatd(t, "kill9-restarted", "--heartbeat-flush-interval", "1h")
		_, err = restarted.heartbeat(ctx, kept)
		if checked := time.Now(); err != nil && !checked.Before(toldAgain) {
			stopAllOK(t, procs[1], restarted)
			return fmt.Sprintf("the restarted instance's heartbeat ended %s after the deadline told before it", checked.Sub(toldAgain).Round(time.Millisecond))
		}
		require.NoError(t, err)
		a, err := restarted.acquire(ctx, lic.GetKey(), "new")
		require.NoError(t, err)
		require.EqualValues(t, 2, a.GetSeatsInUse(), "kept and new")
		recs := leaseRecords(t, b.db(t), lic.GetId())
		require.Equal(t, "released", recs[released.GetLease().GetId()].State)
		require.Equal(t, 1, recs[released.GetLease().GetId()].UsageEvents)
		stopAllOK(t, procs[1], restarted)
		return ""
	})
}

// widenWindow runs try, a test that needs a timing window as wide as a
// TTL, with a TTL of first; when try says the machine was too slow for the
// window (it returns why; it fails the test itself when the code is
// wrong), again with twice the TTL, up to 8 × first. A slow machine makes
// the test longer, never failed or skipped.
func widenWindow(t *testing.T, first time.Duration, try func(ttl time.Duration) (tooSlow string)) {
	t.Helper()
	for ttl := first; ; ttl *= 2 {
		tooSlow := try(ttl)
		if tooSlow == "" {
			return
		}
		if ttl >= 8*first {
			t.Fatalf("too slow for the check even with a TTL of %s: %s", ttl, tooSlow)
		}
		t.Logf("with a TTL of %s %s; again with %s", ttl, tooSlow, 2*ttl)
	}
}

// sleepUntil sleeps until the clock reads at least when: the tests that
// need a deadline to pass wait for it, not for a fixed time.
func sleepUntil(when time.Time) {
	for d := time.Until(when); d > 0; d = time.Until(when) {
		time.Sleep(d)
	}
}
