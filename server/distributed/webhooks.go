package distributed

import (
	"context"
	"time"

	"github.com/seatd/seatd/server"
)

// The outbox and the webhooks' deliveries live in the record alone
// (record/webhooks.go): the statements that change the record write their
// events, and nothing of webhooks touches the live state.

var _ server.WebhookStore = (*Store)(nil)

func (s *Store) AppendEvent(ctx context.Context, e server.Event) (bool, error) {
	return s.rec.AppendEvent(ctx, e)
}

func (s *Store) EventsAfter(ctx context.Context, after int64, limit int) ([]server.Event, error) {
	return s.rec.EventsAfter(ctx, after, limit)
}

func (s *Store) CreateEndpoint(ctx context.Context, ep server.Endpoint) (server.Endpoint, error) {
	return s.rec.CreateEndpoint(ctx, ep)
}

func (s *Store) GetEndpoint(ctx context.Context, tenantID, id string) (server.Endpoint, error) {
	return s.rec.GetEndpoint(ctx, tenantID, id)
}

func (s *Store) ListEndpoints(ctx context.Context, tenantID string) ([]server.Endpoint, error) {
	return s.rec.ListEndpoints(ctx, tenantID)
}

func (s *Store) UpdateEndpoint(ctx context.Context, tenantID, id string, update func(*server.Endpoint) error) (server.Endpoint, error) {
	return s.rec.UpdateEndpoint(ctx, tenantID, id, update)
}

func (s *Store) DeleteEndpoint(ctx context.Context, tenantID, id string) error {
	return s.rec.DeleteEndpoint(ctx, tenantID, id)
}

func (s *Store) FanOut(ctx context.Context, now time.Time, limit int) (int, error) {
	return s.rec.FanOut(ctx, now, limit)
}

func (s *Store) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]server.Delivery, error) {
	return s.rec.DueDeliveries(ctx, now, limit)
}

func (s *Store) RecordAttempt(ctx context.Context, id string, a server.Attempt) (server.Delivery, error) {
	return s.rec.RecordAttempt(ctx, id, a)
}

func (s *Store) ListDeliveries(ctx context.Context, tenantID, endpointID string, p server.Page) ([]server.Delivery, string, error) {
	return s.rec.ListDeliveries(ctx, tenantID, endpointID, p)
}

func (s *Store) GetDelivery(ctx context.Context, tenantID, id string) (server.Delivery, error) {
	return s.rec.GetDelivery(ctx, tenantID, id)
}

func (s *Store) ReplayDelivery(ctx context.Context, tenantID, id string, now time.Time) (server.Delivery, error) {
	return s.rec.ReplayDelivery(ctx, tenantID, id, now)
}
