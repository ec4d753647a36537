// Package image holds seatd's Containerfile; this test builds the image with
// `make image` (or takes SEATD_IMAGE, one already built), checks its
// configuration, runs its default command with buildah and acquires a seat
// through it.
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

	"github.com/stretchr/testify/require"
)

const repoRoot = "../.."

// startDeadline bounds how long the image's seatd may take to answer
// /readyz: far more than it needs (a second or two), so that only a seatd
// that never serves fails, however busy the machine.
const startDeadline = 3 * time.Minute

// ociConfig is the part of `buildah inspect --type image` the test reads.
type ociConfig struct {
	OCIv1 struct {
		Config struct {
			User         string              `json:"User"`
			ExposedPorts map[string]struct{} `json:"ExposedPorts"`
			Env          []string            `json:"Env"`
			Entrypoint   []string            `json:"Entrypoint"`
			Cmd          []string            `json:"Cmd"`
			Volumes      map[string]struct{} `json:"Volumes"`
			WorkingDir   string              `json:"WorkingDir"`
			Labels       map[string]string   `json:"Labels"`
		} `json:"config"`
	} `json:"OCIv1"`
}

func buildah(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("buildah")
	require.NoError(t, err, "this test needs buildah: apt-get install -y buildah (scripts/preflight.sh installs it)")
	return p
}

// imageName builds the image with make image unless SEATD_IMAGE names one.
func imageName(t *testing.T) string {
	t.Helper()
	if name := os.Getenv("SEATD_IMAGE"); name != "" {
		return name
	}
	out, err := exec.Command("make", "--no-print-directory", "-s", "-C", repoRoot, "image/name").Output()
	require.NoError(t, err, "make image/name")
	name := strings.TrimSpace(string(out))
	cmd := exec.Command("make", "--no-print-directory", "-C", repoRoot, "image")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "make image:\n%s", b)
	return name
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

func TestImageServesAndGrantsASeat(t *testing.T) {
	bh := buildah(t)
	image := imageName(t)

	// The configuration: non-root by number, the data volume, the ports,
	// the default command serving embedded mode from /data.
	var cfg ociConfig
	require.NoError(t, json.Unmarshal(run(t, bh, "inspect", "--type", "image", image), &cfg))
	c := cfg.OCIv1.Config
	require.Equal(t, "65532:65532", c.User, "a numeric non-root user (runAsNonRoot can check it)")
	require.Contains(t, c.Volumes, "/data")
	require.Contains(t, c.ExposedPorts, "7070/tcp")
	require.Contains(t, c.ExposedPorts, "8080/tcp")
	require.Equal(t, []string{"/usr/local/bin/seatd"}, c.Entrypoint)
	require.Empty(t, c.Cmd, "the default command is seatd serving")
	require.Subset(t, c.Env, []string{"SEATD_DATA_DIR=/data", "SEATD_GRPC_ADDR=0.0.0.0:7070", "SEATD_HTTP_ADDR=0.0.0.0:8080"})
	for _, l := range []string{"title", "description", "version", "revision", "created", "source", "licenses"} {
		require.NotEmpty(t, c.Labels["org.opencontainers.image."+l], "label org.opencontainers.image.%s", l)
	}

	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	ctr := "seatd-imagetest-" + hex.EncodeToString(suffix)
	run(t, bh, "from", "--pull=never", "--name", ctr, image)
	t.Cleanup(func() { _ = exec.Command(bh, "rm", ctr).Run() })

	// Chroot isolation shares the host's network: seatd listens on free
	// loopback ports, set through its variables so that the command is the
	// image's own. buildah gives a chroot-run process a file descriptor
	// limit of 1,024 (or what containers.conf says), under seatd's
	// connection caps' reserve: a containers.conf of the test's own raises it.
	grpcAddr, httpAddr := freeAddr(t), freeAddr(t)
	conf := filepath.Join(t.TempDir(), "containers.conf")
	require.NoError(t, os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = [\"nofile=8192:8192\"]\n"), 0o644))
	args := []string{"run", "--isolation", "chroot",
		"--env", "SEATD_GRPC_ADDR=" + grpcAddr, "--env", "SEATD_HTTP_ADDR=" + httpAddr,
		"--env", "SEATD_DRAIN_DELAY=0s", ctr, "--"}
	srv := exec.Command(bh, append(args, c.Entrypoint...)...)
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

	base := "http://" + httpAddr
	ctx, cancel := context.WithTimeout(context.Background(), startDeadline)
	defer cancel()
	for {
		code, body := get(ctx, base+"/readyz")
		if code == http.StatusOK {
			require.Equal(t, "ready", strings.TrimSpace(body))
			break
		}
		select {
		case <-exited:
			t.Fatalf("the image's seatd exited before it was ready:\n%s", out.String())
		case <-ctx.Done():
			t.Fatalf("the image's seatd was not ready within %s (last: %d %q)", startDeadline, code, body)
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.Contains(t, out.String(), "data_dir=/data", "embedded mode, data in /data")

	// The health check compose runs, in the image, with the image's settings.
	run(t, bh, "run", "--isolation", "chroot", "--env", "SEATD_HTTP_ADDR="+httpAddr, ctr, "--",
		"/usr/local/bin/seatd-healthcheck", "/readyz")

	// The image's seatctl makes a license with the operator key seatd
	// generated into /data; the host acquires its one seat over REST.
	lic := run(t, bh, "run", "--isolation", "chroot", ctr, "--",
		"/usr/local/bin/seatctl", "--addr", grpcAddr, "--key-file", "/data/operator.key",
		"licenses", "create", "--seats", "1", "--name", "image-test", "--ttl", "10m", "-o", "json")
	var license struct {
		Key string `json:"key"`
	}
	require.NoError(t, json.Unmarshal(lic, &license), "seatctl licenses create -o json: %s", lic)
	require.NotEmpty(t, license.Key, "seatctl licenses create -o json: %s", lic)

	code, body := post(ctx, base+"/v1/leases", map[string]string{"licenseKey": license.Key, "fingerprint": "image-a"})
	require.Equal(t, http.StatusOK, code, body)
	var granted struct {
		LeaseToken string `json:"leaseToken"`
		SeatsInUse int    `json:"seatsInUse"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &granted))
	require.NotEmpty(t, granted.LeaseToken)
	require.Equal(t, 1, granted.SeatsInUse)
	code, body = post(ctx, base+"/v1/leases", map[string]string{"licenseKey": license.Key, "fingerprint": "image-b"})
	require.Equal(t, http.StatusTooManyRequests, code, "the one seat is held: %s", body)
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
	defer resp.Body.Close()
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
