package grpcapi

import (
	"context"

	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

type seatService struct {
	seatdv1.UnimplementedSeatServiceServer
	s *Server
}

var _ seatdv1.SeatServiceServer = (*seatService)(nil)

func (h *seatService) AcquireSeat(ctx context.Context, req *seatdv1.AcquireSeatRequest) (*seatdv1.AcquireSeatResponse, error) {
	resp, err := h.s.acquire(ctx, req.GetLicenseKey(), req.GetFingerprint(), req.GetUser(), req.GetHostname(), req.GetIdempotencyKey(), req.GetMetadata())
	h.s.okAcquisitions.count(h.s.metrics.Acquisitions, err)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (s *Server) acquire(ctx context.Context, key, fp, user, host, idem string, md map[string]string) (*seatdv1.AcquireSeatResponse, error) {
	res, token, err := s.acquireLease(ctx, key, fp, user, host, idem, md)
	if err != nil {
		return nil, err
	}
	return s.acquireResponse(res, token), nil
}

// acquireLease validates and takes a seat; it returns the lease token.
func (s *Server) acquireLease(ctx context.Context, key, fp, user, host, idem string, md map[string]string) (server.AcquireResult, string, error) {
	if err := clientFields(key, fp, user, host, idem, md); err != nil {
		return server.AcquireResult{}, "", err
	}
	token := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.store.Acquire(ctx, server.AcquireRequest{
		LicenseKey: key, Fingerprint: fp, User: user, Hostname: host, Metadata: md, IdempotencyKey: idem,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(token),
	})
	return res, token, err
}

func (s *Server) acquireResponse(res server.AcquireResult, token string) *seatdv1.AcquireSeatResponse {
	return &seatdv1.AcquireSeatResponse{
		Lease:             leaseToProto(res.Lease, s.now()),
		LeaseToken:        token,
		HeartbeatInterval: durationpb.New(res.License.HeartbeatInterval()),
		SeatsInUse:        int32(res.SeatsInUse),
		SeatLimit:         int32(res.License.SeatLimit()),
	}
}

func (h *seatService) ReleaseSeat(ctx context.Context, req *seatdv1.ReleaseSeatRequest) (*seatdv1.ReleaseSeatResponse, error) {
	if err := leaseCredentials(req.GetLeaseId(), req.GetLeaseToken()); err != nil {
		return nil, err
	}
	l, err := h.s.store.Release(ctx, req.GetLeaseId(), server.HashSecret(req.GetLeaseToken()))
	h.s.okReleases.count(h.s.metrics.Releases, err)
	if err != nil {
		return nil, err
	}
	return &seatdv1.ReleaseSeatResponse{Lease: leaseToProto(l, h.s.now())}, nil
}

// resultLabel is the metrics label for an RPC outcome: "ok" or the error code.
func resultLabel(err error) string {
	if err == nil {
		return "ok"
	}
	return string(server.ErrorCode(err))
}
