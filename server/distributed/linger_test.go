package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// Lingering seats (server/linger.go) in distributed mode: check.lua lingers
// the lease in Redis, then the record follows (sessions.lingering) before
// the client is told. These tests cover what the conformance suite cannot
// see: a loss of Redis, and a crash between the two steps.

// setLinger gives a license a policy of one linger of its base pool.
func setLinger(t *testing.T, s *Store, lic server.License, d time.Duration) {
	t.Helper()
	_, err := s.SetPolicy(t.Context(), lic.TenantID, lic.ID, &server.Policy{Linger: []server.Linger{{Duration: d}}})
	require.NoError(t, err)
}

// TestLingerSurvivesRedisLoss: Redis loses everything while a released
// seat lingers; the rebuild brings the linger back from the record as it
// was (its deadline exactly: no write-behind slack), counted: anyone else
// is refused, its heartbeats are answered released, and its client takes
// it back.
func TestLingerSurvivesRedisLoss(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	setLinger(t, s, lic, time.Hour)
	a, tok := acq(t, s, lic.Key, "a")
	rel, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err)
	require.True(t, rel.Lingering)

	loc.loseRedis(t)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "b")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the linger counts after the rebuild")
	got, err := s.GetLease(t.Context(), tn.ID, a.Lease.ID)
	require.NoError(t, err)
	require.True(t, got.Lingering)
	require.Equal(t, rel.ExpiresAt, got.ExpiresAt, "no slack: the linger's end was recorded with the release")
	vals, _, err := s.peek(t.Context(), lic.ID, a.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, rel.ExpiresAt, vals[a.Lease.ID].Deadline, "Redis enforces the recorded end")
	_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tok))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased)

	back, _ := acq(t, s, lic.Key, "a")
	require.True(t, back.Existing)
	require.Equal(t, a.Lease.ID, back.Lease.ID)
	require.False(t, back.Lease.Lingering)
	row, err := s.rec.Session(t.Context(), a.Lease.ID)
	require.NoError(t, err)
	require.False(t, row.Lingering, "the record knows it was taken back")
}

// TestLingerRecordedAfterACrash: a process lingers a lease in Redis
// (check.lua) and dies before the record follows. A retried release
// writes the record; and a linger nobody retried, once lapsed, is still
// recorded released, not as a zombie: Redis says it lingered.
func TestLingerRecordedAfterACrash(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	setLinger(t, s, lic, time.Second)
	ctx := t.Context()

	// Retried: the release finds the lease lingering and records it.
	a, tokA := acq(t, s, lic.Key, "a")
	c, err := s.live.Check(ctx, lic.ID, a.Lease.ID, server.HashSecret(tokA))
	require.NoError(t, err)
	require.Equal(t, live.StatusLingered, c.Status)
	row, err := s.rec.Session(ctx, a.Lease.ID)
	require.NoError(t, err)
	require.False(t, row.Lingering, "the crash: not recorded")
	rel, err := s.Release(ctx, a.Lease.ID, server.HashSecret(tokA))
	require.NoError(t, err)
	require.True(t, rel.Lingering)
	require.Equal(t, c.Deadline, rel.ExpiresAt, "the linger Redis judged")

	// Not retried: it lapses, and the cleanup records it released.
	b, tokB := acq(t, s, lic.Key, "b")
	c, err = s.live.Check(ctx, lic.ID, b.Lease.ID, server.HashSecret(tokB))
	require.NoError(t, err)
	require.Equal(t, live.StatusLingered, c.Status)
	waitRedisPast(t, s, c.Deadline)
	waitRedisPast(t, s, rel.ExpiresAt)
	_, err = s.ExpireLeases(ctx, []server.LeaseRef{{LicenseID: lic.ID, LeaseID: b.Lease.ID}, {LicenseID: lic.ID, LeaseID: a.Lease.ID}})
	require.NoError(t, err)
	for _, id := range []string{a.Lease.ID, b.Lease.ID} {
		l, err := s.GetLease(ctx, tn.ID, id)
		require.NoError(t, err)
		require.Equal(t, server.LeaseReleased, l.State, "lease %s: a lapsed linger is released", id)
		require.True(t, l.Lingering)
	}
	cl, err := s.CleanupEvents(ctx, tn.ID, lic.ID)
	require.NoError(t, err)
	require.Empty(t, cl, "no zombie")
	us, err := s.UsageEvents(ctx, tn.ID, lic.ID)
	require.NoError(t, err)
	require.Len(t, us, 2)
}

// TestLingerOfAGrantsPool: a grant's pool lingers by its feature's linger,
// which its row carries (licenses.linger_us), pushed to its live settings
// with every policy change, and given to a grant created later.
func TestLingerOfAGrantsPool(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	g1 := mkGrant(t, s, lic, "sim", "", 2, time.Time{})
	_, err := s.SetPolicy(t.Context(), tn.ID, lic.ID, &server.Policy{Linger: []server.Linger{{Feature: "sim", Duration: time.Hour}}})
	require.NoError(t, err)
	g2 := mkGrant(t, s, lic, "sim", "", 2, time.Time{})
	for _, g := range []server.Grant{g1, g2} {
		row, err := s.rec.License(t.Context(), g.ID)
		require.NoError(t, err)
		require.Equal(t, time.Hour, row.Linger, "grant %s", g.ID)
	}
	row, err := s.rec.License(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Zero(t, row.Linger, "the base pool has none")

	_, err = s.SetPolicy(t.Context(), tn.ID, lic.ID, nil)
	require.NoError(t, err)
	row, err = s.rec.License(t.Context(), g1.ID)
	require.NoError(t, err)
	require.Zero(t, row.Linger, "switched off")
}
