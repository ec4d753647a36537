package service

import (
	"context"

	"github.com/seatd/seatd/server"
)

// checkRange refuses a range that ends before it starts.
func checkRange(r server.EventRange) error {
	if !r.Start.IsZero() && !r.End.IsZero() && !r.Start.Before(r.End) {
		return server.Invalid("start_time", "must be before end_time")
	}
	return nil
}

// ListUsageEvents pages through the tenant's usage events in r.
func (s *Service) ListUsageEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.UsageEvent, string, error) {
	if err := checkRange(r); err != nil {
		return nil, "", err
	}
	return s.store.ListUsageEvents(ctx, r, p)
}

// ListCleanupEvents pages through the tenant's cleanup events in r.
func (s *Service) ListCleanupEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.CleanupEvent, string, error) {
	if err := checkRange(r); err != nil {
		return nil, "", err
	}
	return s.store.ListCleanupEvents(ctx, r, p)
}

// ListAuditEvents pages through the tenant's audit entries in r.
func (s *Service) ListAuditEvents(ctx context.Context, r server.EventRange, p server.Page) ([]server.AuditEntry, string, error) {
	if err := checkRange(r); err != nil {
		return nil, "", err
	}
	return s.store.ListAuditEvents(ctx, r, p)
}
