package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

var bucketOf = map[seatdv1.UsageBucket]time.Duration{
	seatdv1.UsageBucket_USAGE_BUCKET_UNSPECIFIED: 0,
	seatdv1.UsageBucket_USAGE_BUCKET_HOUR:        time.Hour,
	seatdv1.UsageBucket_USAGE_BUCKET_DAY:         24 * time.Hour,
}

func (h *adminService) GetUsageReport(ctx context.Context, req *seatdv1.GetUsageReportRequest) (*seatdv1.GetUsageReportResponse, error) {
	tenant, err := principalFrom(ctx).tenant(req.GetTenantId())
	if err != nil {
		return nil, err
	}
	bucket, ok := bucketOf[req.GetBucket()]
	if !ok {
		return nil, server.Invalid("bucket", "unknown bucket")
	}
	w := service.UsageWindow{LicenseID: req.GetLicenseId(), Feature: req.GetFeature(), Bucket: bucket, Users: int(req.GetUserLimit())}
	start, err := optionalTime("start_time", req.GetStartTime())
	if err != nil {
		return nil, err
	}
	end, err := optionalTime("end_time", req.GetEndTime())
	if err != nil {
		return nil, err
	}
	if req.GetStartTime() != nil {
		w.Start = &start
	}
	if req.GetEndTime() != nil {
		w.End = &end
	}
	q, err := h.s.svc.UsageQuery(tenant, w)
	if err != nil {
		return nil, err
	}
	r, err := h.s.svc.UsageReport(ctx, q)
	if err != nil {
		return nil, err
	}
	resp := &seatdv1.GetUsageReportResponse{StartTime: timestamppb.New(q.Start), EndTime: timestamppb.New(q.End),
		Bucket: seatdv1.UsageBucket_USAGE_BUCKET_DAY}
	if q.Bucket == time.Hour {
		resp.Bucket = seatdv1.UsageBucket_USAGE_BUCKET_HOUR
	}
	for _, row := range r.Rows {
		resp.Rows = append(resp.Rows, &seatdv1.UsageReportRow{
			LicenseId: row.LicenseID, BucketStart: timestamppb.New(row.BucketStart), PeakSeats: int32(row.PeakSeats),
			SeatHours: row.SeatHours, Acquisitions: row.Acquisitions, Denials: row.Denials,
			DistinctUsers: row.DistinctUsers, QueueWaits: row.QueueWaits, MeanQueueWait: durationpb.New(row.MeanWait),
			Feature: row.Feature, DenialsByReason: row.DenialsByReason(),
		})
	}
	for _, u := range r.Users {
		resp.Users = append(resp.Users, &seatdv1.UserUsage{User: u.User, SeatHours: u.SeatHours, Sessions: u.Sessions})
	}
	return resp, nil
}
