package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Linger: lingering seats (server/linger.go). A release of a lease of a
// pool whose license's policy has a linger for it keeps the lease active
// and counted, Lingering, until the release + the linger; its heartbeats
// are answered as a released lease's, a release of it answers it
// unchanged; the same client (idempotency or dedupe key) acquiring takes
// it back (Existing, a new deadline and token, audited lease.reclaim);
// anyone else is judged with it counted; a revoke ends it at once; lapsed,
// it ends as released with one usage event to its linger's end and no
// cleanup event. A policy without a linger (or of 0, or of another
// feature) releases as before.

// longLinger is a linger that cannot lapse during a test.
const longLinger = time.Hour

// lapsingLinger is the linger of a lease a test lets lapse: a long one
// (but shorter than longTTL: the other leases of the test outlive it)
// where the store's clock can be moved past it, else a short one the test
// waits out. Nothing a test asserts may depend on a short one not having
// lapsed yet.
func lapsingLinger(s server.Store) time.Duration {
	if clockMoves(s) {
		return longTTL / 4
	}
	return time.Second
}

func lingerOf(feature string, d time.Duration) server.Linger {
	return server.Linger{Feature: feature, Duration: d}
}

// setLinger sets a policy of rules and lingers that must be accepted.
func setLinger(t *testing.T, s server.Store, l server.License, lingers []server.Linger, rules ...server.PolicyRule) server.License {
	t.Helper()
	got, err := s.SetPolicy(t.Context(), l.TenantID, l.ID, &server.Policy{Rules: rules, Linger: lingers})
	require.NoError(t, err, "SetPolicy")
	require.NotNil(t, got.Policy, "SetPolicy answers with the policy")
	require.Equal(t, lingers, got.Policy.Linger)
	return got
}

// releaseLingering releases a lease that must linger for d, and checks
// the answer.
func releaseLingering(t *testing.T, s server.Store, held server.Lease, token string, d time.Duration) server.Lease {
	t.Helper()
	l, err := s.Release(t.Context(), held.ID, server.HashSecret(token))
	require.NoError(t, err, "Release(%s)", held.ID)
	requireLingering(t, l, held, d)
	return l
}

// requireLingering checks a lease that lingers for d since its release.
func requireLingering(t *testing.T, l, held server.Lease, d time.Duration) {
	t.Helper()
	require.Equal(t, held.ID, l.ID)
	require.Equal(t, server.LeaseActive, l.State, "a lingering lease is active")
	require.True(t, l.Lingering, "Lingering")
	require.True(t, l.EndedAt.IsZero(), "EndedAt of a lingering lease")
	require.False(t, l.LastHeartbeatAt.Before(held.LastHeartbeatAt), "LastHeartbeatAt: its release")
	require.WithinDuration(t, l.LastHeartbeatAt.Add(d), l.ExpiresAt, timeSlack, "deadline = its release + the linger")
	require.Equal(t, held.Reservation, l.Reservation, "a lingering lease keeps its reservation")
}

// reclaimed acquires as a lease's client and checks that the lingering
// lease comes back.
func reclaimed(t *testing.T, s server.Store, lic server.License, fingerprint string, mut func(*server.AcquireRequest), lingering server.Lease) (server.AcquireResult, string) {
	t.Helper()
	res, tok := acquire(t, s, lic, fingerprint, mut)
	require.True(t, res.Existing, "the lingering lease is handed back")
	require.Equal(t, lingering.ID, res.Lease.ID)
	require.False(t, res.Lease.Lingering, "taken back: no longer lingering")
	require.True(t, res.Lease.LastHeartbeatAt.After(lingering.LastHeartbeatAt) || res.Lease.LastHeartbeatAt.Equal(lingering.LastHeartbeatAt))
	return res, tok
}

// reclaimAudits counts the lease.reclaim audit entries of a lease.
func reclaimAudits(t *testing.T, s server.Store, tenantID, leaseID string) int {
	t.Helper()
	n := 0
	for _, e := range listAudit(t, s, tenantID, 100) {
		if e.Action == server.AuditLeaseReclaim && e.ResourceID == leaseID {
			require.Equal(t, "system", e.Actor)
			require.Equal(t, "lease", e.Resource)
			n++
		}
	}
	return n
}

func testLinger(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()

	t.Run("ReleasedSeatLingersForItsClient", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)})
		a, tokA := acquire(t, s, lic, "a", as("ann", "h1"))
		la := releaseLingering(t, s, a.Lease, tokA, longLinger)
		requireSameLease(t, la, getLease(t, s, tn.ID, a.Lease.ID), "GetLease shows it lingering")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID), "a lingering seat is counted")

		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "a heartbeat of a lingering lease: released")
		again, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		require.NoError(t, err, "releasing a lingering lease again")
		requireSameLease(t, la, again, "answered unchanged")
		_, err = s.Release(t.Context(), a.Lease.ID, server.HashSecret("wrong"))
		requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong)

		meta := refused(t, s, lic.Key, "b", as("bob", "h2"), server.EEXHAUSTED, server.ReasonSeatsExhausted, "anyone else waits for the linger")
		require.Equal(t, "1", meta["seats_in_use"])
		_, revoked, err := s.RevokeUnconfirmed(t.Context(), a.Lease)
		require.NoError(t, err)
		require.False(t, revoked, "RevokeUnconfirmed leaves a released lease alone")
		require.True(t, getLease(t, s, tn.ID, a.Lease.ID).Lingering)

		back, tokA := reclaimed(t, s, lic, "a", as("ann", "h1"), la)
		require.Equal(t, 1, back.SeatsInUse)
		require.Equal(t, 1, reclaimAudits(t, s, tn.ID, a.Lease.ID), "lease.reclaim audited")
		hb := heartbeat(t, s, a.Lease.ID, tokA)
		require.False(t, hb.Lingering)
		require.Empty(t, usageOf(usageEvents(t, s, tn.ID, lic.ID), a.Lease.ID), "no usage event while the lease lives")

		// Released again, it lingers again; the old token is gone.
		la2 := releaseLingering(t, s, hb, tokA, longLinger)
		require.True(t, la2.ExpiresAt.After(la.ExpiresAt) || la2.ExpiresAt.Equal(la.ExpiresAt))
		requireSameLease(t, la2, getLease(t, s, tn.ID, a.Lease.ID))
	})

	t.Run("IdempotencyKeyTakesItBack", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), strategy(server.PerAcquisition)))
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)})
		key := func(r *server.AcquireRequest) { r.IdempotencyKey = "run-1" }
		a, tokA := acquire(t, s, lic, "a", key)
		la := releaseLingering(t, s, a.Lease, tokA, longLinger)
		other, _ := acquire(t, s, lic, "a", nil)
		require.False(t, other.Existing, "no dedupe key: another acquisition is another client")
		refused(t, s, lic.Key, "a", nil, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		reclaimed(t, s, lic, "a", key, la)
	})

	t.Run("LapsedLingerEndsReleasedNotExpired", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		d := lapsingLinger(s)
		setLinger(t, s, lic, []server.Linger{lingerOf("", d)})
		a, tokA := acquire(t, s, lic, "a", nil)
		la := releaseLingering(t, s, a.Lease, tokA, d)
		if clockMoves(s) {
			refused(t, s, lic.Key, "b", nil, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		}
		passDeadline(t, s, la.ExpiresAt)
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID), "a lapsed linger holds no seat, cleanup or not")
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "lapsed: still released, never revived")

		ended := expireAllDue(t, s)
		require.Len(t, ended, 1)
		ea := ended[0]
		require.Equal(t, a.Lease.ID, ea.ID)
		require.Equal(t, server.LeaseReleased, ea.State, "a lapsed linger ends as released")
		require.True(t, ea.Lingering)
		require.False(t, ea.EndedAt.Before(la.ExpiresAt))
		requireSameLease(t, ea, getLease(t, s, tn.ID, a.Lease.ID))
		u := requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ea)
		require.Equal(t, server.LeaseReleased, u.EndState)
		requireSameTime(t, la.ExpiresAt, u.EndedAt, "the usage counts the linger")
		require.Empty(t, cleanupOf(cleanupEvents(t, s, tn.ID, lic.ID), a.Lease.ID), "no zombie")
		q, err := server.ZombieQuery{TenantID: tn.ID, Start: la.AcquiredAt.Add(-time.Hour), End: ea.EndedAt.Add(time.Hour)}.WithDefaults()
		require.NoError(t, err)
		rep, err := s.ZombieReport(t.Context(), q)
		require.NoError(t, err)
		require.Zero(t, rep.Total, "not in the zombie report")

		again, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		require.NoError(t, err)
		requireSameLease(t, ea, again, "releasing a released lease: unchanged")
		b, _ := acquire(t, s, lic, "a", nil)
		require.False(t, b.Existing, "after its linger its client gets a new lease")
		require.Len(t, usageEvents(t, s, tn.ID, lic.ID), 1, "one usage event")
	})

	t.Run("LapsedLingerGivesItsSeatToAnother", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		d := lapsingLinger(s)
		setLinger(t, s, lic, []server.Linger{lingerOf("", d)})
		a, tokA := acquire(t, s, lic, "a", nil)
		la := releaseLingering(t, s, a.Lease, tokA, d)
		passDeadline(t, s, la.ExpiresAt)
		b, _ := acquire(t, s, lic, "b", nil)
		require.Equal(t, 1, b.SeatsInUse)
		ea := getLease(t, s, tn.ID, a.Lease.ID)
		require.Equal(t, server.LeaseReleased, ea.State, "the lapsed linger whose seat went to another ended, released")
		u := requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ea)
		requireSameTime(t, la.ExpiresAt, u.EndedAt)
		require.Empty(t, cleanupEvents(t, s, tn.ID, lic.ID))
		require.Empty(t, expireAllDue(t, s), "recorded once")
		_, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased)
	})

	t.Run("ReleaseOfALapsedLingerEndsIt", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		d := lapsingLinger(s)
		setLinger(t, s, lic, []server.Linger{lingerOf("", d)})
		a, tokA := acquire(t, s, lic, "a", nil)
		la := releaseLingering(t, s, a.Lease, tokA, d)
		passDeadline(t, s, la.ExpiresAt)
		ea, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		require.NoError(t, err, "released already: not an error")
		require.Equal(t, server.LeaseReleased, ea.State, "its linger lapsed: it ends, released")
		require.True(t, ea.Lingering)
		requireSameLease(t, ea, getLease(t, s, tn.ID, a.Lease.ID))
		u := requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), ea)
		requireSameTime(t, la.ExpiresAt, u.EndedAt)
		require.Empty(t, cleanupEvents(t, s, tn.ID, lic.ID))
		require.Empty(t, expireAllDue(t, s), "ended once")
	})

	t.Run("RevokeEndsTheLinger", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)})
		a, tokA := acquire(t, s, lic, "a", nil)
		la := releaseLingering(t, s, a.Lease, tokA, longLinger)
		rv, err := s.Revoke(t.Context(), tn.ID, a.Lease.ID)
		require.NoError(t, err)
		require.Equal(t, server.LeaseRevoked, rv.State)
		require.True(t, rv.EndedAt.Before(la.ExpiresAt), "at once")
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID))
		u := requireOneUsage(t, usageEvents(t, s, tn.ID, lic.ID), rv)
		require.Equal(t, server.LeaseRevoked, u.EndState)
		requireSameTime(t, rv.EndedAt, u.EndedAt, "its seat time ends at the revoke")
		acquire(t, s, lic, "b", nil)
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
	})

	t.Run("LingerWithReserve", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		lic := newLicense(t, s, tn.ID, seats(3))
		night := groupS("night")
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)}, reserveRule("", 1, night))
		a, tokA := acquire(t, s, lic, "a", as("ann", "h"))
		require.Equal(t, reservationKey(night), a.Lease.Reservation)
		la := releaseLingering(t, s, a.Lease, tokA, longLinger)

		// The lingering lease still holds night's seat: bob, of night,
		// takes a shared one; the last shared seat goes to carl; then none.
		b, _ := acquire(t, s, lic, "b", as("bob", "h"))
		require.Empty(t, b.Lease.Reservation, "the reserved seat lingers: a shared one")
		acquire(t, s, lic, "c", as("carl", "h"))
		refused(t, s, lic.Key, "d", as("dan", "h"), server.EEXHAUSTED, server.ReasonSeatsExhausted, "the lingering seat counts")
		back, tokA := reclaimed(t, s, lic, "a", as("ann", "h"), la)
		require.Equal(t, reservationKey(night), back.Lease.Reservation, "taken back with its reserved seat")
		require.Equal(t, 3, back.SeatsInUse)
		releaseLingering(t, s, back.Lease, tokA, longLinger)
	})

	w.run("LingerWithReserveLapses", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		putGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann", "bob")
		lic := newLicense(t, s, tn.ID, seats(2))
		night := groupS("night")
		d := lapsingLinger(s)
		setLinger(t, s, lic, []server.Linger{lingerOf("", d)}, reserveRule("", 1, night))
		a, tokA := acquire(t, s, lic, "a", as("ann", "h"))
		la := releaseLingering(t, s, a.Lease, tokA, d)
		acquire(t, s, lic, "c", as("carl", "h"))
		if clockMoves(s) {
			refused(t, s, lic.Key, "d", as("dan", "h"), server.EEXHAUSTED, server.ReasonSeatsExhausted, "night's seat lingers")
		}
		passDeadline(t, s, la.ExpiresAt)
		meta := refused(t, s, lic.Key, "d", as("dan", "h"), server.EEXHAUSTED, server.ReasonSeatsReserved, "lapsed: night's seat is night's again")
		require.Equal(t, "night", meta["subject_name"])
		b, _ := acquire(t, s, lic, "b", as("bob", "h"))
		require.Equal(t, reservationKey(night), b.Lease.Reservation)
		require.Equal(t, server.LeaseReleased, getLease(t, s, tn.ID, a.Lease.ID).State)
	})

	t.Run("LingerWithMaxCountsTheLingeringSeat", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)}, maxRule("", 1, userS("ann")))
		a, tokA := acquire(t, s, lic, "a", as("ann", "h1"))
		la := releaseLingering(t, s, a.Lease, tokA, longLinger)
		refused(t, s, lic.Key, "a2", as("ann", "h2"), server.EEXHAUSTED, server.ReasonUserLimit, "her lingering seat counts under her cap")
		reclaimed(t, s, lic, "a", as("ann", "h1"), la)
	})

	t.Run("OnlyThePoolsWithALingerLinger", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))
		sim := newGrant(t, s, lic, "sim", grantSeats(2))
		cad := newGrant(t, s, lic, "cad", grantSeats(2))
		setLinger(t, s, lic, []server.Linger{lingerOf("sim", longLinger), lingerOf("cad", 0)}, maxRule("", 2, userS("ann")))

		base, tok := acquire(t, s, lic, "a", nil)
		release(t, s, base.Lease.ID, tok) // the base pool has no linger
		c, tok := acquireFeature(t, s, lic, cad, "a", "", nil)
		release(t, s, c.Lease.ID, tok) // a linger of 0: none

		f, tok := acquireFeature(t, s, lic, sim, "a", "", nil)
		lf := releaseLingering(t, s, f.Lease, tok, longLinger)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, sim.ID))
		back, _ := acquireFeature(t, s, lic, sim, "a", "", nil)
		require.True(t, back.Existing)
		require.Equal(t, lf.ID, back.Lease.ID)
		require.False(t, back.Lease.Lingering)
	})

	t.Run("BorrowedLeaseNeverLingers", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.MaxBorrowDuration, l.AllowEarlyReturn = 2, 24*time.Hour, true
		})
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)})
		b, tok := acquire(t, s, lic, "a", func(r *server.AcquireRequest) { r.BorrowFor = time.Hour })
		release(t, s, b.Lease.ID, tok)
	})

	t.Run("PolicyChangeKeepsALinger", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		setLinger(t, s, lic, []server.Linger{lingerOf("", longLinger)})
		a, tokA := acquire(t, s, lic, "a", nil)
		la := releaseLingering(t, s, a.Lease, tokA, longLinger)

		// Switched off: the linger under way stays, and its client still
		// takes it back; a release then ends the lease.
		_, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, nil)
		require.NoError(t, err)
		requireSameLease(t, la, getLease(t, s, tn.ID, a.Lease.ID), "a policy change never ends a held lease")
		refused(t, s, lic.Key, "b", nil, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		back, tokA := reclaimed(t, s, lic, "a", nil, la)
		release(t, s, back.Lease.ID, tokA)

		// Switched on for new releases at once.
		setLinger(t, s, lic, []server.Linger{lingerOf("", 2*longLinger)})
		b, tokB := acquire(t, s, lic, "b", nil)
		releaseLingering(t, s, b.Lease, tokB, 2*longLinger)
	})

	w.run("LingerSurvivesARestart", func(t *testing.T) {
		open := newBackend(t)
		s1 := openReopenable(t, open)
		tn := newTenant(t, s1)
		lic := newLicense(t, s1, tn.ID, seats(1))
		setLinger(t, s1, lic, []server.Linger{lingerOf("", longLinger)})
		a, tokA := acquire(t, s1, lic, "a", nil)
		la := releaseLingering(t, s1, a.Lease, tokA, longLinger)
		require.NoError(t, s1.Close())

		s2 := openWith(t, open)
		got := getLease(t, s2, tn.ID, a.Lease.ID)
		requireSameLease(t, la, got, "the linger, its deadline exactly (no write-behind slack: it was written at the release)")
		require.Equal(t, 1, seatsInUse(t, s2, tn.ID, lic.ID))
		refused(t, s2, lic.Key, "b", nil, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		_, err := s2.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased)
		reclaimed(t, s2, lic, "a", nil, la)
	})
}
