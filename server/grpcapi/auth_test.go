package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// apiKey creates a tenant and an API key for it; it returns the secret.
func (e *env) apiKey(t *testing.T, tenant string) string {
	t.Helper()
	_, err := e.admin.CreateTenant(operator(t), &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: tenant}})
	require.NoError(t, err)
	k, err := e.admin.CreateApiKey(operator(t), &seatdv1.CreateApiKeyRequest{TenantId: tenant, Name: "ci"})
	require.NoError(t, err)
	require.Regexp(t, `^sak_`, k.GetSecret())
	return k.GetSecret()
}

func TestAdminCallsNeedAKnownKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	for name, md := range map[string]metadata.MD{
		"no key":            nil,
		"empty bearer":      metadata.Pairs("authorization", "Bearer "),
		"not bearer":        metadata.Pairs("authorization", "Basic "+testOperatorKey),
		"no scheme":         metadata.Pairs("authorization", testOperatorKey),
		"unknown key":       metadata.Pairs("authorization", "Bearer sak_not-a-key-of-ours"),
		"operator key typo": metadata.Pairs("authorization", "Bearer "+testOperatorKey+"x"),
		"two keys":          metadata.Pairs("authorization", "Bearer "+testOperatorKey, "authorization", "Bearer "+testOperatorKey),
	} {
		ctx := metadata.NewOutgoingContext(t.Context(), md)
		_, err := e.admin.GetLicense(ctx, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
		st := requireStatus(t, err, codes.Unauthenticated, server.ReasonUnauthenticated, name)
		require.NotContains(t, st.Message(), testOperatorKey, name)
	}

	// The scheme is case-insensitive; surrounding blanks do not matter.
	_, err := e.admin.GetLicense(metadata.NewOutgoingContext(t.Context(), metadata.Pairs("authorization", "bearer  "+testOperatorKey+" ")),
		&seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)

	// Seat and heartbeat calls carry their credentials in the message.
	a := e.acquire(t, lic.GetKey(), "fp")
	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
	require.NoError(t, err)
}

func TestRevokedAPIKeyIsUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	secret := e.apiKey(t, "acme")
	_, err := e.admin.ListLicenses(as(t, secret), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	keys, err := e.admin.ListApiKeys(operator(t), &seatdv1.ListApiKeysRequest{TenantId: "acme"})
	require.NoError(t, err)
	require.Len(t, keys.GetApiKeys(), 1)
	_, err = e.admin.RevokeApiKey(operator(t), &seatdv1.RevokeApiKeyRequest{ApiKeyId: keys.GetApiKeys()[0].GetId()})
	require.NoError(t, err)
	_, err = e.admin.ListLicenses(as(t, secret), &seatdv1.ListLicensesRequest{})
	requireStatus(t, err, codes.Unauthenticated, server.ReasonUnauthenticated)
}

func TestAPIKeyAdministersItsTenantOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	acme, globex := e.apiKey(t, "acme"), e.apiKey(t, "globex")
	created, err := e.admin.CreateLicense(as(t, acme), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 2, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	lic := created.GetLicense()
	require.Equal(t, "acme", lic.GetTenantId(), "an API key works in its own tenant")
	a := e.acquire(t, lic.GetKey(), "fp")

	// Another tenant's key: the license and its leases do not exist.
	other := as(t, globex)
	_, err = e.admin.GetLicense(other, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
	_, err = e.admin.ListLeases(other, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
	_, err = e.admin.RevokeLease(other, &seatdv1.RevokeLeaseRequest{LeaseId: a.GetLease().GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLeaseNotFound)
	_, err = e.admin.DeleteLicense(other, &seatdv1.DeleteLicenseRequest{LicenseId: lic.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
	ls, err := e.admin.ListLicenses(other, &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	require.Empty(t, ls.GetLicenses())

	// Naming the other tenant is refused outright.
	_, err = e.admin.GetLicense(other, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: "acme"})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.ListLicenses(other, &seatdv1.ListLicensesRequest{TenantId: "acme"})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)

	// Tenants and cleanup are the operator's.
	_, err = e.admin.CreateTenant(as(t, acme), &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: "evil"}})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.ListTenants(as(t, acme), &seatdv1.ListTenantsRequest{})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)

	// An admin key manages its own tenant's keys, not another's.
	made, err := e.admin.CreateApiKey(as(t, acme), &seatdv1.CreateApiKeyRequest{Name: "ro", Role: "viewer"})
	require.NoError(t, err)
	require.Equal(t, "acme", made.GetApiKey().GetTenantId())
	require.Equal(t, "viewer", made.GetApiKey().GetRole())
	_, err = e.admin.CreateApiKey(as(t, acme), &seatdv1.CreateApiKeyRequest{TenantId: "globex"})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.CreateApiKey(as(t, acme), &seatdv1.CreateApiKeyRequest{Role: "operator"})
	requireStatus(t, err, codes.InvalidArgument, server.ReasonInvalidArgument)
	_, err = e.admin.ListApiKeys(as(t, acme), &seatdv1.ListApiKeysRequest{TenantId: "globex"})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	mine, err := e.admin.ListApiKeys(as(t, acme), &seatdv1.ListApiKeysRequest{})
	require.NoError(t, err)
	require.Len(t, mine.GetApiKeys(), 2)
	theirs, err := e.admin.ListApiKeys(operator(t), &seatdv1.ListApiKeysRequest{TenantId: "globex"})
	require.NoError(t, err)
	_, err = e.admin.RevokeApiKey(as(t, acme), &seatdv1.RevokeApiKeyRequest{ApiKeyId: theirs.GetApiKeys()[0].GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonAPIKeyNotFound)
	_, err = e.admin.ListLicenses(other, &seatdv1.ListLicensesRequest{})
	require.NoError(t, err, "another tenant's key is not revoked by acme")
	_, err = e.admin.RevokeApiKey(as(t, acme), &seatdv1.RevokeApiKeyRequest{ApiKeyId: made.GetApiKey().GetId()})
	require.NoError(t, err)
	_, err = e.admin.Cleanup(as(t, acme), &seatdv1.CleanupRequest{})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.GetCleanupStatus(as(t, acme), &seatdv1.GetCleanupStatusRequest{})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)

	// Its own tenant's license is all there; the operator reaches it by
	// naming the tenant.
	_, err = e.admin.RevokeLease(as(t, acme), &seatdv1.RevokeLeaseRequest{LeaseId: a.GetLease().GetId()})
	require.NoError(t, err)
	got, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId(), TenantId: "acme"})
	require.NoError(t, err)
	require.Equal(t, lic.GetId(), got.GetLicense().GetId())
	_, err = e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound, "the operator works in the default tenant unless told")
}
