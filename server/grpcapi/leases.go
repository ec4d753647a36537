package grpcapi

import (
	"context"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

func (h *adminService) ListLeases(ctx context.Context, req *seatdv1.ListLeasesRequest) (*seatdv1.ListLeasesResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err == nil {
		err = required("license_id", req.GetLicenseId())
	}
	if err == nil {
		err = validPageSize(req.GetPageSize())
	}
	state, ok := stateFromProto[req.GetState()]
	if err == nil && !ok {
		err = server.Invalid("state", "is not a known lease state")
	}
	if err == nil && req.GetFeature() != "" {
		err = server.CheckFeature("feature", req.GetFeature())
	}
	if err != nil {
		return nil, err
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListLeasesResponse, error) {
		page, err := h.s.svc.ListLeases(ctx, tenant, req.GetLicenseId(), service.LeaseFilter{State: state, Feature: req.GetFeature()}, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		resp := &seatdv1.ListLeasesResponse{NextPageToken: page.Next}
		for _, l := range page.Leases {
			resp.Leases = append(resp.Leases, leaseToProto(l, page.At))
		}
		return resp, nil
	})
}

func (h *adminService) RevokeLease(ctx context.Context, req *seatdv1.RevokeLeaseRequest) (*seatdv1.RevokeLeaseResponse, error) {
	p := principalFrom(ctx)
	tenant, err := p.tenant(req.GetTenantId())
	if err == nil {
		err = required("lease_id", req.GetLeaseId())
	}
	if err == nil {
		err = maxLen("reason", req.GetReason(), 1024)
	}
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.RevokeLease(ctx, p.Actor(), tenant, req.GetLeaseId(), req.GetReason())
	if err != nil {
		return nil, err
	}
	return &seatdv1.RevokeLeaseResponse{Lease: leaseToProto(l, h.s.svc.Now())}, nil
}
