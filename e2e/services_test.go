package e2e

// Backing services of the distributed-mode tests: the shared PostgreSQL and
// Redis (a fresh schema and key prefix per test), and private servers that
// a test may kill, restart or stop (a redis-server on its own port, a
// PostgreSQL cluster in a temporary directory). A missing server or binary
// fails the test with what to run; nothing is skipped.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/syncbuffer"
)

const (
	defaultTestPostgresURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultTestRedisURL    = "redis://127.0.0.1:6379/0"
	servicesHint           = "run `scripts/services.sh` (or `scripts/services.sh --install`, which apt-get installs postgresql and redis-server), " +
		"or point SEATD_TEST_POSTGRES_URL / SEATD_TEST_REDIS_URL at running servers"
)

func sharedPostgresURL() string {
	if u := os.Getenv("SEATD_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultTestPostgresURL
}

func sharedRedisURL() string {
	if u := os.Getenv("SEATD_TEST_REDIS_URL"); u != "" {
		return u
	}
	return defaultTestRedisURL
}

// shared holds the connections the tests use to create and inspect schemas
// and key prefixes on the shared servers.
var shared struct {
	once sync.Once
	pg   *pgxpool.Pool
	rdb  *redis.Client
	err  error
}

func sharedServers(t testing.TB) (*pgxpool.Pool, *redis.Client) {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var pg *pgxpool.Pool
		cfg, err := pgxpool.ParseConfig(sharedPostgresURL())
		if err == nil {
			cfg.MaxConns = sharedPoolConns
			pg, err = pgxpool.NewWithConfig(ctx, cfg)
		}
		if err == nil {
			err = pg.Ping(ctx)
		}
		if err != nil {
			shared.err = fmt.Errorf("PostgreSQL is not reachable at %s: %v\n%s", sharedPostgresURL(), err, servicesHint)
			return
		}
		opts, err := redis.ParseURL(sharedRedisURL())
		if err != nil {
			shared.err = fmt.Errorf("bad SEATD_TEST_REDIS_URL %q: %v", sharedRedisURL(), err)
			return
		}
		rdb := redis.NewClient(opts)
		if err := rdb.Ping(ctx).Err(); err != nil {
			shared.err = fmt.Errorf("redis is not reachable at %s: %v\n%s", sharedRedisURL(), err, servicesHint)
			return
		}
		shared.pg, shared.rdb = pg, rdb
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.pg, shared.rdb
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// backend is where a group of seatd instances keeps its data: a PostgreSQL
// URL (with the schema in search_path) and a Redis URL and key prefix.
type backend struct {
	PGURL    string
	RedisURL string
	Prefix   string
	// onShared: PGURL is on the shared PostgreSQL, whose connections the
	// instances share with every other test (sharedPGInstances).
	onShared bool
}

// The shared PostgreSQL allows 100 connections (Debian's default) to
// everything that runs at once: this package's tests, the other packages'
// (go test runs packages in parallel) and whatever else uses the server.
// This package keeps to about sharedPGInstances × (instancePGConns + 2)
// + sharedPoolConns of them, whatever the machine's size and -parallel:
const (
	// instancePGConns is each instance's pool (--pg-max-conns); besides it
	// an instance holds the leader election's connection and, while it
	// starts, the migrations'.
	instancePGConns = 4
	// sharedPGInstances bounds the instances running on the shared
	// PostgreSQL at once (pgSlots): 8 × 6 = 48 connections.
	sharedPGInstances = 8
	// sharedPoolConns is the pool the tests' own queries use (sharedServers).
	sharedPoolConns = 4
)

// pgSlots holds one token per running instance on the shared PostgreSQL,
// taken before it starts and given back when its process exits.
var pgSlots = make(chan struct{}, sharedPGInstances)

// takePGSlot waits for a slot (for at most eventTimeout: a test that holds
// slots and waits for one more must not wait forever on others that do the
// same; past that it goes ahead, over the bound, and says so) and returns
// the function that gives it back.
func takePGSlot(t testing.TB) (giveBack func()) {
	t.Helper()
	select {
	case pgSlots <- struct{}{}:
		return sync.OnceFunc(func() { <-pgSlots })
	case <-time.After(eventTimeout):
		t.Logf("%d seatd instances have run on the shared PostgreSQL for %s: starting one more beyond that bound", sharedPGInstances, eventTimeout)
		return func() {}
	}
}

// withSearchPath adds search_path=schema to a PostgreSQL URL.
func withSearchPath(t testing.TB, pgURL, schema string) string {
	t.Helper()
	u, err := url.Parse(pgURL)
	require.NoError(t, err, "PostgreSQL URL %q", pgURL)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// sharedBackend is a fresh schema on the shared PostgreSQL and a fresh key
// prefix on redisURL (the shared Redis when empty); both are removed when
// the test ends.
func sharedBackend(t testing.TB, redisURL string) *backend {
	t.Helper()
	pg, rdb := sharedServers(t)
	name := "e2e_" + randomHex(6)
	_, err := pg.Exec(context.Background(), "CREATE SCHEMA "+name)
	require.NoError(t, err, "create schema")
	b := &backend{PGURL: withSearchPath(t, sharedPostgresURL(), name), RedisURL: redisURL, Prefix: name + ":", onShared: true}
	if redisURL == "" {
		b.RedisURL = sharedRedisURL()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pg.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
		if redisURL == "" {
			if err := deleteKeys(ctx, rdb, b.Prefix); err != nil {
				t.Errorf("delete Redis keys %s*: %v", b.Prefix, err)
			}
		}
	})
	return b
}

// deleteKeys deletes every key under a prefix.
func deleteKeys(ctx context.Context, rdb *redis.Client, prefix string) error {
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := rdb.Del(ctx, keys[:n]...).Err(); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// db opens a connection to the backend's PostgreSQL (retrying for up to
// 15s, e.g. right after a restart), closed when the test ends.
func (b *backend) db(t testing.TB) *pgx.Conn {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, b.PGURL)
		cancel()
		if err == nil {
			t.Cleanup(func() { _ = conn.Close(context.Background()) })
			return conn
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot connect to PostgreSQL %s: %v", b.PGURL, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startSeatd starts one distributed-mode instance on b.
func (b *backend) startSeatd(t testing.TB, instanceID string, args ...string) *proc {
	t.Helper()
	all := []string{
		"--postgres-url", b.PGURL,
		"--redis-url", b.RedisURL,
		"--redis-key-prefix", b.Prefix,
		"--instance-id", instanceID,
		"--connect-timeout", "20s",
		"--shutdown-timeout", "10s",
		"--pg-max-conns", strconv.Itoa(instancePGConns),
	}
	if !b.onShared {
		return start(t, options{args: append(all, args...)})
	}
	giveBack := takePGSlot(t)
	t.Cleanup(giveBack) // start failed, or the process outlives the test
	p := start(t, options{args: append(all, args...)})
	go func() {
		<-p.done
		giveBack()
	}()
	return p
}

// startCluster starts n instances on b, named <name>-<random>-<i>.
func (b *backend) startCluster(t testing.TB, n int, name string, args ...string) []*proc {
	t.Helper()
	base := name + "-" + randomHex(3)
	procs := make([]*proc, n)
	for i := range procs {
		procs[i] = b.startSeatd(t, fmt.Sprintf("%s-%d", base, i), args...)
	}
	return procs
}

// kill9 kills seatd with SIGKILL and waits for it.
func (p *proc) kill9() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		p.t.Fatalf("seatd did not die after SIGKILL")
	}
}

// stopAllOK stops the running instances at once with SIGTERM and requires
// each to exit cleanly with no data race.
func stopAllOK(t testing.TB, procs ...*proc) {
	t.Helper()
	var running []*proc
	for _, p := range procs {
		if p.running() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			running = append(running, p)
		} else {
			require.NotContains(t, p.Output(), "DATA RACE")
		}
	}
	for _, p := range running {
		code := p.wait()
		require.Equal(t, 0, code, "seatd exit code after SIGTERM; output:\n%s", p.Output())
		require.NotContains(t, p.Output(), "DATA RACE")
	}
}

// ---- private redis-server ----

// redisServer is a redis-server of one test, on its own port, without
// persistence: a restart starts it empty.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncbuffer.Buffer
}

func startPrivateRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (needed for a private Redis): run `apt-get install -y redis-server` or `scripts/services.sh --install`")
	}
	r := &redisServer{t: t, bin: bin, dir: t.TempDir()}
	for attempt := 0; ; attempt++ {
		r.port = freePort(t)
		if err := r.launch(); err == nil {
			break
		} else if attempt == 4 {
			t.Fatalf("private redis-server did not start: %v", err)
		}
	}
	t.Cleanup(func() { r.kill() })
	return r
}

func (r *redisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// launch starts redis-server on r.port and waits until it answers PING.
func (r *redisServer) launch() error {
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", r.dir)
	out := &syncbuffer.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.mu.Lock()
	r.cmd, r.done, r.out = cmd, done, out
	r.mu.Unlock()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			return fmt.Errorf("redis-server exited: %s", out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("redis-server did not answer PING within 10s: %v; output: %s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops redis-server with SIGKILL (no shutdown, nothing saved).
func (r *redisServer) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// restartEmpty starts a new, empty redis-server on the same port.
func (r *redisServer) restartEmpty() {
	r.t.Helper()
	require.NoError(r.t, r.launch(), "restart redis-server on port %d", r.port)
}

// ---- private PostgreSQL cluster ----

// pgCluster is a PostgreSQL cluster of one test, in a temporary directory,
// on its own port; it can be stopped and started again.
type pgCluster struct {
	t      testing.TB
	binDir string
	dir    string
	port   int
	asUser []string // runuser prefix when we are root
}

// postgresBinDir finds initdb and pg_ctl: $SEATD_TEST_PG_BIN, the newest
// /usr/lib/postgresql/*/bin, or PATH.
func postgresBinDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("SEATD_TEST_PG_BIN"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi < vj
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	t.Fatalf("initdb/pg_ctl not found (needed for a private PostgreSQL cluster): run `apt-get install -y postgresql` " +
		"or `scripts/services.sh --install`, or set SEATD_TEST_PG_BIN to the directory holding initdb and pg_ctl")
	return ""
}

func startPrivatePostgres(t testing.TB) *pgCluster {
	t.Helper()
	c := &pgCluster{t: t, binDir: postgresBinDir(t)}
	dir, err := os.MkdirTemp("", "seatd-e2e-pg-")
	require.NoError(t, err)
	c.dir = dir
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as the postgres user.
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and there is no postgres user to run a private cluster as: %v (apt-get install -y postgresql creates it)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
		runuser, err := exec.LookPath("runuser")
		require.NoError(t, err, "runuser (util-linux) is needed to run PostgreSQL as the postgres user")
		c.asUser = []string{runuser, "-u", "postgres", "--"}
	}
	c.run("initdb", "-D", c.dataDir(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	for attempt := 0; ; attempt++ {
		c.port = freePort(t)
		if _, err := c.exec("pg_ctl", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "30", "-o", c.serverOptions(), "start"); err == nil {
			break
		} else if attempt == 4 {
			t.Fatalf("private PostgreSQL did not start: %v\n%s", err, c.log())
		}
	}
	t.Cleanup(func() {
		if _, err := c.exec("pg_ctl", "-D", c.dataDir(), "-m", "immediate", "-w", "stop"); err != nil && !strings.Contains(err.Error(), "not running") {
			t.Logf("stop private PostgreSQL: %v", err)
		}
		if t.Failed() {
			t.Logf("private PostgreSQL log:\n%s", c.log())
		}
	})
	return c
}

func (c *pgCluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *pgCluster) logFile() string { return filepath.Join(c.dir, "postgres.log") }

func (c *pgCluster) log() string {
	b, _ := os.ReadFile(c.logFile())
	return string(b)
}

func (c *pgCluster) serverOptions() string {
	// fsync=off is safe here: the tests crash PostgreSQL, never the machine.
	// Commits stay synchronous, so an acknowledged commit survives a crash.
	return fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
		c.port, c.dir)
}

// URL is the cluster's postgres database.
func (c *pgCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", c.port)
}

func (c *pgCluster) exec(tool string, args ...string) (string, error) {
	argv := append(append([]string{}, c.asUser...), filepath.Join(c.binDir, tool))
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

func (c *pgCluster) run(tool string, args ...string) {
	c.t.Helper()
	if _, err := c.exec(tool, args...); err != nil {
		c.t.Fatal(err)
	}
}

// stop stops the cluster: mode "immediate" is a crash (every connection
// dropped at once, recovery at the next start), "fast" a clean shutdown.
func (c *pgCluster) stop(mode string) {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.dataDir(), "-m", mode, "-w", "-t", "30", "stop")
}

// start starts the stopped cluster again on the same port.
func (c *pgCluster) start() {
	c.t.Helper()
	if _, err := c.exec("pg_ctl", "-D", c.dataDir(), "-l", c.logFile(), "-w", "-t", "30", "-o", c.serverOptions(), "start"); err != nil {
		c.t.Fatalf("%v\n%s", err, c.log())
	}
}

// privateBackend is a backend on a private PostgreSQL cluster (its public
// schema) and the given Redis.
func privateBackend(c *pgCluster, redisURL string) *backend {
	return &backend{PGURL: c.URL(), RedisURL: redisURL, Prefix: "seatd-e2e:"}
}

// freePort returns a loopback TCP port that was free a moment ago, below
// the kernel's ephemeral range: a server that stops and starts again on it
// (a private Redis or PostgreSQL restarted, an instance of a rolling
// restart) finds it free again, since no outgoing connection, of this test
// or of those running beside it, can take it meanwhile as one can take a
// port that listening on :0 handed out.
func freePort(t testing.TB) int {
	t.Helper()
	lo := ephemeralPortsFrom()
	require.Greater(t, lo, 11000, "the ephemeral port range starts too low to pick ports below it")
	for attempt := 0; ; attempt++ {
		require.Less(t, attempt, 1000, "no free port found below %d", lo)
		port := 10000 + mathrand.IntN(lo-11000)
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			require.NoError(t, ln.Close())
			return port
		}
	}
}

// ephemeralPortsFrom is the first port of the kernel's ephemeral range.
var ephemeralPortsFrom = sync.OnceValue(func() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				return v
			}
		}
	}
	return 32768
})
