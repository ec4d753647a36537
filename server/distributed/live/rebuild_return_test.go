package live

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// A forced rebuild whose snapshot was read while a borrowed lease was
// active, and which writes after that lease was returned early (end.lua):
// the returned borrow must still count against the borrow cap.
func TestRebuildAfterAnEarlyReturnKeepsTheBorrowCounted(t *testing.T) {
	t.Parallel()
	rs, _ := openLive(t)
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: 2,
		LeaseTTL: time.Hour, LeasingStrategy: server.PerAcquisition, Active: true,
		MaxBorrowDuration: 72 * time.Hour, MaxBorrowedSeats: 1, AllowEarlyReturn: true}
	st, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	L := server.NewID(server.PrefixLeaseID)
	b := Build{Epoch: 1, Conf: Conf{License: lic, Version: 1}, Snapshot: st.Now, Incarnation: st.Incarnation,
		Leases: []Lease{{ID: L, TokenHash: "h", Acquired: st.Now, Heartbeat: st.Now, Deadline: st.Now.Add(48 * time.Hour), Borrowed: true}}}
	built, _, err := rs.Rebuild(t.Context(), lic.ID, b)
	require.NoError(t, err)
	require.True(t, built)

	borrow := func() Status {
		var a Acquisition
		require.NoError(t, rs.Acquire(t.Context(), lic.ID, &server.AcquireRequest{LeaseID: server.NewID(server.PrefixLeaseID),
			TokenHash: "x", BorrowFor: time.Hour}, &a))
		return a.Status
	}
	require.Equal(t, StatusBorrowLimit, borrow(), "cap 1, one live borrow")

	// The reconciliation's forced rebuild reads its snapshot (L active,
	// not yet in returned_certificates)...
	st2, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	require.NoError(t, rs.Claim(t.Context(), lic.ID, 2))
	// ... then the early return commits and end.lua runs ...
	require.NoError(t, rs.End(t.Context(), lic.ID, []string{L}))
	require.Equal(t, StatusBorrowLimit, borrow(), "returned borrow counted")
	// ... then the rebuild writes its snapshot.
	b2 := b
	b2.Epoch, b2.Snapshot, b2.Incarnation = 2, st2.Now, st2.Incarnation
	built, _, err = rs.Rebuild(t.Context(), lic.ID, b2)
	require.NoError(t, err)
	require.True(t, built)
	require.Equal(t, StatusBorrowLimit, borrow(), "returned borrow still counted after the rebuild")
}
