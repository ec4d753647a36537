package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
)

// RunCleanup runs a cleanup pass now (trigger "manual") and audits it.
func (s *Service) RunCleanup(ctx context.Context, actor string) cleanup.Run {
	run := s.cleaner.Pass(ctx, cleanup.TriggerManual)
	s.audit(ctx, actor, server.DefaultTenantID, "cleanup.run", "cleanup", "", map[string]string{
		"expired": itoa(int(run.Expired)), "result": run.Result,
	})
	return run
}

// CleanupStatus is who runs cleanup and how it went.
type CleanupStatus struct {
	IsLeader   bool
	InstanceID string
	LeaderID   string
	LastRun    *cleanup.Run // nil before the first pass
	// Scheduled: passes run on a schedule, every Interval, the next at
	// NextRunAt (zero when none is due yet).
	Scheduled bool
	Interval  time.Duration
	NextRunAt time.Time
}

// CleanupStatus answers from this instance's view. When PostgreSQL cannot
// say who leads, a leader still names itself and the rest is answered:
// it is local and still worth answering.
func (s *Service) CleanupStatus(ctx context.Context) CleanupStatus {
	st := CleanupStatus{IsLeader: s.leadership.IsLeader(), InstanceID: s.leadership.InstanceID()}
	leader, err := s.leadership.LeaderID(ctx)
	switch {
	case err == nil:
		st.LeaderID = leader
	case st.IsLeader:
		st.LeaderID = st.InstanceID
	default:
		s.log.WarnContext(ctx, "cleanup status: cannot ask PostgreSQL who leads", "err", err)
	}
	if run, ok := s.cleaner.LastRun(); ok {
		st.LastRun = &run
	}
	if s.scheduler != nil {
		st.Scheduled = true
		st.Interval = s.scheduler.Interval
		st.NextRunAt = s.scheduler.NextRun()
	}
	return st
}
