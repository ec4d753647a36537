// Package grpcapi implements the seatd.v1 gRPC services. Handlers check a
// request's fields, convert it to the domain, call the use case in
// server/service, convert the answer back, and turn errors into statuses
// through one table (status.go). REST reaches the same handlers through the
// gateway.
package grpcapi

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/notify"
	"github.com/seatd/seatd/server/service"
	"github.com/seatd/seatd/server/signing"
	"github.com/seatd/seatd/server/waitqueue"
)

// Server holds what the three services share.
type Server struct {
	svc  *service.Service // the use cases every handler delegates to
	auth *Authenticator
	log  *slog.Logger

	streams      *streamLimits
	firstMessage time.Duration // a heartbeat stream's deadline to name its lease
	idle         time.Duration // a heartbeat stream silent this long is ended (heartbeat.go)
	network      *metrics.Network
	limits       callLimits // per client address (ratelimits.go)
}

// Config wires a Server.
type Config struct {
	// Webhooks wire the webhooks' use cases (service.WebhookOptions).
	Webhooks service.WebhookOptions

	Store       server.Store
	Cleaner     *cleanup.Cleaner
	Scheduler   *cleanup.Scheduler // may be nil (no scheduled passes)
	Leadership  cleanup.Leadership
	OperatorKey string
	Logger      *slog.Logger
	Metrics     *metrics.Metrics

	// WaitQueue orders WaitForSeat callers (default: one-node memory queue
	// of DefaultWaitQueueLength per license).
	WaitQueue waitqueue.Queue
	// Hub and Revocations carry revocations to heartbeat streams (default:
	// this instance only).
	Hub         *notify.Hub
	Revocations notify.Publisher
	// WaitHold is how long a seat granted through WaitForSeat is held for
	// its first heartbeat before it goes to the next waiter.
	WaitHold time.Duration
	// WaitPoll is how often the head of a queue tries for a seat.
	WaitPoll time.Duration

	// MaxStreams caps the seatd streams open at once on this instance
	// (default DefaultMaxStreams; negative: no cap), MaxStreamsPerAddress
	// those of one client address (default DefaultMaxStreamsPerAddress;
	// negative: no cap).
	MaxStreams, MaxStreamsPerAddress int
	// StreamIdleTimeout ends a heartbeat stream that sends nothing for this
	// long, or for two of its lease's heartbeat intervals if that is longer
	// (default DefaultStreamIdleTimeout; negative: none). A stream silent
	// past its lease's end is ended anyway.
	StreamIdleTimeout time.Duration
	// Network counts open streams and what the limits refused (default:
	// counted nowhere).
	Network *metrics.Network
	// FirstMessageTimeout is how long a heartbeat stream may stay silent
	// after it opens (default DefaultFirstMessageTimeout; negative: none).
	FirstMessageTimeout time.Duration

	// FailedLookups and UnauthenticatedCalls limit each client address
	// (ratelimits.go); Quotas bound each tenant (service.Quotas). The zero
	// value is no limit: the daemon's flags carry the defaults.
	FailedLookups, UnauthenticatedCalls RateLimit
	Quotas                              Quotas

	// Issuer signs lease certificates (default: one over Store that keeps
	// new keys plain).
	Issuer *signing.Issuer

	// LicenseFile, when set, runs locked mode (service.LicenseFile).
	LicenseFile service.LicenseFile

	// Tokens checks bearer tokens that are not keys (OIDC tokens and
	// console sessions: server/sso); nil: keys only.
	Tokens TokenVerifier
}

// Defaults for WaitForSeat (the service's, named here for the daemon's flags).
const (
	DefaultWaitQueueLength = service.DefaultWaitQueueLength
	DefaultWaitHold        = service.DefaultWaitHold
	DefaultWaitPoll        = service.DefaultWaitPoll
)

// Quotas bound each tenant; the service enforces them.
type Quotas = service.Quotas

// DefaultQuotas are generous but finite (the daemon's flags).
var DefaultQuotas = service.DefaultQuotas

// New returns a Server and the service its handlers delegate to.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	svc := service.New(service.Config{
		Store: cfg.Store, Cleaner: cfg.Cleaner, Scheduler: cfg.Scheduler, Leadership: cfg.Leadership,
		Logger: log, Metrics: cfg.Metrics,
		WaitQueue: cfg.WaitQueue, Hub: cfg.Hub, Revocations: cfg.Revocations,
		WaitHold: cfg.WaitHold, WaitPoll: cfg.WaitPoll, Quotas: cfg.Quotas, Issuer: cfg.Issuer,
		LicenseFile: cfg.LicenseFile, Webhooks: cfg.Webhooks,
	})
	network := cfg.Network
	if network == nil {
		network = metrics.DiscardNetwork()
	}
	return &Server{
		svc:          svc,
		auth:         &Authenticator{OperatorKey: cfg.OperatorKey, Keys: cfg.Store, Tokens: cfg.Tokens},
		log:          log,
		streams:      newStreamLimits(cmp.Or(cfg.MaxStreams, DefaultMaxStreams), cmp.Or(cfg.MaxStreamsPerAddress, DefaultMaxStreamsPerAddress), network),
		firstMessage: cmp.Or(cfg.FirstMessageTimeout, DefaultFirstMessageTimeout),
		idle:         cmp.Or(cfg.StreamIdleTimeout, DefaultStreamIdleTimeout),
		network:      network,
		limits:       newCallLimits(cfg.FailedLookups, cfg.UnauthenticatedCalls),
	}
}

// BeginShutdown tells open streams to end: heartbeat streams get a
// RECONNECT signal and waits end with their place kept, so that
// GracefulStop does not wait for them.
func (s *Server) BeginShutdown() { s.svc.BeginShutdown() }

// Register adds the three seatd services to g.
func (s *Server) Register(g grpc.ServiceRegistrar) {
	seatdv1.RegisterSeatServiceServer(g, &seatService{s: s})
	seatdv1.RegisterHeartbeatServiceServer(g, &heartbeatService{s: s})
	seatdv1.RegisterAdminServiceServer(g, &adminService{s: s})
}

// UnaryInterceptors limit each client address (ratelimits.go),
// authenticate admin calls, check every request (checkRequest) and turn
// handler errors into statuses through the one table in status.go. Serve
// with CodecOption too.
func (s *Server) UnaryInterceptors() []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			return resp, toStatus(ctx, s.log, err)
		},
		s.limits.unaryInterceptor(),
		s.auth.UnaryInterceptor(),
		checkUnary,
	}
}

// StreamInterceptors check every message a stream receives and turn stream
// handler errors into statuses.
func (s *Server) StreamInterceptors() []grpc.StreamServerInterceptor {
	return []grpc.StreamServerInterceptor{
		s.streams.interceptor(),
		func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			return toStatus(ss.Context(), s.log, handler(srv, ss))
		},
		s.limits.streamInterceptor(),
		checkStream,
	}
}

// ServiceNames are the fully qualified names of the seatd services, for the
// health protocol and reflection.
var ServiceNames = []string{
	seatdv1.SeatService_ServiceDesc.ServiceName,
	seatdv1.HeartbeatService_ServiceDesc.ServiceName,
	seatdv1.AdminService_ServiceDesc.ServiceName,
}
