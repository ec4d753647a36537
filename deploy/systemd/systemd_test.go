// Package systemd holds seatd's systemd units and settings file; these tests
// install them with `make install` and check them with systemd-analyze.
package systemd

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/pgtest"
	"github.com/seatd/seatd/server/daemon"
)

// repoRoot is where the Makefile is.
const repoRoot = "../.."

// makeInstall runs `make install` with vars (NAME=value) and fails the test
// with make's output if it fails. go test puts its own go first on PATH, so
// make builds with the go running the test.
func makeInstall(t *testing.T, vars ...string) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", repoRoot, "install"}, vars...)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make install %s:\n%s", strings.Join(vars, " "), out)
}

// TestMakeInstallHonoursDESTDIR stages an install and runs the binaries from
// the staged tree, as a package build would.
func TestMakeInstallHonoursDESTDIR(t *testing.T) {
	dest := t.TempDir()
	makeInstall(t, "DESTDIR="+dest)

	bin := filepath.Join(dest, "usr/local/bin")
	out, err := exec.Command(filepath.Join(bin, "seatd"), "--version").CombinedOutput()
	require.NoError(t, err, "seatd --version: %s", out)
	require.True(t, strings.HasPrefix(string(out), "seatd "), "seatd --version printed %q", out)
	out, err = exec.Command(filepath.Join(bin, "seatctl"), "--help").CombinedOutput()
	require.NoError(t, err, "seatctl --help: %s", out)
	require.Contains(t, string(out), "Usage:")

	// seatd migrate up, as seatd-migrate.service runs it: the URL from the
	// environment.
	migrate := exec.Command(filepath.Join(bin, "seatd"), "migrate", "up")
	migrate.Env = append(os.Environ(), "SEATD_POSTGRES_URL="+schemaURL(t))
	out, err = migrate.CombinedOutput()
	require.NoError(t, err, "seatd migrate up: %s", out)
	require.Contains(t, string(out), "applied", "seatd migrate up: %s", out)

	unit := filepath.Join(dest, "usr/local/lib/systemd/system/seatd.service")
	require.Equal(t, []string{"/usr/local/bin/seatd"}, unitValues(t, unit)["ExecStart"], "ExecStart names the installed path, without DESTDIR")
	migrateUnit := filepath.Join(dest, "usr/local/lib/systemd/system/seatd-migrate.service")
	require.Equal(t, []string{"/usr/local/bin/seatd migrate up"}, unitValues(t, migrateUnit)["ExecStart"])

	env := filepath.Join(dest, "etc/seatd/seatd.env")
	fi, err := os.Stat(env)
	require.NoError(t, err, "the settings file is installed")
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the settings file may hold secrets")

	// A second install keeps the operator's settings.
	require.NoError(t, os.WriteFile(env, []byte("SEATD_LOG_FORMAT=json\n"), 0o640))
	makeInstall(t, "DESTDIR="+dest)
	b, err := os.ReadFile(env)
	require.NoError(t, err)
	require.Equal(t, "SEATD_LOG_FORMAT=json\n", string(b), "make install overwrote /etc/seatd/seatd.env")
}

// TestInstalledUnitsVerify installs under a temporary PREFIX (so that
// ExecStart names a binary that exists) and checks both units with
// systemd-analyze verify, which must print nothing: it reports an unknown
// or unparsable setting on stderr and still exits 0.
func TestInstalledUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	require.NoError(t, err, "this test needs systemd-analyze: apt-get install -y systemd (scripts/preflight.sh installs it)")
	root := t.TempDir()
	makeInstall(t, "PREFIX="+root+"/usr", "SYSCONFDIR="+root+"/etc")
	for _, u := range []string{"seatd.service", "seatd-migrate.service"} {
		cmd := exec.Command(analyze, "verify", filepath.Join(root, "usr/lib/systemd/system", u))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Run(), "systemd-analyze verify %s:\n%s", u, out.String())
		require.Empty(t, out.String(), "systemd-analyze verify %s has findings", u)
	}
}

// TestServiceIsHardenedAndFitsTheDaemon checks the settings the unit
// promises, and its limits against seatd's own defaults.
func TestServiceIsHardenedAndFitsTheDaemon(t *testing.T) {
	v := unitValues(t, "seatd.service")
	for key, want := range map[string]string{
		"DynamicUser":           "yes",
		"StateDirectory":        "seatd",
		"NoNewPrivileges":       "yes",
		"ProtectSystem":         "strict",
		"ProtectHome":           "yes",
		"PrivateTmp":            "yes",
		"EnvironmentFile":       "-/etc/seatd/seatd.env",
		"Environment":           "SEATD_DATA_DIR=/var/lib/seatd",
		"CapabilityBoundingSet": "",
	} {
		require.Equal(t, []string{want}, v[key], "seatd.service %s", key)
	}
	require.Equal(t, []string{"AF_INET AF_INET6 AF_UNIX"}, v["RestrictAddressFamilies"])

	cfg, err := daemon.ParseConfig(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	nofile, err := strconv.Atoi(v["LimitNOFILE"][0])
	require.NoError(t, err, "LimitNOFILE")
	require.GreaterOrEqual(t, nofile, 2*cfg.MaxConnections+1024,
		"LimitNOFILE must hold both ports' --max-connections and seatd's reserve, or seatd lowers its caps")
	stop, err := time.ParseDuration(v["TimeoutStopSec"][0])
	require.NoError(t, err, "TimeoutStopSec")
	require.Greater(t, stop, cfg.DrainDelay+cfg.ShutdownTimeout,
		"TimeoutStopSec must exceed --drain-delay + --shutdown-timeout, or systemd kills seatd mid-drain")

	m := unitValues(t, "seatd-migrate.service")
	require.Equal(t, []string{"oneshot"}, m["Type"])
	require.Equal(t, []string{"/etc/seatd/seatd.env"}, m["EnvironmentFile"], "migrate reads the same settings (and needs them)")
}

// unitValues reads a unit file's Key=value lines (every section) into
// key → values in order.
func unitValues(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		require.True(t, ok, "%s: not Key=value: %q", path, line)
		out[k] = append(out[k], val)
	}
	require.NoError(t, sc.Err())
	return out
}

// schemaURL is the URL of a fresh schema on the test PostgreSQL, dropped
// when the test ends.
func schemaURL(t *testing.T) string {
	_, u := pgtest.FreshSchema(t, "install")
	return u
}
