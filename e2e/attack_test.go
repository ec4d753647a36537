package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/syncbuffer"
)

// The resource findings of the attack on both modes (issue 24, items 9, 11,
// 12), each against the real binary with bounds on its RSS, goroutines and
// file descriptors that only the bug crosses. A second client address is
// 127.0.0.2 (all of 127/8 is loopback on Linux).

// rssBytes is seatd's resident set size (/proc/<pid>/status VmRSS).
func (p *proc) rssBytes(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// fds is how many file descriptors seatd has open (/proc/<pid>/fd).
func (p *proc) fds(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	require.NoError(t, err)
	return len(entries)
}

// metric is the value of an unlabelled series on /metrics.
func (p *proc) metric(t testing.TB, name string) float64 {
	t.Helper()
	resp, err := httpClientFrom("127.0.0.3").Get(p.url("/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("no %s on /metrics", name)
	return 0
}

// dialerFrom connects from the loopback address ip.
func dialerFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
}

func httpClientFrom(ip string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialerFrom(ip).DialContext}}
}

// connFrom is a gRPC connection to seatd from the loopback address ip.
func (p *proc) connFrom(t testing.TB, ip string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dialerFrom(ip).DialContext(ctx, "tcp", addr)
		}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// h2Flood is a raw HTTP/2 connection that sends what a gRPC client would
// not: header lists over the limit the server advertises.
type h2Flood struct {
	conn net.Conn
	fr   *http2.Framer
	mu   sync.Mutex // writes
	next uint32     // the next stream id

	pings  chan struct{} // PING acks
	resets chan uint32   // RST_STREAM stream ids
	closed chan struct{} // the server closed the connection
	opened int           // streams whose headers were sent whole
}

func newH2Flood(t testing.TB, addr string) *h2Flood {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	f := &h2Flood{conn: c, fr: http2.NewFramer(c, c), next: 1, pings: make(chan struct{}, 16), resets: make(chan uint32, 4096), closed: make(chan struct{})}
	_, err = c.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	require.NoError(t, f.fr.WriteSettings())
	go f.read()
	return f
}

func (f *h2Flood) read() {
	defer close(f.closed)
	for {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			return
		}
		switch fr := fr.(type) {
		case *http2.SettingsFrame:
			if !fr.IsAck() {
				f.mu.Lock()
				_ = f.fr.WriteSettingsAck()
				f.mu.Unlock()
			}
		case *http2.PingFrame:
			if fr.IsAck() {
				f.pings <- struct{}{}
			} else {
				f.mu.Lock()
				_ = f.fr.WritePing(true, fr.Data)
				f.mu.Unlock()
			}
		case *http2.RSTStreamFrame:
			f.resets <- fr.StreamID
		}
	}
}

// open sends one call's header list, block (hpack, no indexing), in
// frames of at most 16 KiB. An error is the server having closed the
// connection.
func (f *h2Flood) open(block []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next += 2
	const frame = 16 << 10
	first := block[:min(frame, len(block))]
	if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(block) <= frame}); err != nil {
		return err
	}
	for rest := block[len(first):]; len(rest) > 0; {
		n := min(frame, len(rest))
		if err := f.fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	f.opened++
	return nil
}

// settle returns once the server has read everything sent before (it
// answers a PING only after the frames ahead of it) or closed the
// connection; it reports whether it closed it.
func (f *h2Flood) settle(t testing.TB) (closed bool) {
	t.Helper()
	f.mu.Lock()
	err := f.fr.WritePing(false, [8]byte{1})
	f.mu.Unlock()
	if err != nil {
		<-f.closed
		return true
	}
	select {
	case <-f.pings:
		return false
	case <-f.closed:
		return true
	case <-time.After(2 * time.Minute):
		t.Fatal("no PING answer: the server did not read the flood")
		return false
	}
}

// bigHeaders is a HeartbeatStream call's header list with size bytes of
// metadata, hpack-encoded without indexing (so one block serves every
// stream).
func bigHeaders(authority string, size int) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	field := func(k, v string) { _ = enc.WriteField(hpack.HeaderField{Name: k, Value: v, Sensitive: true}) }
	field(":method", "POST")
	field(":scheme", "http")
	field(":path", "/seatd.v1.HeartbeatService/HeartbeatStream")
	field(":authority", authority)
	field("content-type", "application/grpc")
	field("te", "trailers")
	value := strings.Repeat("m", 8000)
	for i := 0; i*len(value) < size; i++ {
		field(fmt.Sprintf("x-pad-%d", i), value)
	}
	return buf.Bytes()
}

// TestMetadataFloodIsRefused: heartbeat streams opened with megabytes of
// metadata each (no key needed) are reset before they run, and seatd's RSS
// stays within a bound that the flood would cross many times over if it
// were held (issue 24, item 9: 16 MiB a call was accepted; 283 streams of
// 10 MB took the RSS from 25 MB to 2.77 GB).
func TestMetadataFloodIsRefused(t *testing.T) {
	t.Parallel()
	p := start(t, options{args: []string{"--first-message-timeout", "5m"}})
	// 30 streams a connection; a connection the server closes is replaced.
	const streams, perConn, metadata = 120, 30, 4 << 20 // 480 MB offered
	block := bigHeaders(p.GRPCAddr, metadata)
	before := p.rssBytes(t)
	var floods []*h2Flood
	for offered := 0; offered < streams; {
		f := newH2Flood(t, p.GRPCAddr)
		floods = append(floods, f)
		for n := 0; n < perConn && offered < streams; n++ {
			offered++
			if f.open(block) != nil {
				break
			}
		}
	}
	closed := 0
	for _, f := range floods {
		if f.settle(t) {
			closed++
		}
	}
	grown := p.rssBytes(t) - before
	t.Logf("RSS %d MB before, grown by %d MB after %d MB of metadata offered on %d connections (%d closed by the server)",
		before>>20, grown>>20, streams*metadata>>20, len(floods), closed)
	require.Less(t, grown, int64(200<<20), "the metadata was held")
	// Each stream was refused: reset, or its connection closed.
	for _, f := range floods {
		for range f.opened {
			select {
			case <-f.resets:
			case <-f.closed:
			case <-time.After(2 * time.Minute):
				t.Fatal("a stream over the header limit was neither reset nor its connection closed")
			}
		}
	}
	require.Zero(t, p.metric(t, "seatd_streams_open"))

	// A client within the limit is served as before.
	_, err := healthpb.NewHealthClient(p.conn).Check(testContext(t), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
}

// streamOn opens a heartbeat stream on conn for lease and returns it
// after its first answer, or the error that refused it.
func streamOn(ctx context.Context, conn *grpc.ClientConn, lease *seatdv1.AcquireSeatResponse) (seatdv1.HeartbeatService_HeartbeatStreamClient, error) {
	s, err := seatdv1.NewHeartbeatServiceClient(conn).HeartbeatStream(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()}); err != nil {
		_, err = s.Recv()
		return nil, err
	}
	if _, err := s.Recv(); err != nil {
		return nil, err
	}
	return s, nil
}

func (p *proc) ttlLicense(t testing.TB, seats int32, ttl time.Duration) *seatdv1.License {
	t.Helper()
	resp, err := p.admin().CreateLicense(p.asOperator(testContext(t)), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "attack", Seats: seats, LeaseTtl: durationpb.New(ttl),
	}})
	require.NoError(t, err)
	return resp.GetLicense()
}

// TestOneAddressCannotTakeEveryStream: one key holder opening streams on
// one lease from one address gets --max-streams-per-address of them; a
// client at another address still heartbeats and waits (issue 24, item 11:
// 10,100 streams on one lease left a fresh client TOO_MANY_STREAMS).
func TestOneAddressCannotTakeEveryStream(t *testing.T) {
	t.Parallel()
	const maxStreams, perAddress, tried = 60, 30, 70
	p := start(t, options{args: []string{"--max-streams", fmt.Sprint(maxStreams), "--max-streams-per-address", fmt.Sprint(perAddress)}})
	ctx := testContext(t)
	lic := p.ttlLicense(t, 1, time.Minute)
	lease, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "attacker"})
	require.NoError(t, err)
	opened, refused := 0, 0
	for range tried {
		_, err := streamOn(ctx, p.conn, lease)
		if err != nil {
			requireStatus(t, err, codes.ResourceExhausted, "TOO_MANY_STREAMS")
			refused++
			continue
		}
		opened++
	}
	require.Equal(t, perAddress, opened)
	require.Equal(t, tried-perAddress, refused)

	other := p.connFrom(t, "127.0.0.2")
	ownLic := p.ttlLicense(t, 1, time.Minute)
	own, err := seatdv1.NewSeatServiceClient(other).AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: ownLic.GetKey(), Fingerprint: "fresh"})
	require.NoError(t, err)
	_, err = streamOn(ctx, other, own)
	require.NoError(t, err, "a heartbeat stream from another address")
	wait, err := seatdv1.NewSeatServiceClient(other).WaitForSeat(ctx, &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "waiter"})
	require.NoError(t, err)
	first, err := wait.Recv()
	require.NoError(t, err, "a wait from another address")
	require.NotNil(t, first.GetPosition())
}

// TestSilentStreamsEndWithTheirLease: streams that heartbeat once and fall
// silent end when their lease has expired, and give back their goroutines
// (issue 24, item 11: 50 streams on a 2 s lease were open at 15 s).
func TestSilentStreamsEndWithTheirLease(t *testing.T) {
	t.Parallel()
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		testSilentStreamsEndWithTheirLease(t, start(t, options{}))
	})
	// The record's deadline lags the live one there (write-behind): the
	// expiry is decided by the live state.
	t.Run("distributed", func(t *testing.T) {
		t.Parallel()
		testSilentStreamsEndWithTheirLease(t, sharedBackend(t, "").startSeatd(t, "silent-streams"))
	})
}

func testSilentStreamsEndWithTheirLease(t *testing.T, p *proc) {
	ctx := testContext(t)
	base := p.metric(t, "go_goroutines")
	lic := p.ttlLicense(t, 1, 2*time.Second)
	lease, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "silent"})
	require.NoError(t, err)
	const n = 50
	ended := make(chan error, n)
	for range n {
		s, err := streamOn(ctx, p.conn, lease)
		require.NoError(t, err)
		go func() {
			for {
				if _, err := s.Recv(); err != nil {
					ended <- err
					return
				}
			}
		}()
	}
	// Each stream still open holds a goroutine. On a slow machine the
	// lease may already have lapsed for some of them: count only those
	// that had not ended by the time the metric was read.
	g := p.metric(t, "go_goroutines")
	open := n - len(ended)
	require.GreaterOrEqual(t, g, base+float64(open), "the streams hold goroutines (%d still open)", open)
	for range n {
		select {
		case err := <-ended:
			requireStatus(t, err, codes.FailedPrecondition, "LEASE_EXPIRED")
		case <-ctx.Done():
			t.Fatal("silent streams of an expired lease are still open")
		}
	}
	waitUntil(t, 30*time.Second, "the streams' goroutines to end", func() (bool, string) {
		g := p.metric(t, "go_goroutines")
		return g < base+n/2, fmt.Sprintf("%v goroutines (%v before)", g, base)
	})
	// They were told the truth: the expiry is recorded, no heartbeat
	// revives the lease.
	_, err = p.heartbeats().Heartbeat(ctx, &seatdv1.HeartbeatRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, "LEASE_EXPIRED")
}

// TestIdleConnectionsFromOneAddressLeaveRoom: connections that never send
// a byte, from one address, hold at most --max-connections-per-address
// file descriptors; a client at another address is served at once rather
// than after --connection-timeout (issue 24, item 12: 11,000 such
// connections made grpc-health-probe time out).
func TestIdleConnectionsFromOneAddressLeaveRoom(t *testing.T) {
	t.Parallel()
	const maxConns, perAddress, flood = 100, 20, 150
	p := start(t, options{args: []string{
		"--max-connections", fmt.Sprint(maxConns), "--max-connections-per-address", fmt.Sprint(perAddress),
		"--connection-timeout", "10m", "--http-read-timeout", "10m",
	}})
	base := p.fds(t)
	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			_ = c.Close()
		}
	})
	for _, addr := range []string{p.GRPCAddr, p.HTTPAddr} {
		for range flood {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			require.NoError(t, err) // the kernel accepts into the backlog
			idle = append(idle, c)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // far below --connection-timeout
	defer cancel()
	resp, err := healthpb.NewHealthClient(p.connFrom(t, "127.0.0.2")).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err, "health check from another address during the flood")
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	r, err := httpClientFrom("127.0.0.2").Get(p.url("/healthz"))
	require.NoError(t, err, "HTTP from another address during the flood")
	_, _ = io.Copy(io.Discard, r.Body)
	r.Body.Close()
	require.Equal(t, http.StatusOK, r.StatusCode)

	// Both ports' floods hold at most their address's share (and the
	// clients above a few more).
	require.Less(t, p.fds(t), base+2*perAddress+20, "descriptors held by one address's idle connections")
	require.Positive(t, p.metric(t, `seatd_connections_refused_total{listener="grpc"}`))
}

// TestStartFitsTheFileLimit: both listeners' --max-connections and a
// reserve must fit RLIMIT_NOFILE; a value given that does not is refused
// with the numbers, a default is lowered with a warning (issue 24, item
// 12: 2 × 10,000 connections reached the process's limit of 20,000).
func TestStartFitsTheFileLimit(t *testing.T) {
	t.Parallel()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed: %v", err)
	}
	dir := t.TempDir()
	args := []string{"--nofile=3000:3000", seatdBin, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--data-dir", dir, "--operator-key", testOperatorKey, "--drain-delay", "0s"}
	cmd := exec.Command(prlimit, append(args, "--max-connections", "5000")...)
	cmd.Env = seatdEnv(nil)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Equal(t, 1, cmd.ProcessState.ExitCode(), "%s", out)
	require.Contains(t, string(out), "--max-connections 5000 needs 11024 file descriptors")
	require.Contains(t, string(out), "lower --max-connections to at most 988")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	logs := &syncbuffer.Buffer{}
	run := exec.CommandContext(ctx, prlimit, args...)
	run.Env = seatdEnv(nil)
	run.Stdout, run.Stderr = logs, logs
	run.Cancel = func() error { return run.Process.Signal(os.Interrupt) }
	require.NoError(t, run.Start())
	defer func() { cancel(); _ = run.Wait() }()
	waitUntil(t, startTimeout, "seatd to serve with --max-connections lowered", func() (bool, string) {
		return strings.Contains(logs.String(), "seatd serving"), logs.String()
	})
	require.Contains(t, logs.String(), "--max-connections lowered to fit the file descriptor limit")
	require.Contains(t, logs.String(), "to=988")
}
