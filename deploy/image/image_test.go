// Package image holds seatd's Containerfile; these tests build the image with
// `make image` (or take SEATD_IMAGE, one already built), check its
// configuration, run it with buildah, embedded and distributed, and acquire
// a seat through it.
package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/pgtest"
)

const repoRoot = "../.."

// startDeadline bounds how long the image's seatd may take to answer
// /readyz: far more than it needs (a second or two), so that only a seatd
// that never serves fails, however busy the machine.
const startDeadline = 3 * time.Minute

// ociConfig is the part of `buildah inspect --type image` the tests read.
type ociConfig struct {
	OCIv1 struct {
		Config struct {
			User         string              `json:"User"`
			ExposedPorts map[string]struct{} `json:"ExposedPorts"`
			Env          []string            `json:"Env"`
			Entrypoint   []string            `json:"Entrypoint"`
			Cmd          []string            `json:"Cmd"`
			Volumes      map[string]struct{} `json:"Volumes"`
			Labels       map[string]string   `json:"Labels"`
		} `json:"config"`
	} `json:"OCIv1"`
}

func buildah(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("buildah")
	require.NoError(t, err, "these tests need buildah: apt-get install -y buildah (scripts/preflight.sh installs it)")
	return p
}

var built struct {
	once  sync.Once
	name  string
	fault string
}

// imageName builds the image with make image, once for the package, unless
// SEATD_IMAGE names one.
func imageName(t *testing.T) string {
	t.Helper()
	if name := os.Getenv("SEATD_IMAGE"); name != "" {
		return name
	}
	built.once.Do(func() {
		out, err := exec.Command("make", "--no-print-directory", "-s", "-C", repoRoot, "image/name").Output()
		if err != nil {
			built.fault = "make image/name: " + err.Error()
			return
		}
		b, err := exec.Command("make", "--no-print-directory", "-C", repoRoot, "image").CombinedOutput()
		if err != nil {
			built.fault = "make image: " + err.Error() + "\n" + string(b)
			return
		}
		built.name = strings.TrimSpace(string(out))
	})
	if built.fault != "" {
		t.Fatal(built.fault)
	}
	return built.name
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), stderr.String())
	return out
}

// container is a working container of the image, removed when the test ends.
type container struct {
	t      *testing.T
	bh     string
	name   string
	config ociConfig
}

func newContainer(t *testing.T) *container {
	t.Helper()
	bh := buildah(t)
	image := imageName(t)
	c := &container{t: t, bh: bh, name: "seatd-imagetest-" + randomHex(4)}
	require.NoError(t, json.Unmarshal(run(t, bh, "inspect", "--type", "image", image), &c.config))
	run(t, bh, "from", "--pull=never", "--name", c.name, image)
	t.Cleanup(func() { _ = exec.Command(bh, "rm", c.name).Run() })
	return c
}

// exec runs a command in the container and returns its standard output.
// Chroot isolation shares the host's network.
func (c *container) exec(env []string, args ...string) []byte {
	c.t.Helper()
	a := []string{"run", "--isolation", "chroot"}
	for _, e := range env {
		a = append(a, "--env", e)
	}
	return run(c.t, c.bh, append(append(a, c.name, "--"), args...)...)
}

// served is the image's seatd, running its entry point.
type served struct {
	grpcAddr, base string
}

// serve runs the image's own entry point with env added to the image's, on
// free loopback ports (chroot isolation shares the host's network; the
// addresses are set through seatd's variables so that the command is the
// image's own), and waits until /readyz answers 200.
func (c *container) serve(env ...string) served {
	c.t.Helper()
	t := c.t
	// buildah gives a chroot-run process a file descriptor limit of 1,024
	// (or what containers.conf says), under seatd's connection caps'
	// reserve: a containers.conf of the test's own raises it.
	conf := filepath.Join(t.TempDir(), "containers.conf")
	require.NoError(t, os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = [\"nofile=8192:8192\"]\n"), 0o644))
	s := served{grpcAddr: freeAddr(t)}
	httpAddr := freeAddr(t)
	s.base = "http://" + httpAddr
	args := []string{"run", "--isolation", "chroot",
		"--env", "SEATD_GRPC_ADDR=" + s.grpcAddr, "--env", "SEATD_HTTP_ADDR=" + httpAddr, "--env", "SEATD_DRAIN_DELAY=0s"}
	for _, e := range env {
		args = append(args, "--env", e)
	}
	args = append(append(args, c.name, "--"), c.config.OCIv1.Config.Entrypoint...)
	srv := exec.Command(c.bh, args...)
	srv.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
	// Its own process group: buildah, its chroot runtime and seatd are
	// stopped together (buildah does not pass SIGTERM on).
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out syncBuffer
	srv.Stdout, srv.Stderr = &out, &out
	require.NoError(t, srv.Start())
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("the image's seatd:\n%s", out.String())
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), startDeadline)
	defer cancel()
	for {
		code, body := get(ctx, s.base+"/readyz")
		if code == http.StatusOK {
			require.Equal(t, "ready", strings.TrimSpace(body))
			break
		}
		select {
		case <-exited:
			t.Fatalf("the image's seatd exited before it was ready:\n%s", out.String())
		case <-ctx.Done():
			t.Fatalf("the image's seatd was not ready within %s (last: %d %q):\n%s", startDeadline, code, body, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The health check compose runs, in the image, with the image's settings.
	c.exec([]string{"SEATD_HTTP_ADDR=" + httpAddr}, "/usr/local/bin/seatd-healthcheck", "/readyz")
	return s
}

// grantsOneSeat makes a one-seat license with the image's seatctl and
// keyArgs, acquires its seat from the host over REST and is refused a second.
func (c *container) grantsOneSeat(s served, keyEnv []string, keyArgs ...string) {
	c.t.Helper()
	t := c.t
	args := append([]string{"/usr/local/bin/seatctl", "--addr", s.grpcAddr}, keyArgs...)
	lic := c.exec(keyEnv, append(args, "licenses", "create", "--seats", "1", "--name", "image-test", "--ttl", "10m", "-o", "json")...)
	var license struct {
		Key string `json:"key"`
	}
	require.NoError(t, json.Unmarshal(lic, &license), "seatctl licenses create -o json: %s", lic)
	require.NotEmpty(t, license.Key, "seatctl licenses create -o json: %s", lic)

	ctx, cancel := context.WithTimeout(context.Background(), startDeadline)
	defer cancel()
	code, body := post(ctx, s.base+"/v1/leases", map[string]string{"licenseKey": license.Key, "fingerprint": "image-a"})
	require.Equal(t, http.StatusOK, code, body)
	var granted struct {
		LeaseToken string `json:"leaseToken"`
		SeatsInUse int    `json:"seatsInUse"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &granted))
	require.NotEmpty(t, granted.LeaseToken)
	require.Equal(t, 1, granted.SeatsInUse)
	code, body = post(ctx, s.base+"/v1/leases", map[string]string{"licenseKey": license.Key, "fingerprint": "image-b"})
	require.Equal(t, http.StatusTooManyRequests, code, "the one seat is held: %s", body)
}

// TestImageServesAndGrantsASeat: the image's configuration, and its default
// command serving embedded mode with its data and generated operator key in
// /data.
func TestImageServesAndGrantsASeat(t *testing.T) {
	t.Parallel()
	c := newContainer(t)
	cfg := c.config.OCIv1.Config
	require.Equal(t, "65532:65532", cfg.User, "a numeric non-root user (runAsNonRoot can check it)")
	require.Contains(t, cfg.Volumes, "/data")
	require.Contains(t, cfg.ExposedPorts, "7070/tcp")
	require.Contains(t, cfg.ExposedPorts, "8080/tcp")
	require.Equal(t, []string{"/usr/local/bin/seatd"}, cfg.Entrypoint)
	require.Empty(t, cfg.Cmd, "the default command is seatd serving")
	require.Subset(t, cfg.Env, []string{"SEATD_DATA_DIR=/data", "SEATD_GRPC_ADDR=0.0.0.0:7070", "SEATD_HTTP_ADDR=0.0.0.0:8080"})
	for _, l := range []string{"title", "description", "version", "revision", "created", "source", "licenses"} {
		require.NotEmpty(t, cfg.Labels["org.opencontainers.image."+l], "label org.opencontainers.image.%s", l)
	}

	s := c.serve()
	c.grantsOneSeat(s, nil, "--key-file", "/data/operator.key")
}

// TestImageRunsDistributedAfterItsMigration runs the image as
// deploy/compose does: `migrate up` first, then seatd with automatic
// migration off, on a fresh schema of the test PostgreSQL and a fresh key
// prefix of the test Redis.
func TestImageRunsDistributedAfterItsMigration(t *testing.T) {
	t.Parallel()
	pgURL, redisURL, prefix := backend(t)
	c := newContainer(t)

	dbEnv := []string{"SEATD_POSTGRES_URL=" + pgURL}
	c.exec(dbEnv, "/usr/local/bin/seatd", "migrate", "up")
	status := string(c.exec(dbEnv, "/usr/local/bin/seatd", "migrate", "status"))
	require.NotEmpty(t, strings.TrimSpace(status), "seatd migrate status lists the migrations")
	require.NotContains(t, status, "pending", "seatd migrate status after up:\n%s", status)

	const key = "image-test-operator-key-0123456789"
	s := c.serve(append(dbEnv,
		"SEATD_REDIS_URL="+redisURL, "SEATD_REDIS_KEY_PREFIX="+prefix,
		"SEATD_OPERATOR_KEY="+key, "SEATD_AUTO_MIGRATE=false", "SEATD_PG_MAX_CONNS=4")...)
	c.grantsOneSeat(s, []string{"SEATCTL_KEY=" + key})
}

// backend is a fresh schema on the test PostgreSQL (SEATD_TEST_POSTGRES_URL,
// default the local one) and a fresh key prefix on the test Redis
// (SEATD_TEST_REDIS_URL); both are removed when the test ends.
func backend(t *testing.T) (pgURL, redisURL, prefix string) {
	t.Helper()
	schema, pgURL := pgtest.FreshSchema(t, "image")
	redisURL = envOr("SEATD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
	ctx, cancel := context.WithTimeout(context.Background(), startDeadline)
	defer cancel()
	opts, err := redis.ParseURL(redisURL)
	require.NoError(t, err, "SEATD_TEST_REDIS_URL")
	rdb := redis.NewClient(opts)
	require.NoError(t, rdb.Ping(ctx).Err(), "Redis at %s: run scripts/services.sh, or point SEATD_TEST_REDIS_URL at a running server", redisURL)
	prefix = schema + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = rdb.Del(ctx, iter.Val()).Err()
		}
		_ = rdb.Close()
	})
	return pgURL, redisURL, prefix
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	return do(req)
}

func post(ctx context.Context, url string, body any) (int, string) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	return do(req)
}

func do(req *http.Request) (int, string) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
