package grpcapi

import (
	"encoding/base64"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
	"github.com/seatd/seatd/server/signing"
)

// jwks fetches a tenant's JWKS without credentials and returns its keys
// in the form signing.Verify takes.
func (e *env) jwks(t *testing.T, tenant string) []server.SigningKey {
	t.Helper()
	resp, err := e.seats.GetSigningKeys(t.Context(), &seatdv1.GetSigningKeysRequest{TenantId: tenant})
	require.NoError(t, err)
	var keys []server.SigningKey
	for _, k := range resp.GetKeys() {
		require.Equal(t, "OKP", k.GetKty())
		require.Equal(t, "Ed25519", k.GetCrv())
		require.Equal(t, "sig", k.GetUse())
		require.Equal(t, "EdDSA", k.GetAlg())
		pub, err := base64.RawURLEncoding.DecodeString(k.GetX())
		require.NoError(t, err)
		require.Len(t, pub, 32)
		keys = append(keys, server.SigningKey{ID: k.GetKid(), PublicKey: pub})
	}
	return keys
}

func verified(t *testing.T, cert string, keys []server.SigningKey) signing.Claims {
	t.Helper()
	require.NotEmpty(t, cert, "the answer carries a certificate")
	c, err := signing.Verify(cert, keys)
	require.NoError(t, err)
	return c
}

func TestGetSigningKeysNeedsNoCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	def := e.jwks(t, "")
	require.Len(t, def, 2, "empty: the default tenant; its key that signs and its next key")
	require.Equal(t, def, e.jwks(t, server.DefaultTenantID))

	_, err := e.seats.GetSigningKeys(t.Context(), &seatdv1.GetSigningKeysRequest{TenantId: "nobody"})
	requireStatus(t, err, codes.NotFound, server.ReasonTenantNotFound)
	_, err = e.seats.GetSigningKeys(t.Context(), &seatdv1.GetSigningKeysRequest{TenantId: "Not A Tenant"})
	requireInvalid(t, err, "tenant_id")
}

// TestEveryAnswerToANonceCarriesACertificate: every answer to a request
// with a nonce carries a certificate repeating it; a request without one
// gets none (a client that verifies always sends one), except a borrow.
func TestEveryAnswerToANonceCarriesACertificate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	lic := e.license(t, 1, time.Minute)
	keys := e.jwks(t, "")

	acq, err := e.seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Nonce: "acquire-nonce"})
	require.NoError(t, err)
	c := verified(t, acq.GetLeaseCertificate(), keys)
	require.Equal(t, signing.Claims{
		Issuer: "seatd", Subject: acq.GetLease().GetId(), LeaseID: acq.GetLease().GetId(), TenantID: server.DefaultTenantID,
		LicenseID: lic.GetId(), Fingerprint: "fp", BoundTo: signing.BoundFingerprint, LicenseKeySHA256: signing.LicenseKeyHash(lic.GetKey()),
		IssuedAt: c.IssuedAt, Expiry: acq.GetLease().GetExpiresAt().AsTime().Unix(), Nonce: "acquire-nonce",
	}, c)
	require.False(t, acq.GetLease().GetBorrowed())

	beat, err := e.beats.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: acq.GetLease().GetId(), LeaseToken: acq.GetLeaseToken(), Nonce: "beat-nonce"})
	require.NoError(t, err)
	c = verified(t, beat.GetLeaseCertificate(), keys)
	require.Equal(t, "beat-nonce", c.Nonce)
	require.Equal(t, beat.GetExpiresAt().AsTime().Unix(), c.Expiry)
	require.Equal(t, signing.LicenseKeyHash(lic.GetKey()), c.LicenseKeySHA256)

	stream, err := e.beats.HeartbeatStream(ctx)
	require.NoError(t, err)
	for i, nonce := range []string{"ping-1", "", "ping-3"} {
		req := &seatdv1.HeartbeatStreamRequest{Nonce: nonce}
		if i == 0 {
			req.LeaseId, req.LeaseToken = acq.GetLease().GetId(), acq.GetLeaseToken()
		}
		require.NoError(t, stream.Send(req))
		resp, err := stream.Recv()
		require.NoError(t, err)
		if nonce == "" {
			require.Empty(t, resp.GetLeaseCertificate(), "no nonce, no certificate")
			continue
		}
		c = verified(t, resp.GetLeaseCertificate(), keys)
		require.Equal(t, nonce, c.Nonce, "ping %d", i)
		require.Equal(t, resp.GetExpiresAt().AsTime().Unix(), c.Expiry)
	}
	require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{Nonce: "bad\x01"}))
	_, err = stream.Recv()
	requireInvalid(t, err, "nonce")

	// A waiter's grant.
	_, err = e.seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: acq.GetLease().GetId(), LeaseToken: acq.GetLeaseToken()})
	require.NoError(t, err)
	wait, err := e.seats.WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "waiter", Nonce: "wait-nonce"})
	require.NoError(t, err)
	for {
		msg, err := wait.Recv()
		require.NoError(t, err)
		if g := msg.GetGranted(); g != nil {
			c = verified(t, g.GetLeaseCertificate(), keys)
			require.Equal(t, "wait-nonce", c.Nonce)
			require.Equal(t, "waiter", c.Fingerprint)
			break
		}
	}
	_, err = wait.Recv()
	require.ErrorIs(t, err, io.EOF)

	other := e.license(t, 2, time.Minute)
	plain, err := e.seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: other.GetKey(), Fingerprint: "fp"})
	require.NoError(t, err)
	require.Empty(t, plain.GetLeaseCertificate(), "no nonce, no certificate")
	beat, err = e.beats.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: plain.GetLease().GetId(), LeaseToken: plain.GetLeaseToken()})
	require.NoError(t, err)
	require.Empty(t, beat.GetLeaseCertificate(), "no nonce, no certificate")
}

func TestNonceAndBorrowDurationAreChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	lic := e.license(t, 1, time.Minute)
	long := strings.Repeat("n", service.MaxNonceLength+1)
	_, err := e.seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Nonce: long})
	requireInvalid(t, err, "nonce")
	_, err = e.seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Nonce: "é"})
	requireInvalid(t, err, "nonce")
	stream, err := e.seats.WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", Nonce: long})
	require.NoError(t, err)
	_, err = stream.Recv()
	requireInvalid(t, err, "nonce")
	for _, d := range []*durationpb.Duration{
		durationpb.New(0), durationpb.New(-time.Second), durationpb.New(500 * time.Nanosecond), durationpb.New(999 * time.Millisecond), durationpb.New(server.MaxBorrowDuration + time.Second),
		{Seconds: 1, Nanos: -1},
	} {
		_, err = e.seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp", BorrowDuration: d})
		requireInvalid(t, err, "borrow_duration", "%v", d)
	}

	acq := e.acquire(t, lic.GetKey(), "fp")
	_, err = e.beats.Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: acq.GetLease().GetId(), LeaseToken: acq.GetLeaseToken(), Nonce: long})
	requireInvalid(t, err, "nonce")
}

func TestSigningKeyAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	acme := e.apiKey(t, "acme")

	own, err := e.admin.ListSigningKeys(as(t, acme), &seatdv1.ListSigningKeysRequest{})
	require.NoError(t, err)
	require.Len(t, own.GetSigningKeys(), 2, "a new tenant has its key and its next key")
	next, first := own.GetSigningKeys()[0], own.GetSigningKeys()[1]
	require.Equal(t, seatdv1.SigningKeyState_SIGNING_KEY_STATE_NEXT, next.GetState())
	require.Equal(t, seatdv1.SigningKeyState_SIGNING_KEY_STATE_SIGNING, first.GetState())
	for _, k := range own.GetSigningKeys() {
		require.Equal(t, "acme", k.GetTenantId())
		require.Nil(t, k.GetRetireTime())
		require.Nil(t, k.GetPublishUntil())
		require.Equal(t, k.GetKid(), k.GetPublicKey().GetKid())
	}
	embedded := e.jwks(t, "acme")
	require.Equal(t, []string{next.GetKid(), first.GetKid()}, kidsOf(embedded), "the next key is published")

	_, err = e.admin.ListSigningKeys(as(t, acme), &seatdv1.ListSigningKeysRequest{TenantId: server.DefaultTenantID})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.RotateSigningKey(as(t, acme), &seatdv1.RotateSigningKeyRequest{TenantId: server.DefaultTenantID})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonPermissionDenied)
	_, err = e.admin.RotateSigningKey(ctx, &seatdv1.RotateSigningKeyRequest{})
	requireStatus(t, err, codes.Unauthenticated, server.ReasonUnauthenticated)

	rotated, err := e.admin.RotateSigningKey(as(t, acme), &seatdv1.RotateSigningKeyRequest{})
	require.NoError(t, err)
	require.Equal(t, next.GetKid(), rotated.GetSigningKey().GetKid(), "the next key signs now")
	require.Equal(t, seatdv1.SigningKeyState_SIGNING_KEY_STATE_SIGNING, rotated.GetSigningKey().GetState())
	listed, err := e.admin.ListSigningKeys(operator(t), &seatdv1.ListSigningKeysRequest{TenantId: "acme"})
	require.NoError(t, err)
	require.Len(t, listed.GetSigningKeys(), 3)
	newNext, old := listed.GetSigningKeys()[0], listed.GetSigningKeys()[2]
	require.Equal(t, seatdv1.SigningKeyState_SIGNING_KEY_STATE_NEXT, newNext.GetState())
	require.Equal(t, rotated.GetSigningKey().GetKid(), listed.GetSigningKeys()[1].GetKid())
	require.Equal(t, first.GetKid(), old.GetKid())
	require.Equal(t, seatdv1.SigningKeyState_SIGNING_KEY_STATE_RETIRED, old.GetState())
	require.Equal(t, newNext.GetCreateTime().AsTime(), old.GetRetireTime().AsTime())
	require.Equal(t, old.GetRetireTime().AsTime().Add(server.CertificateLifetime+signing.PublishSlack), old.GetPublishUntil().AsTime())
	require.Equal(t, []string{newNext.GetKid(), rotated.GetSigningKey().GetKid(), first.GetKid()}, kidsOf(e.jwks(t, "acme")))

	_, err = e.admin.RotateSigningKey(operator(t), &seatdv1.RotateSigningKeyRequest{})
	require.NoError(t, err, "the operator rotates any tenant's key (empty: default)")
	audit, err := e.admin.ListAuditEvents(operator(t), &seatdv1.ListAuditEventsRequest{TenantId: "acme"})
	require.NoError(t, err)
	found := false
	for _, a := range audit.GetAuditEvents() {
		found = found || (a.GetAction() == "signingkey.rotate" && a.GetResourceId() == rotated.GetSigningKey().GetKid())
	}
	require.True(t, found, "the rotation is audited")
}

func TestLicenseBorrowingFieldsConvert(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	created, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 4, MaxBorrowDuration: durationpb.New(48 * time.Hour), MaxBorrowedSeats: 2,
	}})
	require.NoError(t, err)
	require.Equal(t, 48*time.Hour, created.GetLicense().GetMaxBorrowDuration().AsDuration())
	require.EqualValues(t, 2, created.GetLicense().GetMaxBorrowedSeats())
	got, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: created.GetLicense().GetId()})
	require.NoError(t, err)
	require.Equal(t, 48*time.Hour, got.GetLicense().GetMaxBorrowDuration().AsDuration())
	require.EqualValues(t, 2, got.GetLicense().GetMaxBorrowedSeats())

	updated, err := e.admin.UpdateLicense(operator(t), &seatdv1.UpdateLicenseRequest{
		License:    &seatdv1.License{Id: created.GetLicense().GetId(), MaxBorrowedSeats: 4, MaxBorrowDuration: durationpb.New(time.Hour)},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_borrowed_seats", "max_borrow_duration"}},
	})
	require.NoError(t, err)
	require.EqualValues(t, 4, updated.GetLicense().GetMaxBorrowedSeats())
	require.Equal(t, time.Hour, updated.GetLicense().GetMaxBorrowDuration().AsDuration())

	for _, tc := range []struct {
		l     *seatdv1.License
		field string
	}{
		{&seatdv1.License{Seats: 1, MaxBorrowDuration: durationpb.New(server.MaxBorrowDuration + time.Second)}, "license.max_borrow_duration"},
		{&seatdv1.License{Seats: 1, MaxBorrowDuration: &durationpb.Duration{Seconds: -1, Nanos: 1}}, "license.max_borrow_duration"},
		{&seatdv1.License{Seats: 1, MaxBorrowedSeats: 2}, "license.max_borrowed_seats"},
		{&seatdv1.License{Seats: 1, MaxBorrowedSeats: -1}, "license.max_borrowed_seats"},
	} {
		_, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: tc.l})
		requireInvalid(t, err, tc.field)
	}
	off := e.license(t, 1, time.Minute)
	require.Nil(t, off.GetMaxBorrowDuration(), "0 (no borrowing) is left unset")
	require.Zero(t, off.GetMaxBorrowedSeats())
}

func TestLeaseBorrowedConverts(t *testing.T) {
	t.Parallel()
	now := time.Now()
	l := server.Lease{ID: "lse_1", State: server.LeaseActive, ExpiresAt: now.Add(time.Hour), Borrowed: true}
	require.True(t, leaseToProto(l, now).GetBorrowed())
	l.Borrowed = false
	require.False(t, leaseToProto(l, now).GetBorrowed())
}

func kidsOf(keys []server.SigningKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}

// TestABorrowAlwaysCarriesACertificate: the certificate is what a borrowing
// product keeps, so a borrow gets one with or without a nonce.
func TestABorrowAlwaysCarriesACertificate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	created, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 2, MaxBorrowDuration: durationpb.New(48 * time.Hour),
	}})
	require.NoError(t, err)
	b, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: created.GetLicense().GetKey(),
		Fingerprint: "laptop", BorrowDuration: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	c := verified(t, b.GetLeaseCertificate(), e.jwks(t, ""))
	require.True(t, c.Borrowed)
	require.Empty(t, c.Nonce)
	require.Equal(t, b.GetLease().GetExpiresAt().AsTime().Unix(), c.Expiry)
}
