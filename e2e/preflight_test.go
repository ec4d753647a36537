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
	for _, want := range []string{"nothing was built", "postgresql", "redis-server", "prometheus", "openssl", "Node.js >= 20", "apt-get install -y "} {
		require.Contains(t, string(missing), want, "preflight output:\n%s", missing)
	}

	// Here (make test's machine) everything is installed.
	ok, err := exec.Command(filepath.Join(root, "scripts/preflight.sh"), "--check").CombinedOutput()
	require.NoError(t, err, "%s", ok)
}
