package daemon

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatd/seatd/server"
)

// readiness is what gRPC health and /readyz say: ready once started,
// until shutdown begins, and only while the store says it can write
// (server.ReadyChecker, asked every --readiness-interval). A store that
// cannot write (a damaged data file, a full disk, PostgreSQL or Redis
// unreachable) would fail every call a load balancer sends here.
type readiness struct {
	publish func(why string) // "" is ready
	gauge   prometheus.Gauge // seatd_ready
	log     *slog.Logger

	mu       sync.Mutex
	started  bool
	serving  bool   // started and not draining
	storeWhy string // the store's reason, "" when it can write
	fileWhy  string // locked mode: why this instance's license file is not the one in force, "" when it is
	stop     chan struct{}
	stopped  chan struct{} // nil unless watching
}

func (r *readiness) update(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
	why := cmp.Or(r.storeWhy, r.fileWhy)
	switch {
	case !r.started:
		why = "starting"
	case !r.serving:
		why = "draining"
	}
	r.publish(why)
	if why == "" {
		r.gauge.Set(1)
	} else {
		r.gauge.Set(0)
	}
}

// setServing is Start's "ready" (true) and Shutdown's "not ready" (false).
func (r *readiness) setServing(ok bool) {
	r.update(func() { r.started, r.serving = true, ok })
}

// watch asks the store every interval, each time within the interval,
// until stopWatching; a change is logged once.
func (r *readiness) watch(store server.ReadyChecker, every time.Duration) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	r.mu.Lock()
	r.stop, r.stopped = stop, stopped
	r.mu.Unlock()
	check := func() {
		ctx, cancel := context.WithTimeout(context.Background(), every)
		why, err := store.CheckReady(ctx)
		cancel()
		if err != nil && why == "" {
			why = "the store cannot write"
		}
		r.update(func() {
			switch {
			case why != "" && r.storeWhy != why:
				r.log.Warn("not ready: the store cannot write; gRPC health says NOT_SERVING and /readyz 503 until it can", "why", why, "err", err)
			case why == "" && r.storeWhy != "":
				r.log.Info("ready again: the store writes", "was", r.storeWhy)
			}
			r.storeWhy = why
		})
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		check()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				check()
			}
		}
	}()
}

// stopWatching ends watch and waits for it; safe without a watch.
func (r *readiness) stopWatching() {
	r.mu.Lock()
	stop, stopped := r.stop, r.stopped
	r.stopped = nil
	r.mu.Unlock()
	if stopped == nil {
		return
	}
	close(stop)
	<-stopped
}

// setLicenseFile is locked mode's part (watchLicenseFile): why this
// instance's license file is not the one in force ("" when it is); a
// change is logged once.
func (r *readiness) setLicenseFile(why string) {
	r.update(func() {
		switch {
		case why != "" && r.fileWhy != why:
			r.log.Warn("not ready: this instance's license file is not the one in force; gRPC health says NOT_SERVING and /readyz 503 until it is", "why", why)
		case why == "" && r.fileWhy != "":
			r.log.Info("ready again: this instance's license file is the one in force", "was", r.fileWhy)
		}
		r.fileWhy = why
	})
}
