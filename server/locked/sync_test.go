package locked

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
)

// TestSyncMakesTheFilesLicenses: a file becomes seatd licenses of the
// default tenant, lic_<id>, with the file's terms, new keys and the
// file's grants; a second sync of it writes nothing and keeps the keys.
func TestSyncMakesTheFilesLicenses(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	f := x.file(7, 20)
	c := x.sync(t, f)
	require.Equal(t, Changes{LicensesCreated: 2, GrantsCreated: 2}, c)

	cad := x.license(t, "lic_cad")
	require.Equal(t, "ACME CAD", cad.Name)
	require.Equal(t, 20, cad.Seats)
	require.Equal(t, 1, cad.Overdraft)
	require.Equal(t, 6*time.Minute, cad.LeaseTTL)
	require.Equal(t, server.PerFingerprint, cad.LeasingStrategy, "absent in the file: fingerprint")
	require.Equal(t, 72*time.Hour, cad.MaxBorrowDuration)
	require.Equal(t, 1, cad.MaxBorrowedSeats)
	require.True(t, cad.Active)
	require.True(t, cad.ExpiresAt.Equal(f.NotAfter), "a license without an expiry ends with the file")
	require.Equal(t, "cad", cad.Metadata[MetadataFileLicenseID])
	require.NotEmpty(t, cad.Key)
	require.Len(t, cad.Grants, 2)
	render := cad.Grant(licensefile.GrantID("lic_cad", f.Licenses[0].Grants[0]))
	require.NotNil(t, render, "grants: %+v", cad.Grants)
	require.Equal(t, "render", render.Feature)
	require.Equal(t, "2024.2", render.Version)
	require.Equal(t, 2, render.Seats)
	require.True(t, render.ExpiresAt.Equal(issued.AddDate(0, 6, 0)))
	require.True(t, server.IsGrantID(render.ID))
	require.Equal(t, "lic_cad", server.PoolLicense(render.ID))

	viewer := x.license(t, "lic_viewer")
	require.Equal(t, server.PerUser, viewer.LeasingStrategy)
	require.True(t, viewer.AllowEarlyReturn)
	require.True(t, viewer.ExpiresAt.Equal(issued.AddDate(0, 3, 0)), "its own expiry, before the file's not_after")

	require.True(t, x.sync(t, f).None(), "the same file again changes nothing")
	require.Equal(t, cad.Key, x.license(t, "lic_cad").Key, "the key is kept")

	// The license holds a seat of its file's terms at once.
	_, err := x.acquire(t.Context(), cad.Key, "fp-1", "render")
	require.NoError(t, err)
	audit, _, err := x.store.AuditLog(t.Context(), server.DefaultTenantID, server.Page{})
	require.NoError(t, err)
	require.NotEmpty(t, audit)
	for _, e := range audit {
		require.Equal(t, Actor, e.Actor, "%+v", e)
		require.Equal(t, "7", e.Details["license_file_serial"])
	}
}

// TestSyncRenewalWithMoreSeats: a renewal's terms replace the license's
// (same id, same key), its changed grants updated.
func TestSyncRenewalWithMoreSeats(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	x.sync(t, x.file(7, 2))
	before := x.license(t, "lic_cad")
	f := x.file(8, 30, func(f *licensefile.File) {
		f.Licenses[0].Grants[1].Seats = 4
		f.NotAfter = issued.AddDate(2, 0, 0)
	})
	c := x.sync(t, f)
	require.Equal(t, Changes{LicensesUpdated: 1, GrantsUpdated: 1}, c, "viewer's terms did not change: its expiry is its own")
	after := x.license(t, "lic_cad")
	require.Equal(t, before.Key, after.Key)
	require.Equal(t, 30, after.Seats)
	require.True(t, after.ExpiresAt.Equal(f.NotAfter))
	sim := after.Grant(licensefile.GrantID("lic_cad", f.Licenses[0].Grants[1]))
	require.NotNil(t, sim)
	require.Equal(t, 4, sim.Seats)
	for i := range 31 { // seats + overdraft
		_, err := x.acquire(t.Context(), after.Key, "fp-"+string(rune('a'+i)), "")
		require.NoError(t, err, "seat %d of 31", i+1)
	}
}

// TestSyncFewerSeatsKeepsHeldLeases: a file with fewer seats ends no
// lease; nothing is granted over its limit until use is under it.
func TestSyncFewerSeatsKeepsHeldLeases(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	x.sync(t, x.file(7, 4)) // 5 with the overdraft
	l := x.license(t, "lic_cad")
	var leases []server.Lease
	for _, fp := range []string{"a", "b", "c", "d", "e"} {
		r, err := x.acquire(t.Context(), l.Key, fp, "")
		require.NoError(t, err)
		leases = append(leases, r.Lease)
	}
	x.sync(t, x.file(8, 1)) // 2 with the overdraft
	for _, le := range leases {
		_, err := x.store.Heartbeat(t.Context(), le.ID, server.HashSecret(le.Fingerprint))
		require.NoError(t, err, "a held lease is kept")
	}
	_, err := x.acquire(t.Context(), l.Key, "f", "")
	require.Equal(t, server.ReasonSeatsExhausted, server.ErrorReason(err), "%v", err)
	for _, le := range leases[:3] {
		_, err := x.store.Release(t.Context(), le.ID, server.HashSecret(le.Fingerprint))
		require.NoError(t, err)
	}
	_, err = x.acquire(t.Context(), l.Key, "f", "")
	require.Equal(t, server.ReasonSeatsExhausted, server.ErrorReason(err), "two held, two allowed: still full")
	_, err = x.store.Release(t.Context(), leases[3].ID, server.HashSecret("d"))
	require.NoError(t, err)
	_, err = x.acquire(t.Context(), l.Key, "f", "")
	require.NoError(t, err, "under the new limit, a seat is granted")
}

// TestSyncRemovesAGrant: a grant the file no longer has is deleted, its
// leases revoked; a grant id whose feature changed is a new grant.
func TestSyncRemovesAGrant(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	f7 := x.file(7, 5)
	x.sync(t, f7)
	l := x.license(t, "lic_cad")
	r, err := x.acquire(t.Context(), l.Key, "fp", "sim")
	require.NoError(t, err)
	c := x.sync(t, x.file(8, 5, func(f *licensefile.File) {
		f.Licenses[0].Grants = f.Licenses[0].Grants[:1] // no sim
		f.Licenses[0].Grants[0].Feature = "raytrace"    // render-2024 now sells another feature
	}))
	require.Equal(t, Changes{GrantsDeleted: 2, GrantsCreated: 1}, c)
	l = x.license(t, "lic_cad")
	require.Len(t, l.Grants, 1)
	require.Equal(t, "raytrace", l.Grants[0].Feature)
	lease, err := x.store.GetLease(t.Context(), server.DefaultTenantID, r.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseRevoked, lease.State, "the removed grant's lease is revoked")
	_, err = x.acquire(t.Context(), l.Key, "fp2", "sim")
	require.Equal(t, server.ReasonFeatureNotLicensed, server.ErrorReason(err))
	raytrace := l.Grants[0].ID
	require.NotEqual(t, licensefile.GrantID("lic_cad", f7.Licenses[0].Grants[0]), raytrace,
		"a store never reuses a deleted grant's id: the raytrace grant has the next one")

	// sim comes back: a new grant (the deleted one's id is its history's).
	c = x.sync(t, x.file(9, 5, func(f *licensefile.File) { f.Licenses[0].Grants[0].Feature = "raytrace" }))
	require.Equal(t, Changes{GrantsCreated: 1}, c)
	l = x.license(t, "lic_cad")
	require.Len(t, l.Grants, 2)
	require.NotNil(t, l.Grant(raytrace), "the raytrace grant is kept")
	_, err = x.acquire(t.Context(), l.Key, "fp3", "sim")
	require.NoError(t, err)
	require.True(t, x.sync(t, x.file(9, 5, func(f *licensefile.File) { f.Licenses[0].Grants[0].Feature = "raytrace" })).None(),
		"each file grant found again under its id")
}

// TestSyncDeactivatesWhatTheFileDoesNotHold: licenses made before locked
// mode (any tenant) and those a later file drops are deactivated, never
// deleted; a license the file holds again is active again.
func TestSyncDeactivatesWhatTheFileDoesNotHold(t *testing.T) {
	t.Parallel()
	x := newFixture(t)
	ctx := t.Context()
	_, err := x.store.CreateTenant(ctx, server.Tenant{ID: "other", CreatedAt: time.Now()})
	require.NoError(t, err)
	var before []server.License
	for _, tn := range []string{server.DefaultTenantID, "other"} {
		l, err := x.store.CreateLicense(ctx, server.License{
			ID: server.NewID(server.PrefixLicenseID), TenantID: tn, Key: server.NewSecret(server.PrefixLicenseKey),
			Seats: 1000, LeaseTTL: time.Minute, LeasingStrategy: server.PerFingerprint, Active: true, CreatedAt: time.Now(), UpdatedAt: time.Now(),
		})
		require.NoError(t, err)
		before = append(before, l)
	}
	c := x.sync(t, x.file(7, 5))
	require.Equal(t, 2, c.LicensesDeactivated)
	for _, l := range before {
		got, err := x.store.GetLicense(ctx, l.TenantID, l.ID)
		require.NoError(t, err, "kept, not deleted")
		require.False(t, got.Active)
		_, err = x.acquire(ctx, l.Key, "fp", "")
		require.Equal(t, server.ReasonLicenseInactive, server.ErrorReason(err))
	}

	dropViewer := func(f *licensefile.File) { f.Licenses = f.Licenses[:1] }
	c = x.sync(t, x.file(8, 5, dropViewer))
	require.Equal(t, Changes{LicensesDeactivated: 1}, c)
	viewer := x.license(t, "lic_viewer")
	require.False(t, viewer.Active)
	c = x.sync(t, x.file(9, 5))
	require.Equal(t, Changes{LicensesUpdated: 1}, c)
	again := x.license(t, "lic_viewer")
	require.True(t, again.Active)
	require.Equal(t, viewer.Key, again.Key, "the same license, with its key and history")
}
