// Package grpcapi implements the seatd.v1 gRPC services over a server.Store.
// Handlers validate input, call the store, and turn errors into statuses
// through one table (status.go).
package grpcapi

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/notify"
	"github.com/seatd/seatd/server/waitqueue"
)

// Server holds what the three services share.
type Server struct {
	store      server.Store
	cleaner    *cleanup.Cleaner
	scheduler  *cleanup.Scheduler
	leadership cleanup.Leadership
	auth       *Authenticator
	log        *slog.Logger
	metrics    *metrics.Metrics
	now        func() time.Time

	queue       waitqueue.Queue
	revocations notify.Publisher
	hub         *notify.Hub
	waitHold    time.Duration
	waitPoll    time.Duration
	queueMoves  queueMoves // local wake-ups when a waiter leaves a queue

	streams      streamLimits
	firstMessage time.Duration // a heartbeat stream's deadline to name its lease
	limits       callLimits    // per client address (ratelimits.go)
	quotas       Quotas        // per tenant (quotas.go)
	quotaLocks   *quotaLocks

	shutdownOnce sync.Once
	shutdown     chan struct{} // closed when the server starts to drain

	// The "ok" series of the per-result call counters (counters.go).
	okAcquisitions, okHeartbeats, okReleases okSeries
}

// Config wires a Server.
type Config struct {
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
	// (default DefaultMaxStreams; negative: no cap).
	MaxStreams int
	// FirstMessageTimeout is how long a heartbeat stream may stay silent
	// after it opens (default DefaultFirstMessageTimeout; negative: none).
	FirstMessageTimeout time.Duration

	// FailedLookups and UnauthenticatedCalls limit each client address
	// (ratelimits.go); Quotas bound each tenant (quotas.go). The zero
	// value is no limit: the daemon's flags carry the defaults.
	FailedLookups, UnauthenticatedCalls RateLimit
	Quotas                              Quotas
}

// Defaults for WaitForSeat.
const (
	DefaultWaitQueueLength = 1000
	DefaultWaitHold        = 15 * time.Second
	DefaultWaitPoll        = 250 * time.Millisecond
)

// New returns a Server.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := cfg.Metrics
	if m == nil {
		m = metrics.Discard()
	}
	hub := cmp.Or(cfg.Hub, notify.NewHub())
	var revocations notify.Publisher = notify.Local{Hub: hub}
	if cfg.Revocations != nil {
		revocations = cfg.Revocations
	}
	var queue waitqueue.Queue = waitqueue.NewMemory(DefaultWaitQueueLength)
	if cfg.WaitQueue != nil {
		queue = cfg.WaitQueue
	}
	return &Server{
		queue: queue, revocations: revocations, hub: hub,
		waitHold: cmp.Or(cfg.WaitHold, DefaultWaitHold), waitPoll: cmp.Or(cfg.WaitPoll, DefaultWaitPoll),
		store: cfg.Store, cleaner: cfg.Cleaner, scheduler: cfg.Scheduler, leadership: cfg.Leadership,
		auth: &Authenticator{OperatorKey: cfg.OperatorKey, Keys: cfg.Store},
		log:  log, metrics: m, now: time.Now,
		shutdown:     make(chan struct{}),
		streams:      streamLimits{max: int64(cmp.Or(cfg.MaxStreams, DefaultMaxStreams))},
		firstMessage: cmp.Or(cfg.FirstMessageTimeout, DefaultFirstMessageTimeout),
		limits:       newCallLimits(cfg.FailedLookups, cfg.UnauthenticatedCalls),
		quotas:       cfg.Quotas, quotaLocks: newQuotaLocks(),
	}
}

// BeginShutdown tells open streams to end: heartbeat streams get a
// RECONNECT signal, so that GracefulStop does not wait for them.
func (s *Server) BeginShutdown() { s.shutdownOnce.Do(func() { close(s.shutdown) }) }

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
