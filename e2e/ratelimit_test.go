package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// fromAddr is a client on its own loopback address (127.0.0.0/8 is all
// loopback on Linux), so that the server sees distinct client addresses.
type fromAddr struct {
	ip   string
	http *http.Client
	grpc seatdv1.SeatServiceClient
}

func clientFrom(t *testing.T, p *proc, ip string) fromAddr {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	conn, err := grpc.NewClient("passthrough:///"+p.GRPCAddr,
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) { return dialer.DialContext(ctx, "tcp", addr) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	tr := &http.Transport{DialContext: dialer.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return fromAddr{ip: ip, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}, grpc: seatdv1.NewSeatServiceClient(conn)}
}

type restAnswer struct {
	code   int
	header http.Header
	body   map[string]any
}

// acquireREST posts an acquisition; header, if set, is sent too.
func (c fromAddr) acquireREST(t *testing.T, p *proc, key, fp string, header http.Header) restAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"licenseKey": key, "fingerprint": fp})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url("/v1/leases"), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj), "body %s", raw)
	return restAnswer{resp.StatusCode, resp.Header, obj}
}

// requireRESTRateLimited: 429, a Retry-After in whole seconds, RATE_LIMITED.
func requireRESTRateLimited(t *testing.T, a restAnswer) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, a.code, "body %v", a.body)
	after, err := strconv.Atoi(a.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", a.header.Get("Retry-After"))
	require.Positive(t, after)
	require.Contains(t, fmt.Sprint(a.body["details"]), "RATE_LIMITED")
}

func requireGRPCRateLimited(t *testing.T, err error) {
	t.Helper()
	st := requireStatus(t, err, codes.ResourceExhausted, "RATE_LIMITED")
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry, "RetryInfo on %v", st)
	require.Positive(t, retry.GetRetryDelay().AsDuration())
}

// TestFailedLookupsRateLimitedPerClient: a burst of wrong license keys from
// one address is refused (429 with Retry-After; RESOURCE_EXHAUSTED with
// RetryInfo on gRPC, the same address either way), while valid
// acquisitions from other addresses go on; REST clients are told apart by
// their own addresses (not one bucket for the gateway), and neither a gRPC
// client's x-forwarded-for nor a REST client's X-Forwarded-For changes who
// it is counted as.
func TestFailedLookupsRateLimitedPerClient(t *testing.T) {
	t.Parallel()
	const burst = 5
	// One token back every 1000 s: nothing refills during the test.
	p := start(t, options{args: []string{"--failed-lookup-burst", strconv.Itoa(burst), "--failed-lookup-rate", "0.001"}})
	ctx := testContext(t)
	lic, err := p.admin().CreateLicense(p.asOperator(ctx), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{Name: "rl", Seats: 10}})
	require.NoError(t, err)
	key := lic.GetLicense().GetKey()
	const wrong = "slk_guessed-key-0123456789"

	attacker := clientFrom(t, p, "127.0.0.2")
	for i := range burst {
		a := attacker.acquireREST(t, p, wrong, "x", nil)
		require.Equal(t, http.StatusNotFound, a.code, "guess %d: %v", i, a.body)
	}
	requireRESTRateLimited(t, attacker.acquireREST(t, p, wrong, "x", nil))
	requireRESTRateLimited(t, attacker.acquireREST(t, p, key, "attacker", nil))
	_, err = attacker.grpc.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: wrong, Fingerprint: "x"})
	requireGRPCRateLimited(t, err)

	// Other clients, on REST (through the same in-process gateway) and on
	// gRPC, are not slowed by the attacker's failures.
	a := clientFrom(t, p, "127.0.0.3").acquireREST(t, p, key, "rest-client", nil)
	require.Equal(t, http.StatusOK, a.code, "another REST client's valid acquire: %v", a.body)
	_, err = clientFrom(t, p, "127.0.0.4").grpc.AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "grpc-client"})
	require.NoError(t, err, "a gRPC client's valid acquire")
	_, err = p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: key, Fingerprint: "harness"})
	require.NoError(t, err, "the harness's own connection")

	// A forwarded-for claim gets a client nothing: it is counted as the
	// address it connects from.
	restSpoofer := clientFrom(t, p, "127.0.0.5")
	for i := range burst {
		a := restSpoofer.acquireREST(t, p, wrong, "x", http.Header{"X-Forwarded-For": {fmt.Sprintf("10.1.0.%d", i)}})
		require.Equal(t, http.StatusNotFound, a.code, "%v", a.body)
	}
	requireRESTRateLimited(t, restSpoofer.acquireREST(t, p, wrong, "x", http.Header{"X-Forwarded-For": {"10.1.0.99"}}))
	grpcSpoofer := clientFrom(t, p, "127.0.0.6")
	for i := range burst + 1 {
		spoofed := metadata.AppendToOutgoingContext(ctx, "x-forwarded-for", fmt.Sprintf("10.2.0.%d", i))
		_, err = grpcSpoofer.grpc.AcquireSeat(spoofed, &seatdv1.AcquireSeatRequest{LicenseKey: wrong, Fingerprint: "x"})
		if i < burst {
			requireStatus(t, err, codes.NotFound, "LICENSE_NOT_FOUND")
		} else {
			requireGRPCRateLimited(t, err)
		}
	}
	p.stopOK()
}
