package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestAuthAndTenants covers admin authentication, tenant isolation and
// lease tokens (invariant 8).
func TestAuthAndTenants(t *testing.T) {
	t.Parallel()
	// Every refusal here comes from one address, more than the default
	// failed-lookup burst: the limit has a test of its own (ratelimit_test.go).
	p := start(t, options{args: []string{"--failed-lookup-rate", "0"}})
	ctx := testContext(t)
	admin, seats, hb := p.admin(), p.seats(), p.heartbeats()
	op := p.asOperator(ctx)

	t.Run("no or wrong credentials", func(t *testing.T) {
		for name, c := range map[string]struct {
			md   []string
			http string // Authorization header over REST, "" for none
		}{
			"none":         {},
			"wrong key":    {md: []string{"authorization", "Bearer not-the-operator-key-123"}, http: "Bearer not-the-operator-key-123"},
			"no scheme":    {md: []string{"authorization", p.OperatorKey}, http: p.OperatorKey},
			"basic scheme": {md: []string{"authorization", "Basic " + p.OperatorKey}, http: "Basic " + p.OperatorKey},
			"empty bearer": {md: []string{"authorization", "Bearer "}, http: "Bearer "},
		} {
			cctx := ctx
			if c.md != nil {
				cctx = metadata.AppendToOutgoingContext(ctx, c.md...)
			}
			_, err := admin.ListLicenses(cctx, &seatdv1.ListLicensesRequest{})
			requireStatus(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
			_, err = admin.CreateLicense(cctx, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Seats: 1}})
			requireStatus(t, err, codes.Unauthenticated, "")

			req, err := http.NewRequestWithContext(ctx, "GET", p.url("/v1/admin/licenses"), nil)
			require.NoError(t, err)
			if c.http != "" {
				req.Header.Set("Authorization", c.http)
			}
			resp, err := httpClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "REST with credentials %q", name)
		}
		// Nothing was created by the refused calls.
		list, err := admin.ListLicenses(op, &seatdv1.ListLicensesRequest{})
		require.NoError(t, err)
		require.Empty(t, list.GetLicenses())
		// The bearer scheme is case-insensitive, and REST passes the key on.
		_, err = admin.ListLicenses(metadata.AppendToOutgoingContext(ctx, "authorization", "bearer "+p.OperatorKey), &seatdv1.ListLicensesRequest{})
		require.NoError(t, err)
		p.do(t, "GET", "/v1/admin/licenses", p.OperatorKey, nil).requireCode(t, http.StatusOK)
	})

	// Tenants and their keys.
	for _, id := range []string{"acme", "globex"} {
		resp, err := admin.CreateTenant(op, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: id, Name: id + " Inc."}})
		require.NoError(t, err, "create tenant %s", id)
		require.Equal(t, id, resp.GetTenant().GetId())
	}
	_, err := admin.CreateTenant(op, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "acme"}})
	requireStatus(t, err, codes.AlreadyExists, "")
	_, err = admin.CreateTenant(op, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "Not Valid"}})
	requireStatus(t, err, codes.InvalidArgument, "INVALID_ARGUMENT")
	_, err = admin.CreateApiKey(op, &seatdv1.CreateApiKeyRequest{TenantId: "nobody", Name: "x"})
	requireStatus(t, err, codes.NotFound, "")

	newKey := func(tenant string) *seatdv1.CreateApiKeyResponse {
		resp, err := admin.CreateApiKey(op, &seatdv1.CreateApiKeyRequest{TenantId: tenant, Name: tenant + "-ci"})
		require.NoError(t, err)
		require.NotEmpty(t, resp.GetSecret(), "CreateApiKey returns the secret")
		require.Equal(t, tenant, resp.GetApiKey().GetTenantId())
		return resp
	}
	acmeKey, globexKey := newKey("acme"), newKey("globex")
	acme, globex := bearer(ctx, acmeKey.GetSecret()), bearer(ctx, globexKey.GetSecret())

	created, err := admin.CreateLicense(acme, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "acme cad", Seats: 2, LeaseTtl: durationpb.New(60 * time.Second),
	}})
	require.NoError(t, err)
	lic := created.GetLicense()
	require.Equal(t, "acme", lic.GetTenantId(), "an API key works in its own tenant")

	lease, err := seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "acme-host-1"})
	require.NoError(t, err)
	leaseID := lease.GetLease().GetId()

	t.Run("other tenant sees nothing", func(t *testing.T) {
		// Another tenant's license must look exactly like a missing one.
		_, missing := admin.GetLicense(globex, &seatdv1.GetLicenseRequest{LicenseId: "lic_doesnotexist"})
		wantMissing := requireStatus(t, missing, codes.NotFound, "LICENSE_NOT_FOUND")
		sameAsMissing := func(err error, what string) {
			t.Helper()
			st := requireStatus(t, err, codes.NotFound, "LICENSE_NOT_FOUND")
			require.Equal(t, wantMissing.Message(), st.Message(), "%s: the message must not hint that the license exists", what)
		}
		_, err := admin.GetLicense(globex, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
		sameAsMissing(err, "GetLicense")
		_, err = admin.UpdateLicense(globex, &seatdv1.UpdateLicenseRequest{
			License:    &seatdv1.License{Id: lic.GetId(), Seats: 100},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
		})
		sameAsMissing(err, "UpdateLicense")
		_, err = admin.DeleteLicense(globex, &seatdv1.DeleteLicenseRequest{LicenseId: lic.GetId()})
		sameAsMissing(err, "DeleteLicense")
		_, err = admin.ListLeases(globex, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
		sameAsMissing(err, "ListLeases")

		_, missingLease := admin.RevokeLease(globex, &seatdv1.RevokeLeaseRequest{LeaseId: "lse_doesnotexist"})
		wantMissingLease := requireStatus(t, missingLease, codes.NotFound, "LEASE_NOT_FOUND")
		_, err = admin.RevokeLease(globex, &seatdv1.RevokeLeaseRequest{LeaseId: leaseID})
		st := requireStatus(t, err, codes.NotFound, "LEASE_NOT_FOUND")
		require.Equal(t, wantMissingLease.Message(), st.Message(), "RevokeLease must not hint that the lease exists")

		list, err := admin.ListLicenses(globex, &seatdv1.ListLicensesRequest{})
		require.NoError(t, err)
		require.Empty(t, list.GetLicenses(), "globex lists no acme license")
		// The operator's default tenant does not see it either.
		list, err = admin.ListLicenses(op, &seatdv1.ListLicensesRequest{})
		require.NoError(t, err)
		require.Empty(t, list.GetLicenses())

		// Over REST the same: 404.
		p.do(t, "GET", "/v1/admin/licenses/"+lic.GetId(), globexKey.GetSecret(), nil).requireCode(t, http.StatusNotFound)
		p.do(t, "DELETE", "/v1/admin/licenses/"+lic.GetId(), globexKey.GetSecret(), nil).requireCode(t, http.StatusNotFound)

		// None of that changed anything: acme still has its license, seats
		// and lease.
		got, err := admin.GetLicense(acme, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
		require.NoError(t, err)
		require.EqualValues(t, 2, got.GetLicense().GetSeats())
		leases, err := admin.ListLeases(acme, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
		require.NoError(t, err)
		require.Len(t, leases.GetLeases(), 1)
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, leases.GetLeases()[0].GetState())
		// The operator reaches it by naming the tenant.
		_, err = admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: "acme"})
		require.NoError(t, err)
	})

	t.Run("api key limits", func(t *testing.T) {
		_, err := admin.CreateTenant(acme, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "evil"}})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
		// A tenant admin's key makes keys of its own tenant only (roles).
		_, err = admin.CreateApiKey(acme, &seatdv1.CreateApiKeyRequest{TenantId: "globex"})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
		_, err = admin.ListTenants(acme, &seatdv1.ListTenantsRequest{})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
		_, err = admin.Cleanup(acme, &seatdv1.CleanupRequest{})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")

		_, err = admin.GetLicense(acme, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: "globex"})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
		_, err = admin.ListLicenses(acme, &seatdv1.ListLicensesRequest{TenantId: "globex"})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
		_, err = admin.CreateLicense(acme, &seatdv1.CreateLicenseRequest{TenantId: "globex", License: &seatdv1.License{Seats: 1}})
		requireStatus(t, err, codes.PermissionDenied, "PERMISSION_DENIED")
		p.do(t, "POST", "/v1/admin/tenants", acmeKey.GetSecret(), `{"id":"evil2"}`).requireCode(t, http.StatusForbidden)

		// Naming its own tenant is fine.
		_, err = admin.GetLicense(acme, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: "acme"})
		require.NoError(t, err)
		tenants, err := admin.ListTenants(op, &seatdv1.ListTenantsRequest{})
		require.NoError(t, err)
		var ids []string
		for _, tn := range tenants.GetTenants() {
			ids = append(ids, tn.GetId())
		}
		require.ElementsMatch(t, []string{"default", "acme", "globex"}, ids, "refused calls created no tenant")
	})

	t.Run("lease tokens", func(t *testing.T) {
		_, err := hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: leaseID, LeaseToken: "slt_wrong_token_0123456789"})
		requireStatus(t, err, codes.PermissionDenied, "LEASE_TOKEN_INVALID")
		_, err = seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: leaseID, LeaseToken: "slt_wrong_token_0123456789"})
		requireStatus(t, err, codes.PermissionDenied, "LEASE_TOKEN_INVALID")
		// Another lease's (valid) token does not work either.
		other, err := seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "acme-host-2"})
		require.NoError(t, err)
		_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: leaseID, LeaseToken: other.GetLeaseToken()})
		requireStatus(t, err, codes.PermissionDenied, "LEASE_TOKEN_INVALID")
		r := p.do(t, "POST", "/v1/leases/"+leaseID+":release", "", map[string]any{"leaseToken": other.GetLeaseToken()}).requireCode(t, http.StatusForbidden)
		require.Equal(t, "LEASE_TOKEN_INVALID", r.errorReason())

		// The lease is untouched and works with its own token.
		resp, err := hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: leaseID, LeaseToken: lease.GetLeaseToken()})
		require.NoError(t, err)
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, resp.GetLease().GetState())
		rel, err := seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: leaseID, LeaseToken: lease.GetLeaseToken()})
		require.NoError(t, err)
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_RELEASED, rel.GetLease().GetState())
		_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: leaseID, LeaseToken: lease.GetLeaseToken()})
		requireStatus(t, err, codes.FailedPrecondition, "LEASE_RELEASED")

		// The owning tenant may revoke; the holder's next heartbeat fails.
		rv, err := admin.RevokeLease(acme, &seatdv1.RevokeLeaseRequest{LeaseId: other.GetLease().GetId(), Reason: "e2e"})
		require.NoError(t, err)
		require.Equal(t, seatdv1.LeaseState_LEASE_STATE_REVOKED, rv.GetLease().GetState())
		_, err = hb.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: other.GetLease().GetId(), LeaseToken: other.GetLeaseToken()})
		requireStatus(t, err, codes.FailedPrecondition, "LEASE_REVOKED")
	})

	t.Run("revoked api key", func(t *testing.T) {
		// To another tenant's admin, acme's key does not exist.
		_, err := admin.RevokeApiKey(globex, &seatdv1.RevokeApiKeyRequest{ApiKeyId: acmeKey.GetApiKey().GetId()})
		requireStatus(t, err, codes.NotFound, "API_KEY_NOT_FOUND")
		_, err = admin.ListLicenses(acme, &seatdv1.ListLicensesRequest{})
		require.NoError(t, err, "globex could not revoke acme's key")

		rk, err := admin.RevokeApiKey(op, &seatdv1.RevokeApiKeyRequest{ApiKeyId: acmeKey.GetApiKey().GetId()})
		require.NoError(t, err)
		require.NotNil(t, rk.GetApiKey().GetRevokeTime())
		_, err = admin.ListLicenses(acme, &seatdv1.ListLicensesRequest{})
		st := requireStatus(t, err, codes.Unauthenticated, "UNAUTHENTICATED")
		require.NotContains(t, st.Message(), "revoked", "a revoked key looks like an unknown one")
		p.do(t, "GET", "/v1/admin/licenses", acmeKey.GetSecret(), nil).requireCode(t, http.StatusUnauthorized)
		// globex's key still works; the license is still there.
		_, err = admin.ListLicenses(globex, &seatdv1.ListLicensesRequest{})
		require.NoError(t, err)
		_, err = admin.GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: "acme"})
		require.NoError(t, err)
		keys, err := admin.ListApiKeys(op, &seatdv1.ListApiKeysRequest{TenantId: "acme"})
		require.NoError(t, err)
		require.Len(t, keys.GetApiKeys(), 1)
		require.NotNil(t, keys.GetApiKeys()[0].GetRevokeTime())
	})
}
