package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestListLeasesByState: ListLeases' state filter matches the state each
// lease is listed with. A lease past its deadline is EXPIRED before any
// cleanup has recorded it (the harness runs cleanup hourly), and no longer
// ACTIVE.
func TestListLeasesByState(t *testing.T) {
	t.Parallel()
	for _, distributed := range []bool{false, true} {
		name := map[bool]string{false: "embedded", true: "distributed"}[distributed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := queueProcs(t, distributed)[0]
			ctx := t.Context()
			lic := newLicense(t, p, 5, time.Second, "states")
			lapsed, err := p.acquire(ctx, lic.GetKey(), "lapsed")
			require.NoError(t, err)
			live, err := p.acquire(ctx, lic.GetKey(), "live")
			require.NoError(t, err)
			released, err := p.acquire(ctx, lic.GetKey(), "released")
			require.NoError(t, err)
			_, err = p.release(ctx, released)
			require.NoError(t, err)
			// live is heartbeated while lapsed passes its deadline.
			for time.Now().Before(lapsed.GetLease().GetExpiresAt().AsTime().Add(100 * time.Millisecond)) {
				_, err := p.heartbeat(ctx, live)
				require.NoError(t, err)
				time.Sleep(200 * time.Millisecond)
			}
			_, err = p.heartbeat(ctx, live)
			require.NoError(t, err)

			ids := func(state seatdv1.LeaseState) []string {
				var out []string
				for _, l := range p.leases(t, lic.GetId(), state) {
					if state != seatdv1.LeaseState_LEASE_STATE_UNSPECIFIED {
						require.Equal(t, state, l.GetState(), "lease %s listed under %s", l.GetFingerprint(), state)
					}
					out = append(out, l.GetFingerprint())
				}
				return out
			}
			require.Equal(t, []string{"live"}, ids(seatdv1.LeaseState_LEASE_STATE_ACTIVE))
			require.Equal(t, []string{"lapsed"}, ids(seatdv1.LeaseState_LEASE_STATE_EXPIRED), "past its deadline, not yet cleaned up")
			require.Equal(t, []string{"released"}, ids(seatdv1.LeaseState_LEASE_STATE_RELEASED))
			require.Empty(t, ids(seatdv1.LeaseState_LEASE_STATE_REVOKED))
			require.Equal(t, []string{"released", "live", "lapsed"}, ids(seatdv1.LeaseState_LEASE_STATE_UNSPECIFIED), "all of them, newest first")
		})
	}
}
