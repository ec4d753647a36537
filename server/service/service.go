// Package service holds seatd's use cases over a server.Store: acquiring,
// waiting for, keeping and releasing seats, and the admin actions with
// their quotas and audit entries. The gRPC handlers (server/grpcapi), and
// REST through the gateway, call it after they have converted and checked
// a request; it knows nothing of the wire.
package service

import (
	"cmp"
	"log/slog"
	"sync"
	"time"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/notify"
	"github.com/seatd/seatd/server/signing"
	"github.com/seatd/seatd/server/waitqueue"
	"github.com/seatd/seatd/server/webhooks"
)

// Service runs the use cases. All methods are safe for concurrent use.
type Service struct {
	store      server.Store
	cleaner    *cleanup.Cleaner
	scheduler  *cleanup.Scheduler
	leadership cleanup.Leadership
	log        *slog.Logger
	metrics    *metrics.Metrics
	now        func() time.Time

	queue       waitqueue.Queue
	revocations notify.Publisher
	hub         *notify.Hub
	waitHold    time.Duration
	waitPoll    time.Duration
	queueMoves  queueMoves     // local wake-ups when a waiter leaves a queue
	holds       sync.WaitGroup // grants waiting for their first heartbeat (waithold.go)

	quotas     Quotas
	quotaLocks *quotaLocks

	licenseFile LicenseFile // locked mode (licensefile.go); nil: none

	webhookOpts WebhookOptions // webhooks.go
	signals     *webhooks.Signals

	issuer  *signing.Issuer // lease certificates and the tenants' keys (signingkeys.go)
	keyHash keyHashes       // the license_key_sha256 claim of a license (signingkeys.go)

	shutdownOnce sync.Once
	shutdown     chan struct{} // closed when the server starts to drain

	// The "ok" series of the per-result call counters (counters.go).
	okAcquisitions, okHeartbeats, okReleases okSeries
}

// Config wires a Service. Only Store is required for the seat use cases;
// the cleanup ones need Cleaner and Leadership too.
type Config struct {
	Store      server.Store
	Cleaner    *cleanup.Cleaner
	Scheduler  *cleanup.Scheduler // may be nil (no scheduled passes)
	Leadership cleanup.Leadership
	Logger     *slog.Logger
	Metrics    *metrics.Metrics
	// Now is the clock of audit entries, licenses' timestamps and views
	// (default time.Now). Lease deadlines are the store's own.
	Now func() time.Time

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

	// Quotas bound each tenant (quotas.go); the zero value is no quota.
	Quotas Quotas

	// Issuer signs lease certificates and keeps the tenants' signing keys
	// (default: one over Store that keeps new keys plain).
	Issuer *signing.Issuer

	// LicenseFile, when set, runs locked mode (licensefile.go).
	LicenseFile LicenseFile

	// Webhooks: the events of no change and the endpoints' rules (webhooks.go).
	Webhooks WebhookOptions
}

// Defaults for WaitForSeat.
const (
	DefaultWaitQueueLength = 1000
	DefaultWaitHold        = 15 * time.Second
	DefaultWaitPoll        = 250 * time.Millisecond
)

// New returns a Service with cfg's defaults filled in.
func New(cfg Config) *Service {
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
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	issuer := cfg.Issuer
	if issuer == nil {
		issuer = signing.NewIssuer(cfg.Store, signing.IssuerOptions{Now: now, Logger: log})
	}
	return &Service{
		store: cfg.Store, cleaner: cfg.Cleaner, scheduler: cfg.Scheduler, leadership: cfg.Leadership,
		log: log, metrics: m, now: now,
		queue: queue, revocations: revocations, hub: hub,
		waitHold: cmp.Or(cfg.WaitHold, DefaultWaitHold), waitPoll: cmp.Or(cfg.WaitPoll, DefaultWaitPoll),
		quotas: cfg.Quotas, quotaLocks: newQuotaLocks(), issuer: issuer, licenseFile: cfg.LicenseFile,
		webhookOpts: cfg.Webhooks, signals: cfg.Webhooks.Signals,
		shutdown: make(chan struct{}),
	}
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.now() }

// Quotas are the quotas every tenant is held to.
func (s *Service) Quotas() Quotas { return s.quotas }

// BeginShutdown ends the waits (a waiter keeps its place, to resume it on
// another instance) and drops the holds on waiters' grants: a grant this
// instance no longer watches simply runs out at its deadline if unused.
func (s *Service) BeginShutdown() { s.shutdownOnce.Do(func() { close(s.shutdown) }) }

// ShuttingDown is closed once BeginShutdown was called.
func (s *Service) ShuttingDown() <-chan struct{} { return s.shutdown }
