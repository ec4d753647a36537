package redistest

import (
	"bytes"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Server is a private redis-server.
type Server struct{ Addr string }

// URL is the server's address as seatd takes it (--redis-url).
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// StartServer starts a redis-server without persistence on a loopback port
// of its own, with extra configuration args (e.g. "--maxmemory-policy",
// "allkeys-lru"), and stops it when the test ends.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (needed for a private Redis): run `apt-get install -y redis-server` or `scripts/services.sh --install`")
	}
	port := freePort(t)
	argv := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir()}, args...)
	cmd := exec.Command(bin, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	})
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := waitFor(10*time.Second, func() error { return ping(s.Addr) }); err != nil {
		t.Fatalf("redis-server on %s did not answer: %v; output: %s", s.Addr, err, out.String())
	}
	return s
}
