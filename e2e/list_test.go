package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

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
			// lapsed gets a 1s TTL; then the TTL goes up to an hour, so
			// that live stays live however slow the machine.
			lic := newLicense(t, p, 5, time.Second, "states")
			lapsed, err := p.acquire(ctx, lic.GetKey(), "lapsed")
			require.NoError(t, err)
			_, err = p.admin().UpdateLicense(p.asOperator(ctx), &seatdv1.UpdateLicenseRequest{
				License:    &seatdv1.License{Id: lic.GetId(), LeaseTtl: durationpb.New(time.Hour)},
				UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"lease_ttl"}},
			})
			require.NoError(t, err)
			live, err := p.acquire(ctx, lic.GetKey(), "live")
			require.NoError(t, err)
			require.Greater(t, time.Until(live.GetLease().GetExpiresAt().AsTime()), 30*time.Minute, "live got the new TTL")
			released, err := p.acquire(ctx, lic.GetKey(), "released")
			require.NoError(t, err)
			_, err = p.release(ctx, released)
			require.NoError(t, err)
			// lapsed passes its deadline (it is not heartbeated); live is.
			eventually(t, eventTimeout, "lapsed's deadline passes", func() bool {
				return time.Now().After(lapsed.GetLease().GetExpiresAt().AsTime())
			})
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
