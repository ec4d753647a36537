package service

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/webhooks"
)

// WebhookOptions wire the webhooks' use cases.
type WebhookOptions struct {
	// Signals writes the events of no change (license.exhausted, .peak);
	// nil: none.
	Signals *webhooks.Signals
	// AllowPrivate: endpoints may be loopback, link-local or private
	// addresses and plain http (--webhook-allow-private-addresses).
	AllowPrivate bool
	// MaxEndpoints bounds each tenant's endpoints
	// (--tenant-max-webhook-endpoints); 0: DefaultMaxWebhookEndpoints.
	MaxEndpoints int
}

// Bounds of the webhooks' admin calls.
const (
	DefaultMaxWebhookEndpoints = 20             // per tenant (--tenant-max-webhook-endpoints)
	MaxWebhookDescription      = 200            // characters
	DefaultSecretRotationFor   = 24 * time.Hour // the old secret still signs this long after a rotation
	MaxSecretRotationFor       = 7 * 24 * time.Hour
)

// endpointLimit is the refusal of an endpoint past the tenant's limit:
// RESOURCE_EXHAUSTED WEBHOOK_ENDPOINT_LIMIT, with the quota's metadata.
func endpointLimit(limit int) error {
	return &server.Error{
		Code: server.EEXHAUSTED, Reason: server.ReasonEndpointLimit,
		Message:  fmt.Sprintf("the tenant has %d webhook endpoints, its limit: delete one first", limit),
		Metadata: map[string]string{"quota": "webhook_endpoints", "limit": strconv.Itoa(limit)},
	}
}

// WebhookEndpointInput is what an admin gives for a new endpoint.
type WebhookEndpointInput struct {
	URL         string
	Types       []string
	Description string
	// Secret: "" makes one (returned once); else "whsec_" + base64.
	Secret string
}

// Redacted is an endpoint as list and get answers show it: without its
// secrets (only CreateWebhookEndpoint and RotateWebhookSecret answer one,
// once).
func Redacted(ep server.Endpoint) server.Endpoint {
	ep.Secrets = nil
	return ep
}

func (s *Service) webhookStore() (server.WebhookStore, error) {
	w, ok := s.store.(server.WebhookStore)
	if !ok {
		return nil, server.Errorf(server.EINVALID, server.ReasonInvalidArgument, "this store keeps no webhooks")
	}
	return w, nil
}

func checkTypes(in []string) ([]server.EventType, error) {
	var out []server.EventType
	for i, t := range in {
		et := server.EventType(t)
		if !et.Known() {
			return nil, server.Invalid("endpoint.types["+itoa(i)+"]", "is not an event type (license.created, lease.expired, ...)")
		}
		if !slices.Contains(out, et) {
			out = append(out, et)
		}
	}
	return out, nil
}

// CreateWebhookEndpoint registers a tenant's endpoint and returns it with
// its secret (the only answer that shows it). Audited webhook.create.
func (s *Service) CreateWebhookEndpoint(ctx context.Context, actor, tenant string, in WebhookEndpointInput) (server.Endpoint, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return server.Endpoint{}, err
	}
	if in.URL == "" {
		return server.Endpoint{}, server.Invalid("endpoint.url", "is required")
	}
	if err := webhooks.CheckURL(in.URL, s.webhookOpts.AllowPrivate); err != nil {
		return server.Endpoint{}, server.Invalid("endpoint.url", "%s", err.Error())
	}
	types, err := checkTypes(in.Types)
	if err != nil {
		return server.Endpoint{}, err
	}
	if len([]rune(in.Description)) > MaxWebhookDescription {
		return server.Endpoint{}, server.Invalid("endpoint.description", "is longer than %d characters", MaxWebhookDescription)
	}
	secret := in.Secret
	if secret == "" {
		secret = webhooks.NewSecret()
	} else if err := webhooks.CheckSecret(secret); err != nil {
		return server.Endpoint{}, server.Invalid("endpoint.secret", "%s", err.Error())
	}
	defer s.quotaLocks.lock(tenant)()
	have, err := hooks.ListEndpoints(ctx, tenant)
	if err != nil {
		return server.Endpoint{}, err
	}
	if limit := cmp.Or(s.webhookOpts.MaxEndpoints, DefaultMaxWebhookEndpoints); len(have) >= limit {
		return server.Endpoint{}, endpointLimit(limit)
	}
	now := s.now()
	ep, err := hooks.CreateEndpoint(ctx, server.Endpoint{
		ID: server.NewID("whe_"), TenantID: tenant, URL: in.URL, Types: types, Secrets: []string{secret},
		Description: in.Description, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return server.Endpoint{}, err
	}
	s.audit(ctx, actor, tenant, "webhook.create", "webhook_endpoint", ep.ID, map[string]string{"url": ep.URL})
	return ep, nil
}

// ListWebhookEndpoints lists a tenant's endpoints, without their secrets.
func (s *Service) ListWebhookEndpoints(ctx context.Context, tenant string) ([]server.Endpoint, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return nil, err
	}
	eps, err := hooks.ListEndpoints(ctx, tenant)
	for i := range eps {
		eps[i] = Redacted(eps[i])
	}
	return eps, err
}

// GetWebhookEndpoint is one endpoint, without its secrets.
func (s *Service) GetWebhookEndpoint(ctx context.Context, tenant, id string) (server.Endpoint, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return server.Endpoint{}, err
	}
	ep, err := hooks.GetEndpoint(ctx, tenant, id)
	return Redacted(ep), err
}

// DeleteWebhookEndpoint removes an endpoint and its deliveries. Audited.
func (s *Service) DeleteWebhookEndpoint(ctx context.Context, actor, tenant, id string) error {
	hooks, err := s.webhookStore()
	if err != nil {
		return err
	}
	if err := hooks.DeleteEndpoint(ctx, tenant, id); err != nil {
		return err
	}
	s.audit(ctx, actor, tenant, "webhook.delete", "webhook_endpoint", id, nil)
	return nil
}

// SetWebhookEndpointDisabled disables an endpoint, or enables it again
// (its run of failures forgotten). Audited webhook.disable/enable.
func (s *Service) SetWebhookEndpointDisabled(ctx context.Context, actor, tenant, id string, disabled bool) (server.Endpoint, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return server.Endpoint{}, err
	}
	ep, err := hooks.UpdateEndpoint(ctx, tenant, id, func(e *server.Endpoint) error {
		e.Disabled, e.DisabledReason, e.FailingSince = disabled, "", time.Time{}
		return nil
	})
	if err != nil {
		return server.Endpoint{}, err
	}
	action := "webhook.enable"
	if disabled {
		action = "webhook.disable"
	}
	s.audit(ctx, actor, tenant, action, "webhook_endpoint", id, nil)
	return Redacted(ep), nil
}

// RotateWebhookSecret gives an endpoint a new secret (made, or given) and
// keeps the current one signing beside it for keep (default
// DefaultSecretRotationFor), so that receivers can switch. It returns the
// endpoint with the new secret first. Audited webhook.rotate_secret.
func (s *Service) RotateWebhookSecret(ctx context.Context, actor, tenant, id, secret string, keep time.Duration) (server.Endpoint, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return server.Endpoint{}, err
	}
	switch {
	case keep < 0 || keep > MaxSecretRotationFor:
		return server.Endpoint{}, server.Invalid("keep_previous", "must be between 0 and 168h")
	case keep == 0:
		keep = DefaultSecretRotationFor
	}
	if secret == "" {
		secret = webhooks.NewSecret()
	} else if err := webhooks.CheckSecret(secret); err != nil {
		return server.Endpoint{}, server.Invalid("secret", "%s", err.Error())
	}
	now := s.now()
	ep, err := hooks.UpdateEndpoint(ctx, tenant, id, func(e *server.Endpoint) error {
		e.Secrets = []string{secret, e.Secrets[0]}
		e.PreviousUntil = now.Add(keep)
		return nil
	})
	if err != nil {
		return server.Endpoint{}, err
	}
	s.audit(ctx, actor, tenant, "webhook.rotate_secret", "webhook_endpoint", id, map[string]string{"previous_until": ep.PreviousUntil.Format(time.RFC3339)})
	ep.Secrets = ep.Secrets[:1]
	return ep, nil
}

// ListWebhookDeliveries is an endpoint's delivery log, newest first.
func (s *Service) ListWebhookDeliveries(ctx context.Context, tenant, endpointID string, p server.Page) ([]server.Delivery, string, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return nil, "", err
	}
	return hooks.ListDeliveries(ctx, tenant, endpointID, p)
}

// ReplayWebhookDelivery sends a delivery again (its event, id and
// sequence unchanged). Audited webhook.replay.
func (s *Service) ReplayWebhookDelivery(ctx context.Context, actor, tenant, id string) (server.Delivery, error) {
	hooks, err := s.webhookStore()
	if err != nil {
		return server.Delivery{}, err
	}
	d, err := hooks.ReplayDelivery(ctx, tenant, id, s.now())
	if err != nil {
		return server.Delivery{}, err
	}
	s.audit(ctx, actor, tenant, "webhook.replay", "webhook_delivery", id, map[string]string{"event_id": d.Event.ID})
	return d, nil
}
