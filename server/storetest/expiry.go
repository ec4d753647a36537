package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

func testExpiry(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	// Invariant 2: a lease past its deadline stops counting at once.
	w.run("ExpiredSeatFreeWithoutCleanup", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), leaseTTL(lapsingTTL(s))))

		a, _ := acquire(t, s, lic, "crashed-client", nil)
		if clockMoves(s) {
			// a's deadline is an hour off until the clock is moved past
			// it: its seat is surely taken. (A clock that cannot be moved,
			// Redis TIME, gives a one-second lease, which a slow machine
			// may let lapse before the next call: the seat of a live
			// lease is SeatLimit's to check.)
			_, _, err := tryAcquire(t.Context(), s, lic.Key, "other-client", nil)
			requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the seat is taken before the deadline")
		}
		// Leases granted from now on stay live through the checks below;
		// a keeps its deadline.
		_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.LeaseTTL = longTTL; return nil })
		require.NoError(t, err)

		passDeadline(t, s, a.Lease.ExpiresAt)
		// No cleanup pass has run: the zombie must not block.
		b, _ := acquire(t, s, lic, "new-client", nil)
		require.False(t, b.Existing)
		require.NotEqual(t, a.Lease.ID, b.Lease.ID)
		require.Equal(t, 1, b.SeatsInUse, "only the new lease counts")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
		// Observed ends are final: the lapsed lease whose seat went to
		// another client is recorded expired by that grant.
		require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, a.Lease.ID).State, "the lapsed lease is ended for good")
	})

	w.run("SameFingerprintAfterDeadlineGetsNewLease", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), leaseTTL(shortTTL)))
		a, _ := acquire(t, s, lic, "machine", nil)
		passDeadline(t, s, a.Lease.ExpiresAt)
		b, _ := acquire(t, s, lic, "machine", nil)
		require.False(t, b.Existing, "a lease past its deadline is never handed back")
		require.NotEqual(t, a.Lease.ID, b.Lease.ID)
		require.Equal(t, 1, b.SeatsInUse)
	})

	// Invariant 3: strict expiry, and observed ends are final: the call
	// that is told a lease expired records the expiry (no cleanup needed),
	// so the lease never heartbeats or counts again.
	w.run("HeartbeatAfterDeadlineEndsTheLease", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), leaseTTL(shortTTL)))
		a, tok := acquire(t, s, lic, "sleeping-laptop", nil)
		passDeadline(t, s, a.Lease.ExpiresAt)

		// The token is still checked first, and a wrong one changes nothing.
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret("wrong"))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong, "wrong token after the deadline")
		require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, a.Lease.ID).State, "a wrong token records nothing")

		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "heartbeat after the deadline")
		ended := getLease(t, s, tn.ID, a.Lease.ID)
		require.Equal(t, server.LeaseExpired, ended.State, "the expiry the heartbeat was told is recorded")
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)
		require.Len(t, cleanupEvents(t, s, tn.ID, lic.ID), 1)
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID))

		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "second heartbeat after the deadline")
		_, err = s.Release(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "release after the deadline")
		require.Empty(t, expireAllDue(t, s), "cleanup finds nothing left to do")
		requireSameLease(t, ended, getLease(t, s, tn.ID, a.Lease.ID), "later calls changed nothing")
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1, "exactly one usage event")
		require.Len(t, cleanupEvents(t, s, tn.ID, lic.ID), 1, "exactly one cleanup event")
	})

	w.run("ReleaseAfterDeadlineEndsTheLease", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(1), leaseTTL(shortTTL)))
		a, tok := acquire(t, s, lic, "sleeping-laptop", nil)
		passDeadline(t, s, a.Lease.ExpiresAt)
		_, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "release after the deadline")
		require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, a.Lease.ID).State)
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "heartbeat after the release was told it expired")
		require.Empty(t, expireAllDue(t, s))
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)
	})

	t.Run("HeartbeatBeforeDeadlineRenews", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		a, tok := acquire(t, s, lic, "client", nil)
		prev := a.Lease
		for i := range 2 {
			time.Sleep(20 * time.Millisecond)
			hb := heartbeat(t, s, a.Lease.ID, tok)
			require.True(t, hb.ExpiresAt.After(prev.ExpiresAt), "heartbeat %d moves the deadline forward", i)
			require.True(t, hb.LastHeartbeatAt.After(prev.LastHeartbeatAt), "heartbeat %d sets LastHeartbeatAt", i)
			require.WithinDuration(t, hb.LastHeartbeatAt.Add(lic.LeaseTTL), hb.ExpiresAt, timeSlack, "deadline = now + TTL")
			requireSameTime(t, a.Lease.AcquiredAt, hb.AcquiredAt, "AcquiredAt kept")
			require.Equal(t, a.Lease.TokenHash, hb.TokenHash, "a heartbeat does not rotate the token")
			requireSameLease(t, hb, getLease(t, s, tn.ID, a.Lease.ID), "GetLease sees the heartbeat")
			prev = hb
		}
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
	})

	w.run("RevivalWithinWindowWhenSeatFree", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.LeaseTTL, l.RevivalWindow = 1, shortTTL, time.Minute
		})
		a, tok := acquire(t, s, lic, "laptop", nil)
		// The revival renews by the TTL of now: it lasts past the checks.
		lic, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.LeaseTTL = longTTL
			return nil
		})
		require.NoError(t, err)
		passDeadline(t, s, a.Lease.ExpiresAt)

		hb := heartbeat(t, s, a.Lease.ID, tok)
		require.True(t, hb.ExpiresAt.After(a.Lease.ExpiresAt), "revived: new deadline")
		require.WithinDuration(t, hb.LastHeartbeatAt.Add(lic.LeaseTTL), hb.ExpiresAt, timeSlack)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID), "the revived lease holds the seat again")
	})

	w.run("RevivalRefusedWhenSeatTaken", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.LeaseTTL, l.RevivalWindow = 1, shortTTL, time.Minute
		})
		a, tokA := acquire(t, s, lic, "laptop", nil)
		// Leases granted from now on last long, so that B surely holds the
		// seat while A tries to come back; A keeps its one-second deadline.
		lic, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.LeaseTTL = longTTL
			return nil
		})
		require.NoError(t, err)
		requireSameTime(t, a.Lease.ExpiresAt, getLease(t, s, tn.ID, a.Lease.ID).ExpiresAt, "a TTL change keeps existing deadlines")
		passDeadline(t, s, a.Lease.ExpiresAt)

		b, tokB := acquire(t, s, lic, "desktop", nil)
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "revival while the seat is taken")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))

		// Its seat went to another client: A never comes back, even once
		// the seat is free again within the window.
		release(t, s, b.Lease.ID, tokB)
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "an observed end is final")
		require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, a.Lease.ID).State)
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID))
	})

	// With the seat count lowered under the leases still held, a lapsed
	// lease finds no free seat: it does not revive.
	w.run("RevivalRefusedWhenSeatsLowered", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.LeaseTTL, l.RevivalWindow = 2, longTTL, time.Minute
		})
		acquire(t, s, lic, "desktop", nil) // holds its seat throughout
		lic, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.LeaseTTL = shortTTL
			return nil
		})
		require.NoError(t, err)
		a, tokA := acquire(t, s, lic, "laptop", nil)
		_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.Seats = 1
			return nil
		})
		require.NoError(t, err)
		passDeadline(t, s, a.Lease.ExpiresAt)

		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "no seat free for the revival")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
	})

	w.run("RevivalRefusedAfterWindow", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.LeaseTTL, l.RevivalWindow = 1, shortTTL, time.Second
		})
		a, tok := acquire(t, s, lic, "laptop", nil)
		passDeadline(t, s, a.Lease.ExpiresAt.Add(lic.RevivalWindow))
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "heartbeat after deadline + revival window")
	})

	w.run("RevivalRefusedAfterCleanup", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.LeaseTTL, l.RevivalWindow = 1, shortTTL, time.Minute
		})
		a, tok := acquire(t, s, lic, "laptop", nil)
		passDeadline(t, s, a.Lease.ExpiresAt)
		require.Equal(t, []string{a.Lease.ID}, leaseIDs(expireAllDue(t, s)))
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "an expired (cleaned) lease is not revived")
		require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, a.Lease.ID).State)
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1)
	})
}
