package cleanup

import (
	"cmp"
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/seatd/seatd/server/internal/startstop"
)

// DefaultInterval is how often the leader runs a pass (seed: every 60 s).
const DefaultInterval = 60 * time.Second

// Scheduler runs a pass at once on Start and then every Interval, give or
// take Jitter (a fraction of the interval) so that instances that start
// together do not pass together. Start and Stop follow river's startstop
// rules: Stop without Start and a second Stop are no-ops.
type Scheduler struct {
	Cleaner  *Cleaner
	Interval time.Duration
	Jitter   float64 // 0..1; default 0.1
	// AfterPass, when set, runs after each pass with the pass's context:
	// other upkeep that only the leader does (retention.Pruner.Tick).
	AfterPass func(ctx context.Context)

	run     startstop.Runner
	mu      sync.Mutex // guards nextRun
	nextRun time.Time
}

// Start begins running passes in the background until ctx ends or Stop.
func (s *Scheduler) Start(ctx context.Context) { s.run.Start(ctx, s.loop) }

// Stop cancels the running pass (it abandons its batches within the store's
// transaction boundaries) and waits for the loop to end. NextRun is zero
// after, even when the cancelled pass scheduled the next one on its way out.
func (s *Scheduler) Stop() {
	s.run.Stop()
	s.mu.Lock()
	s.nextRun = time.Time{}
	s.mu.Unlock()
}

// NextRun is when the next scheduled pass is due (zero when stopped).
func (s *Scheduler) NextRun() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextRun
}

// Running reports whether the scheduler is started.
func (s *Scheduler) Running() bool { return s.run.Running() }

func (s *Scheduler) loop(ctx context.Context) {
	interval := cmp.Or(s.Interval, DefaultInterval)
	jitter := jitterOr(s.Jitter)
	for {
		s.Cleaner.Pass(ctx, TriggerSchedule)
		s.Cleaner.CountActive(ctx) // right after a pass: zombies are gone
		if s.AfterPass != nil {
			s.AfterPass(ctx)
		}
		wait := jittered(interval, jitter, rand.Float64())
		s.mu.Lock()
		s.nextRun = time.Now().Add(wait)
		s.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// jitterOr is the scheduler's jitter: j when it is in (0, 1], else 0.1.
func jitterOr(j float64) float64 {
	if j <= 0 || j > 1 {
		return 0.1
	}
	return j
}

// jittered is the time until the next pass: the interval within ±jitter/2
// of itself, r in [0, 1) picking where.
func jittered(interval time.Duration, jitter, r float64) time.Duration {
	return time.Duration(float64(interval) * (1 + jitter*(r-0.5)))
}
