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

// TestREADMEFeatures runs the README's "Selling modules: features and
// versions" section as a person types it, as TestREADMEQuickstart does the
// Quickstart: a seatd started as make run starts it, then every sh block of
// the section in order, in one bash, from a directory laid out as a clone
// after make run. The section continues in the quickstart's second
// terminal, so the script first sets what the quickstart set there (its
// `export SEATCTL_…` and `URL=` lines). The only change to the commands is
// the addresses. After them the test checks what the reader was told.
//
// The section's dates are relative to now (jq's `now`), so that it keeps
// working whenever it runs; its one wait is a 3 s sleep past an expiry it set
// 2 s ahead, an order of instants, not a timing.
func TestREADMEFeatures(t *testing.T) {
	t.Parallel()
	commands := quickstartEnvironment(t) + "\n" + strings.Join(readmeSection(t, "Selling modules: features and versions"), "\n")
	out := runAsTyped(t, "the README's features section", commands, `
[[ $MOD_ID == lic_* && $MOD_KEY == slk_* && $R2024 == "$MOD_ID".* ]] ||
  fail "a variable is not what it should be: $MOD_ID $MOD_KEY $R2024"
[[ $(jq -r .lease.grantId <<<"$R") == "$R2024" ]] || fail "the 2024 copy did not take the 2024 grant: $R"
[[ $(jq -r .lease.feature <<<"$R") == render ]] || fail "the render lease does not say its feature: $R"
GRANTS=$(bin/seatctl licenses get $MOD_ID -o json | jq -c '[.grants[] | {feature, version, seats}]')
[[ $GRANTS == '[{"feature":"render","version":"2024","seats":2},{"feature":"render","version":"2025","seats":3},{"feature":"sim","version":"","seats":2}]' ]] ||
  fail "the license's grants: $GRANTS"
# ws-1: its base lease, its render lease of 2024 (asked for twice), and the
# 2025 one it took when 2024 ran out.
WS1=$(bin/seatctl leases ls $MOD_ID -o json | jq -c '[.leases[] | select(.fingerprint == "ws-1") | .grantId] | sort')
R2025=$(render ws-1 2024 | jq -r .lease.grantId) # the 2025 lease again
[[ $R2025 == "$MOD_ID".* && $R2025 != "$R2024" && $WS1 == "$(jq -nc --arg a "$R2024" --arg b "$R2025" '["", $a, $b] | sort')" ]] ||
  fail "ws-1 should hold a base lease and two render leases: $WS1"
RENDER=$(bin/seatctl leases ls $MOD_ID --feature render -o json | jq -c '[.leases[] | .fingerprint] | sort')
[[ $RENDER == '["ws-1","ws-1","ws-2"]' ]] || fail "the render leases: $RENDER"
`)
	for _, want := range []string{
		`"feature":"sim","seats":2}`,                    // the grant created over REST
		`{"grant":"2024",`,                              // the 2024 copy: the grant that runs out first
		`"seatsInUse":1,"seatLimit":2}`,                 // its seats are the 2024 grant's
		`{"grant":"2025","seatsInUse":1,"seatLimit":3}`, // the 2025 copy
		`{"reason":"VERSION_NOT_LICENSED",`,             // the 2026 copy
		"LICENSE_EXPIRED",                               // the heartbeat after the grant ran out
		`{"grant":"2025","seatsInUse":2,"seatLimit":3}`, // and the copy's next acquisition
	} {
		require.Contains(t, out, want, "the README's features section output:\n%s", out)
	}
}

// TestFeaturesPageCurl runs the curl-only walk-through of
// docs/concepts/features.md as typed, as TestREADMEFeatures runs the
// README's section.
func TestFeaturesPageCurl(t *testing.T) {
	t.Parallel()
	commands := strings.Join(markdownSection(t, "docs/concepts/features.md", "Walk-through with curl only"), "\n")
	out := runAsTyped(t, "the features page's curl walk-through", commands, `
[[ $LIC_ID == lic_* && $KEY == slk_* && $G2024 == "$LIC_ID".* ]] ||
  fail "a variable is not what it should be: $LIC_ID $KEY $G2024"
[[ $(jq -r .lease.grantId <<<"$A") == "$G2024" ]] || fail "the 2024 copy did not take the 2024 grant: $A"
GRANTS=$(curl -s -H "$H" $URL/v1/admin/licenses/$LIC_ID | jq -c '[.grants[] | {feature, version}]')
[[ $GRANTS == '[{"feature":"render","version":"2025"},{"feature":"sim","version":""}]' ]] ||
  fail "the license's grants after the delete: $GRANTS"
`)
	for _, want := range []string{
		`"version":"2024"}`,                // the 2024 copy's grant
		`"version":"2025"}`,                // the 2025 copy's
		`"reason":"VERSION_NOT_LICENSED",`, // the 2026 copy
		`"highest_version":"2025"`,         // and what it could have
		"LICENSE_EXPIRED",                  // the heartbeat after the grant ran out
		`{"revokedLeases":1}`,              // the delete
		"GRANT_NOT_FOUND",                  // the second delete
		"HTTP 404",
	} {
		require.Contains(t, out, want, "the features page's curl walk-through output:\n%s", out)
	}
}

// runAsTyped runs commands (copied from a page) in one bash, from a
// directory laid out as a clone after make run (bin/seatctl, seatd-data/
// with the operator key seatd made itself) beside a seatd started as make
// run starts it, then checks (bash, which may call fail). The only change
// to the commands is the addresses: 127.0.0.1:7070 and 127.0.0.1:8080
// become this seatd's, since other tests run beside it. It returns what
// the script printed, and fails the test if it failed.
func runAsTyped(t *testing.T, what, commands, checks string) string {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s needs %s: apt-get install -y %s (scripts/preflight.sh installs it)", what, tool, tool)
	}
	dir := t.TempDir()
	p := start(t, options{noOperatorKey: true, dataDir: filepath.Join(dir, "seatd-data")})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(buildSeatctl(t), filepath.Join(dir, "bin", "seatctl")))

	commands = strings.NewReplacer("127.0.0.1:7070", p.GRPCAddr, "127.0.0.1:8080", p.HTTPAddr).Replace(commands)
	require.NotContains(t, commands, "127.0.0.1:7070")
	script := "set -euo pipefail\n" + commands + `
# The test's own checks, after the page's commands.
fail() { echo "checks: $*"; exit 1; }
` + checks + `
echo "checks: done"
`
	// A bound on a hung command only: the scripts sleep a few seconds once
	// and make a few dozen calls.
	cmd := exec.CommandContext(stepContext(t, 5*time.Minute), "bash", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	require.NoError(t, err, "%s failed:\n%s", what, out)
	require.Contains(t, out, "checks: done", "%s output:\n%s", what, out)
	return out
}

// quickstartEnvironment is what the Quickstart sets in its second terminal
// for the sections after it: its `export SEATCTL_…` and `URL=` lines.
func quickstartEnvironment(t *testing.T) string {
	t.Helper()
	var env []string
	for _, block := range readmeQuickstart(t) {
		for _, line := range strings.Split(block, "\n") {
			if strings.HasPrefix(line, "export SEATCTL_") || strings.HasPrefix(line, "URL=") {
				env = append(env, line)
			}
		}
	}
	require.Len(t, env, 2, "the Quickstart sets SEATCTL_* and URL, one line each")
	return strings.Join(env, "\n")
}
