package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// eventRange reads what the three event lists share: the tenant, the
// license (when the list has one), the time range and the page size.
func eventRange(ctx context.Context, tenantID, licenseID string, start, end *timestamppb.Timestamp, pageSize int32) (server.EventRange, error) {
	tenant, err := principalFrom(ctx).tenant(tenantID)
	if err != nil {
		return server.EventRange{}, err
	}
	if err := validPageSize(pageSize); err != nil {
		return server.EventRange{}, err
	}
	r := server.EventRange{TenantID: tenant, LicenseID: licenseID}
	if r.Start, err = optionalTime("start_time", start); err != nil {
		return r, err
	}
	if r.End, err = optionalTime("end_time", end); err != nil {
		return r, err
	}
	return r, nil
}

// optionalTime converts a timestamp that may be unset (the zero time).
func optionalTime(field string, t *timestamppb.Timestamp) (time.Time, error) {
	if t == nil {
		return time.Time{}, nil
	}
	if err := t.CheckValid(); err != nil {
		return time.Time{}, server.Invalid(field, "is not a valid timestamp")
	}
	return t.AsTime(), nil
}

func (h *adminService) ListUsageEvents(ctx context.Context, req *seatdv1.ListUsageEventsRequest) (*seatdv1.ListUsageEventsResponse, error) {
	r, err := eventRange(ctx, req.GetTenantId(), req.GetLicenseId(), req.GetStartTime(), req.GetEndTime(), req.GetPageSize())
	if err != nil {
		return nil, err
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListUsageEventsResponse, error) {
		evs, next, err := h.s.svc.ListUsageEvents(ctx, r, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		resp := &seatdv1.ListUsageEventsResponse{NextPageToken: next}
		for _, e := range evs {
			resp.UsageEvents = append(resp.UsageEvents, &seatdv1.UsageEvent{
				LeaseId: e.LeaseID, LicenseId: server.PoolLicense(e.LicenseID), GrantId: grantOf(e.LicenseID), Feature: e.Feature,
				EndState: stateToProto[e.EndState], StartedAt: ts(e.StartedAt), EndedAt: ts(e.EndedAt),
				Duration: durationpb.New(e.EndedAt.Sub(e.StartedAt)),
			})
		}
		return resp, nil
	})
}

func (h *adminService) ListCleanupEvents(ctx context.Context, req *seatdv1.ListCleanupEventsRequest) (*seatdv1.ListCleanupEventsResponse, error) {
	r, err := eventRange(ctx, req.GetTenantId(), req.GetLicenseId(), req.GetStartTime(), req.GetEndTime(), req.GetPageSize())
	if err != nil {
		return nil, err
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListCleanupEventsResponse, error) {
		evs, next, err := h.s.svc.ListCleanupEvents(ctx, r, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		resp := &seatdv1.ListCleanupEventsResponse{NextPageToken: next}
		for _, e := range evs {
			resp.CleanupEvents = append(resp.CleanupEvents, &seatdv1.CleanupEvent{
				LeaseId: e.LeaseID, LicenseId: server.PoolLicense(e.LicenseID), GrantId: grantOf(e.LicenseID), Feature: e.Feature,
				CleanupType: e.CleanupType, LastHeartbeatAt: ts(e.LastHeartbeatAt), ExpiresAt: ts(e.ExpiresAt), CleanedAt: ts(e.CleanedAt),
			})
		}
		return resp, nil
	})
}

func (h *adminService) ListAuditEvents(ctx context.Context, req *seatdv1.ListAuditEventsRequest) (*seatdv1.ListAuditEventsResponse, error) {
	r, err := eventRange(ctx, req.GetTenantId(), "", req.GetStartTime(), req.GetEndTime(), req.GetPageSize())
	if err != nil {
		return nil, err
	}
	first := server.Page{Size: int(req.GetPageSize())}.PageSize()
	return fitPage(first, func(size int) (*seatdv1.ListAuditEventsResponse, error) {
		evs, next, err := h.s.svc.ListAuditEvents(ctx, r, server.Page{Size: size, Token: req.GetPageToken()})
		if err != nil {
			return nil, err
		}
		resp := &seatdv1.ListAuditEventsResponse{NextPageToken: next}
		for _, e := range evs {
			resp.AuditEvents = append(resp.AuditEvents, &seatdv1.AuditEvent{
				Id: e.ID, Actor: e.Actor, Action: e.Action, Resource: e.Resource, ResourceId: e.ResourceID,
				Details: e.Details, At: ts(e.At),
			})
		}
		return resp, nil
	})
}

// grantOf is the grant_id of a pool id: the pool's own id when it is a
// grant's, "" for a license's base pool.
func grantOf(poolID string) string {
	if server.IsGrantID(poolID) {
		return poolID
	}
	return ""
}
