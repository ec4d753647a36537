// Command attack re-runs, by hand, the attacks a client without any key can
// make on a seatd (README, "Running on a network"), and reports what seatd
// did: the answers, its RSS (from /proc, so run it on the same machine) and
// whether its gRPC health stayed SERVING meanwhile. Loopback only.
//
//	attack -pid PID -grpc 127.0.0.1:7070 -http 127.0.0.1:8080 body|slow|streams|preface|nul
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

var (
	pid      = flag.Int("pid", 0, "seatd's process id (for its RSS)")
	grpcAddr = flag.String("grpc", "127.0.0.1:7070", "seatd's gRPC address")
	httpAddr = flag.String("http", "127.0.0.1:8080", "seatd's HTTP address")
	count    = flag.Int("n", 0, "how many (connections, streams, requests); 0: the attack's default")
	hold     = flag.Duration("hold", 15*time.Second, "how long to hold the connections or streams open")
)

func main() {
	flag.Parse()
	conn, err := grpc.NewClient(*grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	check(err)
	h := &healthWatch{client: healthpb.NewHealthClient(conn)}
	fmt.Printf("before: RSS %s\n", rss())
	h.start()
	switch flag.Arg(0) {
	case "body":
		body(or(*count, 8))
	case "slow":
		slow(or(*count, 12000))
	case "streams":
		streams(or(*count, 20000))
	case "preface":
		preface(or(*count, 3000))
	case "nul":
		nul(conn, or(*count, 2000))
	case "guess":
		guess(conn, or(*count, 20000))
	default:
		check(fmt.Errorf("name an attack: body, slow, streams, preface, nul, guess"))
	}
	h.stop()
	fmt.Printf("after: RSS %s; health during the attack: %s\n", rss(), h)
}

// body: POSTs of 64 MB each to /v1/leases, at once.
func body(n int) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", "http://"+*httpAddr+"/v1/leases", io.LimitReader(zeros{}, 64<<20))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				fmt.Printf("  body %d: %v\n", i, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			fmt.Printf("  body %d: %s %s\n", i, resp.Status, bytes.TrimSpace(b))
		}()
	}
	wg.Wait()
	fmt.Printf("  RSS right after: %s\n", rss())
}

// slow: connections that send headers and never finish the body.
func slow(n int) {
	var conns []net.Conn
	failed := 0
	for range n {
		c, err := net.DialTimeout("tcp", *httpAddr, 2*time.Second)
		if err != nil {
			failed++
			continue
		}
		_, _ = c.Write([]byte("POST /v1/leases HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"))
		conns = append(conns, c)
	}
	fmt.Printf("  %d slow connections open (%d dials failed); RSS %s\n", len(conns), failed, rss())
	time.Sleep(*hold)
	closed := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
		_ = c.Close()
	}
	fmt.Printf("  after %v: %d of them closed by seatd\n", *hold, closed)
}

// streams: heartbeat streams that never send a message, 500 to a
// connection (a connection allows --grpc-max-streams-per-connection).
func streams(n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var clients []seatdv1.HeartbeatServiceClient
	for range (n + 499) / 500 {
		conn, err := grpc.NewClient(*grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		check(err)
		defer func() { _ = conn.Close() }()
		clients = append(clients, seatdv1.NewHeartbeatServiceClient(conn))
	}
	var opened, refused, ended atomic.Int64
	reasons := sync.Map{}
	var wg sync.WaitGroup
	for i := range n {
		s, err := clients[i/500].HeartbeatStream(ctx)
		if err != nil {
			refused.Add(1)
			continue
		}
		opened.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Recv()
			ended.Add(1)
			st, _ := status.FromError(err)
			key := st.Code().String() + " " + st.Message()
			v, _ := reasons.LoadOrStore(key, new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
		}()
	}
	time.Sleep(2 * time.Second)
	fmt.Printf("  %d streams opened; RSS %s\n", opened.Load(), rss())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(*hold):
	}
	fmt.Printf("  within %v: %d ended by seatd:\n", *hold, ended.Load())
	reasons.Range(func(k, v any) bool {
		fmt.Printf("    %6d × %s\n", v.(*atomic.Int64).Load(), k)
		return true
	})
}

// preface: TCP connections to the gRPC port that never speak HTTP/2.
func preface(n int) {
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", *grpcAddr, 2*time.Second)
		if err == nil {
			conns = append(conns, c)
		}
	}
	fmt.Printf("  %d silent connections; RSS %s\n", len(conns), rss())
	time.Sleep(*hold)
	closed := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				if err == io.EOF {
					closed++
				}
				break
			}
		}
		_ = c.Close()
	}
	fmt.Printf("  after %v: %d of them closed by seatd\n", *hold, closed)
}

// nul: acquisitions with a NUL byte in the fingerprint, as fast as they go.
func nul(conn *grpc.ClientConn, n int) {
	client := seatdv1.NewSeatServiceClient(conn)
	codes := map[string]int{}
	start := time.Now()
	for range n {
		_, err := client.AcquireSeat(context.Background(), &seatdv1.AcquireSeatRequest{LicenseKey: "slk_guess", Fingerprint: "a\x00b"})
		st, _ := status.FromError(err)
		codes[st.Code().String()+" "+st.Message()]++
	}
	fmt.Printf("  %d requests in %v:\n", n, time.Since(start).Round(time.Millisecond))
	for k, v := range codes {
		fmt.Printf("    %6d × %s\n", v, k)
	}
}

// guess: acquisitions with made-up license keys, as fast as 16 callers go.
func guess(conn *grpc.ClientConn, n int) {
	client := seatdv1.NewSeatServiceClient(conn)
	var mu sync.Mutex
	codes := map[string]int{}
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				i := next.Load()
				_, err := client.AcquireSeat(context.Background(), &seatdv1.AcquireSeatRequest{LicenseKey: fmt.Sprintf("slk_guess%028d", i), Fingerprint: "x"})
				st, _ := status.FromError(err)
				msg, _, _ := strings.Cut(st.Message(), ";")
				mu.Lock()
				codes[st.Code().String()+" "+msg]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	fmt.Printf("  %d guesses in %v:\n", n, took.Round(time.Millisecond))
	for k, v := range codes {
		fmt.Printf("    %6d × %s (%.0f/s)\n", v, k, float64(v)/took.Seconds())
	}
}

// healthWatch checks gRPC health every 100 ms during the attack.
type healthWatch struct {
	client          healthpb.HealthClient
	ok, bad         atomic.Int64
	worst           atomic.Int64 // ns
	stopCh, stopped chan struct{}
}

func (h *healthWatch) start() {
	h.stopCh, h.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.stopped)
		for {
			select {
			case <-h.stopCh:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			t := time.Now()
			resp, err := h.client.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if d := int64(time.Since(t)); d > h.worst.Load() {
				h.worst.Store(d)
			}
			if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				h.ok.Add(1)
			} else {
				h.bad.Add(1)
			}
		}
	}()
}

func (h *healthWatch) stop() { close(h.stopCh); <-h.stopped }

func (h *healthWatch) String() string {
	return fmt.Sprintf("%d checks SERVING, %d failed, slowest %v", h.ok.Load(), h.bad.Load(), time.Duration(h.worst.Load()).Round(time.Millisecond))
}

func rss() string {
	if *pid == 0 {
		return "?"
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", *pid))
	if err != nil {
		return "?"
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func or(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		os.Exit(1)
	}
}
