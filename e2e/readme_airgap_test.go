package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestREADMEAirGapped runs the README's "Air-gapped sites" section as a
// person types it, as TestREADMEPolicy runs the site policy section: a
// directory holding bin/seatd and bin/seatctl (the binaries under test),
// then every sh block of the section in order, in one bash, on ports of
// its own in place of the README's. The section starts its site's seatd
// itself and stops it; after it the test checks what the reader was told
// from the output and the files left: the file's seats the limit, the
// admin's change refused LICENSE_FILE_LOCKED, the renewal in force, the
// usage export verified (and refused once edited).
func TestREADMEAirGapped(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq", "head", "base64"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the README's air-gapped section needs %s (scripts/preflight.sh installs it)", tool)
	}
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(seatdBin, filepath.Join(dir, "bin", "seatd")))
	require.NoError(t, os.Symlink(buildSeatctl(t), filepath.Join(dir, "bin", "seatctl")))

	commands := strings.Join(readmeSection(t, "Air-gapped sites"), "\n")
	for _, port := range []string{"7171", "8181"} {
		require.Contains(t, commands, "127.0.0.1:"+port)
		commands = strings.ReplaceAll(commands, "127.0.0.1:"+port, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	script := "set -euo pipefail\n" + commands + `
# The test's own checks, after the page's commands (seatd is stopped: files only).
fail() { echo "checks: $*"; exit 1; }
SERIAL=$(bin/seatctl vendor inspect airgap/site/site.lic --pub airgap/vendor/vendor.pub -o json | jq -r .file.serial)
[[ $SERIAL == 2 ]] || fail "the site's file is serial $SERIAL, not 2"
grep -q 'msg="license file reloaded: in force".*serial=2' airgap/site/seatd.log || fail "seatd did not log serial 2 in force"
sed 's/"peak_seats": 3,/"peak_seats": 2,/' airgap/site/usage.txt > airgap/vendor/edited.txt
cmp -s airgap/site/usage.txt airgap/vendor/edited.txt && fail "the export has no peak of 3 to edit"
if bin/seatctl vendor verify-usage --pub airgap/vendor/vendor.pub --file airgap/vendor/plant4-2.lic airgap/vendor/edited.txt; then
  fail "an edited usage export verified"
else
  echo "edited export: exit $?"
fi
echo "checks: done"
`
	// A bound on a hung command only: the section makes a few dozen calls
	// and waits for one seatd to start and drain.
	cmd := exec.CommandContext(stepContext(t, 5*time.Minute), "bash", "-c", script)
	cmd.Dir = dir
	// Its own process group: a seatd the section started and did not stop
	// (a command failed before the kill) is killed with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEATCTL_") && !strings.HasPrefix(kv, "SEATD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	raw, err := cmd.CombinedOutput()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever is left of the group
	out := string(raw)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "airgap", "site", "seatd.log"))
		require.NoError(t, err, "the README's air-gapped section failed:\n%s\nseatd's log:\n%s", out, log)
	}
	require.Contains(t, out, "checks: done", "the README's air-gapped section output:\n%s", out)
	for _, want := range []string{
		"seatd site-id: site key ",                         // the request made, the key sealed
		"kept sealed; send the request to your vendor",     //
		"signature  verified: vendor key ",                 // vendor inspect
		`{"seatsInUse":2,"seatLimit":2}`,                   // the file's seats
		`{"reason":"SEATS_EXHAUSTED"}`,                     // and no more
		"(FailedPrecondition LICENSE_FILE_LOCKED)",         // the admin cannot raise them
		"refused: exit 6",                                  //
		`{"seatsInUse":3,"seatLimit":3}`,                   // the renewal's third seat
		"usage export  verified: signed by site key ",      // true-up
		"license file serial 2 of Acme Fabrication",        //
		"readable payload differs from the signed payload", // the edited export
		"edited export: exit 6",                            //
	} {
		require.Contains(t, out, want, "the README's air-gapped section output:\n%s", out)
	}
	// LICENSE FEATURE PEAK LICENSED OVER DENIALS SEAT-HOURS: 3 held at
	// once, the file's 3 seats, none over, ws-3's one refusal.
	require.Regexp(t, `(?m)^cad\s+-\s+3\s+3\s+0\s+1\s+\d+\.\d\d$`, out)
	require.Regexp(t, `(?m)^cad\s+render\s+0\s+1\s+0\s+0\s+0\.00$`, out)
}
