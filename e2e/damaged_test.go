package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/bolttest"
)

// TestDamagedDataFileStopsWritesAndReadiness: seatd serves a data file
// with damaged pages in its middle. The first call that meets them is
// answered UNAVAILABLE (not INTERNAL from a recovered panic), and from
// then on the instance is not ready (gRPC health NOT_SERVING, /readyz 503
// saying why), seatd_data_file_damaged is 1, and every write is refused
// with UNAVAILABLE saying the data file is damaged (issue 24, item 13:
// 3,162 acquisitions were written into such a file).
func TestDamagedDataFileStopsWritesAndReadiness(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	lic := newLicense(t, p, 10, time.Minute, "damaged")
	ctx := testContext(t)
	for range 300 {
		l, err := p.acquire(ctx, lic.GetKey(), "laptop")
		require.NoError(t, err)
		_, err = p.release(ctx, l)
		require.NoError(t, err)
	}
	p.stopOK()
	// Damage behind a sound header, which the start does not read (it
	// loads the active leases only), like the attack's random pages in
	// the middle of the file.
	bolttest.DamageBucketRoot(t, filepath.Join(p.DataDir, "seatd.db"), "leases", 50)

	// By default the start reads every page and refuses the file.
	args, _, _ := options{dataDir: p.DataDir}.argv(t)
	code, out := runToExit(t, startTimeout, args, nil)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "is damaged (unreadable pages")
	require.Contains(t, out, "seatd restore FILE --data-dir "+p.DataDir)

	// Without that walk it serves, until a call meets the damage.
	p = start(t, options{dataDir: p.DataDir, args: []string{"--readiness-interval", "100ms", "--verify-data-file=false"}})
	p.do(t, "GET", "/readyz", "", nil).requireCode(t, 200) // nothing has read the damage yet

	_, err := p.admin().ListLeases(p.asOperator(ctx), &seatdv1.ListLeasesRequest{
		LicenseId: lic.GetId(), State: seatdv1.LeaseState_LEASE_STATE_RELEASED,
	})
	st := requireStatus(t, err, codes.Unavailable, "BACKEND_UNAVAILABLE")
	require.Contains(t, st.Message(), "the data file is damaged")

	waitUntil(t, startTimeout, "/readyz to say the data file is damaged", func() (bool, string) {
		r := p.do(t, "GET", "/readyz", "", nil)
		return r.Code == 503 && string(r.Raw) == "not ready: the data file is damaged\n", string(r.Raw)
	})
	health := healthpb.NewHealthClient(p.conn)
	for _, svc := range []string{"", "seatd.v1.SeatService"} {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus(), "health of %q", svc)
	}
	v, ok := p.metricValue(t, "seatd_data_file_damaged")
	require.True(t, ok)
	require.Equal(t, 1.0, v)
	v, _ = p.metricValue(t, "seatd_ready")
	require.Equal(t, 0.0, v)

	_, err = p.acquire(ctx, lic.GetKey(), "desktop")
	st = requireStatus(t, err, codes.Unavailable, "BACKEND_UNAVAILABLE")
	require.Contains(t, st.Message(), "writes are refused until an operator restores it from a backup")
	require.NotContains(t, st.Message(), p.DataDir, "no path for a client")

	out = p.Output()
	require.NotContains(t, out, "panic in handler")
	require.Equal(t, 1, strings.Count(out, "the data file is damaged; every write is refused"), "said once:\n%s", out)
}
