package grpcapi

import (
	"context"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/service"
)

func runToProto(r cleanup.Run) *seatdv1.CleanupRun {
	return &seatdv1.CleanupRun{
		StartedAt: timestamppb.New(r.StartedAt), Duration: durationpb.New(r.Duration),
		Scanned: r.Scanned, Expired: r.Expired, Result: r.Result, Trigger: r.Trigger, Errors: r.Errors,
	}
}

func (h *adminService) Cleanup(ctx context.Context, _ *seatdv1.CleanupRequest) (*seatdv1.CleanupResponse, error) {
	p := principalFrom(ctx)
	if err := p.requireOperator(); err != nil {
		return nil, err
	}
	return &seatdv1.CleanupResponse{Run: runToProto(h.s.svc.RunCleanup(ctx, p.Actor()))}, nil
}

func (h *adminService) GetCleanupStatus(ctx context.Context, _ *seatdv1.GetCleanupStatusRequest) (*seatdv1.GetCleanupStatusResponse, error) {
	if err := principalFrom(ctx).requireOperator(); err != nil {
		return nil, err
	}
	return cleanupStatusToProto(h.s.svc.CleanupStatus(ctx)), nil
}

func cleanupStatusToProto(st service.CleanupStatus) *seatdv1.GetCleanupStatusResponse {
	resp := &seatdv1.GetCleanupStatusResponse{IsLeader: st.IsLeader, InstanceId: st.InstanceID, LeaderId: st.LeaderID}
	if st.LastRun != nil {
		resp.LastRun = runToProto(*st.LastRun)
	}
	if st.Scheduled {
		resp.Interval = durationpb.New(st.Interval)
		resp.NextRunAt = ts(st.NextRunAt)
	}
	return resp
}
