package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testUsageAgrees: the usage events (what `seatctl export usage` writes)
// and the usage report bill the same seat time for the same leases, lease
// by lease and in total: a lease held its seat until it ended, or until
// its deadline if that came first (server.SeatHeldUntil). Issue 25: the
// export ended an expired lease at its last heartbeat (one that never
// heartbeated showed 0 s) while the report counted it to its deadline.
func testUsageAgrees(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	ctx := t.Context()
	tn := newTenant(t, s)
	lic := newLicense(t, s, tn.ID, with(seats(10), leaseTTL(lapsingTTL(s))))
	user := func(u string) func(*server.AcquireRequest) { return func(r *server.AcquireRequest) { r.User = u } }

	released, relTok := acquire(t, s, lic, "released", user("released"))
	revoked, _ := acquire(t, s, lic, "revoked", user("revoked"))
	silent, _ := acquire(t, s, lic, "silent", user("silent"))          // never heartbeats, expires
	beating, beatTok := acquire(t, s, lic, "beating", user("beating")) // heartbeats once, expires
	late, _ := acquire(t, s, lic, "late", user("late"))                // revoked past its deadline
	heartbeat(t, s, beating.Lease.ID, beatTok)
	release(t, s, released.Lease.ID, relTok)
	_, err := s.Revoke(ctx, tn.ID, revoked.Lease.ID)
	require.NoError(t, err)

	lapsing := []server.Lease{getLease(t, s, tn.ID, silent.Lease.ID), getLease(t, s, tn.ID, beating.Lease.ID),
		getLease(t, s, tn.ID, late.Lease.ID)}
	passDeadlines(t, s, lapsing...)
	_, err = s.Revoke(ctx, tn.ID, late.Lease.ID) // before any cleanup: recorded as revoked
	require.NoError(t, err)
	expireAllDue(t, s)

	ids := []string{released.Lease.ID, revoked.Lease.ID, silent.Lease.ID, beating.Lease.ID, late.Lease.ID}
	events := usageEvents(t, s, tn.ID, lic.ID)
	require.Len(t, events, len(ids), "one usage event per ended lease")
	var billed time.Duration
	first, last := time.Time{}, time.Time{}
	for _, id := range ids {
		ls := getLease(t, s, tn.ID, id)
		require.True(t, ls.State.Terminal(), "%s ended", id)
		e := requireOneUsage(t, events, ls)
		billed += e.Duration
		if first.IsZero() || ls.AcquiredAt.Before(first) {
			first = ls.AcquiredAt
		}
		if e.EndedAt.After(last) {
			last = e.EndedAt
		}
	}
	requireState := func(id string, want server.LeaseState) {
		t.Helper()
		require.Equal(t, want, getLease(t, s, tn.ID, id).State, id)
	}
	requireState(silent.Lease.ID, server.LeaseExpired)
	requireState(beating.Lease.ID, server.LeaseExpired)
	requireState(late.Lease.ID, server.LeaseRevoked)
	silentEv := usageOf(events, silent.Lease.ID)[0]
	require.Positive(t, silentEv.Duration, "a lease that never heartbeated held its seat until its deadline")
	requireSameTime(t, lapsing[0].ExpiresAt, silentEv.EndedAt, "the silent lease's usage ends at its deadline")

	// The same leases in the report: its seat-hours, per bucket and per
	// user, add up to what the events bill.
	q := server.UsageQuery{TenantID: tn.ID, LicenseID: lic.ID, Start: first.UTC().Truncate(time.Hour),
		End: last.UTC().Truncate(time.Hour).Add(time.Hour), Bucket: time.Hour, Users: 10, MaxRows: 1000}
	rep, err := s.UsageReport(ctx, q)
	require.NoError(t, err, "UsageReport")
	var reported float64
	for _, r := range rep.Rows {
		reported += r.SeatHours
	}
	slack := float64(len(ids)) * 2 * timeSlack.Hours()
	require.InDelta(t, billed.Hours(), reported, slack, "the events bill what the report counts")
	require.Len(t, rep.Users, len(ids))
	for _, u := range rep.Users {
		e := usageOf(events, map[string]string{"released": released.Lease.ID, "revoked": revoked.Lease.ID,
			"silent": silent.Lease.ID, "beating": beating.Lease.ID, "late": late.Lease.ID}[u.User])
		require.Len(t, e, 1, "user %s", u.User)
		require.InDelta(t, e[0].Duration.Hours(), u.SeatHours, 2*timeSlack.Hours(), "user %s: the event and the report agree", u.User)
	}
}
