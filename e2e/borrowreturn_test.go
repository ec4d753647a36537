package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestBorrowReturnRepeatIsBounded reproduces issue 24's item 10 (borrow,
// return early, repeat: on a 1-seat license with 72 h borrowing, 5 cycles
// gave 5 certificates that all passed VerifyOffline 48 h later while the
// license showed 0 seats in use) and shows it bounded: early return is
// refused unless the license allows it; when it does, the returned
// certificate is on the signed list of returned certificates (refused
// offline by a product that has fetched the list), and it keeps counting
// against the borrow cap until its exp, so the later cycles are refused:
// at most max_borrowed_seats certificates are valid offline at once.
func TestBorrowReturnRepeatIsBounded(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testBorrowReturnRepeat(t, start(t, options{}))
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		testBorrowReturnRepeat(t, b.startSeatd(t, "ret-"+randomHex(3)))
	})
}

// restReturned is the tenant's signed list as a product fetches it over
// REST.
func restReturned(t *testing.T, p *proc, tenant string) string {
	t.Helper()
	resp, err := http.Get(p.url("/v1/tenants/" + tenant + "/returned.jwt"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET returned.jwt: %s", body)
	var list string
	require.NoError(t, json.Unmarshal(body, &list), "the answer is the JWS as a JSON string: %s", body)
	return list
}

func testBorrowReturnRepeat(t *testing.T, p *proc) {
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	jwks := restJWKS(t, p, "default")
	c := dialVerifying(t, p, jwks)
	keys, err := client.ParseSigningKeys(jwks)
	require.NoError(t, err)

	r, err := admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 1, LeaseTtl: durationpb.New(time.Minute), MaxBorrowDuration: durationpb.New(72 * time.Hour)}})
	require.NoError(t, err)
	lic := r.GetLicense()
	require.False(t, lic.GetAllowEarlyReturn(), "off by default")
	opts := func(fp string) client.AcquireOptions {
		return client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: fp}
	}

	// Off: the return is refused, the seat stays borrowed.
	b, err := c.Borrow(ctx, opts("laptop-0"), 72*time.Hour)
	require.NoError(t, err)
	requireStatus(t, c.ReleaseSeat(ctx, b.ID(), b.Token()), codes.FailedPrecondition, "LEASE_BORROWED")
	_, err = admin.DeleteLicense(op, &seatdv1.DeleteLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)

	r, err = admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 1, LeaseTtl: durationpb.New(time.Minute), MaxBorrowDuration: durationpb.New(72 * time.Hour)}})
	require.NoError(t, err)
	lic = r.GetLicense()
	u, err := admin.UpdateLicense(op, &seatdv1.UpdateLicenseRequest{
		License:    &seatdv1.License{Id: lic.GetId(), AllowEarlyReturn: true},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"allow_early_return"}}})
	require.NoError(t, err)
	require.True(t, u.GetLicense().GetAllowEarlyReturn())

	// The attack: five borrow-and-return cycles.
	var certs []string
	granted := 0
	for i := range 5 {
		b, err := c.Borrow(ctx, opts("laptop-"+string(rune('a'+i))), 72*time.Hour)
		if err != nil {
			require.Equal(t, "BORROW_LIMIT_REACHED", client.Reason(err), "cycle %d: %v", i, err)
			continue
		}
		granted++
		certs = append(certs, b.Certificate())
		require.NoError(t, b.Release(ctx), "cycle %d: returned early", i)
	}
	require.Equal(t, 1, granted, "the returned borrow counts against the cap (the seat limit) until its exp")
	require.Empty(t, activeLeases(t, p, lic.GetId()), "the seat is free")
	online, err := c.Acquire(ctx, opts("desk"))
	require.NoError(t, err, "online use takes the freed seat")
	require.NoError(t, online.Release(ctx))

	// 48 h later, offline: the certificate verifies without the list (a
	// product that never came online, or a copied file), and is refused
	// with the list the product fetched when it came online.
	later := time.Now().Add(48 * time.Hour)
	_, err = client.VerifyOffline(certs[0], jwks, later)
	require.NoError(t, err, "at most one valid certificate without the list")
	list := restReturned(t, p, "default")
	fetched, err := c.FetchReturnedCertificates(ctx, "")
	require.NoError(t, err)
	for _, l := range []string{list, fetched} {
		verified, err := keys.VerifyReturned(l, "default", time.Minute, time.Now())
		require.NoError(t, err)
		claims, err := client.VerifyOffline(certs[0], jwks, later)
		require.NoError(t, err)
		require.True(t, verified.Returned(claims.LeaseID))
		_, err = client.VerifyOfflineReturned(certs[0], jwks, l, later)
		require.ErrorIs(t, err, client.ErrCertificateReturned)
	}
	// Another tenant's list does not name it, and does not verify with
	// this tenant's JWKS for this tenant.
	tenantID := "ret-" + randomHex(3)
	_, err = admin.CreateTenant(op, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: tenantID, Name: "other"}})
	require.NoError(t, err)
	_, err = keys.VerifyReturned(restReturned(t, p, tenantID), "default", time.Minute, time.Now())
	require.ErrorIs(t, err, client.ErrBadCertificate)
}
