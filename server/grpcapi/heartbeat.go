package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
)

type heartbeatService struct {
	seatdv1.UnimplementedHeartbeatServiceServer
	s *Server
}

var _ seatdv1.HeartbeatServiceServer = (*heartbeatService)(nil)

func (h *heartbeatService) Heartbeat(ctx context.Context, req *seatdv1.HeartbeatRequest) (*seatdv1.HeartbeatResponse, error) {
	err := leaseCredentials(req.GetLeaseId(), req.GetLeaseToken())
	if err == nil {
		err = service.CheckNonce(req.GetNonce())
	}
	if err != nil {
		return nil, err
	}
	l, err := h.s.svc.Heartbeat(ctx, req.GetLeaseId(), req.GetLeaseToken())
	if err != nil {
		return nil, err
	}
	cert, err := h.s.svc.Certificate(ctx, l, req.GetNonce())
	if err != nil {
		return nil, err
	}
	lease := leaseToProto(l, h.s.svc.Now())
	expires := lease.ExpiresAt // the same value: one message serves both fields
	if expires == nil {
		expires = timestamppb.New(l.ExpiresAt)
	}
	return &seatdv1.HeartbeatResponse{
		ExpiresAt:         expires,
		HeartbeatInterval: durationpb.New(l.ExpiresAt.Sub(l.LastHeartbeatAt) / server.HeartbeatDivisor),
		Lease:             lease,
		LeaseCertificate:  cert,
	}, nil
}

// HeartbeatStream answers each ping with the new deadline. The first message
// names the lease; later ones may be empty. A failed heartbeat ends the
// stream with its status (e.g. LEASE_EXPIRED), after an EXPIRED or REVOKED
// signal when that is the reason; a revocation (service.KeepAlive) ends it
// at once. A stream that stays silent is ended too: when its lease ends
// (the deadline it was last told passed with no heartbeat and the lease
// cannot be revived: EXPIRED signal, LEASE_EXPIRED; or it was released or
// revoked meanwhile), or after the idle timeout (STREAM_IDLE_TIMEOUT), so
// that a stream never holds its slot and metadata for nothing. On shutdown
// the stream gets RECONNECT and ends cleanly, so the client moves to
// another instance.
func (h *heartbeatService) HeartbeatStream(stream seatdv1.HeartbeatService_HeartbeatStreamServer) error {
	ctx := stream.Context()
	pings := make(chan *seatdv1.HeartbeatStreamRequest)
	recvErr := make(chan error, 1)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case pings <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	var id, token, tenant string
	silent, stopSilent := firstMessageDeadline(h.s.firstMessage)
	defer stopSilent()
	// Both armed by the first heartbeat that succeeds.
	var leaseEnd, idle streamTimer
	defer leaseEnd.stop()
	defer idle.stop()
	var idleFor time.Duration
	lease := h.s.svc.KeepAlive()
	defer lease.Close()
	for {
		var req *seatdv1.HeartbeatStreamRequest
		select {
		case <-lease.Revoked():
			_ = stream.Send(&seatdv1.HeartbeatStreamResponse{Signal: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED})
			return server.ErrLeaseRevoked
		case <-h.s.svc.ShuttingDown():
			return stream.Send(&seatdv1.HeartbeatStreamResponse{Signal: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT})
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-silent:
			return refusal(codes.DeadlineExceeded, server.ReasonFirstMessageTimeout,
				fmt.Sprintf("a heartbeat stream must send its first heartbeat within %v of opening", h.s.firstMessage), 0)
		case <-idle.c():
			h.s.network.StreamsEnded.WithLabelValues("idle").Inc()
			return refusal(codes.DeadlineExceeded, server.ReasonStreamIdleTimeout,
				fmt.Sprintf("this heartbeat stream sent nothing for %v; open a new one", idleFor), 0)
		case <-leaseEnd.c():
			again, err := lease.Ended(ctx, tenant, id)
			if err == nil {
				leaseEnd.reset(again.Sub(h.s.svc.Now()))
				continue
			}
			if signal, ok := endSignals[server.ErrorReason(err)]; ok || server.ErrorReason(err) == server.ReasonLeaseReleased {
				h.s.network.StreamsEnded.WithLabelValues("lease_ended").Inc()
				if ok {
					_ = stream.Send(&seatdv1.HeartbeatStreamResponse{Signal: signal})
				}
			}
			return err
		case req = <-pings:
			silent = nil
		}
		if id == "" {
			id, token = req.GetLeaseId(), req.GetLeaseToken()
		} else if req.GetLeaseId() != "" && req.GetLeaseId() != id {
			return server.Invalid("lease_id", "a stream keeps one lease alive; open another stream for another lease")
		}
		if err := leaseCredentials(id, token); err != nil {
			return err
		}
		if err := service.CheckNonce(req.GetNonce()); err != nil {
			return err
		}
		l, err := lease.Beat(ctx, id, token)
		if err != nil {
			if signal, ok := endSignals[server.ErrorReason(err)]; ok {
				_ = stream.Send(&seatdv1.HeartbeatStreamResponse{Signal: signal})
			}
			return err
		}
		tenant = l.TenantID
		interval := l.ExpiresAt.Sub(l.LastHeartbeatAt) / server.HeartbeatDivisor
		leaseEnd.reset(l.ExpiresAt.Sub(h.s.svc.Now()))
		if h.s.idle > 0 {
			idleFor = max(h.s.idle, 2*interval)
			idle.reset(idleFor)
		}
		cert, err := h.s.svc.Certificate(ctx, l, req.GetNonce())
		if err != nil {
			return err
		}
		if err := stream.Send(&seatdv1.HeartbeatStreamResponse{
			ExpiresAt:         timestamppb.New(l.ExpiresAt),
			HeartbeatInterval: durationpb.New(interval),
			LeaseCertificate:  cert,
		}); err != nil {
			return err
		}
	}
}

// streamTimer is a timer armed later than it is declared: its channel is
// nil (never ready) until the first reset.
type streamTimer struct{ t *time.Timer }

func (s *streamTimer) c() <-chan time.Time {
	if s.t == nil {
		return nil
	}
	return s.t.C
}

// reset arms the timer for d from now (at once if d is not positive),
// dropping any earlier firing not yet received (Go 1.23 timers).
func (s *streamTimer) reset(d time.Duration) {
	if s.t == nil {
		s.t = time.NewTimer(max(d, 0))
		return
	}
	s.t.Reset(max(d, 0))
}

func (s *streamTimer) stop() {
	if s.t != nil {
		s.t.Stop()
	}
}

// endSignals are the failures a stream announces before it ends.
var endSignals = map[string]seatdv1.HeartbeatSignal{
	server.ReasonLeaseExpired: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_EXPIRED,
	server.ReasonLeaseRevoked: seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED,
}
