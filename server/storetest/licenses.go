package storetest

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

func listLicenses(t *testing.T, s server.Store, tenantID string, size int) []server.License {
	t.Helper()
	return listAll(t, size, func(l server.License) string { return l.ID }, func(p server.Page) ([]server.License, string, error) {
		return s.ListLicenses(t.Context(), tenantID, p)
	})
}

func getLicense(t *testing.T, s server.Store, tenantID, id string) server.License {
	t.Helper()
	l, err := s.GetLicense(t.Context(), tenantID, id)
	require.NoError(t, err, "GetLicense(%s)", id)
	return l
}

func testLicenses(t *testing.T, newBackend Backend) {
	t.Run("CreateGetAndListOldestFirst", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn, other := newTenant(t, s), newTenant(t, s)
		newLicense(t, s, other.ID, nil) // never listed for tn

		base := now()
		var want []server.License
		// Created out of order, two with the same CreatedAt (then by ID).
		for i, offset := range []int{3, 0, 4, 1, 3} {
			l := newLicense(t, s, tn.ID, func(l *server.License) {
				l.CreatedAt = base.Add(time.Duration(offset) * time.Millisecond)
				l.UpdatedAt = l.CreatedAt
				if i == 0 { // every field round-trips
					l.Name, l.Seats, l.Overdraft = "full", 7, 2
					l.LeaseTTL, l.RevivalWindow = 90*time.Second, 30*time.Second
					l.LeasingStrategy = server.PerUser
					l.ExpiresAt = base.Add(30 * 24 * time.Hour)
					l.Metadata = map[string]string{"tier": "enterprise", "region": "eu"}
				}
			})
			want = append(want, l)
		}
		for _, l := range want {
			requireLicense(t, l, getLicense(t, s, tn.ID, l.ID))
		}
		slices.SortFunc(want, func(a, b server.License) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		ids := func(ls []server.License) []string {
			out := make([]string, len(ls))
			for i, l := range ls {
				out[i] = l.ID
			}
			return out
		}
		require.Equal(t, ids(want), ids(listLicenses(t, s, tn.ID, 2)), "oldest first over pages of 2")
		require.Equal(t, ids(want), ids(listLicenses(t, s, tn.ID, 0)), "default page size")
		first, next, err := s.ListLicenses(t.Context(), tn.ID, server.Page{Size: 2})
		require.NoError(t, err)
		require.Len(t, first, 2)
		require.NotEmpty(t, next, "a next-page token while more remain")
	})

	t.Run("LicenseByKey", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn, other := newTenant(t, s), newTenant(t, s)
		mine := newLicense(t, s, tn.ID, seats(3))
		theirs := newLicense(t, s, other.ID, nil)
		for _, want := range []server.License{mine, theirs} {
			got, err := s.LicenseByKey(t.Context(), want.Key)
			require.NoError(t, err)
			require.Equal(t, want.ID, got.ID, "a key opens its license, whatever the tenant")
			require.Equal(t, want.Seats, got.Seats)
		}
		_, err := s.LicenseByKey(t.Context(), "slk_no-such-key")
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
		_, err = s.DeleteLicense(t.Context(), tn.ID, mine.ID)
		require.NoError(t, err)
		_, err = s.LicenseByKey(t.Context(), mine.Key)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "a deleted license's key opens nothing")
	})

	t.Run("CreateErrors", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn, other := newTenant(t, s), newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)

		for name, tenantID := range map[string]string{"same tenant": tn.ID, "other tenant": other.ID} {
			dup := licenseFor(tenantID, func(l *server.License) { l.Key = lic.Key })
			_, err := s.CreateLicense(t.Context(), dup)
			requireCode(t, err, server.ECONFLICT, "", "duplicate key, %s", name)
			require.Equal(t, "license.key", errField(err), "duplicate key names the field")
			_, err = s.GetLicense(t.Context(), tenantID, dup.ID)
			requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "the duplicate was not stored")
		}
		_, err := s.CreateLicense(t.Context(), licenseFor("tnt_missing", nil))
		requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound, "license of an unknown tenant")
		_, err = s.GetLicense(t.Context(), tn.ID, server.NewID(server.PrefixLicenseID))
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
		require.Len(t, listLicenses(t, s, tn.ID, 10), 1)
		require.Empty(t, listLicenses(t, s, other.ID, 10))
		// The original key still grants seats on the original license.
		r, _ := acquire(t, s, lic, "a", nil)
		require.Equal(t, lic.ID, r.Lease.LicenseID)
	})

	t.Run("UpdateLicense", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))

		upd, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.Seats, l.Overdraft, l.Name = 5, 1, "renamed"
			l.LeaseTTL, l.RevivalWindow = 2*time.Minute, 10*time.Second
			l.LeasingStrategy = server.PerHostname
			l.Metadata = map[string]string{"tier": "gold"}
			return nil
		})
		require.NoError(t, err)
		want := lic
		want.Seats, want.Overdraft, want.Name = 5, 1, "renamed"
		want.LeaseTTL, want.RevivalWindow = 2*time.Minute, 10*time.Second
		want.LeasingStrategy = server.PerHostname
		want.Metadata = map[string]string{"tier": "gold"}
		require.False(t, upd.UpdatedAt.IsZero(), "UpdatedAt is set by the store")
		want.UpdatedAt = upd.UpdatedAt
		requireLicense(t, want, upd)
		requireLicense(t, want, getLicense(t, s, tn.ID, lic.ID))
		r, _ := acquire(t, s, lic, "fp", func(r *server.AcquireRequest) { r.Hostname = "h" })
		require.Equal(t, 2*time.Minute, r.License.LeaseTTL, "acquisitions see the update")
		require.Equal(t, "host:h", r.Lease.DedupeKey)

		// ID, TenantID, Key and CreatedAt cannot change: the store either
		// ignores such changes or refuses the update as invalid.
		newKey := server.NewSecret(server.PrefixLicenseKey)
		upd, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.ID, l.TenantID, l.Key = server.NewID(server.PrefixLicenseID), "tnt_other", newKey
			l.CreatedAt = l.CreatedAt.Add(-time.Hour)
			l.Seats = 6
			return nil
		})
		if err == nil {
			require.Equal(t, 6, upd.Seats)
			want.Seats = 6
		} else {
			requireCode(t, err, server.EINVALID, "", "changing immutable fields")
		}
		got := getLicense(t, s, tn.ID, lic.ID)
		require.Equal(t, lic.ID, got.ID)
		require.Equal(t, tn.ID, got.TenantID)
		require.Equal(t, lic.Key, got.Key)
		requireSameTime(t, lic.CreatedAt, got.CreatedAt)
		require.Equal(t, want.Seats, got.Seats)
		_, _, err = tryAcquire(t.Context(), s, newKey, "fp", nil)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "the key did not change")
		acquire(t, s, lic, "fp2", nil)

		// An update that fails changes nothing, even if it mutated its copy.
		before := getLicense(t, s, tn.ID, lic.ID)
		_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.Seats, l.Name, l.Active = 100, "nope", false
			l.Metadata["tier"] = "mutated"
			return server.Invalid("license.seats", "too many seats")
		})
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "the update's error is returned as is")
		require.Equal(t, "license.seats", errField(err))
		requireLicense(t, before, getLicense(t, s, tn.ID, lic.ID))

		called := false
		_, err = s.UpdateLicense(t.Context(), tn.ID, server.NewID(server.PrefixLicenseID), func(*server.License) error {
			called = true
			return nil
		})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
		require.False(t, called, "update called for a missing license")
	})

	t.Run("ConcurrentUpdatesAreNotLost", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
					l.Seats++
					return nil
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "update %d", i)
		}
		require.Equal(t, 1+n, getLicense(t, s, tn.ID, lic.ID).Seats, "read-modify-write updates are atomic")
	})

	t.Run("InactiveOrExpiredLicenseRefusesSeats", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)

		inactive := newLicense(t, s, tn.ID, func(l *server.License) { l.Active = false })
		_, _, err := tryAcquire(t.Context(), s, inactive.Key, "a", nil)
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive)
		expired := newLicense(t, s, tn.ID, func(l *server.License) { l.ExpiresAt = now().Add(-24 * time.Hour) })
		_, _, err = tryAcquire(t.Context(), s, expired.Key, "a", nil)
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseExpired)
		future := newLicense(t, s, tn.ID, func(l *server.License) { l.ExpiresAt = now().Add(24 * time.Hour) })
		acquire(t, s, future, "a", nil)

		// Deactivating a license with leases on it.
		lic := newLicense(t, s, tn.ID, seats(2))
		a, tokA := acquire(t, s, lic, "a", nil)
		setActive := func(active bool) {
			_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
				l.Active = active
				return nil
			})
			require.NoError(t, err)
		}
		setActive(false)
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive, "heartbeat on an inactive license")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "a", nil)
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive, "retry on an inactive license")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "b", nil)
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive)
		// A client can always give its seat back.
		release(t, s, a.Lease.ID, tokA)
		setActive(true)
		b, tokB := acquire(t, s, lic, "b", nil)

		// A license reaching its end date.
		_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.ExpiresAt = now().Add(-time.Hour)
			return nil
		})
		require.NoError(t, err)
		_, err = s.Heartbeat(t.Context(), b.Lease.ID, server.HashSecret(tokB))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseExpired, "heartbeat on an expired license")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "c", nil)
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseExpired)
	})

	t.Run("LoweringSeatsKeepsExistingLeases", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(3))
		tokens := map[string]string{}
		var ids []string
		for _, fp := range []string{"a", "b", "c"} {
			r, tok := acquire(t, s, lic, fp, nil)
			tokens[r.Lease.ID] = tok
			ids = append(ids, r.Lease.ID)
		}
		_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.Seats = 1
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, seatsInUse(t, s, tn.ID, lic.ID), "existing leases keep their seats")
		for _, id := range ids {
			heartbeat(t, s, id, tokens[id])
		}
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "d", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		require.Equal(t, "3", errMeta(err)["seats_in_use"])
		require.Equal(t, "1", errMeta(err)["seat_limit"])
		r, _ := acquire(t, s, lic, "a", nil)
		require.True(t, r.Existing, "a retry keeps its lease over the new limit")

		release(t, s, ids[1], tokens[ids[1]])
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "d", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "2 in use, limit 1")
		release(t, s, ids[2], tokens[ids[2]])
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "d", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "1 in use, limit 1")
		_, err = s.Revoke(t.Context(), tn.ID, ids[0])
		require.NoError(t, err)
		acquire(t, s, lic, "d", nil)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID))
	})

	t.Run("DeleteLicenseRevokesLeasesAndKeepsHistory", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(3))
		keep := newLicense(t, s, tn.ID, seats(1))
		a, tokA := acquire(t, s, lic, "a", nil)
		b, tokB := acquire(t, s, lic, "b", nil)
		c, tokC := acquire(t, s, lic, "c", nil)
		rc := release(t, s, c.Lease.ID, tokC)

		n, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
		require.NoError(t, err)
		require.Equal(t, 2, n, "active leases revoked")

		_, err = s.GetLicense(t.Context(), tn.ID, lic.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "get a deleted license")
		listed := listLicenses(t, s, tn.ID, 10)
		require.Len(t, listed, 1)
		require.Equal(t, keep.ID, listed[0].ID)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "d", nil)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "the key of a deleted license")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "a", nil)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "a retry on a deleted license")
		_, _, err = s.ListLeases(t.Context(), tn.ID, lic.ID, "", server.Page{})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "list leases of a deleted license")
		_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(*server.License) error { return nil })
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
		_, err = s.DeleteLicense(t.Context(), tn.ID, lic.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "delete twice")

		// The leases ended as revoked, each with its usage event; history stays.
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
		_, err = s.Release(t.Context(), b.Lease.ID, server.HashSecret(tokB))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
		evs := usageEvents(t, s, tn.ID, lic.ID)
		require.Len(t, evs, 3)
		for _, id := range []string{a.Lease.ID, b.Lease.ID} {
			ls := getLease(t, s, tn.ID, id)
			require.Equal(t, server.LeaseRevoked, ls.State)
			requireOneUsage(t, evs, ls)
		}
		requireSameLease(t, rc, getLease(t, s, tn.ID, c.Lease.ID))
		requireOneUsage(t, evs, rc)

		acquire(t, s, keep, "a", nil)
		_, err = s.DeleteLicense(t.Context(), tn.ID, server.NewID(server.PrefixLicenseID))
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
	})
}

// testIsolation: invariant 8. Another tenant's license or lease is exactly
// as absent as a missing one, and nothing changes.
func testIsolation(t *testing.T, newBackend Backend) {
	t.Run("OtherTenantCannotSeeOrTouch", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		ta, tb := newTenant(t, s), newTenant(t, s)
		la := newLicense(t, s, ta.ID, seats(2))
		lb := newLicense(t, s, tb.ID, seats(2))
		a, tokA := acquire(t, s, la, "a", nil)
		acquire(t, s, lb, "b", nil)
		licBefore := getLicense(t, s, ta.ID, la.ID)
		leaseBefore := getLease(t, s, ta.ID, a.Lease.ID)
		ctx := t.Context()

		_, err := s.GetLicense(ctx, tb.ID, la.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "GetLicense")
		_, _, err = s.ListLeases(ctx, tb.ID, la.ID, "", server.Page{})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "ListLeases")
		_, err = s.SeatsInUse(ctx, tb.ID, la.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "SeatsInUse")
		_, err = s.GetLease(ctx, tb.ID, a.Lease.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "GetLease")
		_, err = s.Revoke(ctx, tb.ID, a.Lease.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLeaseNotFound, "Revoke")
		called := false
		_, err = s.UpdateLicense(ctx, tb.ID, la.ID, func(l *server.License) error {
			called = true
			l.Seats = 100
			return nil
		})
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "UpdateLicense")
		require.False(t, called, "update called on another tenant's license")
		_, err = s.DeleteLicense(ctx, tb.ID, la.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "DeleteLicense")
		listed := listLicenses(t, s, tb.ID, 10)
		require.Len(t, listed, 1)
		require.Equal(t, lb.ID, listed[0].ID, "ListLicenses shows only the tenant's own")

		// Nothing changed for A.
		requireLicense(t, licBefore, getLicense(t, s, ta.ID, la.ID))
		requireSameLease(t, leaseBefore, getLease(t, s, ta.ID, a.Lease.ID))
		require.Equal(t, 1, seatsInUse(t, s, ta.ID, la.ID))
		heartbeat(t, s, a.Lease.ID, tokA)

		// Records are scoped too.
		release(t, s, a.Lease.ID, tokA)
		require.Len(t, usageEvents(t, s, ta.ID, la.ID), 1)
		evs, err := s.UsageEvents(ctx, tb.ID, la.ID)
		requireNotFoundOrEmpty(t, evs, err, "UsageEvents of another tenant's license")
		ces, err := s.CleanupEvents(ctx, tb.ID, la.ID)
		requireNotFoundOrEmpty(t, ces, err, "CleanupEvents of another tenant's license")
		require.NoError(t, s.AppendAudit(ctx, server.AuditEntry{
			ID: server.NewID("aud_"), TenantID: ta.ID, Actor: "operator", Action: "license.update",
			Resource: "license", ResourceID: la.ID, At: now(),
		}))
		for _, e := range listAudit(t, s, tb.ID, 10) {
			require.Equal(t, tb.ID, e.TenantID, "AuditLog shows another tenant's entry")
		}
		rep, err := s.ZombieReport(ctx, server.ZombieQuery{TenantID: tb.ID, Start: now().Add(-time.Hour), End: now().Add(time.Hour), TopLimit: 10})
		require.NoError(t, err)
		require.Zero(t, rep.Total)
	})
}

func testTenants(t *testing.T, newBackend Backend) {
	t.Run("CreateGetListTenants", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		base := server.NewID("tnt_")
		at := now()
		var ids []string
		for i, suffix := range []string{"-b", "-c", "-a", "-d"} {
			tn := server.Tenant{ID: base + suffix, Name: "tenant" + suffix, CreatedAt: at.Add(time.Duration(i) * time.Millisecond)}
			got, err := s.CreateTenant(t.Context(), tn)
			require.NoError(t, err)
			require.Equal(t, tn.ID, got.ID)
			got, err = s.GetTenant(t.Context(), tn.ID)
			require.NoError(t, err)
			require.Equal(t, tn.Name, got.Name)
			requireSameTime(t, tn.CreatedAt, got.CreatedAt)
			ids = append(ids, tn.ID)
		}
		_, err := s.CreateTenant(t.Context(), server.Tenant{ID: base + "-a", Name: "again", CreatedAt: at})
		requireCode(t, err, server.ECONFLICT, "", "duplicate tenant id")
		got, err := s.GetTenant(t.Context(), base+"-a")
		require.NoError(t, err)
		require.Equal(t, "tenant-a", got.Name, "a conflicting create changes nothing")
		_, err = s.GetTenant(t.Context(), base+"-z")
		requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound)

		all := listAll(t, 2, func(tn server.Tenant) string { return tn.ID }, func(p server.Page) ([]server.Tenant, string, error) {
			return s.ListTenants(t.Context(), p)
		})
		var listed []string
		for _, tn := range all {
			listed = append(listed, tn.ID)
		}
		// A backend may hold a built-in tenant (e.g. "default") too.
		require.True(t, slices.IsSorted(listed), "tenants by id ascending: %v", listed)
		slices.Sort(ids)
		var ours []string
		for _, id := range listed {
			if slices.Contains(ids, id) {
				ours = append(ours, id)
			}
		}
		require.Equal(t, ids, ours)
	})

	t.Run("APIKeys", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn, other := newTenant(t, s), newTenant(t, s)
		base := now()
		newKey := func(tenantID string, i int) server.APIKey {
			return server.APIKey{
				ID:         server.NewID(server.PrefixAPIKeyID),
				TenantID:   tenantID,
				Name:       "key " + strconv.Itoa(i),
				SecretHash: server.HashSecret(server.NewSecret(server.PrefixAPISecret)),
				CreatedAt:  base.Add(time.Duration(i) * time.Millisecond),
				Role:       server.TenantRoles[i%len(server.TenantRoles)], // each role kept
			}
		}
		keys := make([]server.APIKey, 3)
		for _, i := range []int{2, 0, 1} { // created out of order
			keys[i] = newKey(tn.ID, i)
			got, err := s.CreateAPIKey(t.Context(), keys[i])
			require.NoError(t, err)
			requireAPIKey(t, keys[i], got)
		}
		_, err := s.CreateAPIKey(t.Context(), newKey("tnt_missing", 9))
		requireCode(t, err, server.ENOTFOUND, server.ReasonTenantNotFound)

		list := func(tenantID string) []server.APIKey {
			return listAll(t, 2, func(k server.APIKey) string { return k.ID }, func(p server.Page) ([]server.APIKey, string, error) {
				return s.ListAPIKeys(t.Context(), tenantID, p)
			})
		}
		listed := list(tn.ID)
		require.Len(t, listed, 3)
		for i := range keys {
			requireAPIKey(t, keys[i], listed[i])
		}
		require.Empty(t, list(other.ID))

		got, err := s.APIKeyBySecretHash(t.Context(), keys[1].SecretHash)
		require.NoError(t, err)
		requireAPIKey(t, keys[1], got)
		_, err = s.APIKeyBySecretHash(t.Context(), server.HashSecret("unknown"))
		requireCode(t, err, server.ENOTFOUND, server.ReasonAPIKeyNotFound)

		rv, err := s.RevokeAPIKey(t.Context(), keys[1].ID)
		require.NoError(t, err)
		require.False(t, rv.RevokedAt.IsZero(), "RevokedAt set")
		keys[1].RevokedAt = rv.RevokedAt
		requireAPIKey(t, keys[1], rv)
		time.Sleep(5 * time.Millisecond)
		again, err := s.RevokeAPIKey(t.Context(), keys[1].ID)
		require.NoError(t, err, "revoking twice")
		requireAPIKey(t, keys[1], again) // RevokedAt unchanged
		got, err = s.APIKeyBySecretHash(t.Context(), keys[1].SecretHash)
		require.NoError(t, err, "a revoked key is still found, so callers can tell it is revoked")
		requireAPIKey(t, keys[1], got)
		listed = list(tn.ID)
		require.Len(t, listed, 3, "revoked keys are listed")
		requireAPIKey(t, keys[1], listed[1])
		require.True(t, listed[0].RevokedAt.IsZero())
		_, err = s.RevokeAPIKey(t.Context(), server.NewID(server.PrefixAPIKeyID))
		requireCode(t, err, server.ENOTFOUND, server.ReasonAPIKeyNotFound)
	})
}

func requireAPIKey(t *testing.T, want, got server.APIKey) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.TenantID, got.TenantID)
	require.Equal(t, want.Name, got.Name)
	require.Equal(t, want.SecretHash, got.SecretHash)
	requireSameTime(t, want.CreatedAt, got.CreatedAt, "api key CreatedAt")
	requireSameTime(t, want.RevokedAt, got.RevokedAt, "api key RevokedAt")
	require.Equal(t, want.KeyRole(), got.KeyRole(), "api key Role")
}

func listAudit(t *testing.T, s server.Store, tenantID string, size int) []server.AuditEntry {
	t.Helper()
	return listAll(t, size, func(e server.AuditEntry) string { return e.ID }, func(p server.Page) ([]server.AuditEntry, string, error) {
		return s.AuditLog(t.Context(), tenantID, p)
	})
}
