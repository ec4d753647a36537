package grpcapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// grant adds a feature grant to a license of the default tenant.
func (e *env) grant(t *testing.T, licenseID string, g *seatdv1.FeatureGrant) *seatdv1.FeatureGrant {
	t.Helper()
	resp, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{LicenseId: licenseID, Grant: g})
	require.NoError(t, err)
	return resp.GetGrant()
}

// grantsOf reads a license's grants as GetLicense shows them.
func (e *env) grantsOf(t *testing.T, ctx context.Context, licenseID string) []*seatdv1.FeatureGrant {
	t.Helper()
	resp, err := e.admin.GetLicense(ctx, &seatdv1.GetLicenseRequest{LicenseId: licenseID})
	require.NoError(t, err)
	return resp.GetLicense().GetGrants()
}

// TestBadFeatureGrantsAreRefusedNamingTheField: every bad field of a grant
// is INVALID_ARGUMENT naming it, and nothing is created or changed.
func TestBadFeatureGrantsAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	good := func() *seatdv1.FeatureGrant {
		return &seatdv1.FeatureGrant{Feature: "render", Version: "2025.1", Seats: 2}
	}
	past, future := time.Now().Add(-time.Hour), time.Now().Add(48*time.Hour)
	for field, bad := range map[string]func(*seatdv1.FeatureGrant){
		"grant.id":                  func(g *seatdv1.FeatureGrant) { g.Id = lic.GetId() + ".0123abcd" },
		"grant.feature":             func(g *seatdv1.FeatureGrant) { g.Feature = "" },
		"grant.version":             func(g *seatdv1.FeatureGrant) { g.Version = "2025.x" },
		"grant.seats":               func(g *seatdv1.FeatureGrant) { g.Seats = -1 },
		"grant.overdraft":           func(g *seatdv1.FeatureGrant) { g.Overdraft = -1 },
		"grant.max_borrow_duration": func(g *seatdv1.FeatureGrant) { g.MaxBorrowDuration = durationpb.New(-time.Hour) },
		"grant.max_borrowed_seats":  func(g *seatdv1.FeatureGrant) { g.MaxBorrowedSeats = 3 },
		"grant.starts_at":           func(g *seatdv1.FeatureGrant) { g.StartsAt = &timestamppb.Timestamp{Nanos: -1} },
		"grant.expires_at": func(g *seatdv1.FeatureGrant) {
			g.StartsAt, g.ExpiresAt = timestamppb.New(future), timestamppb.New(future.Add(-time.Hour))
		},
	} {
		g := good()
		bad(g)
		_, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: g})
		requireInvalid(t, err, field)
	}
	for name, req := range map[string]*seatdv1.CreateFeatureGrantRequest{
		"grant":      {LicenseId: lic.GetId()},
		"license_id": {Grant: good()},
	} {
		_, err := e.admin.CreateFeatureGrant(operator(t), req)
		requireInvalid(t, err, name)
	}
	for _, feature := range []string{"-render", "ren der", fmt.Sprintf("%065d", 0)} {
		g := good()
		g.Feature = feature
		_, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: g})
		requireInvalid(t, err, "grant.feature", feature)
	}
	g := good()
	g.ExpiresAt = timestamppb.New(past)
	_, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: g})
	requireInvalid(t, err, "grant.expires_at", "in the past")
	require.Empty(t, e.grantsOf(t, operator(t), lic.GetId()), "nothing created")
}

// TestBadFeatureGrantUpdatesAreRefusedNamingTheField: the feature cannot
// change, the mask names only grant fields, and a bad value is named.
func TestBadFeatureGrantUpdatesAreRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	grantID := lic.GetId() + ".0123abcd"
	for _, tc := range []struct {
		field string
		grant *seatdv1.FeatureGrant
		paths []string
	}{
		{"grant.feature", &seatdv1.FeatureGrant{Id: grantID, Feature: "sim"}, []string{"feature"}},
		{"update_mask", &seatdv1.FeatureGrant{Id: grantID, Seats: 3}, nil},
		{"update_mask", &seatdv1.FeatureGrant{Id: grantID}, []string{"seats_in_use"}},
		{"update_mask", &seatdv1.FeatureGrant{Id: grantID}, []string{"license_id"}},
		{"grant.id", &seatdv1.FeatureGrant{Seats: 3}, []string{"seats"}},
		{"grant.version", &seatdv1.FeatureGrant{Id: grantID, Version: "v2"}, []string{"version"}},
		{"grant.seats", &seatdv1.FeatureGrant{Id: grantID, Seats: -2}, []string{"seats"}},
		{"grant.expires_at", &seatdv1.FeatureGrant{Id: grantID, ExpiresAt: timestamppb.New(time.Now().Add(-time.Minute))}, []string{"expires_at"}},
	} {
		_, err := e.admin.UpdateFeatureGrant(operator(t), &seatdv1.UpdateFeatureGrantRequest{
			LicenseId: lic.GetId(), Grant: tc.grant, UpdateMask: &fieldmaskpb.FieldMask{Paths: tc.paths},
		})
		requireInvalid(t, err, tc.field, "%v", tc.paths)
	}
	_, err := e.admin.DeleteFeatureGrant(operator(t), &seatdv1.DeleteFeatureGrantRequest{LicenseId: lic.GetId()})
	requireInvalid(t, err, "grant_id")
	// A grant id of another license is no grant of this one.
	for _, id := range []string{"lic_other.0123abcd", "not-a-grant"} {
		_, err := e.admin.DeleteFeatureGrant(operator(t), &seatdv1.DeleteFeatureGrantRequest{LicenseId: lic.GetId(), GrantId: id})
		requireStatus(t, err, codes.NotFound, server.ReasonGrantNotFound, id)
	}
}

// TestFeatureRequestsAreCheckedNamingTheField: a seat request's feature
// and version, and the feature filters of the lists and reports.
func TestFeatureRequestsAreCheckedNamingTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	for field, req := range map[string]*seatdv1.AcquireSeatRequest{
		"version": {Version: "2025"},
		"feature": {Feature: "bad feature"},
	} {
		req.LicenseKey, req.Fingerprint = lic.GetKey(), "fp"
		_, err := e.seats.AcquireSeat(t.Context(), req)
		requireInvalid(t, err, field)
		stream, err := e.seats.WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{
			LicenseKey: lic.GetKey(), Fingerprint: "fp", Feature: req.GetFeature(), Version: req.GetVersion(),
		})
		require.NoError(t, err)
		_, err = stream.Recv()
		requireInvalid(t, err, field, "wait")
	}
	for _, v := range []string{"2025.", ".1", "2025.1-beta", "v1"} {
		_, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Feature: "render", Version: v})
		requireInvalid(t, err, "version", v)
	}
	_, err := e.admin.ListLeases(operator(t), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), Feature: "no good"})
	requireInvalid(t, err, "feature")
	_, err = e.admin.GetUsageReport(operator(t), &seatdv1.GetUsageReportRequest{Feature: "no good"})
	requireInvalid(t, err, "feature")
	_, err = e.admin.GetZombieReport(operator(t), &seatdv1.GetZombieReportRequest{Feature: "no good"})
	requireInvalid(t, err, "feature")
}

// TestFeatureGrantCallsAreTenantScoped: a key is needed; an API key works
// in its own tenant only, and another tenant's license is not found.
func TestFeatureGrantCallsAreTenantScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute) // the default tenant's
	secret := e.apiKey(t, "acme")
	g := &seatdv1.FeatureGrant{Feature: "render", Seats: 1}

	_, err := e.admin.CreateFeatureGrant(t.Context(), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: g})
	requireStatus(t, err, codes.Unauthenticated, server.ReasonUnauthenticated)
	_, err = e.admin.UpdateFeatureGrant(t.Context(), &seatdv1.UpdateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: g})
	requireStatus(t, err, codes.Unauthenticated, server.ReasonUnauthenticated)
	_, err = e.admin.DeleteFeatureGrant(t.Context(), &seatdv1.DeleteFeatureGrantRequest{LicenseId: lic.GetId(), GrantId: lic.GetId() + ".0123abcd"})
	requireStatus(t, err, codes.Unauthenticated, server.ReasonUnauthenticated)

	_, err = e.admin.CreateFeatureGrant(as(t, secret), &seatdv1.CreateFeatureGrantRequest{TenantId: server.DefaultTenantID, LicenseId: lic.GetId(), Grant: g})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.CreateFeatureGrant(as(t, secret), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: g})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)

	created := e.grant(t, lic.GetId(), g)
	_, err = e.admin.UpdateFeatureGrant(as(t, secret), &seatdv1.UpdateFeatureGrantRequest{
		LicenseId: lic.GetId(), Grant: &seatdv1.FeatureGrant{Id: created.GetId(), Seats: 9}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
	})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
	_, err = e.admin.DeleteFeatureGrant(as(t, secret), &seatdv1.DeleteFeatureGrantRequest{LicenseId: lic.GetId(), GrantId: created.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
	got := e.grantsOf(t, operator(t), lic.GetId())
	require.Len(t, got, 1)
	require.EqualValues(t, 1, got[0].GetSeats(), "unchanged")
}

// TestFeatureGrantLifecycle: create, update and delete, each audited, the
// license showing its grants with their seats in use, and the seat of a
// feature answered with its grant.
func TestFeatureGrantLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	expires := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	g := e.grant(t, lic.GetId(), &seatdv1.FeatureGrant{Feature: "render", Version: "2025", Seats: 2, ExpiresAt: timestamppb.New(expires)})
	require.Regexp(t, `^`+lic.GetId()+`\.[0-9a-f]{8}$`, g.GetId())
	require.Equal(t, lic.GetId(), g.GetLicenseId())

	resp, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Feature: "render", Version: "2024.3"})
	require.NoError(t, err)
	lease := resp.GetLease()
	require.Equal(t, lic.GetId(), lease.GetLicenseId())
	require.Equal(t, g.GetId(), lease.GetGrantId())
	require.Equal(t, "render", lease.GetFeature())
	require.Equal(t, "2024.3", lease.GetVersion())
	require.Equal(t, g.GetId(), resp.GetGrant().GetId())
	require.EqualValues(t, 1, resp.GetSeatsInUse())
	require.EqualValues(t, 2, resp.GetSeatLimit(), "the grant's")

	got := e.grantsOf(t, operator(t), lic.GetId())
	require.Len(t, got, 1)
	require.EqualValues(t, 1, got[0].GetSeatsInUse())
	list, err := e.admin.ListLicenses(operator(t), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 1, list.GetLicenses()[0].GetGrants()[0].GetSeatsInUse())

	_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Feature: "render", Version: "2026"})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonVersionNotLicensed)
	_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Feature: "sim"})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonFeatureNotLicensed)

	leases, err := e.admin.ListLeases(operator(t), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), Feature: "render"})
	require.NoError(t, err)
	require.Len(t, leases.GetLeases(), 1)
	leases, err = e.admin.ListLeases(operator(t), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), Feature: "sim"})
	require.NoError(t, err)
	require.Empty(t, leases.GetLeases())

	up, err := e.admin.UpdateFeatureGrant(operator(t), &seatdv1.UpdateFeatureGrantRequest{
		LicenseId: lic.GetId(), Grant: &seatdv1.FeatureGrant{Id: g.GetId(), Seats: 5, Version: "2026"},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats", "version"}},
	})
	require.NoError(t, err)
	require.EqualValues(t, 5, up.GetGrant().GetSeats())
	require.Equal(t, "2026", up.GetGrant().GetVersion())
	require.EqualValues(t, 1, up.GetGrant().GetSeatsInUse())
	require.True(t, expires.Equal(up.GetGrant().GetExpiresAt().AsTime()), "unnamed fields kept")

	del, err := e.admin.DeleteFeatureGrant(operator(t), &seatdv1.DeleteFeatureGrantRequest{LicenseId: lic.GetId(), GrantId: g.GetId()})
	require.NoError(t, err)
	require.EqualValues(t, 1, del.GetRevokedLeases())
	_, err = e.admin.DeleteFeatureGrant(operator(t), &seatdv1.DeleteFeatureGrantRequest{LicenseId: lic.GetId(), GrantId: g.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonGrantNotFound)
	require.Empty(t, e.grantsOf(t, operator(t), lic.GetId()))

	audit, err := e.admin.ListAuditEvents(operator(t), &seatdv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	actions := map[string]*seatdv1.AuditEvent{}
	for _, a := range audit.GetAuditEvents() {
		if a.GetResourceId() == g.GetId() {
			actions[a.GetAction()] = a
		}
	}
	require.Len(t, actions, 3)
	require.Equal(t, "render", actions["feature_grant.create"].GetDetails()["feature"])
	require.Equal(t, "changed", actions["feature_grant.update"].GetDetails()["field.seats"])
	require.Equal(t, "1", actions["feature_grant.delete"].GetDetails()["revoked_leases"])
	for _, a := range actions {
		require.Equal(t, "operator", a.GetActor())
		require.Equal(t, "feature_grant", a.GetResource())
		require.Equal(t, lic.GetId(), a.GetDetails()["license_id"])
	}
}

// TestAtMostMaxGrantsPerLicense: the grant beyond the bound is refused
// with a clear reason, and not created.
func TestAtMostMaxGrantsPerLicense(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	for i := range server.MaxGrantsPerLicense {
		e.grant(t, lic.GetId(), &seatdv1.FeatureGrant{Feature: fmt.Sprintf("f%d", i), Seats: 1})
	}
	_, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: &seatdv1.FeatureGrant{Feature: "one-more", Seats: 1}})
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonQuotaExceeded)
	require.Contains(t, st.Message(), fmt.Sprint(server.MaxGrantsPerLicense))
	require.Equal(t, "grants_per_license", errorInfo(st).GetMetadata()["quota"])
	require.Len(t, e.grantsOf(t, operator(t), lic.GetId()), server.MaxGrantsPerLicense)
}

// TestGrantSeatsCountAgainstTheSeatsQuota: a grant sells seats as a
// license does; raising a grant past the quota is refused, lowering is not.
func TestGrantSeatsCountAgainstTheSeatsQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.Quotas.Seats = 10 })
	lic := e.license(t, 4, time.Minute)
	g := e.grant(t, lic.GetId(), &seatdv1.FeatureGrant{Feature: "render", Seats: 4})
	_, err := e.admin.CreateFeatureGrant(operator(t), &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: &seatdv1.FeatureGrant{Feature: "sim", Seats: 3}})
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonQuotaExceeded)
	update := func(seats int32) error {
		_, err := e.admin.UpdateFeatureGrant(operator(t), &seatdv1.UpdateFeatureGrantRequest{
			LicenseId: lic.GetId(), Grant: &seatdv1.FeatureGrant{Id: g.GetId(), Seats: seats}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
		})
		return err
	}
	requireStatus(t, update(7), codes.ResourceExhausted, server.ReasonQuotaExceeded)
	require.NoError(t, update(6))
	require.NoError(t, update(1))
	_, err = e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Seats: 6, LeaseTtl: durationpb.New(time.Minute)}})
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonQuotaExceeded, "4 + 1 + 6 > 10")
}

// TestFeatureLeasesInEventsAndReports: a lease of a grant shows in the
// usage events with its license's id, its grant and feature, and the
// usage report has a row of the feature, which its filter keeps alone.
func TestFeatureLeasesInEventsAndReports(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	g := e.grant(t, lic.GetId(), &seatdv1.FeatureGrant{Feature: "render", Seats: 1})
	for _, feature := range []string{"", "render"} {
		a, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Feature: feature})
		require.NoError(t, err)
		_, err = e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
		require.NoError(t, err)
	}
	evs, err := e.admin.ListUsageEvents(operator(t), &seatdv1.ListUsageEventsRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	byFeature := map[string]*seatdv1.UsageEvent{}
	for _, ev := range evs.GetUsageEvents() {
		byFeature[ev.GetFeature()] = ev
	}
	require.Len(t, byFeature, 2)
	require.Equal(t, lic.GetId(), byFeature["render"].GetLicenseId())
	require.Equal(t, g.GetId(), byFeature["render"].GetGrantId())
	require.Equal(t, lic.GetId(), byFeature[""].GetLicenseId())
	require.Empty(t, byFeature[""].GetGrantId())

	all, err := e.admin.GetUsageReport(operator(t), &seatdv1.GetUsageReportRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	features := map[string]bool{}
	for _, row := range all.GetRows() {
		require.Equal(t, lic.GetId(), row.GetLicenseId())
		features[row.GetFeature()] = true
	}
	require.Equal(t, map[string]bool{"": true, "render": true}, features)
	cut, err := e.admin.GetUsageReport(operator(t), &seatdv1.GetUsageReportRequest{LicenseId: lic.GetId(), Feature: "render"})
	require.NoError(t, err)
	require.NotEmpty(t, cut.GetRows())
	for _, row := range cut.GetRows() {
		require.Equal(t, "render", row.GetFeature())
	}
}
