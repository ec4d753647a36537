// Command seatd is the floating-license seat server. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/seatd/seatd/server/daemon"
	"github.com/seatd/seatd/server/internal/gcpace"
)

func main() {
	paceCtx, stopPacing := context.WithCancel(context.Background())
	defer stopPacing()
	go gcpace.Run(paceCtx) // GOGC 400 while the heap is small, towards 100 as it grows
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
