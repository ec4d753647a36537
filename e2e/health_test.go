package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
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
	// The first drain delay: long enough for the checks during it on most
	// machines (the test waits it out); a loaded one tries a longer one.
	const drainDelay = 10 * time.Second
	p := start(t, options{args: []string{"--drain-delay", drainDelay.String()}})
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
			out, err := exec.CommandContext(stepContext(t, unaryTimeout), probe, args...).CombinedOutput()
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

	// SIGTERM: /readyz and gRPC health must say "not ready" while the
	// process still runs and serves, and liveness stays OK. A failed call
	// proves something only while the drain delay lasts (later the servers
	// stop): when the drain ended before the checks were done (a loaded
	// machine), they run again on a new seatd with twice the drain delay,
	// up to maxDrainDelay; never a skip.
	const maxDrainDelay = 8 * drainDelay
	for d := drainDelay; ; d *= 2 {
		if d > drainDelay {
			p = start(t, options{args: []string{"--drain-delay", d.String()}})
		}
		tooSlow := checkDrain(t, p, probe, d)
		if tooSlow == "" {
			return
		}
		if 2*d > maxDrainDelay {
			t.Fatalf("the checks during the drain did not fit in a drain delay of %s: %s", d, tooSlow)
		}
		t.Logf("the %s drain delay ended before the checks were done (%s); again with %s", d, tooSlow, 2*d)
	}
}

// checkDrain sends p SIGTERM and checks what p answers during its drain
// delay, then its clean exit. It returns why the checks could not be made
// in time when the drain delay ended before they were done.
func checkDrain(t *testing.T, p *proc, probe string, drainDelay time.Duration) (tooSlow string) {
	t.Helper()
	health := healthpb.NewHealthClient(p.conn)
	ctx := testContext(t)
	// seatd logs each shutdown step when it is done: once "not ready" is,
	// a ready answer is wrong whenever it comes.
	p.signal(syscall.SIGTERM)
	stepDone := func(name string) bool {
		steps, _ := loggedShutdownSteps(t, p.Output())
		return slices.Contains(steps, name)
	}
	t.Run(fmt.Sprintf("during a %s drain", drainDelay), func(t *testing.T) {
		// late says whether a failed call came after the drain delay (the
		// checks then stop, and run again with a longer one); during the
		// drain delay a failed call fails the test.
		late := func(what string, err error) bool {
			t.Helper()
			if stepDone("drain delay") {
				tooSlow = fmt.Sprintf("%s failed after the drain delay: %v", what, err)
				return true
			}
			t.Fatalf("%s during the drain delay: %v", what, err)
			return false
		}
		eventually(t, exitTimeout, `the "not ready" shutdown step`, func() bool {
			require.True(t, p.running(), "seatd exited during its drain:\n%s", p.Output())
			return stepDone("not ready")
		})

		code, err := httpStatus(t, p.url("/readyz"), "")
		if err != nil && late("/readyz", err) {
			return
		}
		require.Equal(t, http.StatusServiceUnavailable, code, "/readyz once seatd is not ready")
		for _, svc := range append([]string{""}, seatdServices...) {
			resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			if err != nil && late(fmt.Sprintf("health of %q", svc), err) {
				return
			}
			require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.GetStatus(), "health of %q once seatd is not ready", svc)
		}
		if out, err := exec.CommandContext(stepContext(t, unaryTimeout), probe, "-addr", p.GRPCAddr).CombinedOutput(); err == nil {
			t.Errorf("grpc-health-probe succeeded while seatd drains: %s", out)
		}
		code, err = httpStatus(t, p.url("/healthz"), "")
		if err != nil && late("/healthz", err) {
			return
		}
		require.Equal(t, http.StatusOK, code, "/healthz (liveness) while draining")

		// While draining, seatd still answers calls: load balancers are
		// moving away, clients that still arrive must not fail.
		if _, err := seatdv1.NewAdminServiceClient(p.conn).ListLicenses(p.asOperator(ctx), &seatdv1.ListLicensesRequest{}); err != nil && late("a gRPC call", err) {
			return
		}
		code, err = httpStatus(t, p.url("/v1/admin/licenses"), p.OperatorKey)
		if err != nil && late("a REST call", err) {
			return
		}
		require.Equal(t, http.StatusOK, code, "a REST call while draining")
		if stepDone("drain delay") {
			t.Logf("the checks ended after the drain delay; their answers still showed a draining seatd")
		}
	})
	require.Equal(t, 0, p.wait(), "exit code after SIGTERM")
	require.NotContains(t, p.Output(), "DATA RACE")
	return tooSlow
}

// httpStatus is the status of a GET, or the error (the server may be gone).
func httpStatus(t testing.TB, url, key string) (int, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestGrpcurl checks that reflection lets grpcurl find and call the services.
func TestGrpcurl(t *testing.T) {
	t.Parallel()
	grpcurl := toolPath(t, "grpcurl")
	p := start(t, options{})

	out, err := exec.CommandContext(stepContext(t, unaryTimeout), grpcurl, "-plaintext", p.GRPCAddr, "list").CombinedOutput()
	require.NoError(t, err, "grpcurl list: %s", out)
	listed := strings.Fields(string(out))
	for _, svc := range append(seatdServices, "grpc.health.v1.Health") {
		require.Contains(t, listed, svc, "grpcurl list output:\n%s", out)
	}

	out, err = exec.CommandContext(stepContext(t, unaryTimeout), grpcurl, "-plaintext", p.GRPCAddr, "list", "seatd.v1.SeatService").CombinedOutput()
	require.NoError(t, err, "grpcurl list SeatService: %s", out)
	require.Contains(t, string(out), "seatd.v1.SeatService.AcquireSeat")

	// A call through reflection alone (no proto files): every message type,
	// well-known ones included, must resolve.
	out, err = exec.CommandContext(stepContext(t, unaryTimeout), grpcurl, "-plaintext",
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

	out, err = exec.CommandContext(stepContext(t, unaryTimeout), grpcurl, "-plaintext", p.GRPCAddr, "grpc.health.v1.Health/Check").CombinedOutput()
	require.NoError(t, err, "grpcurl health check: %s", out)
	require.Contains(t, string(out), "SERVING")
}
