package grpcapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

type seatService struct {
	seatdv1.UnimplementedSeatServiceServer
	s *Server
}

var _ seatdv1.SeatServiceServer = (*seatService)(nil)

func (h *seatService) AcquireSeat(ctx context.Context, req *seatdv1.AcquireSeatRequest) (*seatdv1.AcquireSeatResponse, error) {
	in := seatRequest(req)
	err := clientFields(in)
	if err == nil {
		in.BorrowFor, err = borrowDuration(req.GetBorrowDuration())
	}
	if err != nil {
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
	GetNonce() string
	GetFeature() string
	GetVersion() string
}

func seatRequest(r seatAsk) service.SeatRequest {
	return service.SeatRequest{
		LicenseKey: r.GetLicenseKey(), Fingerprint: r.GetFingerprint(), User: r.GetUser(),
		Hostname: r.GetHostname(), IdempotencyKey: r.GetIdempotencyKey(), Metadata: r.GetMetadata(),
		Nonce: r.GetNonce(), Feature: r.GetFeature(), Version: r.GetVersion(),
	}
}

// borrowDuration reads AcquireSeatRequest.borrow_duration: unset is a
// normal lease; set, it must be at least a second (the shortest lease
// TTL) and at most server.MaxBorrowDuration (the license's own bound is
// the store's to judge).
func borrowDuration(d *durationpb.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if d.CheckValid() != nil {
		return 0, server.Invalid("borrow_duration", "is not a valid duration")
	}
	v := d.AsDuration()
	if v < server.MinLeaseTTL || v > server.MaxBorrowDuration {
		return 0, server.Invalid("borrow_duration", "must be at least 1s and at most 720h (30 days; and the license's max_borrow_duration)")
	}
	return v, nil
}

// acquireResponse answers a seat taken: of a grant, with the grant and
// the grant's seat counts (the store's SeatsInUse is then the grant's).
func (s *Server) acquireResponse(g service.Grant) *seatdv1.AcquireSeatResponse {
	resp := &seatdv1.AcquireSeatResponse{
		Lease:             leaseToProto(g.Lease, s.svc.Now()),
		LeaseToken:        g.Token,
		HeartbeatInterval: durationpb.New(g.License.HeartbeatInterval()),
		SeatsInUse:        int32(g.SeatsInUse),
		SeatLimit:         int32(g.License.SeatLimit()),
		LeaseCertificate:  g.Certificate,
	}
	if g.Grant != nil {
		resp.Grant = grantToProto(*g.Grant)
		resp.Grant.SeatsInUse = int32(g.SeatsInUse)
		resp.SeatLimit = int32(g.Grant.SeatLimit())
	}
	return resp
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
