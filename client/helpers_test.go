package client

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// testTiming is defaultTiming shrunk so that a test takes milliseconds.
func testTiming(clock *testClock) timing {
	return timing{
		now:               clock.now,
		clockCheck:        2 * time.Millisecond,
		backoffBase:       2 * time.Millisecond,
		backoffMax:        20 * time.Millisecond,
		reconnectJitter:   2 * time.Millisecond,
		minInterval:       time.Millisecond,
		lastChance:        time.Second,
		callTimeout:       time.Second,
		streamFailures:    3,
		unaryBeforeStream: 5,
	}
}

// testClock is the wall clock plus an offset a test can jump forward, as
// when a laptop wakes up.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) jump(d time.Duration) { c.offset.Add(int64(d)) }

type testBundle struct {
	fake   *fakeServer
	client *Client
	clock  *testClock
}

// setup serves a fakeServer (tuned by configure) over bufconn and returns a
// client for it. Everything is stopped, and checked for leaked goroutines,
// when the test ends.
func setup(t *testing.T, o Options, configure func(f *fakeServer)) *testBundle {
	t.Helper()
	checkNoLeaks(t) // registered first, so it runs after every other cleanup
	fake := newFakeServer()
	if configure != nil {
		configure(fake)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	seatdv1.RegisterSeatServiceServer(srv, fake)
	seatdv1.RegisterHeartbeatServiceServer(srv, fake)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(ServiceConfig),
	)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	clock := &testClock{}
	c := newClient(conn, o, testTiming(clock))
	t.Cleanup(func() { _ = c.Close() })
	return &testBundle{fake: fake, client: c, clock: clock}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func acquire(t *testing.T, b *testBundle) *Lease {
	t.Helper()
	l, err := b.client.Acquire(testContext(t), AcquireOptions{LicenseKey: "key", Fingerprint: "fp"})
	require.NoError(t, err)
	return l
}

func requireNotLost(t *testing.T, l *Lease) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Fatalf("lease lost: %v", l.Err())
	default:
	}
	require.NoError(t, l.Err())
}

func requireLost(t *testing.T, l *Lease) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not reported lost")
	}
}

// requireNotKept checks that nothing heartbeats l in the background: its
// keeper, the only thing that does, never ran or has exited, and the
// client runs no keeper at all. Unlike "no heartbeat within a while", this
// cannot pass by luck on a slow machine.
func requireNotKept(t *testing.T, b *testBundle, l *Lease, msg string) {
	t.Helper()
	if l.keep != nil {
		select {
		case <-l.keep.done:
		default:
			t.Fatalf("%s: the lease's keeper still runs", msg)
		}
	}
	b.client.mu.Lock()
	running := len(b.client.keepers)
	b.client.mu.Unlock()
	require.Zero(t, running, "%s: the client still runs keepers", msg)
}

// eventually waits for cond, checking every millisecond.
func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond, msg)
}

// checkNoLeaks fails the test if a goroutine of this package or of gRPC
// outlives it (the tests do not run in parallel, so any such goroutine is
// this test's). go.uber.org/goleak would do the same; it is not a
// dependency of the module.
func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() {
		var leaked []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked = leakedGoroutines()
			if len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if len(leaked) > 0 {
			t.Errorf("%d goroutines leaked:\n\n%s", len(leaked), bytes.Join(toBytes(leaked), []byte("\n\n")))
		}
	})
}

func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 || bytes.Contains(g, []byte("\ntesting.tRunner(")) {
			continue // this goroutine, or a parent test waiting in t.Run
		}
		if bytes.Contains(g, []byte("github.com/seatd/seatd/client.")) || bytes.Contains(g, []byte("google.golang.org/grpc")) {
			out = append(out, string(g))
		}
	}
	return out
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
