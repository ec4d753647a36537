package service

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

func requireInvalid(t *testing.T, err error, field string) {
	t.Helper()
	var e *server.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, server.EINVALID, e.Code)
	require.Equal(t, field, e.Field)
}

func TestCreateLicenseMakesIDAndKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{ID: "lic_mine", Seats: 1})
	requireInvalid(t, err, "license.id")
	_, err = e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{Key: "slk_mine", Seats: 1})
	requireInvalid(t, err, "license.key")
	_, err = e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{})
	requireInvalid(t, err, "license.seats")

	l := e.license(t, 3)
	require.Regexp(t, `^slk_`, l.Key)
	require.Equal(t, server.DefaultLeaseTTL, mustCreate(t, e, LicenseInput{Seats: 1}).LeaseTTL, "no TTL: the default")
	require.True(t, l.Active, "no active flag: active")
}

func mustCreate(t *testing.T, e *env, in LicenseInput) server.License {
	t.Helper()
	l, err := e.svc.CreateLicense(t.Context(), "operator", server.DefaultTenantID, in)
	require.NoError(t, err)
	return l
}

// A field the caller could not read is reported in its turn: the first
// bad field of the mask is named, whichever layer found it.
func TestMalformedFieldIsReportedInItsTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.license(t, 1)
	in := LicenseInput{ID: l.ID, Seats: 0, Malformed: map[string]error{
		"lease_ttl": server.Invalid("license.lease_ttl", "is not a valid duration"),
	}}
	_, err := e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, in, []string{"seats", "lease_ttl"})
	requireInvalid(t, err, "license.seats")
	_, err = e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, in, []string{"lease_ttl", "seats"})
	requireInvalid(t, err, "license.lease_ttl")
	_, err = e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, in, []string{"key"})
	requireInvalid(t, err, "update_mask")
	_, err = e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, in, nil)
	requireInvalid(t, err, "update_mask")

	past := e.clock.Now().Add(-time.Hour)
	_, err = e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{ID: l.ID, ExpiresAt: &past}, []string{"expires_at"})
	requireInvalid(t, err, "license.expires_at")
}

func TestListLeasesFiltersByTheStateShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.license(t, 2)
	lapsed := e.acquire(t, l.Key, "lapsed")
	e.clock.Advance(50 * time.Second)
	live := e.acquire(t, l.Key, "live")
	e.clock.Advance(20 * time.Second) // past lapsed's deadline, not live's; no cleanup ran

	ids := func(state server.LeaseState) []string {
		page, err := e.svc.ListLeases(t.Context(), server.DefaultTenantID, l.ID, LeaseFilter{State: state}, server.Page{})
		require.NoError(t, err)
		var out []string
		for _, x := range page.Leases {
			out = append(out, x.ID)
		}
		return out
	}
	require.Equal(t, []string{lapsed.Lease.ID}, ids(server.LeaseExpired), "recorded active, shown expired")
	require.Equal(t, []string{live.Lease.ID}, ids(server.LeaseActive))
	require.Len(t, ids(""), 2)
}

func TestZombieQueryDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clock.Now()
	q, err := e.svc.ZombieQuery("acme", ZombieWindow{})
	require.NoError(t, err)
	require.Equal(t, server.ZombieQuery{TenantID: "acme", Start: now.Add(-7 * 24 * time.Hour), End: now, TopLimit: 20}, q)

	end := now.Add(-time.Hour)
	q, err = e.svc.ZombieQuery("acme", ZombieWindow{End: &end, TopLimit: 5})
	require.NoError(t, err)
	require.Equal(t, end.Add(-7*24*time.Hour), q.Start, "the week up to the end asked for")
	require.Equal(t, 5, q.TopLimit)

	_, err = e.svc.ZombieQuery("acme", ZombieWindow{Start: &now, End: &end})
	requireInvalid(t, err, "start_time")
	_, err = e.svc.ZombieQuery("acme", ZombieWindow{TopLimit: 101})
	requireInvalid(t, err, "top_limit")
}

// TestUpdateLicenseCountsLiveLeases: an update answers the license with
// its live leases counted, as GetLicense does (issue 25: a PATCH answered
// seatsInUse 0 while three leases were live).
func TestUpdateLicenseCountsLiveLeases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	l := e.license(t, 5)
	for _, fp := range []string{"a", "b", "c"} {
		e.acquire(t, l.Key, fp)
	}
	v, err := e.svc.UpdateLicense(t.Context(), "operator", server.DefaultTenantID, LicenseInput{ID: l.ID, Seats: 4}, []string{"seats"})
	require.NoError(t, err)
	require.Equal(t, 4, v.Seats)
	require.Equal(t, 3, v.SeatsInUse, "the live leases, counted after the change")
	got, err := e.svc.GetLicense(t.Context(), server.DefaultTenantID, l.ID)
	require.NoError(t, err)
	require.Equal(t, got, v, "the update answers what GetLicense reads")
}
