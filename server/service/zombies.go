package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// ZombieWindow asks for a zombie report; the zero values take the defaults.
type ZombieWindow struct {
	Start, End *time.Time // nil: the 7 days up to End; End nil: now
	TopLimit   int        // 0: defaultTopLimit
}

const (
	defaultZombieWindow = 7 * 24 * time.Hour
	defaultTopLimit     = 20
	maxTopLimit         = 100
)

// ZombieQuery fills in w's defaults and checks it.
func (s *Service) ZombieQuery(tenant string, w ZombieWindow) (server.ZombieQuery, error) {
	q := server.ZombieQuery{TenantID: tenant, End: s.now(), TopLimit: defaultTopLimit}
	if w.End != nil {
		q.End = *w.End
	}
	q.Start = q.End.Add(-defaultZombieWindow)
	if w.Start != nil {
		q.Start = *w.Start
	}
	if !q.Start.Before(q.End) {
		return q, server.Invalid("start_time", "must be before end_time")
	}
	if n := w.TopLimit; n != 0 {
		if n < 1 || n > maxTopLimit {
			return q, server.Invalid("top_limit", "must be between 1 and %d", maxTopLimit)
		}
		q.TopLimit = n
	}
	return q, nil
}

// ZombieReport answers q (server.CleanupStore.ZombieReport).
func (s *Service) ZombieReport(ctx context.Context, q server.ZombieQuery) (server.ZombieReport, error) {
	return s.store.ZombieReport(ctx, q)
}
