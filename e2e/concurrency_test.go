package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestSeatLimitUnderConcurrency: many clients at once never get more seats
// than the limit (invariant 1), and one client retrying in parallel never
// gets two (invariant 4).
func TestSeatLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	const seats, clients = 5, 40
	p := start(t, options{})
	ctx := testContext(t)
	created, err := p.admin().CreateLicense(p.asOperator(ctx), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: seats, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	lic := created.GetLicense()

	acquireAll := func(fingerprint func(i int) string) (granted []*seatdv1.AcquireSeatResponse, exhausted int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				resp, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: fingerprint(i)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					granted = append(granted, resp)
				case status.Code(err) == codes.ResourceExhausted:
					exhausted++
				default:
					t.Errorf("acquire %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return granted, exhausted
	}

	// One client retrying many times at once: one lease.
	granted, exhausted := acquireAll(func(int) string { return "same-client" })
	require.Zero(t, exhausted)
	require.Len(t, granted, clients)
	for _, g := range granted {
		require.Equal(t, granted[0].GetLease().GetId(), g.GetLease().GetId(), "parallel retries share one lease")
	}

	// Many clients at once: exactly the free seats are granted.
	granted, exhausted = acquireAll(func(i int) string { return fmt.Sprintf("client-%d", i) })
	require.Len(t, granted, seats-1, "granted seats")
	require.Equal(t, clients-(seats-1), exhausted)
	for _, g := range granted {
		require.LessOrEqual(t, g.GetSeatsInUse(), int32(seats))
	}
	list, err := p.admin().ListLeases(p.asOperator(ctx), &seatdv1.ListLeasesRequest{LicenseId: lic.GetId(), State: seatdv1.LeaseState_LEASE_STATE_ACTIVE})
	require.NoError(t, err)
	require.Len(t, list.GetLeases(), seats)
}
