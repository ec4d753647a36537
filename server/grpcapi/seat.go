package grpcapi

import (
	"context"

	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server/service"
)

type seatService struct {
	seatdv1.UnimplementedSeatServiceServer
	s *Server
}

var _ seatdv1.SeatServiceServer = (*seatService)(nil)

func (h *seatService) AcquireSeat(ctx context.Context, req *seatdv1.AcquireSeatRequest) (*seatdv1.AcquireSeatResponse, error) {
	in := seatRequest(req)
	if err := clientFields(in); err != nil {
		h.s.svc.AcquisitionRefused(err)
		return nil, err
	}
	g, err := h.s.svc.AcquireSeat(ctx, in)
	if err != nil {
		return nil, err
	}
	return h.s.acquireResponse(g), nil
}

// seatAsk is what AcquireSeat and WaitForSeat requests share.
type seatAsk interface {
	GetLicenseKey() string
	GetFingerprint() string
	GetUser() string
	GetHostname() string
	GetIdempotencyKey() string
	GetMetadata() map[string]string
}

func seatRequest(r seatAsk) service.SeatRequest {
	return service.SeatRequest{
		LicenseKey: r.GetLicenseKey(), Fingerprint: r.GetFingerprint(), User: r.GetUser(),
		Hostname: r.GetHostname(), IdempotencyKey: r.GetIdempotencyKey(), Metadata: r.GetMetadata(),
	}
}

func (s *Server) acquireResponse(g service.Grant) *seatdv1.AcquireSeatResponse {
	return &seatdv1.AcquireSeatResponse{
		Lease:             leaseToProto(g.Lease, s.svc.Now()),
		LeaseToken:        g.Token,
		HeartbeatInterval: durationpb.New(g.License.HeartbeatInterval()),
		SeatsInUse:        int32(g.SeatsInUse),
		SeatLimit:         int32(g.License.SeatLimit()),
	}
}

func (h *seatService) ReleaseSeat(ctx context.Context, req *seatdv1.ReleaseSeatRequest) (*seatdv1.ReleaseSeatResponse, error) {
	if err := leaseCredentials(req.GetLeaseId(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	l, err := h.s.svc.Release(ctx, req.GetLeaseId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	return &seatdv1.ReleaseSeatResponse{Lease: leaseToProto(l, h.s.svc.Now())}, nil
}
