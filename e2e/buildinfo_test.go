package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVersionAndBuildInfo: `seatd version` and `seatd --version` say which
// build this is, and /metrics says the same in seatd_build_info.
func TestVersionAndBuildInfo(t *testing.T) {
	t.Parallel()
	var line string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(seatdBin, arg).CombinedOutput()
		require.NoError(t, err, "seatd %s: %s", arg, out)
		if line == "" {
			line = string(out)
		}
		require.Equal(t, line, string(out), "seatd version and seatd --version agree")
	}
	m := regexp.MustCompile(`^seatd (\S+) \(revision (\S+), (go\S+)\)\n$`).FindStringSubmatch(line)
	require.NotNil(t, m, "seatd version: %q", line)
	version, revision, goVersion := m[1], m[2], m[3]

	p := start(t, options{})
	metrics := string(p.do(t, "GET", "/metrics", "", nil).requireCode(t, 200).Raw)
	require.Contains(t, metrics,
		fmt.Sprintf("\nseatd_build_info{goversion=%q,revision=%q,version=%q} 1\n", goVersion, revision, version))
}
