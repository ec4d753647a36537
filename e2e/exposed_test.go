package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Attacks a client without any key can make, run against the real binary
// on loopback, bounded in count and time (docs/guides/tls.md).

// TestOversizedBodyIsRefusedUnread: a body over --max-request-bytes is
// answered 413 MESSAGE_TOO_LARGE, and the connection is closed rather than
// the rest read.
func TestOversizedBodyIsRefusedUnread(t *testing.T) {
	t.Parallel()
	p := start(t, options{args: []string{"--max-request-bytes", "65536"}})
	// Announced length over the limit: refused before reading.
	big := `{"licenseKey": "` + strings.Repeat("k", 70000) + `", "fingerprint": "x"}`
	r := p.do(t, "POST", "/v1/leases", "", big)
	r.requireCode(t, http.StatusRequestEntityTooLarge)
	require.Equal(t, "MESSAGE_TOO_LARGE", r.errorReason())

	// No length (chunked), 64 MB on offer: cut at the limit.
	pr, pw := io.Pipe()
	sent := make(chan int64, 1)
	go func() {
		var n int64
		chunk := make([]byte, 32<<10)
		for n < 64<<20 {
			w, err := pw.Write(chunk)
			n += int64(w)
			if err != nil {
				break
			}
		}
		_ = pw.Close()
		sent <- n
	}()
	req, err := http.NewRequestWithContext(t.Context(), "POST", p.url("/v1/leases"), pr)
	require.NoError(t, err)
	resp, err := httpClient.Do(req)
	if err == nil { // the answer may come before the client has sent it all
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		resp.Body.Close()
	}
	_ = pr.CloseWithError(io.ErrClosedPipe)
	require.Less(t, <-sent, int64(64<<20), "the server did not read the whole body")
	p.do(t, "GET", "/healthz", "", nil).requireCode(t, http.StatusOK)
}

// TestConnectionFloodLeavesHealthServing: slow clients holding every
// connection the HTTP port allows wait in the backlog; the gRPC port and
// its health checks are untouched, and HTTP serves again once they go.
func TestConnectionFloodLeavesHealthServing(t *testing.T) {
	t.Parallel()
	probe := toolPath(t, "grpc-health-probe")
	const limit = 20
	p := start(t, options{args: []string{"--max-connections", fmt.Sprint(limit), "--http-read-timeout", "1m"}})
	var flood []net.Conn
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	for range 5 * limit {
		c, err := net.DialTimeout("tcp", p.HTTPAddr, 10*time.Second)
		require.NoError(t, err) // the kernel accepts into the backlog
		// A request that never finishes its body.
		_, err = c.Write([]byte("POST /v1/leases HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"))
		require.NoError(t, err)
		flood = append(flood, c)
	}
	ctx := testContext(t)
	resp, err := healthpb.NewHealthClient(p.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	out, err := exec.CommandContext(ctx, probe, "-addr", p.GRPCAddr).CombinedOutput()
	require.NoError(t, err, "grpc-health-probe during the flood: %s", out)

	for _, c := range flood {
		c.Close()
	}
	flood = nil
	eventually(t, eventTimeout, "HTTP serves after the flood", func() bool {
		r, err := (&http.Client{Timeout: 2 * time.Second}).Get(p.url("/healthz"))
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
}

// TestSilentStreamIsEnded: a heartbeat stream that never speaks is ended
// after --first-message-timeout.
func TestSilentStreamIsEnded(t *testing.T) {
	t.Parallel()
	p := start(t, options{args: []string{"--first-message-timeout", "500ms"}})
	s, err := p.heartbeats().HeartbeatStream(testContext(t))
	require.NoError(t, err)
	_, err = s.Recv()
	requireStatus(t, err, codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT")
}

// TestStreamsOverTheCapAreRefused: beyond --max-streams open on the
// instance, a stream is refused with TOO_MANY_STREAMS; the ones within the
// cap stay open.
func TestStreamsOverTheCapAreRefused(t *testing.T) {
	t.Parallel()
	const limit, opened = 3, 8
	p := start(t, options{args: []string{"--max-streams", fmt.Sprint(limit), "--first-message-timeout", "5m"}})
	ctx := testContext(t)
	// Streams reach the server in any order: which ones get in is not
	// known, only how many.
	refused := make(chan string, opened)
	for range opened {
		s, err := p.heartbeats().HeartbeatStream(ctx) // silent
		require.NoError(t, err)
		go func() {
			_, err := s.Recv()
			st, _ := status.FromError(err)
			reason := st.Code().String()
			if info := errorInfo(st); info != nil {
				reason = info.GetReason()
			}
			refused <- reason
		}()
	}
	for range opened - limit {
		select {
		case reason := <-refused:
			require.Equal(t, "TOO_MANY_STREAMS", reason)
		case <-time.After(eventTimeout):
			t.Fatal("fewer streams refused than opened over the cap")
		}
	}
	// The rest are open: a heartbeat stream over the cap is still refused.
	s, err := p.heartbeats().HeartbeatStream(ctx)
	require.NoError(t, err)
	_, err = s.Recv()
	requireStatus(t, err, codes.ResourceExhausted, "TOO_MANY_STREAMS")
	select {
	case reason := <-refused:
		t.Fatalf("a stream within the cap ended: %s", reason)
	default:
	}
}
