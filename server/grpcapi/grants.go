package grpcapi

import (
	"context"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

// licenseChange is what the calls that change a license's grants or policy
// read first: who writes, in which tenant, on which license.
func licenseChange(ctx context.Context, tenantID, licenseID string) (actor, tenant string, _ error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(tenantID)
	if err == nil {
		err = required("license_id", licenseID)
	}
	if err == nil {
		err = maxLen("license_id", licenseID, 128)
	}
	return p.Actor(), tenant, err
}

func (h *adminService) CreateFeatureGrant(ctx context.Context, req *seatdv1.CreateFeatureGrantRequest) (*seatdv1.CreateFeatureGrantResponse, error) {
	actor, tenant, err := licenseChange(ctx, req.GetTenantId(), req.GetLicenseId())
	if err == nil && req.GetGrant() == nil {
		err = server.Invalid("grant", "is required")
	}
	if err != nil {
		return nil, err
	}
	g, err := h.s.svc.CreateGrant(ctx, actor, tenant, req.GetLicenseId(), grantInput(req.GetGrant()))
	if err != nil {
		return nil, err
	}
	return &seatdv1.CreateFeatureGrantResponse{Grant: grantViewToProto(g)}, nil
}

func (h *adminService) UpdateFeatureGrant(ctx context.Context, req *seatdv1.UpdateFeatureGrantRequest) (*seatdv1.UpdateFeatureGrantResponse, error) {
	actor, tenant, err := licenseChange(ctx, req.GetTenantId(), req.GetLicenseId())
	if err == nil && req.GetGrant() == nil {
		err = server.Invalid("grant", "is required")
	}
	if err != nil {
		return nil, err
	}
	g, err := h.s.svc.UpdateGrant(ctx, actor, tenant, req.GetLicenseId(), grantInput(req.GetGrant()), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	return &seatdv1.UpdateFeatureGrantResponse{Grant: grantViewToProto(g)}, nil
}

func (h *adminService) DeleteFeatureGrant(ctx context.Context, req *seatdv1.DeleteFeatureGrantRequest) (*seatdv1.DeleteFeatureGrantResponse, error) {
	actor, tenant, err := licenseChange(ctx, req.GetTenantId(), req.GetLicenseId())
	if err != nil {
		return nil, err
	}
	n, err := h.s.svc.DeleteGrant(ctx, actor, tenant, req.GetLicenseId(), req.GetGrantId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.DeleteFeatureGrantResponse{RevokedLeases: int32(n)}, nil
}

// grantInput converts a FeatureGrant message for the service. What does
// not convert (an invalid duration or timestamp) goes to Malformed by
// field path, as licenseInput does. Output-only fields (license_id,
// seats_in_use, create_time, update_time) are ignored.
func grantInput(in *seatdv1.FeatureGrant) service.GrantInput {
	g := service.GrantInput{
		ID: in.GetId(), Feature: in.GetFeature(), Version: in.GetVersion(),
		Seats: int64(in.GetSeats()), Overdraft: int64(in.GetOverdraft()),
		MaxBorrowedSeats: int64(in.GetMaxBorrowedSeats()),
		Malformed:        map[string]error{},
	}
	if t := in.GetStartsAt(); t != nil {
		at := t.AsTime()
		g.StartsAt = &at
		if t.CheckValid() != nil {
			g.Malformed["starts_at"] = server.Invalid("grant.starts_at", "is not a valid timestamp")
		}
	}
	if t := in.GetExpiresAt(); t != nil {
		at := t.AsTime()
		g.ExpiresAt = &at
		if t.CheckValid() != nil {
			g.Malformed["expires_at"] = server.Invalid("grant.expires_at", "is not a valid timestamp")
		}
	}
	if d := in.GetMaxBorrowDuration(); d != nil {
		g.MaxBorrowDuration = d.AsDuration()
		if d.CheckValid() != nil {
			g.Malformed["max_borrow_duration"] = server.Invalid("grant.max_borrow_duration", "is not a valid duration")
		}
	}
	return g
}

// grantToProto shows a grant; seats_in_use is the caller's to set.
func grantToProto(g server.Grant) *seatdv1.FeatureGrant {
	return &seatdv1.FeatureGrant{
		Id: g.ID, LicenseId: g.LicenseID, Feature: g.Feature, Version: g.Version,
		Seats: int32(g.Seats), Overdraft: int32(g.Overdraft),
		StartsAt: ts(g.StartsAt), ExpiresAt: ts(g.ExpiresAt),
		MaxBorrowDuration: dur(g.MaxBorrowDuration), MaxBorrowedSeats: int32(g.MaxBorrowedSeats),
		CreateTime: ts(g.CreatedAt), UpdateTime: ts(g.UpdatedAt),
	}
}

func grantViewToProto(v service.GrantView) *seatdv1.FeatureGrant {
	g := grantToProto(v.Grant)
	g.SeatsInUse = int32(v.SeatsInUse)
	return g
}
