package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsolePreflightNamesChromium: where everything else make test needs
// is installed but Chromium is not, the preflight stops at once naming the
// Debian package and the command that installs it.
func TestConsolePreflightNamesChromium(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)

	// This machine's PATH, every program in it linked into one directory,
	// less Chromium.
	bin := t.TempDir()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if name == "chromium" || name == "chromium-browser" {
				continue
			}
			if _, err := os.Lstat(filepath.Join(bin, name)); err == nil {
				continue // an earlier PATH entry wins
			}
			_ = os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name))
		}
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join(root, "scripts/preflight.sh"), "--check")
	cmd.Env = append(os.Environ(), "PATH="+bin)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "preflight passed without chromium: %s", out)
	require.Contains(t, string(out), "nothing was built")
	require.Contains(t, string(out), "  - chromium: install with")
	require.Regexp(t, `(?m)^ +(sudo )?apt-get install -y chromium$`, string(out), "only chromium is missing here")
	require.False(t, strings.Contains(string(out), "Node.js"), "%s", out)
}
