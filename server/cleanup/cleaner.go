// Package cleanup reclaims zombie leases: leases whose deadline passed with
// no heartbeat. A Cleaner runs one pass; a Scheduler runs passes on an
// interval while this instance leads.
package cleanup

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/metrics"
)

// Defaults from the seeds (ADR-031 and the zombie-cleanup flow).
const (
	DefaultBatchSize   = 500
	DefaultConcurrency = 20
	DefaultSoftLimit   = 50 * time.Second
	DefaultHardLimit   = 55 * time.Second
)

// Results of a pass.
const (
	ResultOK      = "ok"
	ResultPartial = "partial" // time limit reached or transient errors; the rest waits for the next pass
	ResultFailed  = "failed"  // nothing could be done
)

// Triggers of a pass.
const (
	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
)

// Config tunes a Cleaner; zero values take the defaults.
type Config struct {
	BatchSize   int
	Concurrency int
	SoftLimit   time.Duration // stop taking new batches
	HardLimit   time.Duration // cancel the pass
}

// Run reports one pass.
type Run struct {
	StartedAt time.Time
	Duration  time.Duration
	Scanned   int64
	Expired   int64
	Errors    int64
	Result    string
	Trigger   string
}

// Cleaner runs cleanup passes against a store.
type Cleaner struct {
	store   server.CleanupStore
	cfg     Config
	log     *slog.Logger
	metrics *metrics.Metrics

	mu      sync.Mutex
	lastRun *Run
}

// NewCleaner returns a Cleaner with cfg's zero fields defaulted.
func NewCleaner(store server.CleanupStore, cfg Config, log *slog.Logger, m *metrics.Metrics) *Cleaner {
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, DefaultConcurrency)
	cfg.SoftLimit = cmp.Or(cfg.SoftLimit, DefaultSoftLimit)
	cfg.HardLimit = cmp.Or(cfg.HardLimit, DefaultHardLimit)
	if cfg.HardLimit < cfg.SoftLimit {
		cfg.HardLimit = cfg.SoftLimit
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if m == nil {
		m = metrics.Discard()
	}
	return &Cleaner{store: store, cfg: cfg, log: log, metrics: m}
}

// LastRun returns the last pass this instance ran, if any.
func (c *Cleaner) LastRun() (Run, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastRun == nil {
		return Run{}, false
	}
	return *c.lastRun, true
}

// Pass finds leases past their deadline through the store's expiry index and
// expires them in batches, Concurrency batches at a time. A failed batch is
// logged and counted, and its leases stay for the next pass (ADR-031: a
// transient error never removes a live session). Concurrent passes, here or
// on other instances, are safe: the store records each expiry once.
func (c *Cleaner) Pass(ctx context.Context, trigger string) Run {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HardLimit)
	defer cancel()

	var expired, errs atomic.Int64
	var scanned int64
	timedOut := false
	fetch := c.cfg.BatchSize * c.cfg.Concurrency
	var cursor *server.LeaseRef

fetching:
	for {
		if time.Since(start) >= c.cfg.SoftLimit {
			timedOut = true
			break
		}
		refs, err := c.store.DueLeases(ctx, cursor, fetch)
		if err != nil {
			errs.Add(1)
			c.log.Warn("cleanup: finding expired leases failed; retrying next pass", "err", err)
			break
		}
		if len(refs) == 0 {
			break
		}
		scanned += int64(len(refs))
		cursor = &refs[len(refs)-1]

		var g errgroup.Group
		g.SetLimit(c.cfg.Concurrency)
		for batch := range chunk(refs, c.cfg.BatchSize) {
			if time.Since(start) >= c.cfg.SoftLimit || ctx.Err() != nil {
				timedOut = true
				break
			}
			g.Go(func() error {
				done, err := c.store.ExpireLeases(ctx, batch)
				if err != nil {
					errs.Add(1)
					c.log.Warn("cleanup: expiring a batch failed; retrying next pass", "leases", len(batch), "err", err)
					return nil
				}
				for _, l := range done {
					if l.State == server.LeaseReleased {
						// A lapsed linger (server/linger.go): its client
						// released it; no zombie.
						c.log.Debug("cleanup: linger ended", "lease_id", l.ID, "license_id", l.LicenseID, "deadline", l.ExpiresAt)
						continue
					}
					expired.Add(1)
					c.log.Debug("cleanup: zombie lease expired", "lease_id", l.ID, "license_id", l.LicenseID,
						"last_heartbeat_at", l.LastHeartbeatAt, "deadline", l.ExpiresAt)
				}
				return nil
			})
		}
		_ = g.Wait()
		if timedOut {
			break fetching
		}
		if len(refs) < fetch {
			break
		}
	}

	run := Run{
		StartedAt: start, Duration: time.Since(start), Scanned: scanned,
		Expired: expired.Load(), Errors: errs.Load(), Trigger: trigger,
	}
	switch {
	case run.Errors > 0 && run.Expired == 0:
		run.Result = ResultFailed
	case run.Errors > 0 || timedOut:
		run.Result = ResultPartial
	default:
		run.Result = ResultOK
	}
	c.record(run)
	return run
}

// CountActive sets the seatd_active_seats gauge. It is kept out of Pass:
// its cost grows with all leases, a pass's only with the expired ones.
func (c *Cleaner) CountActive(ctx context.Context) {
	n, err := c.store.ActiveLeases(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("cleanup: counting active leases failed", "err", err)
		}
		return
	}
	c.metrics.ActiveSeats.Set(float64(n))
}

func (c *Cleaner) record(run Run) {
	c.mu.Lock()
	c.lastRun = &run
	c.mu.Unlock()
	c.metrics.ZombiesCleaned.Add(float64(run.Expired))
	c.metrics.CleanupDuration.Observe(run.Duration.Seconds())
	c.metrics.CleanupRuns.WithLabelValues(run.Result).Inc()
	c.metrics.CleanupErrors.Add(float64(run.Errors))
	c.metrics.CleanupScanned.Set(float64(run.Scanned))
	c.metrics.CleanupExpired.Set(float64(run.Expired))
	level := slog.LevelInfo
	if run.Result != ResultOK {
		level = slog.LevelWarn
	}
	c.log.Log(context.Background(), level, "cleanup pass", "trigger", run.Trigger, "result", run.Result,
		"scanned", run.Scanned, "expired", run.Expired, "errors", run.Errors, "duration", run.Duration)
}

// chunk yields consecutive slices of at most n elements.
func chunk[T any](s []T, n int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k:k]) {
				return
			}
			s = s[k:]
		}
	}
}
