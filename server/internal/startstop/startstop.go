// Package startstop runs the background goroutine of a service that is
// started and stopped (the cleanup scheduler, the leader elector), with
// river's startstop rules: a second Start while running, Stop without
// Start and a second Stop do nothing.
package startstop

import (
	"context"
	"sync"
)

// Runner holds one background goroutine. The zero value is ready to use.
type Runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs run in a goroutine with a context that ends at Stop (or with
// ctx). It does nothing when already started.
func (r *Runner) Start(ctx context.Context, run func(ctx context.Context)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		run(ctx)
	}(r.done)
}

// Stop cancels the goroutine's context and waits for run to return. It
// does nothing when not started.
func (r *Runner) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Running reports whether Start was called and Stop not since.
func (r *Runner) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancel != nil
}
