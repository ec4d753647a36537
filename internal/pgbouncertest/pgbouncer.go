// Package pgbouncertest runs a private PgBouncer for tests: Debian's
// pgbouncer in session mode in front of a fresh database of a PostgreSQL.
package pgbouncertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatd/seatd/internal/syncbuffer"
)

// Bouncer is a running PgBouncer.
type Bouncer struct {
	// URL reaches the fresh database through PgBouncer.
	URL string
	// Direct reaches the same database without PgBouncer (to arrange or
	// inspect it).
	Direct string
	log    *syncbuffer.Buffer
}

// Log is what PgBouncer has written so far.
func (b *Bouncer) Log() string { return b.log.String() }

// Start runs pgbouncer in session mode (auth_type any) on a free loopback
// port in front of a fresh database of the PostgreSQL at postgresURL, with
// at most poolSize server connections. The database gets its own name, not
// a schema, because PgBouncer before 1.20 refuses a search_path startup
// parameter. PgBouncer is stopped and the database dropped when the test
// ends. It fails the test, naming the package to install, when pgbouncer
// is missing.
func Start(t testing.TB, postgresURL string, poolSize int) *Bouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer" // Debian installs it there, off a user's PATH
		if _, serr := os.Stat(bin); serr != nil {
			t.Fatal("pgbouncer is needed for this test: install it with `sudo apt-get install -y pgbouncer` (scripts/preflight.sh does as root)")
		}
	}
	u, err := url.Parse(postgresURL)
	if err != nil {
		t.Fatalf("PostgreSQL URL: %v", err)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, postgresURL)
	if err != nil {
		t.Fatalf("PostgreSQL is needed for this test (scripts/services.sh): %v", err)
	}
	db := fmt.Sprintf("seatd_bouncer_%d", rand.Uint32())
	_, err = admin.Exec(ctx, "CREATE DATABASE "+db)
	_ = admin.Close(ctx)
	if err != nil {
		t.Fatalf("create database %s: %v", db, err)
	}
	t.Cleanup(func() { // runs after PgBouncer has stopped (cleanups run last first)
		c, err := pgx.Connect(context.Background(), postgresURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			_ = c.Close(context.Background())
		}
	})
	direct := *u
	direct.Path = "/" + db
	q := direct.Query()
	q.Del("search_path")
	direct.RawQuery = q.Encode()

	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	user := u.User.Username()
	if user == "" {
		user = "postgres"
	}
	server := fmt.Sprintf("host=%s port=%s dbname=%s user=%s pool_size=%d", host, port, db, user, poolSize)
	if pw, ok := u.User.Password(); ok {
		server += " password=" + pw
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // read by PgBouncer's own user after it drops root
		t.Fatal(err)
	}
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
max_client_conn = 200
default_pool_size = %d
`, server, bport, poolSize)
		if os.Geteuid() == 0 {
			cfg += "user = nobody\n" // PgBouncer refuses to run as root
		}
		path := filepath.Join(dir, "pgbouncer.ini")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out := &syncbuffer.Buffer{}
		cmd := exec.Command(bin, path)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start pgbouncer: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(bport))
		if lastErr = awaitListening(addr, exited); lastErr != nil {
			_ = cmd.Process.Kill()
			lastErr = fmt.Errorf("%w\n%s", lastErr, out.String())
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			// Stopped by our signal: its exit status says nothing.
			select {
			case err := <-exited:
				_ = err
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				err := <-exited
				_ = err
			}
		})
		through := url.URL{Scheme: "postgres", User: url.User(user), Host: addr, Path: "/seatd", RawQuery: "sslmode=disable"}
		return &Bouncer{URL: through.String(), Direct: direct.String(), log: out}
	}
	t.Fatalf("pgbouncer did not start: %v", lastErr)
	return nil
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

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
