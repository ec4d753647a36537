// Package retention removes history older than a configured age (ended
// leases with their usage events, cleanup events, seat events, audit
// entries), a bounded batch at a time. The cleanup leader runs it after its
// cleanup passes (cleanup.Scheduler.AfterPass), at most once an Interval.
package retention

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/seatd/seatd/server"
)

// Defaults.
const (
	// DefaultKeep keeps a little over a year of every kind, so that a
	// yearly usage report (and the zombie report over the same window)
	// still finds every lease and event.
	DefaultKeep = 366 * 24 * time.Hour
	// DefaultKeepWebhooks keeps the webhooks' delivery log and events 31
	// days: a month to look back on, and longer than the largest default
	// license.expiring threshold (720h), which their dedupe keys must
	// outlast.
	DefaultKeepWebhooks = 31 * 24 * time.Hour
	DefaultBatchSize    = 1000
	DefaultInterval     = time.Hour
	// DefaultPassLimit bounds one pass; the rest waits for the next one.
	DefaultPassLimit = 30 * time.Second
)

// Config tunes a Pruner; zero durations and sizes take the defaults, but a
// Keep of 0 (or absent) for a kind keeps that kind forever.
type Config struct {
	Keep      map[server.RecordKind]time.Duration
	BatchSize int
	Interval  time.Duration
	PassLimit time.Duration
	Now       func() time.Time // the clock; time.Now when nil
}

// Counter counts what was pruned, by kind (a Prometheus counter vector).
type Counter interface {
	Add(kind server.RecordKind, n int)
	Failed(kind server.RecordKind)
}

// Pass reports one pass.
type Pass struct {
	Pruned map[server.RecordKind]int
	Failed []server.RecordKind // kinds whose batch failed: retried next pass
	Done   bool                // every kind is pruned up to its cutoff
}

// Pruner runs retention passes against a store.
type Pruner struct {
	store server.RetentionStore
	cfg   Config
	log   *slog.Logger
	count Counter

	mu      sync.Mutex
	lastRun time.Time
}

// New returns a Pruner with cfg's zero fields defaulted. count may be nil.
func New(store server.RetentionStore, cfg Config, log *slog.Logger, count Counter) *Pruner {
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.PassLimit = cmp.Or(cfg.PassLimit, DefaultPassLimit)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Pruner{store: store, cfg: cfg, log: log, count: count}
}

// Tick runs a pass when Interval has passed since the last one began (or
// none has run yet); else it does nothing. The leader calls it after each
// cleanup pass.
func (p *Pruner) Tick(ctx context.Context) {
	now := p.cfg.Now()
	p.mu.Lock()
	due := p.lastRun.IsZero() || now.Sub(p.lastRun) >= p.cfg.Interval
	if due {
		p.lastRun = now
	}
	p.mu.Unlock()
	if due {
		p.Run(ctx)
	}
}

// Run prunes every kind that has a Keep, batch by batch, until each is
// done, PassLimit passes, or ctx ends. A failed batch stops its kind for
// this pass (the store removed nothing of it) and is logged.
func (p *Pruner) Run(ctx context.Context) Pass {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.PassLimit)
	defer cancel()
	pass := Pass{Pruned: map[server.RecordKind]int{}, Done: true}
	for _, kind := range server.RecordKinds {
		keep := p.cfg.Keep[kind]
		if keep <= 0 {
			continue
		}
		before := p.cfg.Now().Add(-keep)
		for {
			if ctx.Err() != nil {
				pass.Done = false
				break
			}
			n, err := p.store.PruneRecords(ctx, kind, before, p.cfg.BatchSize)
			if err != nil {
				if ctx.Err() == nil {
					p.log.Warn("retention: pruning failed; retried next pass", "kind", kind, "err", err)
					pass.Failed = append(pass.Failed, kind)
					if p.count != nil {
						p.count.Failed(kind)
					}
				}
				pass.Done = false
				break
			}
			pass.Pruned[kind] += n
			if p.count != nil && n > 0 {
				p.count.Add(kind, n)
			}
			if n < p.cfg.BatchSize {
				break
			}
		}
	}
	if total := sum(pass.Pruned); total > 0 {
		p.log.Info("retention: pruned old history", "pruned", pass.Pruned, "done", pass.Done)
	}
	return pass
}

func sum(m map[server.RecordKind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
