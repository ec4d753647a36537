package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// raceEnabled is set by race_test.go when the tests run with -race; the
// binary built by TestMain then has the race detector too.
var raceEnabled bool

// seatdBin is the seatd binary under test.
var seatdBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if bin := os.Getenv("SEATD_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: SEATD_BIN=%s is not usable: %v (run `make build`)\n", bin, err)
			return 1
		}
		seatdBin = abs
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "seatd-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	seatdBin = filepath.Join(dir, "seatd")
	if err := buildSeatd(seatdBin); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building seatd failed (set SEATD_BIN to use a prebuilt binary): %v\n", err)
		return 1
	}
	return m.Run()
}

func buildSeatd(out string) error {
	goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		return err
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		// A data race in the server then fails the test that met it: the
		// race detector makes the process exit non-zero (see stopOK).
		args = append(args, "-race")
	}
	args = append(args, "github.com/seatd/seatd/server/cmd/seatd")
	cmd := exec.Command(goTool, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// toolPath returns the path of a CLI tool built by `make tools`. A missing
// tool fails the test: these tests are part of `make test`, never skipped.
func toolPath(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("SEATD_TOOLS_BIN")
	if dir == "" {
		t.Fatalf("SEATD_TOOLS_BIN is not set: run `make tools` and set SEATD_TOOLS_BIN=<repo>/bin (`make test` does both)")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found in SEATD_TOOLS_BIN=%s (%v): run `make tools`", name, dir, err)
	}
	return p
}
