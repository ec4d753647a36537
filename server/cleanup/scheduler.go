package cleanup

import (
	"cmp"
	"context"
	"math/rand/v2"
	"sync"
	"time"
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

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	nextRun time.Time
}

// Start begins running passes in the background until ctx ends or Stop.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.loop(ctx, s.done)
}

// Stop cancels the running pass (it abandons its batches within the store's
// transaction boundaries) and waits for the loop to end.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel, s.done = nil, nil
	s.nextRun = time.Time{}
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// NextRun is when the next scheduled pass is due (zero when stopped).
func (s *Scheduler) NextRun() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextRun
}

// Running reports whether the scheduler is started.
func (s *Scheduler) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancel != nil
}

func (s *Scheduler) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	interval := cmp.Or(s.Interval, DefaultInterval)
	jitter := jitterOr(s.Jitter)
	for {
		s.Cleaner.Pass(ctx, TriggerSchedule)
		s.Cleaner.CountActive(ctx) // right after a pass: zombies are gone
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
