package e2e

// The Go client's seats of features against the real seatd (embedded): a
// request for a version takes the grant that expires first among those
// covering it, the lease and its verified certificates name the feature,
// version and grant, heartbeats keep it, a version no grant covers is
// refused VERSION_NOT_LICENSED, and the base seats stay apart.

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func TestClientFeatures(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	ctx := testContext(t)
	op := p.asOperator(ctx)
	admin := p.admin()
	r, err := admin.CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Seats: 1, LeaseTtl: durationpb.New(6 * time.Second)}})
	require.NoError(t, err)
	lic := r.GetLicense()
	grant := func(version string, expires time.Time) *seatdv1.FeatureGrant {
		g, err := admin.CreateFeatureGrant(op, &seatdv1.CreateFeatureGrantRequest{LicenseId: lic.GetId(), Grant: &seatdv1.FeatureGrant{
			Feature: "render", Version: version, Seats: 1, ExpiresAt: timestamppb.New(expires),
		}})
		require.NoError(t, err)
		return g.GetGrant()
	}
	soon := time.Now().Add(7 * 24 * time.Hour).Truncate(time.Second)
	old, renewal := grant("2024", soon), grant("2025", soon.Add(365*24*time.Hour))

	jwks := restJWKS(t, p, "default")
	c := dialVerifying(t, p, jwks)
	ask := func(fingerprint, version string) client.AcquireOptions {
		return client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: fingerprint, Feature: "render", Version: version}
	}
	l2024, err := c.Acquire(ctx, ask("laptop-1", "2024"))
	require.NoError(t, err)
	require.Equal(t, old.GetId(), l2024.GrantID(), "the grant that expires first")
	require.Equal(t, lic.GetId(), l2024.LicenseID())
	require.Equal(t, "render", l2024.Feature())
	require.Equal(t, "2024", l2024.Version())
	require.True(t, soon.Equal(l2024.GrantExpiresAt()))
	require.Equal(t, 1, l2024.SeatLimit(), "the grant's")
	claims, err := client.VerifyOffline(l2024.Certificate(), jwks, time.Now())
	require.NoError(t, err)
	require.Equal(t, lic.GetId(), claims.LicenseID)
	require.Equal(t, old.GetId(), claims.GrantID)
	require.Equal(t, "render", claims.Feature)
	require.Equal(t, "2024", claims.Version)
	require.True(t, soon.Equal(claims.GrantExpiresAt))
	require.NoError(t, claims.CheckHolder(ask("laptop-1", "2024")))
	require.ErrorIs(t, claims.CheckHolder(ask("laptop-1", "2025")), client.ErrBadCertificate, "another version's")
	require.ErrorIs(t, claims.CheckHolder(client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-1"}), client.ErrBadCertificate, "not a base seat's")

	// The 2024 grant is full: a 2024 request takes the 2025 grant, which
	// covers it; a 2025 request then finds none free; 2026 none licensed.
	l2025, err := c.Acquire(ctx, ask("laptop-2", "2024"))
	require.NoError(t, err)
	require.Equal(t, renewal.GetId(), l2025.GrantID())
	_, err = c.Acquire(ctx, ask("laptop-3", "2025"))
	require.True(t, errors.Is(err, client.ErrNoSeat), "%v", err)
	_, err = c.Acquire(ctx, ask("laptop-3", "2026"))
	require.Equal(t, "VERSION_NOT_LICENSED", client.Reason(err), "%v", err)
	_, err = c.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-3", Feature: "sim"})
	require.Equal(t, "FEATURE_NOT_LICENSED", client.Reason(err), "%v", err)

	// The base seat is apart from the features', and one machine holds both.
	base, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: "laptop-1"})
	require.NoError(t, err)
	require.Empty(t, base.GrantID())
	require.NotEqual(t, l2024.ID(), base.ID())

	// Verified heartbeats keep the seat of a feature.
	before := l2024.ExpiresAt()
	eventually(t, eventTimeout, "a verified heartbeat of a feature's seat", func() bool { return l2024.ExpiresAt().After(before) })

	// A waiter for the feature gets the seat its release frees.
	var (
		wg      sync.WaitGroup
		waited  *client.Lease
		waitErr error
		queued  = make(chan struct{}, 1)
	)
	wg.Go(func() {
		waited, waitErr = c.WaitForSeat(ctx, ask("laptop-3", "2025"), func(int, int) {
			select {
			case queued <- struct{}{}:
			default:
			}
		})
	})
	<-queued
	require.NoError(t, l2025.Release(ctx))
	wg.Wait()
	require.NoError(t, waitErr)
	require.Equal(t, renewal.GetId(), waited.GrantID())
	for _, l := range []*client.Lease{l2024, base, waited} {
		select {
		case <-l.Lost():
			t.Fatalf("lease %s lost: %v", l.ID(), l.Err())
		default:
		}
		require.NoError(t, l.Release(ctx))
	}
}
