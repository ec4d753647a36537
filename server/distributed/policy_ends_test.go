package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestGrantEndsLapsedLeasesAcrossGrants: a feature's grant ends the
// lapsed leases in its way wherever they are among the feature's grants
// (policy.lua policy_ends): under a cap, one of a grant that may not
// grant the request ends too; for a reservation, a shared one of the
// grants that may; the lapsed leases in no one's way stay and revive.
func TestGrantEndsLapsedLeasesAcrossGrants(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	ctx := t.Context()
	lic := mkLicense(t, s, tn.ID, 1, server.MinLeaseTTL)
	_, err := s.UpdateLicense(ctx, tn.ID, lic.ID, func(l *server.License) error { l.RevivalWindow = time.Hour; return nil })
	require.NoError(t, err)
	old := mkGrant(t, s, lic, "render", "2024", 2, time.Now().Add(24*time.Hour)) // picked first
	cur := mkGrant(t, s, lic, "render", "2026", 3, time.Time{})
	mkGroup(t, s, tn.ID, "night", server.SubjectGroup, "ann")
	setPolicy(t, s, lic,
		server.PolicyRule{Kind: server.RuleMax, Feature: "render", Count: 1, Subject: userSubject("bob")},
		server.PolicyRule{Kind: server.RuleReserve, Feature: "render", Count: 1, Subject: groupSubject("night")},
	)

	b1, _, err := tryAs(ctx, s, lic.Key, "b1", "bob", "h1", "render", "2024")
	require.NoError(t, err)
	require.Equal(t, old.ID, b1.Lease.LicenseID)
	c1, tokC, err := tryAs(ctx, s, lic.Key, "c1", "carl", "h2", "render", "2024")
	require.NoError(t, err)
	require.Equal(t, old.ID, c1.Lease.LicenseID)
	x1, _, err := tryAs(ctx, s, lic.Key, "x1", "xavier", "h3", "render", "2025")
	require.NoError(t, err)
	require.Equal(t, cur.ID, x1.Lease.LicenseID)
	_, err = s.UpdateLicense(ctx, tn.ID, lic.ID, func(l *server.License) error { l.LeaseTTL = time.Hour; return nil })
	require.NoError(t, err)
	latest := b1.Lease.ExpiresAt
	for _, l := range []server.Lease{c1.Lease, x1.Lease} {
		if l.ExpiresAt.After(latest) {
			latest = l.ExpiresAt
		}
	}
	time.Sleep(time.Until(latest) + 100*time.Millisecond) // Redis TIME: the store's clock cannot be moved

	state := func(id string) server.LeaseState {
		l, err := s.GetLease(ctx, tn.ID, id)
		require.NoError(t, err)
		return l.State
	}
	// Only the 2026 grant may grant 2025: bob's lapsed lease of the 2024
	// one, back, would break his cap all the same.
	b2, _, err := tryAs(ctx, s, lic.Key, "b2", "bob", "h4", "render", "2025")
	require.NoError(t, err)
	require.Equal(t, cur.ID, b2.Lease.LicenseID)
	require.Equal(t, server.LeaseExpired, state(b1.Lease.ID), "back, bob's lapsed lease would break his cap")
	require.Equal(t, server.LeaseActive, state(c1.Lease.ID))
	require.Equal(t, server.LeaseActive, state(x1.Lease.ID), "1 + 1 reserved fits the 2026 grant's 3 seats")

	// The 2026 grant's 3 seats: with b2, x1's shared seat back would
	// leave night's seat to y1: x1 ends (a shared lease of the grant that
	// may grant), carl's of the other grant stays.
	y1, _, err := tryAs(ctx, s, lic.Key, "y1", "yves", "h5", "render", "2025")
	require.NoError(t, err)
	require.Equal(t, cur.ID, y1.Lease.LicenseID)
	require.Equal(t, server.LeaseExpired, state(x1.Lease.ID), "back, it would take night's seat")
	require.Equal(t, server.LeaseActive, state(c1.Lease.ID), "carl's is in no one's way")
	_, err = s.Heartbeat(ctx, c1.Lease.ID, server.HashSecret(tokC))
	require.NoError(t, err, "and revives")
}
