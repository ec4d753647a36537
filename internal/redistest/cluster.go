// Package redistest starts private Redis servers for tests: a Redis Cluster
// of a few masters on loopback ports of their own, torn down when the test
// ends. It needs redis-server and redis-cli (Debian: redis-server).
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a running Redis Cluster with no replicas.
type Cluster struct {
	Addrs []string // host:port of each master
	procs []*exec.Cmd
}

// URL is the cluster's address as seatd takes it (--redis-url).
func (c *Cluster) URL() string {
	u := "redis+cluster://" + c.Addrs[0]
	for i, a := range c.Addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// Client returns a cluster client for the test's own checks.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// StartCluster starts a cluster of n masters (n >= 3, as redis-cli requires),
// each with its data in a temporary directory and no persistence, and waits
// until it serves every slot. It fails the test, saying what to install,
// when redis-server or redis-cli is missing.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (needed for a private Redis Cluster): run `apt-get install -y redis-server` or `scripts/services.sh --install`")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli is not installed (needed to create a Redis Cluster): run `apt-get install -y redis-tools`")
	}
	c := &Cluster{}
	t.Cleanup(c.stop)
	dir := t.TempDir()
	for i := range n {
		port, bus := freePort(t), freePort(t)
		cmd := exec.Command(server, "--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(bus),
			"--bind", "127.0.0.1", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", i)),
			"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		c.procs = append(c.procs, cmd)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c.Addrs = append(c.Addrs, addr)
		if err := waitFor(10*time.Second, func() error { return ping(addr) }); err != nil {
			t.Fatalf("redis-server on %s did not answer: %v; output: %s", addr, err, out.String())
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	// Every node must agree that every slot is served before a test starts.
	for _, addr := range c.Addrs {
		err := waitFor(30*time.Second, func() error {
			rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
			defer func() { _ = rdb.Close() }()
			info, err := rdb.ClusterInfo(context.Background()).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("cluster_state not ok yet")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Redis Cluster node %s: %v", addr, err)
		}
	}
	return c
}

func (c *Cluster) stop() {
	for _, p := range c.procs {
		_ = p.Process.Signal(syscall.SIGKILL)
		_ = p.Wait()
	}
}

func ping(addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// waitFor polls f until it succeeds or the time is up.
func waitFor(limit time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
