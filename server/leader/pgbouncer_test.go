package leader

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestLeaderElectedThroughSessionPgBouncer: the README allows a
// session-pooling PgBouncer in front of PostgreSQL. PgBouncer refuses
// startup parameters it does not know (FATAL: unsupported startup
// parameter), so the elector must send none beyond what PgBouncer passes
// on: a leader is elected through it, and every instance agrees which.
func TestLeaderElectedThroughSessionPgBouncer(t *testing.T) {
	t.Parallel()
	bouncer := startPgBouncer(t)
	var ca, cb counting
	a, b := newElector(t, bouncer, "a", &ca), newElector(t, bouncer, "b", &cb)
	a.Start(context.Background())
	b.Start(context.Background())
	if !waitFor(waitLong, func() bool { n, _ := leaders(a, b); return n == 1 }) {
		t.Fatalf("no leader elected through PgBouncer: %v; its log:\n%s", a.Health().Err, pgBouncerLog(t))
	}
	_, who := leaders(a, b)
	for _, e := range []*Elector{a, b} {
		id, err := e.LeaderID(t.Context())
		require.NoError(t, err)
		require.Equal(t, who, id, "instance %s sees another leader", e.InstanceID())
		require.Zero(t, e.Health().Failures, "instance %s could not reach the lock: %v", e.InstanceID(), e.Health().Err)
	}
}

// pgBouncerLogs holds each test's PgBouncer output, for failure messages.
var pgBouncerLogs sync.Map // test name -> *lockedBuffer

func pgBouncerLog(t *testing.T) string {
	if b, ok := pgBouncerLogs.Load(t.Name()); ok {
		return b.(*lockedBuffer).String()
	}
	return ""
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPgBouncer runs Debian's pgbouncer in session mode on a free port,
// in front of a fresh database of the test PostgreSQL (its own database,
// not a schema: PgBouncer 1.18 refuses a search_path startup parameter
// too), and returns a URL through it. It is stopped, and the database
// dropped, when the test ends.
func startPgBouncer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer" // Debian installs it there, off a user's PATH
		if _, serr := os.Stat(bin); serr != nil {
			t.Fatal("pgbouncer is needed for this test: install it with `sudo apt-get install -y pgbouncer` (scripts/preflight.sh does as root)")
		}
	}
	base := os.Getenv("SEATD_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(base)
	require.NoError(t, err)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	require.NoError(t, err, "PostgreSQL is needed for this test: run scripts/services.sh (or set SEATD_TEST_POSTGRES_URL)")
	db := fmt.Sprintf("seatd_bouncer_%d", rand.Uint32())
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	require.NoError(t, err)
	_ = admin.Close(ctx)
	t.Cleanup(func() { // after PgBouncer has stopped (cleanups run last first)
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})

	host, port := u.Hostname(), cmpOr(u.Port(), "5432")
	user := cmpOr(u.User.Username(), "postgres")
	server := fmt.Sprintf("host=%s port=%s dbname=%s user=%s pool_size=5", host, port, db, user)
	if pw, ok := u.User.Password(); ok {
		server += " password=" + pw
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755)) // read again by PgBouncer's own user after it drops root
	var lastErr error
	for range 5 { // a free port can be taken between finding it and PgBouncer binding it
		bport := freePort(t)
		cfg := fmt.Sprintf(`[databases]
seatd = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = session
max_client_conn = 20
default_pool_size = 5
`, server, bport)
		if os.Geteuid() == 0 {
			cfg += "user = nobody\n" // PgBouncer refuses to run as root
		}
		path := filepath.Join(dir, "pgbouncer.ini")
		require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
		out := &lockedBuffer{}
		cmd := exec.Command(bin, path)
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(bport))
		if lastErr = awaitListening(addr, exited); lastErr != nil {
			_ = cmd.Process.Kill()
			continue
		}
		pgBouncerLogs.Store(t.Name(), out)
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			pgBouncerLogs.Delete(t.Name())
		})
		through := url.URL{Scheme: "postgres", User: url.User(user), Host: addr, Path: "/seatd", RawQuery: "sslmode=disable"}
		return through.String()
	}
	t.Fatalf("pgbouncer did not start: %v", lastErr)
	return ""
}

// awaitListening waits until addr accepts connections, or the process
// exits.
func awaitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("pgbouncer exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("pgbouncer not listening on %s after 30s", addr)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
