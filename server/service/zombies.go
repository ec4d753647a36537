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
	Feature    string     // "": every zombie; else only those of that feature's grants
}

const (
	defaultZombieWindow = 7 * 24 * time.Hour
	defaultTopLimit     = 20
	maxTopLimit         = 100
)

// ZombieQuery fills in w's defaults and checks it.
func (s *Service) ZombieQuery(tenant string, w ZombieWindow) (server.ZombieQuery, error) {
	q := server.ZombieQuery{TenantID: tenant, Feature: w.Feature}
	if w.Feature != "" {
		if err := server.CheckFeature("feature", w.Feature); err != nil {
			return q, err
		}
	}
	var err error
	if q.Start, q.End, err = s.timeRange(w.Start, w.End, defaultZombieWindow); err != nil {
		return q, err
	}
	q.TopLimit, err = limitOr(w.TopLimit, defaultTopLimit, maxTopLimit, "top_limit")
	return q, err
}

// ZombieReport answers q (server.CleanupStore.ZombieReport).
func (s *Service) ZombieReport(ctx context.Context, q server.ZombieQuery) (server.ZombieReport, error) {
	return s.store.ZombieReport(ctx, q)
}
