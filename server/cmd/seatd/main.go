// Command seatd is the floating-license seat server. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/seatd/seatd/server/daemon"
)

// gcPercent is seatd's GOGC unless the environment sets one. Its live heap
// is small (tens of MB even with 100k leases) while every call allocates,
// so a collection every 1× growth of that heap (Go's default, 100) cost
// a fifth of a heartbeat's CPU in `make bench`; 400 trades a few tens of
// MB for most of it. GOGC (and GOMEMLIMIT) still override it.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	go func() {
		// After the first signal starts the drain, restore the default
		// handlers so that a second signal stops the process at once.
		<-ctx.Done()
		stop()
	}()
	code := daemon.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
