package grpcapi

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

func (h *adminService) GetZombieReport(ctx context.Context, req *seatdv1.GetZombieReportRequest) (*seatdv1.GetZombieReportResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	w, err := zombieWindow(req)
	if err != nil {
		return nil, err
	}
	q, err := h.s.svc.ZombieQuery(tenant, w)
	if err != nil {
		return nil, err
	}
	r, err := h.s.svc.ZombieReport(ctx, q)
	if err != nil {
		return nil, err
	}
	return zombieReportToProto(q, r), nil
}

// zombieWindow converts the request's window; the service fills in the
// defaults and checks the rest.
func zombieWindow(req *seatdv1.GetZombieReportRequest) (service.ZombieWindow, error) {
	w := service.ZombieWindow{TopLimit: int(req.GetTopLimit()), Feature: req.GetFeature()}
	if t := req.GetEndTime(); t != nil {
		if err := t.CheckValid(); err != nil {
			return w, server.Invalid("end_time", "is not a valid timestamp")
		}
		end := t.AsTime()
		w.End = &end
	}
	if t := req.GetStartTime(); t != nil {
		if err := t.CheckValid(); err != nil {
			return w, server.Invalid("start_time", "is not a valid timestamp")
		}
		start := t.AsTime()
		w.Start = &start
	}
	return w, nil
}

func zombieReportToProto(q server.ZombieQuery, r server.ZombieReport) *seatdv1.GetZombieReportResponse {
	resp := &seatdv1.GetZombieReportResponse{
		StartTime: timestamppb.New(q.Start), EndTime: timestamppb.New(q.End),
		MeanMinutesToCleanup: r.MeanMinutesToCleanup, ZombiesTotal: r.Total,
	}
	for _, d := range r.Days {
		resp.Days = append(resp.Days, &seatdv1.ZombieDay{Date: d.Date, ZombiesCleaned: d.ZombiesCleaned, AffectedLicenses: d.AffectedLicenses})
	}
	for _, l := range r.TopLicenses {
		resp.TopLicenses = append(resp.TopLicenses, &seatdv1.LicenseZombies{
			LicenseId: l.LicenseID, Feature: l.Feature, LicenseName: l.LicenseName, ZombieCount: l.ZombieCount,
			LeaseCount: l.LeaseCount, ZombiePercentage: l.Percentage,
		})
	}
	return resp
}
