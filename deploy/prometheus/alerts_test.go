// Package prometheus holds seatd's alert rules; this test checks them with
// a real rules checker.
package prometheus

import (
	"os/exec"
	"testing"
)

func promtool(t *testing.T, args ...string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is needed to check the alert rules: install it with `sudo apt-get install prometheus` (Debian/Ubuntu); .ci/run does this")
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	t.Logf("promtool %v:\n%s", args, out)
	if err != nil {
		t.Fatalf("promtool %v: %v", args, err)
	}
}

func TestAlertRulesAreValid(t *testing.T) {
	t.Parallel()
	promtool(t, "check", "rules", "alerts.yaml")
}

func TestAlertRulesFireWhenTheyShould(t *testing.T) {
	t.Parallel()
	promtool(t, "test", "rules", "alerts_test.yaml")
}
