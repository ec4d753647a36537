package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/health" // client-side health checking (healthCheckConfig below)
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// logCounter is a slog.Handler that counts the client library's log
// records by level and message, so that a test can tell what it did
// behind the application's back (reconnects, retries, losses).
type logCounter struct {
	mu     *sync.Mutex
	counts map[string]int
	last   map[string]string // one example record per key
}

func newLogCounter() *logCounter {
	return &logCounter{mu: &sync.Mutex{}, counts: map[string]int{}, last: map[string]string{}}
}

func (h *logCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	key := r.Level.String() + " " + r.Message
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[key]++
	h.last[key] = b.String()
	return nil
}

func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }

func (h *logCounter) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.counts[level.String()+" "+msg]
}

// atLeast counts the records at level or above.
func (h *logCounter) atLeast(level slog.Level) (n int, examples []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, c := range h.counts {
		var l slog.Level
		if l.UnmarshalText([]byte(strings.Fields(k)[0])) == nil && l >= level {
			n += c
			examples = append(examples, fmt.Sprintf("%dx %s:%s", c, k, h.last[k]))
		}
	}
	sort.Strings(examples)
	return n, examples
}

func (h *logCounter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.counts))
	for k := range h.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %5d  %s (last:%s)", h.counts[k], k, h.last[k])
	}
	return b.String()
}

// roundRobinConfig is the client's own service config (retries) plus
// round_robin over every address and client-side health checking: what a
// client behind a DNS name with several instances would run.
func roundRobinConfig(t testing.TB) string {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(client.ServiceConfig), &cfg))
	cfg["loadBalancingConfig"] = []any{map[string]any{"round_robin": map[string]any{}}}
	cfg["healthCheckConfig"] = map[string]any{"serviceName": ""}
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	return string(out)
}

// dialAll is client.Dial over every address in addrs (a manual resolver
// and round_robin), logging into log.
func dialAll(t testing.TB, addrs []string, serviceConfig string, log *slog.Logger) *client.Client {
	t.Helper()
	r := manual.NewBuilderWithScheme("seatd-e2e")
	var st resolver.State
	for _, a := range addrs {
		st.Addresses = append(st.Addresses, resolver.Address{Addr: a})
	}
	r.InitialState(st)
	c, err := client.DialWithOptions("seatd-e2e:///seatd", client.Options{AutoHeartbeat: true, Logger: log},
		grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(serviceConfig))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stableAddrs are n distinct loopback addresses that an instance can leave
// and a new process take again (freePort).
func stableAddrs(t testing.TB, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for attempt := 0; len(out) < n; attempt++ {
		require.Less(t, attempt, 1000, "no %d distinct free ports found", n)
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		if !seen[addr] {
			seen[addr] = true
			out = append(out, addr)
		}
	}
	return out
}

// metricMatching sums the samples of a metric whose labels contain every
// one of labels (e.g. `grpc_method="HeartbeatStream"`).
func (p *proc) metricMatching(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	resp, err := httpClient.Get(p.url("/metrics"))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		require.NoError(t, err, "metric line %q", line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

// openStreams is how many heartbeat streams p has open now.
func (p *proc) openStreams(t testing.TB) int {
	t.Helper()
	started := p.metricMatching(t, "grpc_server_started_total", `grpc_method="HeartbeatStream"`)
	handled := p.metricMatching(t, "grpc_server_handled_total", `grpc_method="HeartbeatStream"`)
	return int(started - handled)
}

// connectionsTo counts this process's established TCP connections to addr
// (127.0.0.1:port), from /proc: how many of the test's clients are
// connected to an instance.
func connectionsTo(t testing.TB, addr string) int {
	t.Helper()
	_, portText, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	ours := map[string]bool{} // inodes of this process's sockets
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		link, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			ours[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, err := os.ReadFile("/proc/self/net/tcp")
	require.NoError(t, err)
	remote := fmt.Sprintf("0100007F:%04X", port) // 127.0.0.1:port as /proc writes it
	n := 0
	for _, line := range strings.Split(string(table), "\n")[1:] {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		f := strings.Fields(line)
		const established = "01"
		if len(f) > 9 && f[2] == remote && f[3] == established && ours[f[9]] {
			n++
		}
	}
	return n
}

// TestRollingRestartKeepsLeases: 200 applications on the Go client hold a
// seat each through three distributed instances (round_robin over all
// three); two instances are restarted one after the other (SIGTERM with a
// drain delay, clean exit, a new process on the same ports). No lease is
// lost and no error reaches the application: every lease is still
// heartbeated at the end, and releases work.
func TestRollingRestartKeepsLeases(t *testing.T) {
	t.Parallel()
	const (
		clients = 200
		// Heartbeat every 10 s. Shorter TTLs lost leases before any restart
		// when the machine was starved of CPU (race builds, 200 clients; at
		// a load of 40, with 30 s, 36 streams went unanswered for a TTL).
		ttl             = time.Minute
		drainDelay      = time.Second
		shutdownTimeout = 10 * time.Second
		restarts        = 2
	)
	b := sharedBackend(t, "")
	type slot struct{ grpc, http string }
	slots := make([]slot, 3)
	addrs := make([]string, len(slots))
	ports := stableAddrs(t, 2*len(slots))
	for i := range slots {
		slots[i] = slot{ports[2*i], ports[2*i+1]}
		addrs[i] = slots[i].grpc
	}
	run := randomHex(3)
	launch := func(i, generation int) *proc {
		return b.startSeatd(t, fmt.Sprintf("roll-%s-%d-g%d", run, i, generation),
			"--grpc-addr", slots[i].grpc, "--http-addr", slots[i].http,
			"--drain-delay", drainDelay.String(), "--shutdown-timeout", shutdownTimeout.String())
	}
	procs := make([]*proc, len(slots))
	for i := range procs {
		procs[i] = launch(i, 0)
	}
	lic := newLicense(t, procs[0], clients, ttl, "rolling")

	// The applications: one client (connection) each, all seats taken.
	logs := newLogCounter()
	log := slog.New(logs)
	cfg := roundRobinConfig(t)
	leases := make([]*client.Lease, clients)
	var (
		appErrs  atomic.Int64 // errors that reached application code
		mu       sync.Mutex
		examples []string
	)
	appError := func(format string, args ...any) {
		appErrs.Add(1)
		mu.Lock()
		defer mu.Unlock()
		if len(examples) < 10 {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	clis := make([]*client.Client, clients)
	for i := range clis {
		clis[i] = dialAll(t, addrs, cfg, log) // connects lazily
	}
	// The applications start a few at a time, as real ones do (200 dials
	// at one instant on a loaded machine timed out and exhausted the
	// client's retries), and take what a loaded machine needs (a 30 s
	// deadline each once failed 169 of them): the acquisitions may go on as
	// long as they make progress, and fail only when none completes for
	// eventTimeout.
	var (
		acquiring sync.WaitGroup
		acquired  atomic.Int64
		starting  = make(chan struct{}, 16)
	)
	for i, c := range clis {
		acquiring.Go(func() {
			defer acquired.Add(1)
			starting <- struct{}{}
			defer func() { <-starting }()
			l, err := c.Acquire(t.Context(), client.AcquireOptions{LicenseKey: lic.GetKey(), Fingerprint: fmt.Sprintf("app-%03d", i), Hostname: "host"})
			if err != nil {
				appError("app-%03d acquire: %v", i, err)
				return
			}
			leases[i] = l
		})
	}
	waitProgress(t, eventTimeout, fmt.Sprintf("%d acquisitions", clients), func() (bool, int, string) {
		n := int(acquired.Load())
		return n == clients, n, fmt.Sprintf("%d answered", n)
	})
	acquiring.Wait()
	require.Zero(t, appErrs.Load(), "acquisitions failed: %v", examples)

	// Lost() is watched for the whole test.
	watchDone := make(chan struct{})
	var watchers sync.WaitGroup
	for i, l := range leases {
		watchers.Go(func() {
			select {
			case <-l.Lost():
				appError("app-%03d lease lost: %v (reason %s)", i, l.Err(), client.Reason(l.Err()))
			case <-watchDone:
			}
		})
	}
	stopWatching := sync.OnceFunc(func() { close(watchDone); watchers.Wait() })
	t.Cleanup(stopWatching)

	// Every lease streams its heartbeats before the restarts begin. The
	// streams open one by one for as long as it takes a loaded machine (a
	// fixed 20 s once saw 193 of 200): the wait fails only when no new one
	// opens for a TTL.
	var perInstance []int
	waitProgress(t, ttl, fmt.Sprintf("all %d heartbeat streams open", clients), func() (bool, int, string) {
		if appErrs.Load() > 0 {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("before the restarts, errors reached the applications: %v; client log:%s", examples, logs)
		}
		total := 0
		perInstance = make([]int, len(procs))
		for i, p := range procs {
			perInstance[i] = p.openStreams(t)
			total += perInstance[i]
		}
		return total >= clients, total, fmt.Sprintf("%d open (per instance %v); client log:%s", total, perInstance, logs)
	})
	t.Logf("heartbeat streams per instance before the restarts: %v", perInstance)

	began := time.Now()
	for i := range restarts {
		old := procs[i]
		streams := old.openStreams(t)
		sigterm := time.Now()
		stopAllOK(t, old)
		took := time.Since(sigterm)
		t.Logf("instance %d (%d open streams) drained and exited 0 in %s", i, streams, took.Round(time.Millisecond))
		// gRPC's graceful stop and the HTTP shutdown have a shutdown timeout
		// each: a loaded machine may use some of both (16.5 s once).
		require.Less(t, took, drainDelay+2*shutdownTimeout, "instance %d: exit within drain delay + 2 shutdown timeouts", i)
		names, _ := loggedShutdownSteps(t, old.Output())
		require.Equal(t, shutdownSteps, names, "instance %d logs every shutdown step", i)
		procs[i] = launch(i, 1)
		// The clients find the new instance before the next one goes:
		// every client connects to it again (gRPC's reconnect backoff
		// grows while an instance is down, so this takes a varying while).
		launched := time.Now()
		waitProgress(t, 60*time.Second, fmt.Sprintf("all %d clients connected to the new instance %d", clients, i), func() (bool, int, string) {
			n := connectionsTo(t, slots[i].grpc)
			return n >= clients, n, fmt.Sprintf("%d connected", n)
		})
		t.Logf("every client connected to the new instance %d within %s", i, time.Since(launched).Round(time.Millisecond))
	}
	// Every lease heartbeats after the last restart (its deadline moves past
	// then + TTL), so none was left behind without a stream.
	restarted := time.Now()
	behind := func() (n int, example string) {
		for i, l := range leases {
			if l.ExpiresAt().Before(restarted.Add(ttl)) {
				n++
				example = fmt.Sprintf("app-%03d (deadline %s, Err %v)", i, l.ExpiresAt().Format(time.RFC3339Nano), l.Err())
			}
		}
		return n, example
	}
	waitProgress(t, 2*ttl, "every lease heartbeated after the restarts", func() (bool, int, string) {
		n, example := behind()
		return n == 0, clients - n, fmt.Sprintf("%d behind, e.g. %s", n, example)
	})
	t.Logf("rolling restart of %d of 3 instances took %s; every lease heartbeated %s after the last one",
		restarts, restarted.Sub(began).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))

	for i, l := range leases {
		if l.Err() != nil {
			appError("app-%03d: Err %v", i, l.Err())
		}
	}
	var active int
	for _, l := range procs[2].leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE) {
		if l.GetState() == seatdv1.LeaseState_LEASE_STATE_ACTIVE && time.Until(l.GetExpiresAt().AsTime()) > 0 {
			active++
		}
	}
	perInstance = make([]int, len(procs))
	for i, p := range procs {
		perInstance[i] = p.openStreams(t)
	}
	t.Logf("after the restarts: %d active leases listed; heartbeat streams per instance %v", active, perInstance)

	stopWatching()
	var releasing sync.WaitGroup
	for i, l := range leases {
		releasing.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := l.Release(ctx); err != nil {
				appError("app-%03d release: %v", i, err)
			}
		})
	}
	releasing.Wait()

	warnings, warned := logs.atLeast(slog.LevelWarn)
	reconnects := logs.count(slog.LevelDebug, "seatd asked to reconnect")
	t.Logf("errors that reached the applications: %d; client library warnings: %d; RECONNECTs followed: %d; client log:%s",
		appErrs.Load(), warnings, reconnects, logs)
	require.Zero(t, appErrs.Load(), "errors reached the applications: %v", examples)
	require.Equal(t, clients, active, "ListLeases shows every lease active")
	require.Positive(t, reconnects, "the restarted instances told their streams to reconnect")
	require.Zero(t, warnings, "the client library logged warnings: %v", warned)
	require.Positive(t, perInstance[0], "the restarted instance 0 serves streams again")
	require.Empty(t, procs[0].leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE), "every seat released")
	stopAllOK(t, procs...)
}
