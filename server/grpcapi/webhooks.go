package grpcapi

import (
	"context"
	"time"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
	"github.com/seatd/seatd/server/webhooks"
)

// Webhooks: tenant-scoped as licenses are (an API key in its own tenant,
// the operator in the one it names); each change audited by the service.

func endpointToProto(ep server.Endpoint) *seatdv1.WebhookEndpoint {
	out := &seatdv1.WebhookEndpoint{
		Id: ep.ID, TenantId: ep.TenantID, Url: ep.URL, Description: ep.Description,
		Disabled: ep.Disabled, DisabledReason: ep.DisabledReason, FailingSince: ts(ep.FailingSince),
		CreatedAt: ts(ep.CreatedAt), UpdatedAt: ts(ep.UpdatedAt),
	}
	if ep.PreviousUntil.After(time.Now()) {
		out.PreviousSecretUntil = ts(ep.PreviousUntil)
	}
	for _, t := range ep.Types {
		out.Types = append(out.Types, string(t))
	}
	return out
}

func deliveryToProto(d server.Delivery) *seatdv1.WebhookDelivery {
	body, err := webhooks.Render(d)
	if err != nil {
		body = nil
	}
	return &seatdv1.WebhookDelivery{
		Id: d.ID, EndpointId: d.EndpointID, EventId: d.Event.ID, EventType: string(d.Event.Type), Sequence: d.Seq,
		State: string(d.State), Attempts: int32(min(d.Attempts, 1<<30)), CreatedAt: ts(d.CreatedAt), NextAttemptAt: ts(d.NextAt),
		LastStatus: int32(d.LastStatus), LastError: d.LastError, LastLatency: dur(d.LastLatency), LastAttemptAt: ts(d.LastAt),
		Payload: string(body), LicenseId: d.Event.LicenseID,
	}
}

func webhookID(field, id string) error {
	if err := required(field, id); err != nil {
		return err
	}
	return maxLen(field, id, 128)
}

func (h *adminService) CreateWebhookEndpoint(ctx context.Context, req *seatdv1.CreateWebhookEndpointRequest) (*seatdv1.CreateWebhookEndpointResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	if len(req.GetTypes()) > len(server.EventTypes) {
		return nil, server.Invalid("types", "names at most %d event types", len(server.EventTypes))
	}
	ep, err := h.s.svc.CreateWebhookEndpoint(ctx, p.Actor(), tenant, service.WebhookEndpointInput{
		URL: req.GetUrl(), Types: req.GetTypes(), Description: req.GetDescription(), Secret: req.GetSecret(),
	})
	if err != nil {
		return nil, err
	}
	return &seatdv1.CreateWebhookEndpointResponse{Endpoint: endpointToProto(ep), Secret: ep.Secrets[0]}, nil
}

func (h *adminService) ListWebhookEndpoints(ctx context.Context, req *seatdv1.ListWebhookEndpointsRequest) (*seatdv1.ListWebhookEndpointsResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	eps, err := h.s.svc.ListWebhookEndpoints(ctx, tenant)
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListWebhookEndpointsResponse{Endpoints: make([]*seatdv1.WebhookEndpoint, 0, len(eps))}
	for _, ep := range eps {
		resp.Endpoints = append(resp.Endpoints, endpointToProto(ep))
	}
	return resp, nil
}

func (h *adminService) GetWebhookEndpoint(ctx context.Context, req *seatdv1.GetWebhookEndpointRequest) (*seatdv1.GetWebhookEndpointResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = webhookID("id", req.GetId())
	}
	if err != nil {
		return nil, err
	}
	ep, err := h.s.svc.GetWebhookEndpoint(ctx, tenant, req.GetId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetWebhookEndpointResponse{Endpoint: endpointToProto(ep)}, nil
}

func (h *adminService) DeleteWebhookEndpoint(ctx context.Context, req *seatdv1.DeleteWebhookEndpointRequest) (*seatdv1.DeleteWebhookEndpointResponse, error) {
	p, tenant, err := endpointOf(ctx, req.GetTenantId(), req.GetId())
	if err != nil {
		return nil, err
	}
	if err := h.s.svc.DeleteWebhookEndpoint(ctx, p.Actor(), tenant, req.GetId()); err != nil {
		return nil, err
	}
	return &seatdv1.DeleteWebhookEndpointResponse{}, nil
}

func (h *adminService) SetWebhookEndpointDisabled(ctx context.Context, req *seatdv1.SetWebhookEndpointDisabledRequest) (*seatdv1.SetWebhookEndpointDisabledResponse, error) {
	p, tenant, err := endpointOf(ctx, req.GetTenantId(), req.GetId())
	if err != nil {
		return nil, err
	}
	ep, err := h.s.svc.SetWebhookEndpointDisabled(ctx, p.Actor(), tenant, req.GetId(), req.GetDisabled())
	if err != nil {
		return nil, err
	}
	return &seatdv1.SetWebhookEndpointDisabledResponse{Endpoint: endpointToProto(ep)}, nil
}

func (h *adminService) RotateWebhookSecret(ctx context.Context, req *seatdv1.RotateWebhookSecretRequest) (*seatdv1.RotateWebhookSecretResponse, error) {
	p, tenant, err := endpointOf(ctx, req.GetTenantId(), req.GetId())
	if err != nil {
		return nil, err
	}
	keep := req.GetKeepPrevious().AsDuration()
	if req.GetKeepPrevious() != nil && req.GetKeepPrevious().CheckValid() != nil {
		return nil, server.Invalid("keep_previous", "is not a valid duration")
	}
	ep, err := h.s.svc.RotateWebhookSecret(ctx, p.Actor(), tenant, req.GetId(), req.GetSecret(), keep)
	if err != nil {
		return nil, err
	}
	return &seatdv1.RotateWebhookSecretResponse{Endpoint: endpointToProto(ep), Secret: ep.Secrets[0]}, nil
}

func (h *adminService) ListWebhookDeliveries(ctx context.Context, req *seatdv1.ListWebhookDeliveriesRequest) (*seatdv1.ListWebhookDeliveriesResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = webhookID("endpoint_id", req.GetEndpointId())
	}
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	ds, next, err := h.s.svc.ListWebhookDeliveries(ctx, tenant, req.GetEndpointId(), server.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListWebhookDeliveriesResponse{NextPageToken: next, Deliveries: make([]*seatdv1.WebhookDelivery, 0, len(ds))}
	for _, d := range ds {
		resp.Deliveries = append(resp.Deliveries, deliveryToProto(d))
	}
	return resp, nil
}

func (h *adminService) ReplayWebhookDelivery(ctx context.Context, req *seatdv1.ReplayWebhookDeliveryRequest) (*seatdv1.ReplayWebhookDeliveryResponse, error) {
	p, tenant, err := endpointOf(ctx, req.GetTenantId(), req.GetId())
	if err != nil {
		return nil, err
	}
	d, err := h.s.svc.ReplayWebhookDelivery(ctx, p.Actor(), tenant, req.GetId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.ReplayWebhookDeliveryResponse{Delivery: deliveryToProto(d)}, nil
}

// endpointOf is the caller, its tenant and a checked endpoint id, for the
// calls on one endpoint.
func endpointOf(ctx context.Context, tenantID, id string) (Principal, string, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(tenantID)
	if err == nil {
		err = webhookID("id", id)
	}
	return p, tenant, err
}
