package embedded

// Tests for behaviour the mutation run (make mutate) showed no test held:
// each one names what it checks, not the mutant that found the gap.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// crashAndReopen kills the store as kill -9 would and opens the same data
// with the given flush interval.
func (b *bundle) crashAndReopen(t *testing.T, flush time.Duration) {
	t.Helper()
	crash(b.s)
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: flush})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	b.s = s
}

// TestCrashThenEndsAndHeartbeatsAreStored: after a crash recovery every
// lease it extended can still be released, expired and heartbeated, and
// what those do reaches the disk.
func TestCrashThenEndsAndHeartbeatsAreStored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 5; l.LeaseTTL = time.Minute })
	released, relTok := b.mustAcquire(t, l, "a")
	expired, _ := b.mustAcquire(t, l, "b")
	observed, obsTok := b.mustAcquire(t, l, "c")

	b.crashAndReopen(t, time.Second)
	_, err := b.s.Release(ctx, released.ID, relTok)
	require.NoError(t, err)
	b.clock.Advance(2 * time.Minute) // past every deadline and the slack
	ended, err := b.s.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: expired.ID, LicenseID: l.ID}})
	require.NoError(t, err)
	require.Len(t, ended, 1)
	_, err = b.s.Heartbeat(ctx, observed.ID, obsTok)
	requireReason(t, err, server.ReasonLeaseExpired)

	d1, tok1 := b.mustAcquire(t, l, "d")
	d2, tok2 := b.mustAcquire(t, l, "e")
	b.clock.Advance(10 * time.Second)
	hb1, err := b.s.Heartbeat(ctx, d1.ID, tok1)
	require.NoError(t, err)
	hb2, err := b.s.Heartbeat(ctx, d2.ID, tok2)
	require.NoError(t, err)

	b.reopen(t)
	require.Equal(t, server.LeaseReleased, b.stored(t, released.ID).State)
	require.Equal(t, server.LeaseExpired, b.stored(t, expired.ID).State)
	require.Equal(t, server.LeaseExpired, b.stored(t, observed.ID).State)
	require.Equal(t, hb1.ExpiresAt, b.stored(t, d1.ID).ExpiresAt)
	require.Equal(t, hb2.ExpiresAt, b.stored(t, d2.ID).ExpiresAt)

	usage, err := b.s.UsageEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	perLease := map[string]int{}
	for _, u := range usage {
		perLease[u.LeaseID]++
	}
	require.Equal(t, map[string]int{released.ID: 1, expired.ID: 1, observed.ID: 1}, perLease)
	cleaned, err := b.s.CleanupEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	var ids []string
	for _, c := range cleaned {
		ids = append(ids, c.LeaseID)
	}
	require.ElementsMatch(t, []string{expired.ID, observed.ID}, ids, "one cleanup event per expired lease")
}

// TestGrantDisplacesOnlyTheSeatsItNeeds: a grant over lapsed leases ends
// the earliest one only; the other may still come back.
func TestGrantDisplacesOnlyTheSeatsItNeeds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 2; l.RevivalWindow = time.Minute })
	first, firstTok := b.mustAcquire(t, l, "a")
	b.clock.Advance(time.Second)
	second, secondTok := b.mustAcquire(t, l, "b")
	b.clock.Advance(l.LeaseTTL + time.Second) // both lapsed, both revivable

	third, _ := b.mustAcquire(t, l, "c")
	_, err := b.s.Heartbeat(ctx, first.ID, firstTok)
	requireReason(t, err, server.ReasonLeaseExpired)
	_, err = b.s.Heartbeat(ctx, second.ID, secondTok)
	require.NoError(t, err, "the later lapsed lease kept its seat")

	b.reopen(t)
	require.Equal(t, server.LeaseExpired, b.stored(t, first.ID).State)
	require.Equal(t, server.LeaseActive, b.stored(t, second.ID).State)
	require.Equal(t, server.LeaseActive, b.stored(t, third.ID).State, "the grant is on disk with the displacement")
}

// TestGrantWithFreeSeatsDisplacesNothing: a lapsed lease keeps its seat
// while the license has a free one.
func TestGrantWithFreeSeatsDisplacesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 2; l.RevivalWindow = time.Minute })
	lapsed, tok := b.mustAcquire(t, l, "a")
	b.clock.Advance(l.LeaseTTL + time.Second)
	b.mustAcquire(t, l, "b")
	_, err := b.s.Heartbeat(t.Context(), lapsed.ID, tok)
	require.NoError(t, err)
}

// TestDedupeSurvivesTheExpiryOfAnOlderLease: per-fingerprint, a machine's
// lapsed lease and its new one share a dedupe key; expiring the old one
// (the new grant does, so that it cannot revive beside the new one) must
// not forget the new one.
func TestDedupeSurvivesTheExpiryOfAnOlderLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) {
		l.Seats = 2
		l.LeasingStrategy = server.PerFingerprint
		l.RevivalWindow = time.Minute
	})
	old, _ := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(l.LeaseTTL + time.Second)
	current, _ := b.mustAcquire(t, l, "laptop")
	require.NotEqual(t, old.ID, current.ID)

	got, err := b.s.GetLease(ctx, b.tenant, old.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseExpired, got.State, "the grant ended the lapsed lease of its dedupe key")
	ended, err := b.s.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: old.ID, LicenseID: l.ID}})
	require.NoError(t, err)
	require.Empty(t, ended, "ended once")
	again, _ := b.mustAcquire(t, l, "laptop")
	require.Equal(t, current.ID, again.ID, "the same machine gets its live lease back")
}

// TestRevokeOfAnotherTenantsEndedLease: an ended lease is as invisible to
// another tenant as a live one.
func TestRevokeOfAnotherTenantsEndedLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, nil)
	lease, tok := b.mustAcquire(t, l, "a")
	_, err := b.s.Release(ctx, lease.ID, tok)
	require.NoError(t, err)

	_, err = b.s.Revoke(ctx, "tnt_other", lease.ID)
	requireReason(t, err, server.ReasonLeaseNotFound)
	got, err := b.s.Revoke(ctx, b.tenant, lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseReleased, got.State, "an ended lease stays as it ended")
}

// TestFailedCreateLicenseKeepsNoKey: a create whose write failed leaves
// neither its key nor its id taken.
func TestFailedCreateLicenseKeepsNoKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := server.License{
		ID: server.NewID(server.PrefixLicenseID), TenantID: b.tenant, Key: server.NewSecret(server.PrefixLicenseKey),
		Seats: 1, LeaseTTL: 10 * time.Second, Active: true, CreatedAt: b.clock.Now(), UpdatedAt: b.clock.Now(),
	}
	Faulty{b.s}.SetFault("", true)
	_, err := b.s.CreateLicense(ctx, l)
	require.Error(t, err)
	Faulty{b.s}.SetFault("", false)

	_, err = b.s.LicenseByKey(ctx, l.Key)
	requireReason(t, err, server.ReasonLicenseNotFound)
	_, err = b.s.CreateLicense(ctx, l)
	require.NoError(t, err)
}

// TestListActiveWithMoreLapsedThanLive: lapsed leases still hold their
// seats (they may be revived), so they are listed as active.
func TestListActiveWithMoreLapsedThanLive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 5; l.RevivalWindow = time.Minute })
	for _, fp := range []string{"a", "b", "c"} {
		b.mustAcquire(t, l, fp)
	}
	b.clock.Advance(l.LeaseTTL + time.Second)
	b.mustAcquire(t, l, "d")

	list, _, err := b.s.ListLeases(ctx, b.tenant, l.ID, server.LeaseActive, server.Page{})
	require.NoError(t, err)
	require.Len(t, list, 4)
	n, err := b.s.DeleteLicense(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, 4, n)
}

// TestExpireLeasesChecksTheLicense: a ref naming another license (a stale
// cursor, a reused id) ends nothing.
func TestExpireLeasesChecksTheLicense(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, nil)
	other := b.license(t, nil)
	lease, _ := b.mustAcquire(t, l, "a")
	b.clock.Advance(l.LeaseTTL)

	ended, err := b.s.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: lease.ID, LicenseID: other.ID}})
	require.NoError(t, err)
	require.Empty(t, ended)
	require.Equal(t, server.LeaseActive, b.stored(t, lease.ID).State)
	ended, err = b.s.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: lease.ID, LicenseID: l.ID}})
	require.NoError(t, err)
	require.Len(t, ended, 1)
}
