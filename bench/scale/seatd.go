package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// process is one seatd this harness started and can stop, restart and
// look into (its /proc status, its heap through --pprof-addr).
type process struct {
	bin                string
	args               []string // without the address flags
	grpcAddr, httpAddr string
	pprofAddr          string
	logPath            string
	cmd                *exec.Cmd
	exited             chan error
}

func newProcess(bin, logPath string, args []string) (*process, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	return &process{
		bin: bin, args: args, logPath: logPath,
		grpcAddr: ports[0], httpAddr: ports[1], pprofAddr: ports[2],
	}, nil
}

// freePorts returns n loopback addresses nobody listens on now.
func freePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// start runs seatd and returns how long it took to answer SERVING on gRPC
// health, from the moment it was started.
func (p *process) start(ctx context.Context) (time.Duration, error) {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	args := append([]string{"--grpc-addr", p.grpcAddr, "--http-addr", p.httpAddr, "--pprof-addr", p.pprofAddr}, p.args...)
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		_ = logf.Close()
		return 0, err
	}
	p.exited = make(chan error, 1)
	go func() { p.exited <- p.cmd.Wait(); _ = logf.Close() }()
	if err := p.waitServing(ctx, 5*time.Minute); err != nil {
		return 0, fmt.Errorf("%w (log: %s)", err, p.logPath)
	}
	return time.Since(began), nil
}

// waitServing asks gRPC health every few milliseconds until it says SERVING.
func (p *process) waitServing(ctx context.Context, limit time.Duration) error {
	// gRPC's reconnection backoff (1 s at first) would be most of what
	// is timed: try again within milliseconds instead.
	conn, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 2 * time.Millisecond, Multiplier: 1, MaxDelay: 2 * time.Millisecond},
			MinConnectTimeout: 50 * time.Millisecond,
		}))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			p.exited <- err
			return fmt.Errorf("seatd exited before serving: %v", err)
		default:
		}
		actx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		resp, err := hc.Check(actx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return errors.New("seatd did not serve within " + limit.String())
}

// stop sends SIGTERM and returns how long seatd took to exit.
func (p *process) stop() (time.Duration, error) {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0, nil
	}
	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	select {
	case err := <-p.exited:
		p.cmd = nil
		return time.Since(began), err
	case <-time.After(2 * time.Minute):
		_ = p.cmd.Process.Kill()
		err := <-p.exited
		p.cmd = nil
		return time.Since(began), fmt.Errorf("seatd did not stop within 2 minutes of SIGTERM: killed (%v)", err)
	}
}

// memory is what the kernel says of the process (bytes).
type memory struct{ rss, peak int64 }

// proc reads VmRSS and VmHWM (the peak RSS since start) of the process.
func (p *process) proc() (memory, error) {
	if p.cmd == nil || p.cmd.Process == nil {
		return memory{}, errors.New("seatd is not running")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return memory{}, err
	}
	defer func() { _ = f.Close() }()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc status %s: %w", k, err)
		}
		if k == "VmRSS" {
			m.rss = kb << 10
		} else {
			m.peak = kb << 10
		}
	}
	return m, sc.Err()
}

// heap is the Go heap after a forced collection (bytes): HeapAlloc, the
// live objects, and HeapInuse, the spans that hold them.
type heap struct{ alloc, inuse int64 }

// heap forces a collection in seatd (the heap profile's gc=1, through
// --pprof-addr) and reads the runtime.MemStats the profile ends with.
func (p *process) heap(ctx context.Context) (heap, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.pprofAddr+"/debug/pprof/heap?gc=1&debug=1", nil)
	if err != nil {
		return heap{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return heap{}, fmt.Errorf("heap profile: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return heap{}, fmt.Errorf("heap profile: %s", resp.Status)
	}
	var h heap
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for name, dst := range map[string]*int64{"# HeapAlloc = ": &h.alloc, "# HeapInuse = ": &h.inuse} {
			if v, ok := strings.CutPrefix(line, name); ok {
				if *dst, err = strconv.ParseInt(v, 10, 64); err != nil {
					return heap{}, fmt.Errorf("heap profile %q: %w", line, err)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return heap{}, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if h.inuse == 0 {
		return heap{}, errors.New("heap profile: no runtime.MemStats in it")
	}
	return h, nil
}
