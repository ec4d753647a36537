package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/syncbuffer"
)

// userMain is the program of a module outside this repository that uses the
// Go client as docs/guides/clients.md says: it acquires a seat, prints the
// lease's id, holds the seat until its stdin ends, then releases it.
const userMain = `package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/seatd/seatd/client"
)

func main() {
	ctx := context.Background()
	c, err := client.Dial(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	lease, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: os.Args[2], Fingerprint: "go-module"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lease.ID())
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := lease.Release(ctx); err != nil {
		log.Fatal(err)
	}
}
`

// TestGoClientFromAnotherModule builds a throwaway module outside the
// repository that requires github.com/seatd/seatd through a replace to this
// clone (the module is on no public proxy), runs it against seatd and checks
// that it held a seat and gave it back. Its dependencies come from the module
// cache (or GOPROXY as set): the clone's go.sum covers them, so nothing else
// is asked of the network.
func TestGoClientFromAnotherModule(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	goMod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go \S+$`).Find(goMod)
	require.NotNil(t, goLine, "the go line of %s/go.mod", repo)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	require.NoError(t, err)

	// The user's module, as the guide writes it.
	mod := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644))
	}
	write("go.mod", "module example.com/seatuser\n\n"+string(goLine)+"\n\n"+
		"require github.com/seatd/seatd v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/seatd/seatd => "+repo+"\n")
	write("go.sum", string(sum))
	write("main.go", userMain)

	goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "seatuser")
	build := exec.CommandContext(stepContext(t, 10*time.Minute), goTool, "build", "-o", bin, ".")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build of a module that requires github.com/seatd/seatd:\n%s", out)

	p := start(t, options{})
	lic := newLicense(t, p, 1, time.Minute, "go module user")

	run := exec.CommandContext(t.Context(), bin, p.GRPCAddr, lic.GetKey())
	stdin, err := run.StdinPipe()
	require.NoError(t, err)
	stdout, err := run.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncbuffer.Buffer{}
	run.Stderr = stderr
	require.NoError(t, run.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = run.Process.Kill()
	})

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the program's lease id; its stderr:\n%s", stderr.String())
	id := strings.TrimSpace(line)
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		exited <- run.Wait()
	}()
	require.True(t, strings.HasPrefix(id, "lse_"), "a lease id: %q", id)

	active := p.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_ACTIVE)
	require.Len(t, active, 1, "the program holds the license's one seat")
	require.Equal(t, id, active[0].GetId())
	require.Equal(t, "go-module", active[0].GetFingerprint())

	require.NoError(t, stdin.Close())
	select {
	case err := <-exited:
		require.NoError(t, err, "the program's exit; its stderr:\n%s", stderr.String())
	case <-stepContext(t, eventTimeout).Done():
		t.Fatalf("the program did not exit %s after its stdin closed; its stderr:\n%s", eventTimeout, stderr.String())
	}
	released := p.leases(t, lic.GetId(), seatdv1.LeaseState_LEASE_STATE_RELEASED)
	require.Len(t, released, 1, "the program released its seat")
	require.Equal(t, id, released[0].GetId())
}
