package grpcapi

import (
	"context"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

func (h *adminService) CreateTenant(ctx context.Context, req *seatdv1.CreateTenantRequest) (*seatdv1.CreateTenantResponse, error) {
	p := principalFrom(ctx)
	t := server.Tenant{ID: req.GetTenant().GetId(), Name: req.GetTenant().GetName()}
	err := p.requireOperator()
	if err == nil && t.ID != "" { // an empty id is the service's to make
		err = validTenantID("tenant.id", t.ID)
	}
	if err == nil {
		err = maxLen("tenant.name", t.Name, server.MaxLabelLength)
	}
	if err != nil {
		return nil, err
	}
	t, err = h.s.svc.CreateTenant(ctx, p.Actor(), t)
	if err != nil {
		return nil, err
	}
	return &seatdv1.CreateTenantResponse{Tenant: h.s.tenantToProto(t)}, nil
}

func (h *adminService) ListTenants(ctx context.Context, req *seatdv1.ListTenantsRequest) (*seatdv1.ListTenantsResponse, error) {
	err := principalFrom(ctx).requireOperator()
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	ts, next, err := h.s.svc.ListTenants(ctx, server.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListTenantsResponse{NextPageToken: next}
	for _, t := range ts {
		resp.Tenants = append(resp.Tenants, h.s.tenantToProto(t))
	}
	return resp, nil
}

func (h *adminService) CreateApiKey(ctx context.Context, req *seatdv1.CreateApiKeyRequest) (*seatdv1.CreateApiKeyResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.keysTenant(req.GetTenantId())
	if err == nil {
		err = maxLen("name", req.GetName(), server.MaxLabelLength)
	}
	var role server.Role
	if err == nil {
		role, err = server.ParseTenantRole("role", req.GetRole())
	}
	if err != nil {
		return nil, err
	}
	k, secret, err := h.s.svc.CreateAPIKey(ctx, p.Actor(), tenant, req.GetName(), role)
	if err != nil {
		return nil, err
	}
	return &seatdv1.CreateApiKeyResponse{ApiKey: apiKeyToProto(k), Secret: secret}, nil
}

func (h *adminService) ListApiKeys(ctx context.Context, req *seatdv1.ListApiKeysRequest) (*seatdv1.ListApiKeysResponse, error) {
	tenant, err := principalFrom(ctx).keysTenant(req.GetTenantId())
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	ks, next, err := h.s.svc.ListAPIKeys(ctx, tenant, server.Page{Size: int(req.GetPageSize()), Token: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.ListApiKeysResponse{NextPageToken: next}
	for _, k := range ks {
		resp.ApiKeys = append(resp.ApiKeys, apiKeyToProto(k))
	}
	return resp, nil
}

func (h *adminService) RevokeApiKey(ctx context.Context, req *seatdv1.RevokeApiKeyRequest) (*seatdv1.RevokeApiKeyResponse, error) {
	p := principalFrom(ctx)
	if err := required("api_key_id", req.GetApiKeyId()); err != nil {
		return nil, err
	}
	tenant := p.TenantID // a tenant's admin revokes its own tenant's keys only
	if p.Operator {
		tenant = ""
	}
	k, err := h.s.svc.RevokeAPIKey(ctx, p.Actor(), tenant, req.GetApiKeyId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.RevokeApiKeyResponse{ApiKey: apiKeyToProto(k)}, nil
}

// keysTenant is the tenant whose API keys a call manages: the operator
// names it (tenant_id is required); a tenant's admin manages its own.
func (p Principal) keysTenant(requested string) (string, error) {
	if p.Operator {
		return requested, validTenantID("tenant_id", requested)
	}
	return p.tenant(requested)
}
