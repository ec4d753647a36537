package e2e

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// metricValue reads one series of /metrics ("" when it is not there).
func (p *proc) metricValue(t testing.TB, series string) (float64, bool) {
	t.Helper()
	raw := string(p.do(t, "GET", "/metrics", "", nil).requireCode(t, 200).Raw)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(raw)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err, "%s", m[0])
	return v, true
}

// TestMetricsAreExact: seatd_active_seats is the count at the scrape (not
// at the last scheduled pass: --cleanup-interval is 1h here), a manual
// cleanup shows at once, and a waiter's tries for a seat do not count as
// refused acquisitions.
func TestMetricsAreExact(t *testing.T) {
	t.Parallel()
	p := start(t, options{args: []string{"--wait-poll", "20ms"}})
	ctx := testContext(t)
	op := p.asOperator(ctx)
	seats := p.seats()
	active := func() float64 {
		v, ok := p.metricValue(t, "seatd_active_seats")
		require.True(t, ok, "seatd_active_seats on /metrics")
		return v
	}
	acquisitions := func(result string) float64 {
		v, _ := p.metricValue(t, `seatd_acquisitions_total{result="`+result+`"}`)
		return v
	}

	license := func(ttl time.Duration) string {
		created, err := p.admin().CreateLicense(op, &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
			Name: "metrics", Seats: 1, LeaseTtl: durationpb.New(ttl),
		}})
		require.NoError(t, err)
		return created.GetLicense().GetKey()
	}
	key := license(time.Hour) // no lease lapses while the test waits (a minute did at a load of 40)
	require.Zero(t, active())

	held, err := seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "holder"})
	require.NoError(t, err)
	require.Equal(t, 1.0, active(), "an acquisition shows at the next scrape")

	// One refused AcquireSeat, then a waiter that tries many times.
	_, err = seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "refused"})
	requireStatus(t, err, codes.ResourceExhausted, "SEATS_EXHAUSTED")
	stream, err := seats.WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: key, Fingerprint: "waiter"})
	require.NoError(t, err)
	eventually(t, eventTimeout, "the waiter tried 8 times", func() bool {
		v, _ := p.metricValue(t, "seatd_wait_tries_exhausted_total")
		return v >= 8
	})
	require.Equal(t, 1.0, acquisitions("exhausted"), "only the refused AcquireSeat")

	_, err = seats.ReleaseSeat(ctx, &seatdv1.ReleaseSeatRequest{LeaseId: held.GetLease().GetId(), LeaseToken: held.GetLeaseToken()})
	require.NoError(t, err)
	var granted *seatdv1.AcquireSeatResponse
	for granted == nil {
		resp, err := stream.Recv()
		require.NoError(t, err)
		granted = resp.GetGranted()
	}
	require.Equal(t, 1.0, acquisitions("exhausted"))
	require.Equal(t, 2.0, acquisitions("ok"), "the holder's and the waiter's")
	require.Equal(t, 1.0, active(), "the waiter holds the seat")

	// A lease of another license lapses (1 s TTL, no heartbeat); a manual
	// cleanup records it and the gauge shows it at once.
	_, err = seats.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: license(time.Second), Fingerprint: "zombie"})
	require.NoError(t, err)
	require.Equal(t, 2.0, active())
	eventually(t, eventTimeout, "the lease lapsed and a cleanup expired it", func() bool {
		r, err := p.admin().Cleanup(op, &seatdv1.CleanupRequest{})
		require.NoError(t, err)
		return r.GetRun().GetExpired() == 1
	})
	require.Equal(t, 1.0, active(), "a manual cleanup shows at the next scrape")
}
