package live

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// buildWith builds the live state of a license of 2 seats, adjusted by
// mut, with no leases.
func buildWith(t *testing.T, rs *Redis, mut func(*server.License)) server.License {
	t.Helper()
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 2,
		LeaseTTL: time.Hour, LeasingStrategy: server.PerAcquisition, Active: true}
	mut(&lic)
	st, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	built, _, err := rs.Rebuild(t.Context(), lic.ID, Build{Epoch: 1, Conf: Conf{License: lic, Version: 3}, Snapshot: st.Now, Incarnation: st.Incarnation})
	require.NoError(t, err)
	require.True(t, built)
	return lic
}

// TestUsableJudgesTheLicenseAtRedisTime: usable.lua says whether a
// license may grant now, and its settings version.
func TestUsableJudgesTheLicenseAtRedisTime(t *testing.T) {
	t.Parallel()
	rs, _ := openLive(t)
	ctx := t.Context()
	on := buildWith(t, rs, func(*server.License) {})
	off := buildWith(t, rs, func(l *server.License) { l.Active = false })
	gone := buildWith(t, rs, func(l *server.License) { l.ExpiresAt = time.Now().Add(-time.Minute) })
	for _, c := range []struct {
		id   string
		want Status
	}{{on.ID, ""}, {off.ID, StatusInactive}, {gone.ID, StatusLicenseExpired}, {server.NewID(server.PrefixLicenseID), StatusNoState}} {
		u, err := rs.Usable(ctx, c.id)
		require.NoError(t, err)
		require.Equal(t, c.want, u.Status, c.id)
		if c.want != StatusNoState {
			require.EqualValues(t, 3, u.Version, "the settings version")
		}
	}
}

// TestAcquireRefusesABorrowPastTheExpiry: acquire.lua refuses a borrow
// that would end after the license's expiry, and says when it judged.
func TestAcquireRefusesABorrowPastTheExpiry(t *testing.T) {
	t.Parallel()
	rs, _ := openLive(t)
	lic := buildWith(t, rs, func(l *server.License) {
		l.MaxBorrowDuration, l.ExpiresAt = 30*24*time.Hour, time.Now().Add(time.Hour)
	})
	req := server.AcquireRequest{LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret("t1"), BorrowFor: 7 * 24 * time.Hour}
	var g Acquisition
	require.NoError(t, rs.Acquire(t.Context(), lic.ID, &req, &g))
	require.Equal(t, StatusBorrowPastExpiry, g.Status)
	require.WithinDuration(t, time.Now(), g.Acquired, time.Minute, "when it was judged")
	require.Error(t, g.License.CheckBorrow(g.Acquired, req.BorrowFor, 0, 0), "the rule the store maps it with refuses it too")

	req.BorrowFor = 30 * time.Minute
	require.NoError(t, rs.Acquire(t.Context(), lic.ID, &req, &g))
	require.Equal(t, StatusGranted, g.Status)
}
