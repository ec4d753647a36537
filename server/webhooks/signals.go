package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/seatd/seatd/server"
)

// Defaults of the events of no change (each has its --webhook-* flag).
const (
	DefaultSignalWindow = time.Hour // at most one license.exhausted and one license.peak per pool per window
	DefaultPeakShare    = 90        // license.peak: use at or above this percent of the seat limit
)

// DefaultExpiringBefore are the thresholds of license.expiring: 30, 7 and
// 1 days before a license's or a grant's expiry.
var DefaultExpiringBefore = []time.Duration{30 * 24 * time.Hour, 7 * 24 * time.Hour, 24 * time.Hour}

// SignalConfig wires Signals.
type SignalConfig struct {
	Store          server.Store // with server.WebhookStore
	Now            func() time.Time
	Logger         *slog.Logger
	Window         time.Duration
	PeakShare      int             // percent, 1..100
	ExpiringBefore []time.Duration // thresholds
}

// Signals writes the events that report no change of the record, each
// once per pool and window (exhausted, peak) or per threshold (expiring)
// by a dedupe key, so that instances and restarts that see the same
// moment write it once. The seat path pays only a comparison: the
// writes go on in the background, at most one per key and process.
type Signals struct {
	store  server.Store
	hooks  server.WebhookStore
	now    func() time.Time
	log    *slog.Logger
	window time.Duration
	share  int
	before []time.Duration

	mu   sync.Mutex
	seen map[string]int64 // dedupe key -> window written (keys of past windows dropped)
	wg   sync.WaitGroup
}

// NewSignals returns Signals with cfg's defaults, or nil when the store
// keeps no outbox.
func NewSignals(cfg SignalConfig) *Signals {
	hooks, ok := cfg.Store.(server.WebhookStore)
	if !ok {
		return nil
	}
	before := slices.Clone(cfg.ExpiringBefore)
	if len(before) == 0 {
		before = slices.Clone(DefaultExpiringBefore)
	}
	slices.Sort(before) // nearest first
	now, log := cfg.Now, cfg.Logger
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Signals{
		store: cfg.Store, hooks: hooks, now: now, log: log,
		window: cmp.Or(cfg.Window, DefaultSignalWindow), share: cmp.Or(cfg.PeakShare, DefaultPeakShare),
		before: before, seen: map[string]int64{},
	}
}

// Wait waits for the writes in flight (tests, shutdown).
func (s *Signals) Wait() {
	if s != nil {
		s.wg.Wait()
	}
}

// Granted is told of every seat granted: license.peak when the pool's use
// reached the share of its limit.
func (s *Signals) Granted(res *server.AcquireResult) {
	if s == nil || res.Existing {
		return
	}
	limit, pool := res.License.SeatLimit(), res.License.ID
	if res.Grant != nil {
		limit, pool = res.Grant.SeatLimit(), res.Lease.LicenseID
	}
	if limit <= 0 || res.SeatsInUse*100 < s.share*limit {
		return
	}
	s.write(server.EventLicensePeak, &res.License, pool, res.SeatsInUse, limit, s.share)
}

// Exhausted is told of a refusal for want of a seat (err: SeatsExhausted,
// with the pool's use and limit) on lic: license.exhausted.
func (s *Signals) Exhausted(lic *server.License, feature string, err error) {
	if s == nil {
		return
	}
	e, ok := err.(*server.Error)
	if !ok || e.Reason != server.ReasonSeatsExhausted {
		return
	}
	inUse, _ := strconv.Atoi(e.Metadata["seats_in_use"])
	limit, _ := strconv.Atoi(e.Metadata["seat_limit"])
	pool := lic.ID
	if feature != "" {
		pool = lic.ID + "/" + feature // a feature's grants as one
	}
	s.write(server.EventLicenseExhausted, lic, pool, inUse, limit, 0)
}

// write appends the event of its window once per process, in the
// background.
func (s *Signals) write(t server.EventType, lic *server.License, pool string, inUse, limit, share int) {
	now := s.now()
	w := now.UnixNano() / int64(s.window)
	key := fmt.Sprintf("%s:%s:%d", t, pool, w)
	s.mu.Lock()
	if _, done := s.seen[key]; done {
		s.mu.Unlock()
		return
	}
	if len(s.seen) > 100_000 { // keys of past windows
		for k, kw := range s.seen {
			if kw < w {
				delete(s.seen, k)
			}
		}
	}
	s.seen[key] = w
	s.mu.Unlock()
	e := server.NewEvent(t, now, lic.TenantID, lic.ID, lic.ID, key, server.EventData{
		License: server.LicenseOfEvent(lic),
		Seats:   &server.EventSeats{PoolID: pool, Limit: limit, InUse: inUse, Share: share},
	})
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		if _, err := s.hooks.AppendEvent(ctx, e); err != nil {
			s.mu.Lock()
			delete(s.seen, key) // the next one tries again
			s.mu.Unlock()
			s.log.Warn("webhooks: event not written", "type", string(t), "err", err)
		}
	})
}

// SweepExpiring writes license.expiring for every license and grant whose
// expiry is within a threshold: the nearest threshold crossed, once per
// threshold and expiry (a renewed license is told again).
func (s *Signals) SweepExpiring(ctx context.Context) {
	if s == nil {
		return
	}
	if err := s.sweepExpiring(ctx); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "webhooks: expiry sweep failed; tried again at the next", "err", err)
	}
}

func (s *Signals) sweepExpiring(ctx context.Context) error {
	now := s.now()
	var tok string
	for {
		tenants, next, err := s.store.ListTenants(ctx, server.Page{Token: tok, Size: server.MaxPageSize})
		if err != nil {
			return err
		}
		for _, tn := range tenants {
			if err := s.sweepTenant(ctx, tn.ID, now); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		tok = next
	}
}

func (s *Signals) sweepTenant(ctx context.Context, tenantID string, now time.Time) error {
	var tok string
	for {
		lics, next, err := s.store.ListLicenses(ctx, tenantID, server.Page{Token: tok, Size: server.MaxPageSize})
		if err != nil {
			return err
		}
		for i := range lics {
			l := &lics[i]
			if err := s.expiring(ctx, l, l.ID, l.ExpiresAt, nil, now); err != nil {
				return err
			}
			for _, g := range l.Grants {
				if err := s.expiring(ctx, l, g.ID, g.ExpiresAt, &g, now); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		tok = next
	}
}

func (s *Signals) expiring(ctx context.Context, l *server.License, id string, exp time.Time, g *server.Grant, now time.Time) error {
	if exp.IsZero() || !now.Before(exp) {
		return nil
	}
	i := slices.IndexFunc(s.before, func(d time.Duration) bool { return !now.Before(exp.Add(-d)) })
	if i < 0 {
		return nil
	}
	threshold := s.before[i]
	key := fmt.Sprintf("%s:%s:%d:%d", server.EventLicenseExpiring, id, exp.UnixMicro(), int64(threshold/time.Second))
	s.mu.Lock()
	_, done := s.seen[key]
	s.mu.Unlock()
	if done {
		return nil
	}
	el := server.LicenseOfEvent(l)
	if g != nil {
		el.GrantID, el.Feature, el.ExpiresAt = g.ID, g.Feature, g.ExpiresAt
	}
	e := server.NewEvent(server.EventLicenseExpiring, now, l.TenantID, l.ID, id, key, server.EventData{License: el})
	if _, err := s.hooks.AppendEvent(ctx, e); err != nil {
		return err
	}
	s.mu.Lock()
	s.seen[key] = 1 << 62 // never dropped by a window
	s.mu.Unlock()
	return nil
}
