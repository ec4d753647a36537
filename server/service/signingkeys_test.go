package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/signing"
)

func TestCertificatesFollowRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 3)
	g1, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "a", Nonce: "nonce-1"})
	require.NoError(t, err)
	keys, err := e.svc.GetSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	require.Len(t, keys, 2, "the key that signs and the next key")
	require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning}, states(keys))
	c, err := signing.Verify(g1.Certificate, keys)
	require.NoError(t, err)
	require.Equal(t, signing.Claims{
		Issuer: "seatd", Subject: g1.Lease.ID, LeaseID: g1.Lease.ID, TenantID: server.DefaultTenantID,
		LicenseID: lic.ID, Fingerprint: "a", BoundTo: signing.BoundFingerprint, LicenseKeySHA256: signing.LicenseKeyHash(lic.Key),
		IssuedAt: e.clock.Now().Unix(), Expiry: g1.Lease.ExpiresAt.Unix(), Nonce: "nonce-1",
	}, c)

	k2, err := e.svc.RotateSigningKey(ctx, "operator", server.DefaultTenantID)
	require.NoError(t, err)
	require.Equal(t, keys[0].ID, k2.ID, "the next key, published before, signs now")
	e.auditOf(t, server.DefaultTenantID, "signingkey.rotate", k2.ID)

	g2, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "b", Nonce: "nonce-2"})
	require.NoError(t, err)
	published, err := e.svc.GetSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	require.Len(t, published, 3)
	require.Equal(t, []string{k2.ID, keys[1].ID}, kids(published[1:]), "a new next key, the key that signs and the old one, still published")
	require.Equal(t, []server.SigningKeyState{server.KeyNext, server.KeySigning, server.KeyRetired}, states(published))
	c2, err := signing.Verify(g2.Certificate, published)
	require.NoError(t, err)
	require.Equal(t, "nonce-2", c2.Nonce)
	_, err = signing.Verify(g2.Certificate, keys)
	require.NoError(t, err, "the keys published before the rotation verify the certificates signed after it")
	_, err = signing.Verify(g1.Certificate, published)
	require.NoError(t, err, "the old certificate verifies with the published keys")

	// A heartbeat's certificate, with its own nonce, until the new deadline.
	e.clock.Advance(10 * time.Second)
	l, err := e.svc.Heartbeat(ctx, g1.Lease.ID, g1.Token)
	require.NoError(t, err)
	cert, err := e.svc.Certificate(ctx, l, "beat-1")
	require.NoError(t, err)
	c3, err := signing.Verify(cert, published)
	require.NoError(t, err)
	require.Equal(t, l.ExpiresAt.Unix(), c3.Expiry)
	require.Equal(t, "beat-1", c3.Nonce)
	require.Equal(t, c.LicenseKeySHA256, c3.LicenseKeySHA256, "a heartbeat's certificate names the license key too")
	require.Equal(t, "a", c3.Fingerprint)
	require.Equal(t, signing.BoundFingerprint, c3.BoundTo)

	listed, err := e.svc.ListSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	require.Equal(t, kids(published), kids(listed))
	require.Equal(t, listed[0].CreatedAt, listed[2].RetiredAt, "retired when the new next key was made")
	require.Equal(t, listed[2].RetiredAt.Add(server.CertificateLifetime+signing.PublishSlack), PublishUntil(listed[2]))
	require.True(t, PublishUntil(listed[0]).IsZero())
	require.True(t, PublishUntil(listed[1]).IsZero())
}

// TestCertificateNamesWhomTheLeaseIsFor: a lease shared per user or per
// hostname is bound to that user or hostname (its fingerprint is the first
// acquirer's), and every certificate, a heartbeat's too, names the
// license key's hash.
func TestCertificateNamesWhomTheLeaseIsFor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	for _, tc := range []struct {
		strategy server.LeasingStrategy
		bound    string
	}{
		{server.PerFingerprint, signing.BoundFingerprint},
		{server.PerUser, signing.BoundUser},
		{server.PerHostname, signing.BoundHostname},
		{server.PerAcquisition, signing.BoundFingerprint},
	} {
		ttl := time.Minute
		lic, err := e.svc.CreateLicense(ctx, "operator", server.DefaultTenantID,
			LicenseInput{Name: "test", Seats: 3, LeaseTTL: &ttl, LeasingStrategy: tc.strategy})
		require.NoError(t, err)
		g, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "fp-1", User: "ann", Hostname: "box", Nonce: "n1"})
		require.NoError(t, err)
		keys, err := e.svc.GetSigningKeys(ctx, server.DefaultTenantID)
		require.NoError(t, err)
		c, err := signing.Verify(g.Certificate, keys)
		require.NoError(t, err)
		require.Equal(t, tc.bound, c.BoundTo, "%s", tc.strategy)
		require.Equal(t, []string{"fp-1", "ann", "box"}, []string{c.Fingerprint, c.User, c.Hostname})
		require.Equal(t, signing.LicenseKeyHash(lic.Key), c.LicenseKeySHA256)

		l, err := e.svc.Heartbeat(ctx, g.Lease.ID, g.Token)
		require.NoError(t, err)
		cert, err := e.svc.Certificate(ctx, l, "n2")
		require.NoError(t, err)
		c2, err := signing.Verify(cert, keys)
		require.NoError(t, err)
		require.Equal(t, []string{tc.bound, c.LicenseKeySHA256}, []string{c2.BoundTo, c2.LicenseKeySHA256})
	}
}

// TestRotationsAreBounded: a rotation adds a published key (the retired
// one stays in the JWKS for the certificate lifetime), so the tenant's
// signing keys quota bounds them: past it RotateSigningKey is refused with
// QUOTA_EXCEEDED naming the quota, and the keys do not change. Another
// tenant has its own count.
func TestRotationsAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Quotas = Quotas{SigningKeys: 4} })
	ctx := t.Context()
	for range 2 { // 2 keys at first: 3, then 4
		_, err := e.svc.RotateSigningKey(ctx, "operator", server.DefaultTenantID)
		require.NoError(t, err)
	}
	before, err := e.svc.ListSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	require.Len(t, before, 4)
	_, err = e.svc.RotateSigningKey(ctx, "operator", server.DefaultTenantID)
	require.Equal(t, server.ReasonQuotaExceeded, server.ErrorReason(err), "%v", err)
	var se *server.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, server.EEXHAUSTED, se.Code)
	require.Equal(t, map[string]string{"quota": "signing_keys", "limit": "4"}, se.Metadata)
	after, err := e.svc.ListSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	require.Equal(t, kids(before), kids(after), "a refused rotation changes nothing")

	_, err = e.svc.CreateTenant(ctx, "operator", server.Tenant{ID: "acme"})
	require.NoError(t, err)
	_, err = e.svc.RotateSigningKey(ctx, "operator", "acme")
	require.NoError(t, err, "each tenant has its own quota")
}

func TestSigningKeysOfTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	_, err := e.svc.GetSigningKeys(ctx, "nobody")
	require.Equal(t, server.ReasonTenantNotFound, server.ErrorReason(err))
	_, err = e.svc.RotateSigningKey(ctx, "operator", "nobody")
	require.Equal(t, server.ReasonTenantNotFound, server.ErrorReason(err))
	_, err = e.svc.ListSigningKeys(ctx, "nobody")
	require.Equal(t, server.ReasonTenantNotFound, server.ErrorReason(err))

	tn, err := e.svc.CreateTenant(ctx, "operator", server.Tenant{ID: "acme"})
	require.NoError(t, err)
	stored, err := e.store.SigningKeys(ctx, tn.ID)
	require.NoError(t, err)
	require.Len(t, stored, 2, "a new tenant gets its key and its next key")
	def, err := e.svc.GetSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	acme, err := e.svc.GetSigningKeys(ctx, tn.ID)
	require.NoError(t, err)
	require.Equal(t, kids(stored), kids(acme))
	require.NotEqual(t, kids(def), kids(acme), "each tenant signs with its own key")
}

func TestNonceIsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 1)
	for _, bad := range []string{strings.Repeat("n", MaxNonceLength+1), "tab\there", "é", "del\x7f"} {
		_, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "a", Nonce: bad})
		requireInvalid(t, err, "nonce")
	}
	n, err := e.store.SeatsInUse(ctx, server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Zero(t, n, "a refused nonce takes no seat")

	ok := strings.Repeat("~", MaxNonceLength)
	g, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "a", Nonce: ok})
	require.NoError(t, err)
	_, err = e.svc.Certificate(ctx, g.Lease, "a\nb")
	requireInvalid(t, err, "nonce")
	require.NoError(t, CheckNonce(""))
	require.NoError(t, CheckNonce(" !AZaz09-_~"))
}

// borrowedLeases shows every lease as borrowed: the revocation rule is the
// service's, whatever the store does with borrowing.
type borrowedLeases struct{ server.Store }

func (b borrowedLeases) GetLease(ctx context.Context, tenantID, id string) (server.Lease, error) {
	l, err := b.Store.GetLease(ctx, tenantID, id)
	l.Borrowed = err == nil
	return l, err
}

func TestBorrowedLeaseIsNotRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Store = borrowedLeases{c.Store} })
	ctx := t.Context()
	g := e.acquire(t, e.license(t, 1).Key, "laptop")
	_, err := e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, g.Lease.ID, "stolen")
	require.Equal(t, server.ReasonLeaseBorrowed, server.ErrorReason(err))
	require.Equal(t, server.EPRECONDITION, server.ErrorCode(err))
	var se *server.Error
	require.True(t, errors.As(err, &se))
	require.Equal(t, g.Lease.ExpiresAt.UTC().Format(time.RFC3339), se.Metadata["expires_at"])

	l, err := e.store.GetLease(ctx, server.DefaultTenantID, g.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, l.State, "the refusal changes nothing")
	for _, entry := range e.audit(t, server.DefaultTenantID) {
		require.NotEqual(t, "lease.revoke", entry.Action)
	}

	// Past its deadline it no longer holds a seat: the store judges the
	// revocation as for any lease.
	e.clock.Advance(time.Minute)
	_, err = e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, g.Lease.ID, "late")
	require.NotEqual(t, server.ReasonLeaseBorrowed, server.ErrorReason(err))
	_, err = e.svc.RevokeLease(ctx, "operator", server.DefaultTenantID, "lse_000000000000000000000000", "none")
	require.Equal(t, server.ReasonLeaseNotFound, server.ErrorReason(err))
}

func TestLicenseBorrowingFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	create := func(in LicenseInput) (server.License, error) {
		return e.svc.CreateLicense(ctx, "operator", server.DefaultTenantID, in)
	}
	l, err := create(LicenseInput{Seats: 3, MaxBorrowDuration: 72 * time.Hour, MaxBorrowedSeats: 2})
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, l.MaxBorrowDuration)
	require.Equal(t, 2, l.MaxBorrowedSeats)
	_, err = create(LicenseInput{Seats: 3, MaxBorrowDuration: server.MaxBorrowDuration + time.Second})
	requireInvalid(t, err, "license.max_borrow_duration")
	_, err = create(LicenseInput{Seats: 3, MaxBorrowDuration: -time.Second})
	requireInvalid(t, err, "license.max_borrow_duration")
	_, err = create(LicenseInput{Seats: 3, MaxBorrowedSeats: 4})
	requireInvalid(t, err, "license.max_borrowed_seats")
	_, err = create(LicenseInput{Seats: 3, MaxBorrowedSeats: -1})
	requireInvalid(t, err, "license.max_borrowed_seats")

	update := func(in LicenseInput, paths ...string) (server.License, error) {
		in.ID = l.ID
		v, err := e.svc.UpdateLicense(ctx, "operator", server.DefaultTenantID, in, paths)
		return v.License, err
	}
	_, err = update(LicenseInput{Seats: 1}, "seats")
	requireInvalid(t, err, "license.max_borrowed_seats")
	got, err := update(LicenseInput{MaxBorrowedSeats: 3}, "max_borrowed_seats")
	require.NoError(t, err)
	require.Equal(t, 3, got.MaxBorrowedSeats)
	got, err = update(LicenseInput{}, "max_borrow_duration")
	require.NoError(t, err)
	require.Zero(t, got.MaxBorrowDuration, "0 turns borrowing off")
	require.Equal(t, 3, got.MaxBorrowedSeats)
}

func states(keys []server.SigningKey) []server.SigningKeyState {
	var out []server.SigningKeyState
	for _, k := range keys {
		out = append(out, k.State())
	}
	return out
}

func kids(keys []server.SigningKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}
