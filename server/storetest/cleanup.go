package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

func testCleanup(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	// Invariant 5: two cleaners at once, stale batches and retries record
	// every expiry exactly once; the store re-checks each lease.
	w.run("TwoCleanersExpireEachLeaseOnce", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		licZ := newLicense(t, s, tn.ID, with(seats(10), leaseTTL(shortTTL)))
		licR := newLicense(t, s, tn.ID, func(l *server.License) {
			l.Seats, l.LeaseTTL, l.RevivalWindow = 1, shortTTL, time.Minute
		})
		licL := newLicense(t, s, tn.ID, seats(1))

		zombies := map[string]server.Lease{}
		tokens := map[string]string{}
		for i := range 6 {
			r, tok := acquire(t, s, licZ, fmt.Sprintf("crashed-%d", i), nil)
			zombies[r.Lease.ID], tokens[r.Lease.ID] = r.Lease, tok
		}
		// One zombie heartbeat once, later than its acquisition: its last
		// heartbeat may be written behind, and must reach the record when
		// it expires.
		for id := range zombies {
			zombies[id] = heartbeat(t, s, id, tokens[id])
			break
		}
		revived, tokR := acquire(t, s, licR, "comes-back", nil)
		live, _ := acquire(t, s, licL, "alive", nil)
		// From now on licR grants long deadlines, so the revived lease
		// surely stays live for the rest of the test.
		_, err := s.UpdateLicense(t.Context(), tn.ID, licR.ID, func(l *server.License) error {
			l.LeaseTTL = longTTL
			return nil
		})
		require.NoError(t, err)
		passDeadlines(t, s, append(slices.Collect(maps.Values(zombies)), revived.Lease)...)

		stale, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		require.ElementsMatch(t, append(keysOf(setOf(zombies)), revived.Lease.ID), refIDs(stale))
		// The revived lease wins the race against the cleaner's batch.
		heartbeat(t, s, revived.Lease.ID, tokR)
		// A batch may also name a live lease or a lease that does not exist:
		// the store re-checks and skips them.
		stale = append(stale,
			server.LeaseRef{LeaseID: live.Lease.ID, LicenseID: licL.ID, ExpiresAt: live.Lease.ExpiresAt},
			server.LeaseRef{LeaseID: server.NewID(server.PrefixLeaseID), LicenseID: licZ.ID, ExpiresAt: live.Lease.AcquiredAt},
		)

		var (
			mu      sync.Mutex
			expired []server.Lease
			errs    []error
		)
		collect := func(ls []server.Lease, err error) {
			mu.Lock()
			defer mu.Unlock()
			expired = append(expired, ls...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		cleaner := func() {
			collect(s.ExpireLeases(t.Context(), slices.Clone(stale))) // a stale batch first
			var after *server.LeaseRef
			for range 100 {
				refs, err := s.DueLeases(t.Context(), after, 2)
				if err != nil || len(refs) == 0 {
					collect(nil, err)
					return
				}
				collect(s.ExpireLeases(t.Context(), refs))
				after = &refs[len(refs)-1]
			}
			collect(nil, fmt.Errorf("cleaner did not finish"))
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { <-start; cleaner() })
		}
		close(start)
		wg.Wait()
		require.Empty(t, errs)

		// Each zombie was returned by exactly one ExpireLeases call.
		require.ElementsMatch(t, keysOf(setOf(zombies)), leaseIDs(expired), "expired leases over all calls")
		for _, ls := range expired {
			require.Equal(t, server.LeaseExpired, ls.State)
			require.False(t, ls.EndedAt.IsZero())
		}
		// Retrying changes nothing.
		again, err := s.ExpireLeases(t.Context(), stale)
		require.NoError(t, err)
		require.Empty(t, again, "a retried batch expires nothing")
		due, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		require.Empty(t, due)

		usage := usageEvents(t, s, tn.ID, licZ.ID)
		cleanups := cleanupEvents(t, s, tn.ID, licZ.ID)
		require.Len(t, usage, len(zombies))
		require.Len(t, cleanups, len(zombies))
		for id, z := range zombies {
			ls := getLease(t, s, tn.ID, id)
			require.Equal(t, server.LeaseExpired, ls.State)
			requireSameTime(t, z.ExpiresAt, ls.ExpiresAt, "the deadline is kept")
			requireSameTime(t, z.LastHeartbeatAt, ls.LastHeartbeatAt, "the last heartbeat is kept")
			require.False(t, ls.EndedAt.Before(ls.ExpiresAt.Add(-timeSlack)), "EndedAt is the cleanup time, after the deadline")
			requireOneUsage(t, usage, ls)

			mine := cleanupOf(cleanups, id)
			require.Len(t, mine, 1, "cleanup events of %s", id)
			ce := mine[0]
			require.Equal(t, server.CleanupTypeZombie, ce.CleanupType)
			require.Equal(t, licZ.ID, ce.LicenseID)
			require.Equal(t, tn.ID, ce.TenantID)
			requireSameTime(t, ls.LastHeartbeatAt, ce.LastHeartbeatAt)
			requireSameTime(t, ls.ExpiresAt, ce.ExpiresAt)
			require.False(t, ce.CleanedAt.Before(ce.ExpiresAt.Add(-timeSlack)), "cleaned before the deadline")

			_, err := s.Heartbeat(t.Context(), id, server.HashSecret(tokens[id]))
			requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired)
			rv, err := s.Revoke(t.Context(), tn.ID, id)
			require.NoError(t, err, "revoking an expired lease returns it unchanged")
			require.Equal(t, server.LeaseExpired, rv.State)
		}
		require.Len(t, usageEvents(t, s, tn.ID, licZ.ID), len(zombies), "revoke after expiry wrote nothing")

		// The revived and the live lease are untouched.
		require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, revived.Lease.ID).State)
		require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, live.Lease.ID).State)
		for _, l := range []server.License{licR, licL} {
			require.Empty(t, usageEvents(t, s, tn.ID, l.ID))
			require.Empty(t, cleanupEvents(t, s, tn.ID, l.ID))
			require.Equal(t, 1, seatsInUse(t, s, tn.ID, l.ID))
		}
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, licZ.ID))

		// One audit entry per expiry.
		audit := listAll(t, 100, func(e server.AuditEntry) string { return e.ID }, func(p server.Page) ([]server.AuditEntry, string, error) {
			return s.AuditLog(t.Context(), tn.ID, p)
		})
		perLease := map[string]int{}
		for _, e := range audit {
			if e.Action == "lease.expire" {
				require.Equal(t, "system", e.Actor)
				require.Equal(t, tn.ID, e.TenantID)
				perLease[e.ResourceID]++
			}
		}
		for id := range zombies {
			require.Equal(t, 1, perLease[id], "lease.expire audit entries of %s", id)
		}
		require.Len(t, perLease, len(zombies), "lease.expire entries for leases that did not expire")
	})

	// Invariant 6 (a failed call changes nothing, a batch is never half
	// done) is tested with injected storage failures: transient.go.

	w.run("DueLeasesOrderLimitAndCursor", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(10), leaseTTL(shortTTL)))
		long := newLicense(t, s, tn.ID, seats(1))

		zombies := map[string]server.Lease{}
		for i := range 5 {
			r, _ := acquire(t, s, lic, fmt.Sprintf("z-%d", i), nil)
			zombies[r.Lease.ID] = r.Lease
		}
		// Ended leases and live leases are never due.
		r, _ := acquire(t, s, lic, "revoked", nil)
		_, err := s.Revoke(t.Context(), tn.ID, r.Lease.ID)
		require.NoError(t, err)
		r, tok := acquire(t, s, lic, "released", nil)
		if _, err := s.Release(t.Context(), r.Lease.ID, server.HashSecret(tok)); err != nil {
			// Only a machine so slow that the release came after the
			// deadline gets here: then the release recorded the expiry.
			requireCode(t, err, server.EEXPIRED, server.ReasonLeaseExpired, "release")
			require.False(t, time.Now().Before(r.Lease.ExpiresAt), "a release before the deadline failed")
		}
		acquire(t, s, long, "live", nil)
		passDeadlines(t, s, slices.Collect(maps.Values(zombies))...)

		full, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		require.ElementsMatch(t, keysOf(setOf(zombies)), refIDs(full), "due leases")
		require.True(t, slices.IsSortedFunc(full, compareRefs), "ordered by (ExpiresAt, LeaseID): %v", full)
		for _, ref := range full {
			require.Equal(t, lic.ID, ref.LicenseID)
			requireSameTime(t, zombies[ref.LeaseID].ExpiresAt, ref.ExpiresAt)
		}

		again, err := s.DueLeases(t.Context(), nil, 100)
		require.NoError(t, err)
		require.Equal(t, refIDs(full), refIDs(again), "DueLeases changes nothing")
		for id := range zombies {
			require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, id).State)
		}

		page := func(after *server.LeaseRef, limit int) []string {
			refs, err := s.DueLeases(t.Context(), after, limit)
			require.NoError(t, err)
			return refIDs(refs)
		}
		ids := refIDs(full)
		require.Equal(t, ids[:1], page(nil, 1))
		require.Equal(t, ids[:2], page(nil, 2))
		require.Equal(t, ids[2:4], page(&full[1], 2))
		require.Equal(t, ids[4:], page(&full[3], 2))
		require.Empty(t, page(&full[4], 2))
		require.Equal(t, ids[1:], page(&full[0], 100), "the cursor is exclusive")
	})
}

func testZombieReport(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()
	w.run("DaysTopLicensesMeanAndWindow", func(t *testing.T) {
		s := openStore(t, newBackend)
		ta, tb := newTenant(t, s), newTenant(t, s)
		short := func(name string) func(*server.License) {
			return func(l *server.License) { l.Name, l.Seats, l.LeaseTTL = name, 10, shortTTL }
		}
		alpha := newLicense(t, s, ta.ID, short("alpha"))
		beta := newLicense(t, s, ta.ID, short("beta"))
		gamma := newLicense(t, s, tb.ID, short("gamma"))
		var zombies []server.Lease
		zombie := func(l server.License, n int) {
			for i := range n {
				r, _ := acquire(t, s, l, fmt.Sprintf("z-%d", i), nil)
				zombies = append(zombies, r.Lease)
			}
		}
		ended := func(l server.License) { // counts as a lease, not as a zombie
			r, _ := acquire(t, s, l, "ended", nil)
			_, err := s.Revoke(t.Context(), l.TenantID, r.Lease.ID)
			require.NoError(t, err)
		}
		zombie(alpha, 3)
		ended(alpha)
		zombie(beta, 1)
		ended(beta)
		zombie(gamma, 1)
		passDeadlines(t, s, zombies...)
		require.Len(t, expireAllDue(t, s), 5)

		// The expected report, from the store's own cleanup events.
		evs := append(cleanupEvents(t, s, ta.ID, alpha.ID), cleanupEvents(t, s, ta.ID, beta.ID)...)
		require.Len(t, evs, 4)
		type day struct {
			n    int64
			lics map[string]bool
		}
		days := map[string]*day{}
		var sumMinutes float64
		first, last := evs[0].CleanedAt, evs[0].CleanedAt
		for _, e := range evs {
			d := e.CleanedAt.UTC().Format(time.DateOnly)
			if days[d] == nil {
				days[d] = &day{lics: map[string]bool{}}
			}
			days[d].n++
			days[d].lics[e.LicenseID] = true
			sumMinutes += e.CleanedAt.Sub(e.LastHeartbeatAt).Minutes()
			first = minTime(first, e.CleanedAt)
			last = maxTime(last, e.CleanedAt)
		}
		var wantDays []server.ZombieDay
		for d, v := range days {
			wantDays = append(wantDays, server.ZombieDay{Date: d, ZombiesCleaned: v.n, AffectedLicenses: int64(len(v.lics))})
		}
		sort.Slice(wantDays, func(i, j int) bool { return wantDays[i].Date < wantDays[j].Date })

		q := server.ZombieQuery{TenantID: ta.ID, Start: first.Add(-time.Hour), End: last.Add(time.Hour), TopLimit: 10}
		rep, err := s.ZombieReport(t.Context(), q)
		require.NoError(t, err)
		require.Equal(t, int64(4), rep.Total)
		require.Equal(t, wantDays, rep.Days)
		require.InDelta(t, sumMinutes/4, rep.MeanMinutesToCleanup, 1e-3, "mean minutes from last heartbeat to cleanup")
		require.GreaterOrEqual(t, rep.MeanMinutesToCleanup, 0.0)
		require.Len(t, rep.TopLicenses, 2)
		top := rep.TopLicenses
		require.Equal(t, server.LicenseZombies{LicenseID: alpha.ID, LicenseName: "alpha", ZombieCount: 3, LeaseCount: 4, Percentage: top[0].Percentage}, top[0])
		require.InDelta(t, 75.0, top[0].Percentage, 1e-9)
		require.Equal(t, server.LicenseZombies{LicenseID: beta.ID, LicenseName: "beta", ZombieCount: 1, LeaseCount: 2, Percentage: top[1].Percentage}, top[1])
		require.InDelta(t, 50.0, top[1].Percentage, 1e-9)

		q.TopLimit = 1
		rep, err = s.ZombieReport(t.Context(), q)
		require.NoError(t, err)
		require.Len(t, rep.TopLicenses, 1)
		require.Equal(t, alpha.ID, rep.TopLicenses[0].LicenseID)
		require.Equal(t, int64(4), rep.Total, "TopLimit limits only the ranking")

		// Tenant-scoped: B sees only its own zombie.
		rep, err = s.ZombieReport(t.Context(), server.ZombieQuery{TenantID: tb.ID, Start: q.Start, End: q.End, TopLimit: 10})
		require.NoError(t, err)
		require.Equal(t, int64(1), rep.Total)
		require.Len(t, rep.TopLicenses, 1)
		require.Equal(t, gamma.ID, rep.TopLicenses[0].LicenseID)
		require.InDelta(t, 100.0, rep.TopLicenses[0].Percentage, 1e-9)

		// The window is respected: [Start, End).
		for name, w := range map[string][2]time.Time{
			"ending before the first cleanup": {first.Add(-24 * time.Hour), first.Add(-time.Second)},
			"starting after the last cleanup": {last.Add(time.Second), last.Add(24 * time.Hour)},
		} {
			rep, err := s.ZombieReport(t.Context(), server.ZombieQuery{TenantID: ta.ID, Start: w[0], End: w[1], TopLimit: 10})
			require.NoError(t, err, name)
			require.Zero(t, rep.Total, name)
			require.Empty(t, rep.Days, name)
			require.Empty(t, rep.TopLicenses, name)
			require.Zero(t, rep.MeanMinutesToCleanup, name)
		}
	})
}

func setOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// testActiveLeases checks the count behind the seatd_active_seats gauge:
// leases not yet ended, across tenants.
func testActiveLeases(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	ctx := context.Background()
	n, err := s.ActiveLeases(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	lic := newLicense(t, s, newTenant(t, s).ID, seats(5))
	other := newLicense(t, s, newTenant(t, s).ID, seats(5))
	var ids, tokens []string
	for i := range 3 {
		r, tok := acquire(t, s, lic, fmt.Sprintf("fp-%d", i), nil)
		ids, tokens = append(ids, r.Lease.ID), append(tokens, tok)
	}
	acquire(t, s, other, "elsewhere", nil)
	release(t, s, ids[0], tokens[0])
	_, err = s.Revoke(ctx, lic.TenantID, ids[1])
	require.NoError(t, err)
	n, err = s.ActiveLeases(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "one lease of each tenant is still active")
}
