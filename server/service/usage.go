package service

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// UsageWindow asks for a usage report; the zero values take the defaults.
type UsageWindow struct {
	LicenseID  string
	Feature    string        // "": every pool; else only that feature's grants
	Start, End *time.Time    // End nil: now; Start nil: defaultUsageWindow before End
	Bucket     time.Duration // time.Hour or 24 * time.Hour; 0: a day
	Users      int           // 0: server.DefaultUsageUsers
}

const (
	defaultUsageWindow = 7 * 24 * time.Hour
	seatEventTimeout   = 5 * time.Second
)

// UsageQuery fills in w's defaults and checks it: the range is widened to
// whole buckets (UTC) and holds at most server.MaxUsageBuckets of them.
func (s *Service) UsageQuery(tenant string, w UsageWindow) (server.UsageQuery, error) {
	q := server.UsageQuery{TenantID: tenant, LicenseID: w.LicenseID, Feature: w.Feature, Bucket: w.Bucket,
		MaxRows: server.MaxUsageRows}
	if w.Feature != "" {
		if err := server.CheckFeature("feature", w.Feature); err != nil {
			return q, err
		}
	}
	switch q.Bucket {
	case 0:
		q.Bucket = 24 * time.Hour
	case time.Hour, 24 * time.Hour:
	default:
		return q, server.Invalid("bucket", "must be an hour or a day")
	}
	var err error
	if q.Start, q.End, err = s.timeRange(w.Start, w.End, defaultUsageWindow); err != nil {
		return q, err
	}
	q.Start = q.Start.UTC().Truncate(q.Bucket)
	if end := q.End.UTC().Truncate(q.Bucket); end.Before(q.End) {
		q.End = end.Add(q.Bucket)
	} else {
		q.End = end
	}
	if n := q.End.Sub(q.Start) / q.Bucket; n > server.MaxUsageBuckets {
		return q, server.Invalid("start_time", "the range holds %d buckets, more than %d: narrow it or use a larger bucket", n, server.MaxUsageBuckets)
	}
	q.Users, err = limitOr(w.Users, server.DefaultUsageUsers, server.MaxUsageUsers, "user_limit")
	return q, err
}

// UsageReport answers q (server.UsageStore.UsageReport).
func (s *Service) UsageReport(ctx context.Context, q server.UsageQuery) (server.UsageReport, error) {
	return s.store.UsageReport(ctx, q)
}

// AcquireSeat is Acquire for a client's AcquireSeat call: a refusal of a
// seat, for want of a free one or by the site policy, is recorded (once
// per call, with its reason) for the usage report before the caller is
// answered. WaitForSeat's own tries go through Acquire and are not
// counted.
func (s *Service) AcquireSeat(ctx context.Context, req SeatRequest) (Grant, error) {
	g, err := s.Acquire(ctx, req)
	if reason := server.ErrorReason(err); reason == server.ReasonSeatsExhausted || server.IsPolicyRefusal(reason) {
		s.recordSeatEvent(ctx, req, server.SeatDenied, 0, reason, err)
	}
	return g, err
}

// WaitForSeatCounted is WaitForSeat for a client's call: a wait that ends
// in a new seat is recorded with how long this call waited, one the site
// policy ends (EXCLUDED, NOT_INCLUDED) as a denial.
func (s *Service) WaitForSeatCounted(ctx context.Context, req SeatRequest, resume string, moved func(Place) error) (Grant, error) {
	start := s.now()
	g, err := s.WaitForSeat(ctx, req, resume, moved)
	switch reason := server.ErrorReason(err); {
	case err == nil && !g.Existing:
		s.recordSeatEvent(ctx, req, server.SeatWaited, max(0, s.now().Sub(start)), "", nil)
	case server.IsPolicyRefusal(reason):
		s.recordSeatEvent(ctx, req, server.SeatDenied, 0, reason, err)
	}
	return g, err
}

// recordSeatEvent stores a denial (with its reason) or a wait of req, on
// the license its key opens and the feature it asked for (the usage
// report's row: a license's base pool, or one feature of it). A failure is
// logged: the call it counts is answered as it would be anyway. A refusal
// for want of a seat (cause) is also told to the webhooks' Signals
// (license.exhausted, at most once per window).
func (s *Service) recordSeatEvent(ctx context.Context, req SeatRequest, kind server.SeatEventKind, wait time.Duration, reason string, cause error) {
	// Recorded even if the caller has gone away meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), seatEventTimeout)
	defer cancel()
	lic, err := s.store.LicenseByKey(ctx, req.LicenseKey)
	if err == nil && cause != nil {
		s.signals.Exhausted(&lic, req.Feature, cause)
	}
	if err == nil {
		err = s.store.RecordSeatEvent(ctx, server.SeatEvent{
			ID: server.NewID("sev_"), TenantID: lic.TenantID, LicenseID: lic.ID, Kind: kind, At: s.now(), Wait: wait,
			Feature: req.Feature, Reason: reason,
		})
	}
	if err != nil {
		s.log.ErrorContext(ctx, "seat event not recorded", "kind", string(kind), "err", err)
	}
}
