package grpcapi

import (
	"crypto/ed25519"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/licensefile"
	"github.com/seatd/seatd/server/locked/lockedtest"
	"github.com/seatd/seatd/server/signing"
)

// newLockedEnv is an env in locked mode: the file of site (serial 1, the
// license "cad" of 2 seats with a render grant) in force.
func newLockedEnv(t *testing.T) (*env, *lockedtest.Site) {
	t.Helper()
	var site *lockedtest.Site
	e := newEnv(t, nil, func(c *Config) {
		site = lockedtest.New(t, c.Store)
		ctl := site.Start(t, 1, 2)
		c.LicenseFile, c.Issuer = ctl, site.Issuer(t, ctl)
	})
	return e, site
}

// defaultTenantKey is a new API key of the default tenant.
func (e *env) defaultTenantKey(t *testing.T) string {
	t.Helper()
	k, err := e.admin.CreateApiKey(operator(t), &seatdv1.CreateApiKeyRequest{TenantId: server.DefaultTenantID, Name: "ci"})
	require.NoError(t, err)
	return k.GetSecret()
}

// TestLockedModeRefusesLicenseChanges: in locked mode every call that
// creates, changes or deletes a license or a grant is FAILED_PRECONDITION
// LICENSE_FILE_LOCKED, for the operator and a tenant's key alike, and
// changes nothing; reads, policies, revocations and reports still work.
func TestLockedModeRefusesLicenseChanges(t *testing.T) {
	t.Parallel()
	e, _ := newLockedEnv(t)
	lic, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lockedtest.LicenseID})
	require.NoError(t, err)
	l := lic.GetLicense()
	require.EqualValues(t, 2, l.GetSeats())
	require.Len(t, l.GetGrants(), 1)
	grantID := l.GetGrants()[0].GetId()

	for _, ctx := range []struct {
		who string
		key string
	}{{"operator", testOperatorKey}, {"tenant key", e.defaultTenantKey(t)}} {
		c := as(t, ctx.key)
		calls := map[string]func() error{
			"CreateLicense": func() error {
				_, err := e.admin.CreateLicense(c, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Name: "more", Seats: 100}})
				return err
			},
			"UpdateLicense": func() error {
				_, err := e.admin.UpdateLicense(c, &seatdv1.UpdateLicenseRequest{
					License: &seatdv1.License{Id: l.GetId(), Seats: 100}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
				})
				return err
			},
			"UpdateLicense name": func() error {
				_, err := e.admin.UpdateLicense(c, &seatdv1.UpdateLicenseRequest{
					License: &seatdv1.License{Id: l.GetId(), Name: "renamed"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"name"}},
				})
				return err
			},
			"DeleteLicense": func() error {
				_, err := e.admin.DeleteLicense(c, &seatdv1.DeleteLicenseRequest{LicenseId: l.GetId()})
				return err
			},
			"CreateFeatureGrant": func() error {
				_, err := e.admin.CreateFeatureGrant(c, &seatdv1.CreateFeatureGrantRequest{
					LicenseId: l.GetId(), Grant: &seatdv1.FeatureGrant{Feature: "render", Seats: 50},
				})
				return err
			},
			"UpdateFeatureGrant": func() error {
				_, err := e.admin.UpdateFeatureGrant(c, &seatdv1.UpdateFeatureGrantRequest{
					LicenseId: l.GetId(), Grant: &seatdv1.FeatureGrant{Id: grantID, Seats: 50},
					UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"seats"}},
				})
				return err
			},
			"DeleteFeatureGrant": func() error {
				_, err := e.admin.DeleteFeatureGrant(c, &seatdv1.DeleteFeatureGrantRequest{LicenseId: l.GetId(), GrantId: grantID})
				return err
			},
		}
		for name, call := range calls {
			requireStatus(t, call(), codes.FailedPrecondition, server.ReasonLicenseFileLocked, "%s by the %s", name, ctx.who)
		}
	}
	after, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: l.GetId()})
	require.NoError(t, err)
	require.EqualValues(t, 2, after.GetLicense().GetSeats(), "nothing changed")
	require.Equal(t, l.GetName(), after.GetLicense().GetName())
	require.EqualValues(t, 2, after.GetLicense().GetGrants()[0].GetSeats())
	list, err := e.admin.ListLicenses(operator(t), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetLicenses(), 1, "no license made")

	// What the admin can still do: a policy, revoking a lease, reports.
	e.setPolicy(t, l.GetId(), &seatdv1.PolicyRule{
		Kind: seatdv1.PolicyRule_KIND_MAX, Count: 1, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_USER, Name: "bob"},
	})
	seat, err := e.acquireAs(t, l.GetKey(), "", "bob", "ws-1")
	require.NoError(t, err)
	_, err = e.acquireAs(t, l.GetKey(), "", "bob", "ws-2")
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonUserLimit, "the policy applies")
	_, err = e.acquireAs(t, l.GetKey(), "", "carol", "ws-3")
	require.NoError(t, err)
	_, err = e.acquireAs(t, l.GetKey(), "", "dave", "ws-4")
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsExhausted, "the file's 2 seats, no more")
	_, err = e.admin.RevokeLease(operator(t), &seatdv1.RevokeLeaseRequest{LeaseId: seat.GetLease().GetId()})
	require.NoError(t, err)
	_, err = e.admin.GetUsageReport(operator(t), &seatdv1.GetUsageReportRequest{})
	require.NoError(t, err)
	_, err = e.admin.ListLeases(operator(t), &seatdv1.ListLeasesRequest{LicenseId: l.GetId()})
	require.NoError(t, err)
}

// TestLicenseFileCalls: GetLicenseFile answers the file in force (any
// admin); ReloadLicenseFile is the operator's, and answers a newer file
// in force at once, a refused one with its cause; without a license file
// both are LICENSE_FILE_NOT_CONFIGURED.
func TestLicenseFileCalls(t *testing.T) {
	t.Parallel()
	e, site := newLockedEnv(t)
	tenantKey := e.defaultTenantKey(t)
	got, err := e.admin.GetLicenseFile(as(t, tenantKey), &seatdv1.GetLicenseFileRequest{})
	require.NoError(t, err)
	f := got.GetLicenseFile()
	require.EqualValues(t, 1, f.GetSerial())
	require.Equal(t, "Acme", f.GetCustomer())
	require.Equal(t, site.Key.ID, f.GetSiteKeyId())
	require.EqualValues(t, 1, f.GetLicenseCount())
	require.NotNil(t, f.GetNotAfter())
	require.NotNil(t, f.GetInForceSince())

	_, err = e.admin.ReloadLicenseFile(as(t, tenantKey), &seatdv1.ReloadLicenseFileRequest{})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied, "a tenant's key")

	same, err := e.admin.ReloadLicenseFile(operator(t), &seatdv1.ReloadLicenseFileRequest{})
	require.NoError(t, err)
	require.False(t, same.GetChanged())

	older := site.File(1, 50) // serial 1 again, other terms
	site.Write(t, older)
	_, err = e.admin.ReloadLicenseFile(operator(t), &seatdv1.ReloadLicenseFileRequest{})
	st := requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseFileRefused, "serial 1 again")
	require.Equal(t, "not_newer", errorInfo(st).GetMetadata()["cause"])
	require.Equal(t, "1", errorInfo(st).GetMetadata()["serial_in_force"])

	site.Write(t, site.File(2, 5))
	newer, err := e.admin.ReloadLicenseFile(operator(t), &seatdv1.ReloadLicenseFileRequest{})
	require.NoError(t, err)
	require.True(t, newer.GetChanged())
	require.EqualValues(t, 2, newer.GetLicenseFile().GetSerial())
	lic, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lockedtest.LicenseID})
	require.NoError(t, err)
	require.EqualValues(t, 5, lic.GetLicense().GetSeats(), "in force at once")

	audit, err := e.admin.ListAuditEvents(operator(t), &seatdv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	actions := map[string]int{}
	for _, a := range audit.GetAuditEvents() {
		actions[a.GetAction()]++
	}
	require.Equal(t, 2, actions["license_file.reload"], "%v", actions)
	require.Equal(t, 1, actions["license_file.refuse"], "%v", actions)

	plain := newEnv(t, nil)
	_, err = plain.admin.GetLicenseFile(operator(t), &seatdv1.GetLicenseFileRequest{})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseFileNotConfigured)
	_, err = plain.admin.ReloadLicenseFile(operator(t), &seatdv1.ReloadLicenseFileRequest{})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseFileNotConfigured)
}

// TestLockedModeCertificatesChainToTheFile: in locked mode a certificate
// of the file's license is signed by the site key and names the file's
// serial and license id; GetSignedLicenseFile answers the file's JWS to
// anyone (no credentials), and the vendor's key verifies it and, through
// the site key it names, the certificate; the default tenant's JWKS
// holds the site key first. Without a file the call is
// LICENSE_FILE_NOT_CONFIGURED.
func TestLockedModeCertificatesChainToTheFile(t *testing.T) {
	t.Parallel()
	e, site := newLockedEnv(t)
	lic, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lockedtest.LicenseID})
	require.NoError(t, err)
	resp, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{
		LicenseKey: lic.GetLicense().GetKey(), Fingerprint: "fp", Nonce: "n1",
	})
	require.NoError(t, err)

	got, err := e.seats.GetSignedLicenseFile(t.Context(), &seatdv1.GetSignedLicenseFileRequest{})
	require.NoError(t, err)
	require.EqualValues(t, 1, got.GetSerial())
	file, err := licensefile.OpenToken(got.GetLicenseFile(), []ed25519.PublicKey{site.VendorPub})
	require.NoError(t, err)
	siteKey, err := file.SiteKey.PublicKey("site_key")
	require.NoError(t, err)
	claims, err := signing.Verify(resp.GetLeaseCertificate(), []server.SigningKey{{ID: file.SiteKey.Kid, PublicKey: siteKey}})
	require.NoError(t, err, "signed by the site key the file names")
	require.EqualValues(t, 1, claims.FileSerial)
	require.Equal(t, "cad", claims.FileLicenseID)
	require.Equal(t, lockedtest.LicenseID, claims.LicenseID)
	require.Equal(t, "n1", claims.Nonce)

	beat, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: resp.GetLease().GetId(), LeaseToken: resp.GetLeaseToken(), Nonce: "n2"})
	require.NoError(t, err)
	claims, err = signing.Verify(beat.GetLeaseCertificate(), []server.SigningKey{{ID: file.SiteKey.Kid, PublicKey: siteKey}})
	require.NoError(t, err, "a heartbeat's too")
	require.EqualValues(t, 1, claims.FileSerial)

	jwks, err := e.seats.GetSigningKeys(t.Context(), &seatdv1.GetSigningKeysRequest{})
	require.NoError(t, err)
	require.Len(t, jwks.GetKeys(), 3, "the site key, the next key, the key that signs")
	require.Equal(t, site.Key.ID, jwks.GetKeys()[0].GetKid())

	plain := newEnv(t, nil)
	_, err = plain.seats.GetSignedLicenseFile(t.Context(), &seatdv1.GetSignedLicenseFileRequest{})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseFileNotConfigured)
}

// TestExportUsage: the operator's usage export of a locked seatd: per
// license of the file and feature, the peak, the denials for want of a
// seat (not the policy's) and the seat-hours, signed by the site key
// under the serial in force (it verifies against the file), audited; a
// tenant's key is refused, a bad period names its field, and a seatd
// without a license file answers LICENSE_FILE_NOT_CONFIGURED.
func TestExportUsage(t *testing.T) {
	t.Parallel()
	e, site := newLockedEnv(t)
	lic, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lockedtest.LicenseID})
	require.NoError(t, err)
	key := lic.GetLicense().GetKey()
	e.setPolicy(t, lockedtest.LicenseID, &seatdv1.PolicyRule{
		Kind: seatdv1.PolicyRule_KIND_EXCLUDE, Subject: &seatdv1.PolicySubject{Kind: seatdv1.PolicySubject_KIND_USER, Name: "intern"},
	})
	start := time.Now().Add(-time.Minute)
	for _, fp := range []string{"a", "b"} {
		_, err := e.acquireAs(t, key, "", fp, fp)
		require.NoError(t, err)
	}
	_, err = e.acquireAs(t, key, "", "c", "c")
	requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsExhausted)
	_, err = e.acquireAs(t, key, "", "intern", "x")
	requireStatus(t, err, codes.PermissionDenied, server.ReasonExcluded)
	_, err = e.acquireAs(t, key, "render", "r", "r")
	require.NoError(t, err)

	resp, err := e.admin.ExportUsage(operator(t), &seatdv1.ExportUsageRequest{StartTime: timestamppb.New(start)})
	require.NoError(t, err)
	require.EqualValues(t, 1, resp.GetFileSerial())
	require.Equal(t, site.Key.ID, resp.GetSiteKeyId())
	require.Equal(t, start.UTC().Truncate(time.Second), resp.GetPeriodStart().AsTime())
	rows := resp.GetRows()
	require.Len(t, rows, 2, "%v", rows)
	require.Equal(t, "cad", rows[0].GetLicenseId())
	require.Empty(t, rows[0].GetFeature())
	require.EqualValues(t, 2, rows[0].GetPeakSeats())
	require.EqualValues(t, 1, rows[0].GetDenials(), "the policy's refusal is not a denial for want of a seat")
	require.Greater(t, rows[0].GetSeatHours(), 0.0)
	require.Equal(t, "render", rows[1].GetFeature())
	require.EqualValues(t, 1, rows[1].GetPeakSeats())

	f, err := licensefile.Open(mustReadFile(t, site.Path), []ed25519.PublicKey{site.VendorPub})
	require.NoError(t, err)
	u, err := licensefile.VerifyUsage([]byte(resp.GetUsageExport()), &f.File)
	require.NoError(t, err)
	require.Len(t, u.Rows, 2)
	require.Equal(t, 2, u.Rows[0].PeakSeats)

	audit, err := e.admin.ListAuditEvents(operator(t), &seatdv1.ListAuditEventsRequest{})
	require.NoError(t, err)
	var exported bool
	for _, a := range audit.GetAuditEvents() {
		exported = exported || a.GetAction() == "license_file.usage_export" && a.GetDetails()["serial"] == "1"
	}
	require.True(t, exported, "audited")

	_, err = e.admin.ExportUsage(as(t, e.defaultTenantKey(t)), &seatdv1.ExportUsageRequest{})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied, "a tenant's key")
	_, err = e.admin.ExportUsage(operator(t), &seatdv1.ExportUsageRequest{StartTime: timestamppb.Now(), EndTime: timestamppb.New(start)})
	st := requireStatus(t, err, codes.InvalidArgument, server.ReasonInvalidArgument)
	require.Contains(t, st.Message(), "start_time")
	_, err = e.admin.ExportUsage(operator(t), &seatdv1.ExportUsageRequest{EndTime: &timestamppb.Timestamp{Seconds: -1 << 62}})
	st = requireStatus(t, err, codes.InvalidArgument, server.ReasonInvalidArgument)
	require.Contains(t, st.Message(), "end_time")

	plain := newEnv(t, nil)
	_, err = plain.admin.ExportUsage(operator(t), &seatdv1.ExportUsageRequest{})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseFileNotConfigured)
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}
