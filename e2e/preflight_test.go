package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPreflightListsEverythingMissing: make test's first step stops within
// seconds, before building anything, naming every missing piece with the
// command that installs it, and passes where all is there.
func TestPreflightListsEverythingMissing(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)

	// make test runs it first, and nothing else before it.
	out, err := exec.Command("make", "-C", root, "-n", "--no-print-directory", "test").CombinedOutput()
	require.NoError(t, err, "%s", out)
	first := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	require.Contains(t, first, "scripts/preflight.sh", "the first step of make test: %s", out)

	// A PATH with the shell's basics but no server, promtool, Node or
	// openssl.
	bin := t.TempDir()
	for _, tool := range []string{"bash", "sed", "awk", "id", "dirname", "grep", "cat", "env", "go"} {
		p, err := exec.LookPath(tool)
		require.NoError(t, err, tool)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join(root, "scripts/preflight.sh"), "--check")
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "SEATD_TEST_PG_BIN=" + t.TempDir()}
	start := time.Now()
	missing, err := cmd.CombinedOutput()
	require.Error(t, err, "preflight passed with nothing installed: %s", missing)
	require.Less(t, time.Since(start), 30*time.Second, "preflight is a quick check")
	for _, want := range []string{"nothing was built", "postgresql", "redis-server", "prometheus", "openssl", "jq", "Node.js >= 20", "apt-get install -y "} {
		require.Contains(t, string(missing), want, "preflight output:\n%s", missing)
	}

	// Here (make test's machine) everything is installed.
	ok, err := exec.Command(filepath.Join(root, "scripts/preflight.sh"), "--check").CombinedOutput()
	require.NoError(t, err, "%s", ok)
}

// TestPreflightWaitsForTheAptLock: as root, the preflight's apt-get waits
// for another package manager to let go of its locks (unattended-upgrades,
// a second make test) instead of stopping make test with "Could not get
// lock". Here apt-get is a stand-in that finds the lock held twice, then
// installs the one missing program (chromium); every call must also ask
// apt-get itself to wait for dpkg's lock (DPkg::Lock::Timeout).
func TestPreflightWaitsForTheAptLock(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)

	// This machine's PATH less Chromium, apt-get and id, as in
	// TestConsolePreflightNamesChromium.
	bin := t.TempDir()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			switch name := e.Name(); name {
			case "chromium", "chromium-browser", "apt-get", "id":
			default:
				if _, err := os.Lstat(filepath.Join(bin, name)); err == nil {
					continue // an earlier PATH entry wins
				}
				_ = os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name))
			}
		}
	}
	state := t.TempDir()
	stub := func(name, script string) {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/bash\n"+script), 0o755))
	}
	stub("id", `[[ "$1" == -u ]] && { echo 0; exit 0; }; exec /usr/bin/id "$@"`+"\n")
	stub("apt-get", `
echo "$*" >> "`+state+`/calls"
n=$(wc -l < "`+state+`/calls")
if ((n <= 2)); then
  echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
  exit 100
fi
for a in "$@"; do
  if [[ $a == chromium ]]; then printf '#!/bin/sh\n' > "`+bin+`/chromium"; chmod +x "`+bin+`/chromium"; fi
done
exit 0
`)
	cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join(root, "scripts/preflight.sh"))
	cmd.Env = append(os.Environ(), "PATH="+bin, "APT_LOCK_WAIT=120")
	out, err := cmd.CombinedOutput()
	// Where only chromium was missing the preflight now passes; where more
	// is missing than the stand-in installs, it lists it (exit 1). Never
	// apt-get's own failure (exit 100) on the lock.
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		require.Equal(t, 1, exit.ExitCode(), "preflight stopped while another apt-get held the lock:\n%s", out)
		require.Contains(t, string(out), "make test cannot run here yet", "%s", out)
	}
	require.Contains(t, string(out), "waiting")

	calls, err := os.ReadFile(filepath.Join(state, "calls"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	require.GreaterOrEqual(t, len(lines), 4, "two refused calls, then update and install: %s", calls)
	for _, l := range lines {
		require.Contains(t, l, "-o DPkg::Lock::Timeout=120", "every apt-get call waits for dpkg's lock: %s", calls)
	}
	require.Contains(t, lines[len(lines)-1], "install", "%s", calls)
	require.Contains(t, lines[len(lines)-1], "chromium", "%s", calls)
}
