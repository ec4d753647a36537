package e2e

// The Go client's lease certificates against the real seatd: with the
// JWKS fetched from the REST route (no credentials), Options.SigningKeys
// verifies acquisitions, stream heartbeats and wait grants; another
// tenant's JWKS refuses them; Borrow returns a certificate VerifyOffline
// accepts until its deadline; a borrowed lease can be neither revoked nor
// returned early; a JWKS fetched before a rotation holds the
// next key and keeps verifying after it (a kept lease carries on), but not
// after a second rotation, while a new one still verifies the old. (A fake server
// answering without a valid certificate is client/certificate_test.go.)

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func TestClientCert(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testClientCert(t, start(t, options{}))
	})
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		b := sharedBackend(t, "")
		testClientCert(t, b.startSeatd(t, "cert-"+randomHex(3)))
	})
}

// restJWKS is the tenant's JWKS as a vendor fetches it at build time.
func restJWKS(t *testing.T, p *proc, tenant string) []byte {
	t.Helper()
	resp, err := http.Get(p.url("/v1/tenants/" + tenant + "/jwks.json"))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET jwks.json: %s", body)
	return body
}

func dialVerifying(t *testing.T, p *proc, jwks []byte) *client.Client {
	t.Helper()
	keys, err := client.ParseSigningKeys(jwks)
	require.NoError(t, err)
	o := client.DefaultOptions()
	o.SigningKeys = keys
	c, err := client.DialWithOptions(p.GRPCAddr, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func activeLeases(t *testing.T, p *proc, licenseID string) []*seatdv1.Lease {
	t.Helper()
	ctx := testContext(t)
	r, err := p.admin().ListLeases(p.asOperator(ctx), &seatdv1.ListLeasesRequest{LicenseId: licenseID, State: seatdv1.LeaseState_LEASE_STATE_ACTIVE})
	require.NoError(t, err)
	return r.GetLeases()
}

func testClientCert(t *testing.T, p *proc) {
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	newLicense := func(l *seatdv1.License) *seatdv1.License {
		r, err := admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{License: l})
		require.NoError(t, err)
		return r.GetLicense()
	}

	jwks := restJWKS(t, p, "default")
	c := dialVerifying(t, p, jwks)
	fetched, err := c.FetchSigningKeys(ctx, "")
	require.NoError(t, err)
	a, err := client.ParseSigningKeys(fetched)
	require.NoError(t, err)
	b, err := client.ParseSigningKeys(jwks)
	require.NoError(t, err)
	require.ElementsMatch(t, b.KeyIDs(), a.KeyIDs(), "GetSigningKeys and jwks.json publish the same keys")

	// ---- a kept lease: every stream answer verified ----
	lic := newLicense(&seatdv1.License{Seats: 2, LeaseTtl: durationpb.New(6 * time.Second)})
	lease, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-1"})
	require.NoError(t, err)
	claims, err := client.VerifyOffline(lease.Certificate(), jwks, time.Now())
	require.NoError(t, err)
	require.Equal(t, lic.GetId(), claims.LicenseID)
	require.Equal(t, lease.ID(), claims.LeaseID)
	require.Equal(t, "laptop-1", claims.Fingerprint)
	require.Equal(t, "default", claims.TenantID)
	require.False(t, claims.Borrowed)
	first := lease.Certificate()
	for range 2 {
		before := lease.ExpiresAt()
		eventually(t, eventTimeout, "a verified heartbeat", func() bool { return lease.ExpiresAt().After(before) })
	}
	require.NotEqual(t, first, lease.Certificate(), "each heartbeat brings a new certificate")
	select {
	case <-lease.Lost():
		t.Fatalf("lease lost: %v", lease.Err())
	default:
	}

	// ---- a wait grant, verified ----
	other, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-2"})
	require.NoError(t, err)
	var (
		wg      sync.WaitGroup
		waited  *client.Lease
		waitErr error
		queued  = make(chan struct{}, 1)
	)
	wg.Go(func() {
		waited, waitErr = c.WaitForSeat(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-3"}, func(int, int) {
			select {
			case queued <- struct{}{}:
			default:
			}
		})
	})
	<-queued
	require.NoError(t, other.Release(ctx))
	wg.Wait()
	require.NoError(t, waitErr)
	_, err = client.VerifyOffline(waited.Certificate(), jwks, time.Now())
	require.NoError(t, err)
	require.NoError(t, waited.Release(ctx))

	// ---- another tenant's JWKS: seatd's answers are not trusted ----
	tenantID := "cert-" + randomHex(3)
	_, err = admin.CreateTenant(op, &seatdv1.CreateTenantRequest{Tenant: &seatdv1.Tenant{Id: tenantID, Name: "other"}})
	require.NoError(t, err)
	wrong := dialVerifying(t, p, restJWKS(t, p, tenantID))
	_, err = wrong.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-4"})
	require.ErrorIs(t, err, client.ErrBadCertificate)
	require.Equal(t, client.ReasonBadCertificate, client.Reason(err))
	require.Len(t, activeLeases(t, p, lic.GetId()), 1, "the refused seat was given back; laptop-1 keeps its own")

	// ---- borrowing ----
	blic := newLicense(&seatdv1.License{Seats: 2, LeaseTtl: durationpb.New(time.Minute),
		MaxBorrowDuration: durationpb.New(time.Hour), MaxBorrowedSeats: 1})
	borrowed, err := c.Borrow(ctx, client.AcquireOptions{LicenseKey: blic.GetKey(), Fingerprint: "travel-laptop", User: "ann"}, 30*time.Minute)
	require.NoError(t, err)
	require.True(t, borrowed.Borrowed())
	require.WithinDuration(t, time.Now().Add(30*time.Minute), borrowed.ExpiresAt(), time.Minute)
	stored, token := borrowed.Certificate(), borrowed.Token()
	// On the laptop, offline, at start-up: the stored certificate and the embedded JWKS.
	claims, err = client.VerifyOffline(stored, jwks, time.Now().Add(29*time.Minute))
	require.NoError(t, err)
	require.True(t, claims.Borrowed)
	require.Equal(t, "travel-laptop", claims.Fingerprint)
	require.Equal(t, blic.GetId(), claims.LicenseID)
	require.Equal(t, borrowed.ExpiresAt().Unix(), claims.Expiry.Unix(), "exp is the deadline, whole seconds")
	_, err = client.VerifyOffline(stored, jwks, borrowed.ExpiresAt().Add(time.Second))
	require.ErrorIs(t, err, client.ErrCertificateExpired)

	_, err = c.Borrow(ctx, client.AcquireOptions{LicenseKey: blic.GetKey(), Fingerprint: "second-laptop"}, time.Minute)
	require.Equal(t, "BORROW_LIMIT_REACHED", client.Reason(err), "max_borrowed_seats is 1: %v", err)
	_, err = c.Borrow(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "x"}, time.Minute)
	require.Equal(t, "BORROW_NOT_ALLOWED", client.Reason(err), "%v", err)
	_, err = c.Borrow(ctx, client.AcquireOptions{LicenseKey: blic.GetKey(), Fingerprint: "x"}, 2*time.Hour)
	require.Equal(t, codes.InvalidArgument.String(), statusCode(err), "past max_borrow_duration: %v", err)

	// Revoking cannot reach an offline laptop: refused, the seat stays taken.
	_, err = admin.RevokeLease(op, &seatdv1.RevokeLeaseRequest{LeaseId: borrowed.ID(), Reason: "test"})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_BORROWED")
	listed := activeLeases(t, p, blic.GetId())
	require.Len(t, listed, 1)
	require.True(t, listed[0].GetBorrowed())
	require.Equal(t, "LEASE_BORROWED", client.Reason(borrowed.Heartbeat(ctx)), "a borrowed lease takes no heartbeats")

	// No early return: the stored certificate stays valid offline until
	// its deadline, so the seat stays taken until then, by id and token
	// after a restart or with the Lease in hand.
	c2 := dialVerifying(t, p, jwks)
	err = c2.ReleaseSeat(ctx, borrowed.ID(), token)
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_BORROWED")
	require.Error(t, borrowed.Release(ctx))
	require.Len(t, activeLeases(t, p, blic.GetId()), 1, "the borrowed lease keeps its seat")

	// ---- rotation ----
	// A product that embedded the JWKS before the rotation has the next
	// key in it: the certificates the promoted key signs verify, its kept
	// lease carries on. A JWKS fetched after the rotation holds the new
	// next key, the one that signs and the retired one.
	storedBefore := lease.Certificate()
	rot, err := admin.RotateSigningKey(op, &seatdv1.RotateSigningKeyRequest{})
	require.NoError(t, err)
	newKid := rot.GetSigningKey().GetKid()
	require.Contains(t, b.KeyIDs(), newKid, "the key that signs now was published before the rotation")
	eventually(t, eventTimeout, "a heartbeat's certificate signed by the promoted key", func() bool {
		claims, err := client.VerifyOffline(lease.Certificate(), jwks, time.Now())
		require.NoError(t, err)
		return claims.KeyID == newKid
	})
	select {
	case <-lease.Lost():
		t.Fatalf("a lease verified with the JWKS from before the rotation was lost: %v", lease.Err())
	default:
	}
	after := restJWKS(t, p, "default")
	ak, err := client.ParseSigningKeys(after)
	require.NoError(t, err)
	require.Len(t, ak.KeyIDs(), 3, "a new next key, the key that signs, the retired one")
	require.Subset(t, ak.KeyIDs(), b.KeyIDs(), "the retired key stays published")
	_, err = client.VerifyOffline(storedBefore, after, time.Now())
	require.NoError(t, err, "the new JWKS verifies certificates of the retired key")

	// A second rotation makes the key sign that the first one made: the
	// JWKS from before the first rotation lacks it, and its lease is lost;
	// the one fetched between the rotations verifies.
	rot, err = admin.RotateSigningKey(op, &seatdv1.RotateSigningKeyRequest{})
	require.NoError(t, err)
	secondKid := rot.GetSigningKey().GetKid()
	require.NotContains(t, b.KeyIDs(), secondKid)
	require.Contains(t, ak.KeyIDs(), secondKid)
	select {
	case <-lease.Lost():
	case <-time.After(eventTimeout):
		t.Fatal("a lease verified with the JWKS from before the previous rotation was not lost")
	}
	require.ErrorIs(t, lease.Err(), client.ErrBadCertificate)

	renewed := dialVerifying(t, p, after)
	eventually(t, eventTimeout, "a certificate signed by the key of the second rotation", func() bool {
		l2, err := renewed.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-5"})
		require.NoError(t, err, "the JWKS fetched between the rotations verifies")
		claims, err := client.VerifyOffline(l2.Certificate(), after, time.Now())
		require.NoError(t, err)
		require.NoError(t, l2.Release(ctx))
		return claims.KeyID == secondKid
	})
}

func statusCode(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status.Code().String()
	}
	return ""
}
