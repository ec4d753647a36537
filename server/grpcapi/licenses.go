package grpcapi

import (
	"context"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

// licenseWrite is what CreateLicense and UpdateLicense read first: who
// writes, in which tenant, and the license they send.
func licenseWrite(ctx context.Context, tenantID string, in *seatdv1.License) (actor, tenant string, _ service.LicenseInput, _ error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(tenantID)
	if err != nil {
		return "", "", service.LicenseInput{}, err
	}
	if in == nil {
		return "", "", service.LicenseInput{}, server.Invalid("license", "is required")
	}
	return p.Actor(), tenant, licenseInput(in), nil
}

func (h *adminService) CreateLicense(ctx context.Context, req *seatdv1.CreateLicenseRequest) (*seatdv1.CreateLicenseResponse, error) {
	actor, tenant, in, err := licenseWrite(ctx, req.GetTenantId(), req.GetLicense())
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.CreateLicense(ctx, actor, tenant, in)
	if err != nil {
		return nil, err
	}
	return &seatdv1.CreateLicenseResponse{License: licenseToProto(l)}, nil
}

func (h *adminService) GetLicense(ctx context.Context, req *seatdv1.GetLicenseRequest) (*seatdv1.GetLicenseResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = required("license_id", req.GetLicenseId())
	}
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.GetLicense(ctx, tenant, req.GetLicenseId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.GetLicenseResponse{License: licenseViewToProto(l)}, nil
}

func (h *adminService) ListLicenses(ctx context.Context, req *seatdv1.ListLicensesRequest) (*seatdv1.ListLicensesResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	if err != nil {
		return nil, err
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListLicensesResponse, error) {
		ls, next, err := h.s.svc.ListLicenses(ctx, tenant, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		resp := &seatdv1.ListLicensesResponse{NextPageToken: next}
		for _, l := range ls {
			resp.Licenses = append(resp.Licenses, licenseViewToProto(l))
		}
		return resp, nil
	})
}

func (h *adminService) UpdateLicense(ctx context.Context, req *seatdv1.UpdateLicenseRequest) (*seatdv1.UpdateLicenseResponse, error) {
	actor, tenant, in, err := licenseWrite(ctx, req.GetTenantId(), req.GetLicense())
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.UpdateLicense(ctx, actor, tenant, in, req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	return &seatdv1.UpdateLicenseResponse{License: licenseViewToProto(l)}, nil
}

func (h *adminService) DeleteLicense(ctx context.Context, req *seatdv1.DeleteLicenseRequest) (*seatdv1.DeleteLicenseResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err == nil {
		err = required("license_id", req.GetLicenseId())
	}
	if err != nil {
		return nil, err
	}
	n, err := h.s.svc.DeleteLicense(ctx, p.Actor(), tenant, req.GetLicenseId())
	if err != nil {
		return nil, err
	}
	return &seatdv1.DeleteLicenseResponse{RevokedLeases: int32(n)}, nil
}
