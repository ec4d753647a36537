package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
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
	flag.Parse()
	widenParallel()
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

// e2eParallelPerCPU is how many e2e tests run at once per CPU unless
// -test.parallel says otherwise. go test's default (GOMAXPROCS) suits tests
// that compute; these mostly wait on seatd processes (a deadline to pass, a
// drain delay, a restart), so on 2 cores the 1-minute TestChaos alone held
// half the slots and every other test queued behind the one left.
const e2eParallelPerCPU = 4

// widenParallel raises -test.parallel to e2eParallelPerCPU × GOMAXPROCS when
// the command line did not set it. Tests that run together never share a
// data directory, port, schema or key prefix: each starts its own seatd on
// 127.0.0.1:0 (or on ports freePort picked), in its own t.TempDir(), on its
// own sharedBackend or private servers.
func widenParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(e2eParallelPerCPU*runtime.GOMAXPROCS(0)))
	}
}
