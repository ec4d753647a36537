package storetest

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testSeatsInUseOf: the live leases of several licenses at once, exact at
// the time of the call (a lapsed lease stops counting before any cleanup),
// and only the tenant's undeleted licenses.
func testSeatsInUseOf(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	tn, other := newTenant(t, s), newTenant(t, s)
	a := newLicense(t, s, tn.ID, seats(3))
	b := newLicense(t, s, tn.ID, with(seats(2), leaseTTL(time.Second)))
	empty := newLicense(t, s, tn.ID, seats(1))
	gone := newLicense(t, s, tn.ID, seats(1))
	foreign := newLicense(t, s, other.ID, seats(1))
	acquire(t, s, foreign, "f", nil)

	acquire(t, s, a, "a1", nil)
	a2, tok := acquire(t, s, a, "a2", nil)
	acquire(t, s, a, "a3", nil)
	release(t, s, a2.Lease.ID, tok)
	lapsing, _ := acquire(t, s, b, "b1", nil)
	acquire(t, s, gone, "g1", nil)
	_, err := s.DeleteLicense(t.Context(), tn.ID, gone.ID)
	require.NoError(t, err)

	ids := []string{a.ID, b.ID, empty.ID, gone.ID, foreign.ID, server.NewID(server.PrefixLicenseID)}
	got, err := s.SeatsInUseOf(t.Context(), tn.ID, ids)
	require.NoError(t, err, "SeatsInUseOf")
	if time.Now().Before(lapsing.Lease.ExpiresAt) {
		require.Equal(t, map[string]int{a.ID: 2, b.ID: 1, empty.ID: 0}, got)
	}
	got, err = s.SeatsInUseOf(t.Context(), tn.ID, nil)
	require.NoError(t, err)
	require.Empty(t, got)

	// Past its deadline, uncleaned, the lease no longer counts.
	require.Eventually(t, func() bool {
		got, err := s.SeatsInUseOf(t.Context(), tn.ID, ids)
		return err == nil && got[b.ID] == 0
	}, 5*time.Second, 50*time.Millisecond, "a lapsed lease still counted")
	got, err = s.SeatsInUseOf(t.Context(), tn.ID, ids)
	require.NoError(t, err)
	require.Equal(t, map[string]int{a.ID: 2, b.ID: 0, empty.ID: 0}, got)
	require.False(t, time.Now().Before(lapsing.Lease.ExpiresAt.Add(-50*time.Millisecond)), "counted out before its deadline")
	require.Equal(t, 2, seatsInUse(t, s, tn.ID, a.ID), "SeatsInUse agrees")
}

// testEventLists: the usage, cleanup and audit lists page through one
// tenant's records by time, of one license when asked, within a range.
func testEventLists(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	ctx := t.Context()
	tn, other := newTenant(t, s), newTenant(t, s)
	a := newLicense(t, s, tn.ID, with(seats(5), leaseTTL(time.Second)))
	b := newLicense(t, s, tn.ID, seats(5))
	foreign := newLicense(t, s, other.ID, seats(5))
	for _, l := range []server.License{a, b, a, b, foreign} {
		r, tok := acquire(t, s, l, server.NewID("fp"), nil)
		release(t, s, r.Lease.ID, tok)
	}
	lapsing, _ := acquire(t, s, a, "lapsing", nil)
	revoked, _ := acquire(t, s, b, "revoked", nil)
	_, err := s.Revoke(ctx, tn.ID, revoked.Lease.ID)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !time.Now().Before(lapsing.Lease.ExpiresAt) }, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { expireAllDue(t, s); return len(cleanupEvents(t, s, tn.ID, a.ID)) == 1 },
		5*time.Second, 50*time.Millisecond, "the lapsed lease is cleaned up")

	usage := func(r server.EventRange, size int) []server.UsageEvent {
		return listAll(t, size, func(e server.UsageEvent) string { return e.LeaseID }, func(p server.Page) ([]server.UsageEvent, string, error) {
			return s.ListUsageEvents(ctx, r, p)
		})
	}
	byTime := func(evs []server.UsageEvent) []server.UsageEvent {
		out := slices.Clone(evs)
		slices.SortFunc(out, func(x, y server.UsageEvent) int {
			return cmp.Or(x.EndedAt.Compare(y.EndedAt), cmp.Compare(x.LeaseID, y.LeaseID))
		})
		return out
	}
	all := byTime(append(usageEvents(t, s, tn.ID, a.ID), usageEvents(t, s, tn.ID, b.ID)...))
	require.Len(t, all, 6, "4 released, 1 revoked, 1 expired")
	require.Equal(t, all, usage(server.EventRange{TenantID: tn.ID}, 1), "the tenant's events, by end time, one a page")
	require.Equal(t, all, usage(server.EventRange{TenantID: tn.ID}, 0), "the default page size")
	require.Equal(t, byTime(usageEvents(t, s, tn.ID, a.ID)), usage(server.EventRange{TenantID: tn.ID, LicenseID: a.ID}, 2), "one license's")
	for _, e := range usage(server.EventRange{TenantID: other.ID}, 10) {
		require.Equal(t, foreign.ID, e.LicenseID, "another tenant's events")
	}
	// [second's end, fourth's end): the second and third (the store's clock
	// may give two events one instant: the range says which).
	r := server.EventRange{TenantID: tn.ID, Start: all[1].EndedAt, End: all[3].EndedAt}
	var want []server.UsageEvent
	for _, e := range all {
		if r.Contains(e.EndedAt) {
			want = append(want, e)
		}
	}
	require.NotEmpty(t, want)
	require.Equal(t, want, usage(r, 1), "a time range")

	_, _, err = s.ListUsageEvents(ctx, server.EventRange{TenantID: tn.ID, LicenseID: foreign.ID}, server.Page{})
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "another tenant's license")
	_, _, err = s.ListUsageEvents(ctx, server.EventRange{TenantID: tn.ID}, server.Page{Token: "not-a-token"})
	requireCode(t, err, server.EINVALID, "", "a bad page token")

	// Cleanup events: the one zombie.
	ces, _, err := s.ListCleanupEvents(ctx, server.EventRange{TenantID: tn.ID}, server.Page{})
	require.NoError(t, err)
	require.Equal(t, cleanupEvents(t, s, tn.ID, a.ID), ces)
	ces, _, err = s.ListCleanupEvents(ctx, server.EventRange{TenantID: tn.ID, LicenseID: b.ID}, server.Page{})
	require.NoError(t, err)
	require.Empty(t, ces)
	ces, _, err = s.ListCleanupEvents(ctx, server.EventRange{TenantID: tn.ID, End: ces0(t, s, tn.ID, a.ID)}, server.Page{})
	require.NoError(t, err)
	require.Empty(t, ces, "End is exclusive")

	// Audit entries at known times.
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	var entries []server.AuditEntry
	for i := range 4 {
		e := server.AuditEntry{ID: server.NewID("aud"), TenantID: tn.ID, Actor: "operator", Action: "license.update",
			Resource: "license", ResourceID: a.ID, At: base.Add(time.Duration(i) * time.Hour)}
		require.NoError(t, s.AppendAudit(ctx, e))
		entries = append(entries, e)
	}
	require.NoError(t, s.AppendAudit(ctx, server.AuditEntry{ID: server.NewID("aud"), TenantID: other.ID, Actor: "operator",
		Action: "license.update", At: base.Add(time.Hour)}))
	got := listAll(t, 1, func(e server.AuditEntry) string { return e.ID }, func(p server.Page) ([]server.AuditEntry, string, error) {
		return s.ListAuditEvents(ctx, server.EventRange{TenantID: tn.ID, Start: base.Add(time.Hour), End: base.Add(3 * time.Hour)}, p)
	})
	require.Len(t, got, 2)
	for i, e := range got {
		require.Equal(t, entries[i+1].ID, e.ID)
		requireSameTime(t, entries[i+1].At, e.At)
	}
}

// ces0 is the cleanup time of the license's first cleanup event.
func ces0(t *testing.T, s server.Store, tenantID, licenseID string) time.Time {
	t.Helper()
	evs := cleanupEvents(t, s, tenantID, licenseID)
	require.NotEmpty(t, evs)
	return evs[0].CleanedAt
}
