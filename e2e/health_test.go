package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

var seatdServices = []string{"seatd.v1.SeatService", "seatd.v1.HeartbeatService", "seatd.v1.AdminService"}

// TestHealthAndShutdown covers the probes load balancers and Prometheus use,
// and the drain on SIGTERM: not ready first, then a clean exit.
func TestHealthAndShutdown(t *testing.T) {
	t.Parallel()
	probe := toolPath(t, "grpc-health-probe")
	p := start(t, options{args: []string{"--drain-delay", "4s"}})
	ctx := testContext(t)
	health := healthpb.NewHealthClient(p.conn)

	t.Run("grpc health", func(t *testing.T) {
		for _, svc := range append([]string{""}, seatdServices...) {
			resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			require.NoError(t, err, "health check %q", svc)
			require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus(), "health of %q", svc)
		}
	})

	t.Run("grpc-health-probe", func(t *testing.T) {
		for _, args := range [][]string{
			{"-addr", p.GRPCAddr},
			{"-addr", p.GRPCAddr, "-service", "seatd.v1.SeatService"},
		} {
			out, err := exec.CommandContext(ctx, probe, args...).CombinedOutput()
			require.NoError(t, err, "grpc-health-probe %v: %s", args, out)
		}
	})

	t.Run("http probes", func(t *testing.T) {
		p.do(t, "GET", "/healthz", "", nil).requireCode(t, 200)
		p.do(t, "GET", "/readyz", "", nil).requireCode(t, 200)

		m := p.do(t, "GET", "/metrics", "", nil).requireCode(t, 200)
		metrics := string(m.Raw)
		require.Contains(t, metrics, "\nseatd_leader 1\n", "seatd metrics (the embedded node leads cleanup)")
		require.Contains(t, metrics, "\nseatd_heartbeats_flushed_total ", "the store's write-behind is counted")
		require.Contains(t, metrics, "grpc_server_handled_total", "RPC metrics")
		require.Contains(t, metrics, `grpc_service="seatd.v1.SeatService"`, "RPC metrics are initialised per method")

		doc := p.do(t, "GET", "/openapi.json", "", nil).requireCode(t, 200)
		require.True(t, json.Valid(doc.Raw), "/openapi.json is not JSON: %.200s", doc.Raw)
		require.NotNil(t, doc.JSON, "/openapi.json is not a JSON object")
		paths, _ := doc.JSON["paths"].(map[string]any)
		require.Contains(t, paths, "/v1/leases", "/openapi.json documents the REST routes")
	})

	if t.Failed() {
		return
	}

	// SIGTERM with a 4s drain delay: /readyz and gRPC health must say "not
	// ready" while the process still runs, and liveness stays OK.
	p.signal(syscall.SIGTERM)
	signalled := time.Now()
	sawReady503, sawNotServing := false, false
	eventually(t, 3800*time.Millisecond, "/readyz 503 and health NOT_SERVING during the drain", func() bool {
		require.True(t, p.running(), "seatd exited before the drain delay ended")
		if !sawReady503 {
			sawReady503 = p.do(t, "GET", "/readyz", "", nil).Code == 503
		}
		if !sawNotServing {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			resp, err := health.Check(cctx, &healthpb.HealthCheckRequest{})
			cancel()
			sawNotServing = err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING
		}
		return sawReady503 && sawNotServing
	})
	// While draining, seatd still answers calls: load balancers are moving
	// away, clients that still arrive must not fail.
	if time.Since(signalled) < time.Second {
		_, err := seatdv1.NewAdminServiceClient(p.conn).ListLicenses(p.asOperator(ctx), &seatdv1.ListLicensesRequest{})
		require.NoError(t, err, "a gRPC call during the drain delay")
		p.do(t, "GET", "/v1/admin/licenses", p.OperatorKey, nil).requireCode(t, 200)
	}
	for _, svc := range seatdServices {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err == nil { // the drain may just have ended
			require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus(), "health of %q while draining", svc)
		}
	}
	if out, err := exec.CommandContext(ctx, probe, "-addr", p.GRPCAddr).CombinedOutput(); err == nil {
		t.Errorf("grpc-health-probe succeeded while seatd drains: %s", out)
	}
	require.Equal(t, 0, p.wait(), "exit code after SIGTERM")
	require.NotContains(t, p.Output(), "DATA RACE")
}

// TestGrpcurl checks that reflection lets grpcurl find and call the services.
func TestGrpcurl(t *testing.T) {
	t.Parallel()
	grpcurl := toolPath(t, "grpcurl")
	p := start(t, options{})
	ctx := testContext(t)

	out, err := exec.CommandContext(ctx, grpcurl, "-plaintext", p.GRPCAddr, "list").CombinedOutput()
	require.NoError(t, err, "grpcurl list: %s", out)
	listed := strings.Fields(string(out))
	for _, svc := range append(seatdServices, "grpc.health.v1.Health") {
		require.Contains(t, listed, svc, "grpcurl list output:\n%s", out)
	}

	out, err = exec.CommandContext(ctx, grpcurl, "-plaintext", p.GRPCAddr, "list", "seatd.v1.SeatService").CombinedOutput()
	require.NoError(t, err, "grpcurl list SeatService: %s", out)
	require.Contains(t, string(out), "seatd.v1.SeatService.AcquireSeat")

	// A call through reflection alone (no proto files): every message type,
	// well-known ones included, must resolve.
	out, err = exec.CommandContext(ctx, grpcurl, "-plaintext",
		"-H", "authorization: Bearer "+p.OperatorKey,
		"-d", `{"license":{"seats":3,"leaseTtl":"60s","name":"via grpcurl"}}`,
		p.GRPCAddr, "seatd.v1.AdminService/CreateLicense").CombinedOutput()
	require.NoError(t, err, "grpcurl CreateLicense: %s", out)
	var created struct {
		License struct {
			ID    string `json:"id"`
			Seats int    `json:"seats"`
		} `json:"license"`
	}
	require.NoError(t, json.Unmarshal(out, &created), "grpcurl output: %s", out)
	require.NotEmpty(t, created.License.ID)
	require.Equal(t, 3, created.License.Seats)

	out, err = exec.CommandContext(ctx, grpcurl, "-plaintext", p.GRPCAddr, "grpc.health.v1.Health/Check").CombinedOutput()
	require.NoError(t, err, "grpcurl health check: %s", out)
	require.Contains(t, string(out), "SERVING")
}
