package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testSeatsInUseOf: the live leases of several licenses at once, exact at
// the time of the call (a lapsed lease stops counting before any cleanup),
// and only the tenant's undeleted licenses.
func testSeatsInUseOf(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	tn, other := newTenant(t, s), newTenant(t, s)
	a := newLicense(t, s, tn.ID, seats(3))
	b := newLicense(t, s, tn.ID, with(seats(2), leaseTTL(time.Second)))
	empty := newLicense(t, s, tn.ID, seats(1))
	gone := newLicense(t, s, tn.ID, seats(1))
	foreign := newLicense(t, s, other.ID, seats(1))
	acquire(t, s, foreign, "f", nil)

	acquire(t, s, a, "a1", nil)
	a2, tok := acquire(t, s, a, "a2", nil)
	acquire(t, s, a, "a3", nil)
	release(t, s, a2.Lease.ID, tok)
	lapsing, _ := acquire(t, s, b, "b1", nil)
	acquire(t, s, gone, "g1", nil)
	_, err := s.DeleteLicense(t.Context(), tn.ID, gone.ID)
	require.NoError(t, err)

	ids := []string{a.ID, b.ID, empty.ID, gone.ID, foreign.ID, server.NewID(server.PrefixLicenseID)}
	got, err := s.SeatsInUseOf(t.Context(), tn.ID, ids)
	require.NoError(t, err, "SeatsInUseOf")
	if time.Now().Before(lapsing.Lease.ExpiresAt) {
		require.Equal(t, map[string]int{a.ID: 2, b.ID: 1, empty.ID: 0}, got)
	}
	got, err = s.SeatsInUseOf(t.Context(), tn.ID, nil)
	require.NoError(t, err)
	require.Empty(t, got)

	// Past its deadline, uncleaned, the lease no longer counts.
	require.Eventually(t, func() bool {
		got, err := s.SeatsInUseOf(t.Context(), tn.ID, ids)
		return err == nil && got[b.ID] == 0
	}, 5*time.Second, 50*time.Millisecond, "a lapsed lease still counted")
	got, err = s.SeatsInUseOf(t.Context(), tn.ID, ids)
	require.NoError(t, err)
	require.Equal(t, map[string]int{a.ID: 2, b.ID: 0, empty.ID: 0}, got)
	require.False(t, time.Now().Before(lapsing.Lease.ExpiresAt.Add(-50*time.Millisecond)), "counted out before its deadline")
	require.Equal(t, 2, seatsInUse(t, s, tn.ID, a.ID), "SeatsInUse agrees")
}
