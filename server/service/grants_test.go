package service

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/signing"
)

// grant adds a grant of feature up to version to lic.
func (e *env) grant(t testing.TB, lic server.License, in GrantInput) server.Grant {
	t.Helper()
	g, err := e.svc.CreateGrant(t.Context(), "operator", server.DefaultTenantID, lic.ID, in)
	require.NoError(t, err)
	return g.Grant
}

// TestCertificateOfAGrantsLeaseNamesTheGrant: the certificate of a seat
// of a feature (the acquisition's and a heartbeat's) names the license,
// the feature and version asked, the grant and the grant's expiry; one of
// the base pool names none of them.
func TestCertificateOfAGrantsLeaseNamesTheGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 1)
	expires := e.clock.Now().Add(90 * 24 * time.Hour)
	g := e.grant(t, lic, GrantInput{Feature: "render", Version: "2025", Seats: 1, ExpiresAt: &expires})

	got, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "a", Nonce: "n1", Feature: "render", Version: "2024.3"})
	require.NoError(t, err)
	require.Equal(t, g.ID, got.Lease.GrantID())
	keys, err := e.svc.GetSigningKeys(ctx, server.DefaultTenantID)
	require.NoError(t, err)
	c, err := signing.Verify(got.Certificate, keys)
	require.NoError(t, err)
	require.Equal(t, lic.ID, c.LicenseID, "the license's id, not the grant's")
	require.Equal(t, "render", c.Feature)
	require.Equal(t, "2024.3", c.Version)
	require.Equal(t, g.ID, c.GrantID)
	require.Equal(t, expires.Unix(), c.GrantExpiresAt)

	// A heartbeat's certificate says the same, and follows a change of the
	// grant's expiry made here.
	later := expires.Add(24 * time.Hour)
	_, err = e.svc.UpdateGrant(ctx, "operator", server.DefaultTenantID, lic.ID, GrantInput{ID: g.ID, ExpiresAt: &later}, []string{"expires_at"})
	require.NoError(t, err)
	l, err := e.svc.Heartbeat(ctx, got.Lease.ID, got.Token)
	require.NoError(t, err)
	cert, err := e.svc.Certificate(ctx, l, "beat")
	require.NoError(t, err)
	c, err = signing.Verify(cert, keys)
	require.NoError(t, err)
	require.Equal(t, lic.ID, c.LicenseID)
	require.Equal(t, signing.LicenseKeyHash(lic.Key), c.LicenseKeySHA256)
	require.Equal(t, g.ID, c.GrantID)
	require.Equal(t, later.Unix(), c.GrantExpiresAt)

	base, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "a", Nonce: "n2"})
	require.NoError(t, err)
	c, err = signing.Verify(base.Certificate, keys)
	require.NoError(t, err)
	require.Empty(t, c.Feature+c.Version+c.GrantID)
	require.Zero(t, c.GrantExpiresAt)
}

// TestFeatureDenialsAreRecordedWithTheirFeature: a refusal for want of a
// seat of a feature counts in the usage report's row of that feature.
func TestFeatureDenialsAreRecordedWithTheirFeature(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 1)
	e.grant(t, lic, GrantInput{Feature: "render", Seats: 1})
	_, err := e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "a", Feature: "render"})
	require.NoError(t, err)
	_, err = e.svc.AcquireSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "b", Feature: "render"})
	require.Equal(t, server.ReasonSeatsExhausted, server.ErrorReason(err))

	q, err := e.svc.UsageQuery(server.DefaultTenantID, UsageWindow{LicenseID: lic.ID, Feature: "render"})
	require.NoError(t, err)
	r, err := e.svc.UsageReport(ctx, q)
	require.NoError(t, err)
	var denials int64
	for _, row := range r.Rows {
		require.Equal(t, "render", row.Feature)
		denials += row.Denials
	}
	require.EqualValues(t, 1, denials)
}

// TestFeatureWaitersQueueApartFromTheBasePool: a waiter for a feature is
// not in the license's base queue (nor behind it), and one for a feature
// the license does not hold is refused at once rather than queued.
func TestFeatureWaitersQueueApartFromTheBasePool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 1)
	e.grant(t, lic, GrantInput{Feature: "render", Version: "2025", Seats: 1})
	e.acquire(t, lic.Key, "base-holder")
	base := SeatRequest{LicenseKey: lic.Key, Fingerprint: "base-waiter"}
	waiting := make(chan Place, 1)
	done := make(chan error, 1)
	go func() {
		_, err := e.svc.WaitForSeat(ctx, base, "", func(p Place) error {
			waiting <- p
			return nil
		})
		done <- err
	}()
	require.Equal(t, 1, within(t, waiting, "the base waiter's place").Position)

	g, err := e.svc.WaitForSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "render-waiter", Feature: "render", Version: "2024"}, "", func(p Place) error {
		require.Equal(t, 1, p.Position, "first in the feature's own line")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "render", g.Lease.Feature)

	_, err = e.svc.WaitForSeat(ctx, SeatRequest{LicenseKey: lic.Key, Fingerprint: "x", Feature: "render", Version: "2026"}, "", func(Place) error {
		t.Error("queued for a version no grant covers")
		return nil
	})
	require.Equal(t, server.ReasonVersionNotLicensed, server.ErrorReason(err))
	v, err := e.svc.GetLicense(ctx, server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 1, v.Waiting, "the base waiter only")
	e.svc.BeginShutdown()
	require.ErrorIs(t, within(t, done, "the base wait's end"), ErrShuttingDown)
}

// TestGrantAuditEntries: each grant call is audited with the license and
// what changed.
func TestGrantAuditEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	lic := e.license(t, 1)
	g := e.grant(t, lic, GrantInput{Feature: "sim", Version: "3.1", Seats: 2})
	created := e.auditOf(t, server.DefaultTenantID, "feature_grant.create", g.ID)
	require.Equal(t, map[string]string{"license_id": lic.ID, "feature": "sim", "version": "3.1", "seats": "2"}, created.Details)

	_, err := e.svc.UpdateGrant(ctx, "apikey:k1", server.DefaultTenantID, lic.ID, GrantInput{ID: g.ID, Overdraft: 1}, []string{"overdraft"})
	require.NoError(t, err)
	updated := e.auditOf(t, server.DefaultTenantID, "feature_grant.update", g.ID)
	require.Equal(t, "apikey:k1", updated.Actor)
	require.Equal(t, map[string]string{"license_id": lic.ID, "feature": "sim", "field.overdraft": "changed"}, updated.Details)

	// A refused update is not audited and changes nothing.
	_, err = e.svc.UpdateGrant(ctx, "operator", server.DefaultTenantID, lic.ID, GrantInput{ID: g.ID, MaxBorrowedSeats: 5}, []string{"max_borrowed_seats"})
	var bad *server.Error
	require.ErrorAs(t, err, &bad)
	require.Equal(t, "grant.max_borrowed_seats", bad.Field)
	v, err := e.svc.GetLicense(ctx, server.DefaultTenantID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 0, v.Grants[0].MaxBorrowedSeats)

	n, err := e.svc.DeleteGrant(ctx, "operator", server.DefaultTenantID, lic.ID, g.ID)
	require.NoError(t, err)
	require.Zero(t, n)
	deleted := e.auditOf(t, server.DefaultTenantID, "feature_grant.delete", g.ID)
	require.Equal(t, map[string]string{"license_id": lic.ID, "revoked_leases": "0"}, deleted.Details)
	require.Len(t, e.audit(t, server.DefaultTenantID), 4, "license, grant create, update, delete")
}
