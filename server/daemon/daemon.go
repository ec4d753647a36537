package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/gateway"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/leader"
	"github.com/seatd/seatd/server/locked"
	"github.com/seatd/seatd/server/metrics"
	"github.com/seatd/seatd/server/notify"
	"github.com/seatd/seatd/server/retention"
	"github.com/seatd/seatd/server/service"
	"github.com/seatd/seatd/server/signing"
	"github.com/seatd/seatd/server/waitqueue"
	"github.com/seatd/seatd/server/webhooks"
)

// Main runs seatd with the given arguments until ctx ends (a signal), and
// returns the process exit code. Errors at start are one line on stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "migrate" {
		return migrateMain(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "backup" {
		return backupMain(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "restore" {
		return restoreMain(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "site-id" {
		return siteIDMain(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 1 && (args[0] == "version" || args[0] == "--version" || args[0] == "-version") {
		return versionMain(stdout)
	}
	cfg, err := ParseConfig(args, os.Getenv, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "seatd: %v (see seatd -h)\n", err)
		return 2
	}
	if err := refuseLostData(cfg); err != nil {
		fmt.Fprintf(stderr, "seatd: %v\n", err)
		return 1
	}
	hup, stopHangups := hangups(cfg)
	defer stopHangups()
	d, err := Start(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "seatd: %v\n", err)
		return 1
	}
	if d.licenseFile != nil {
		go reloadOnHangup(ctx, d.licenseFile, hup)
	}
	<-ctx.Done()
	if err := d.Shutdown(); err != nil {
		fmt.Fprintf(stderr, "seatd: shutdown: %v\n", err)
		return 1
	}
	return 0
}

// Daemon is a running seatd.
type Daemon struct {
	cfg       Config
	log       *slog.Logger
	store     server.Store
	scheduler *cleanup.Scheduler
	// deliverer sends webhooks: with the scheduler, on the cleanup leader
	// (ARCHITECTURE.md: one deliverer at a time).
	deliverer *webhooks.Deliverer
	elector   *leader.Elector       // nil in embedded mode: one node always leads
	rdb       redis.UniversalClient // distributed mode: the one client of the store, wait queues and revocation news
	notifier  *notify.Redis
	api       *grpcapi.Server
	grpc      *grpc.Server
	health    *health.Server
	http      *http.Server
	gateway   *gateway.Handler
	ready     *readiness
	grpcLn    net.Listener
	httpLn    net.Listener
	pprof     *http.Server // nil unless --pprof-addr
	// Locked mode (locked.go): nil without --license-file.
	licenseFile *locked.Controller
	fileWatch   chan struct{} // closed to stop watchLicenseFile
	fileWatched chan struct{} // closed when it has stopped
	serveErr    chan error
	closeOnce   sync.Once
}

// GRPCAddr and HTTPAddr are the addresses actually bound (useful with port 0).
func (d *Daemon) GRPCAddr() string { return d.grpcLn.Addr().String() }
func (d *Daemon) HTTPAddr() string { return d.httpLn.Addr().String() }

// Start opens storage, binds both ports and serves in the background.
func Start(ctx context.Context, cfg Config, logOut io.Writer) (_ *Daemon, err error) {
	log, throttle := cfg.logger(logOut)
	d := &Daemon{cfg: cfg, log: log, serveErr: make(chan error, 2)}
	defer func() {
		if err != nil {
			_ = d.closeAll() // the error that stopped Start is the one to report
		}
	}()
	operatorKey := cfg.OperatorKey
	if !cfg.Distributed() {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir %s is not usable: %w", cfg.DataDir, err)
		}
	}
	operatorKey, generated, err := loadOperatorKey(operatorKey, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	tlsr, err := tlsFiles(cfg, d.log)
	if err != nil {
		return nil, err
	}
	sealer, err := signingSealer(cfg)
	if err != nil {
		return nil, err
	}

	store, rdb, err := openStore(ctx, cfg, d.log)
	if err != nil {
		return nil, err
	}
	d.store, d.rdb = store, rdb
	// Fitted once the data is known to be sound: a start refused for its
	// data says so in one line, without this one's notes before it.
	if err := fitFileLimit(&cfg, processFDLimits{}, d.log); err != nil {
		return nil, err
	}
	d.cfg = cfg
	if err := ensureDefaultTenant(ctx, d.store); err != nil {
		return nil, err
	}
	var licenseFile service.LicenseFile // a nil *locked.Controller would not be a nil interface
	var site *signing.Site              // locked mode: the site key signs the file's certificates
	if cfg.LicenseFile != "" {
		if d.licenseFile, site, err = startLocked(ctx, cfg, d.store, sealer, d.log); err != nil {
			return nil, err
		}
		licenseFile = d.licenseFile
	}
	issuer := signing.NewIssuer(d.store, signing.IssuerOptions{Sealer: sealer, Logger: d.log, Site: site})
	if err := ensureSigningKey(ctx, issuer, sealer, d.log); err != nil {
		return nil, err
	}

	reg := prometheus.NewRegistry()
	network := metrics.NewNetwork(reg)
	network.Limits.WithLabelValues("max_connections").Set(float64(cfg.MaxConnections))
	network.Limits.WithLabelValues("max_connections_per_address").Set(float64(cfg.MaxConnectionsPerAddress))
	network.Limits.WithLabelValues("grpc_max_header_bytes").Set(float64(cfg.GRPCMaxHeaderBytes))
	if d.grpcLn, err = listen(cfg.GRPCAddr, "grpc-addr", "grpc", cfg.MaxConnections, cfg.MaxConnectionsPerAddress, network); err != nil {
		return nil, err
	}
	if d.httpLn, err = listen(cfg.HTTPAddr, "http-addr", "http", cfg.MaxConnections, cfg.MaxConnectionsPerAddress, network); err != nil {
		return nil, err
	}
	if tlsr == nil {
		warnIfExposed(d.log, d.grpcLn, "grpc-addr")
		warnIfExposed(d.log, d.httpLn, "http-addr")
	}
	var pprofLn net.Listener
	if cfg.PprofAddr != "" {
		if pprofLn, err = net.Listen("tcp", cfg.PprofAddr); err != nil {
			return nil, fmt.Errorf("cannot listen on %s (--pprof-addr): %w", cfg.PprofAddr, err)
		}
		defer func() {
			if d.pprof == nil {
				_ = pprofLn.Close()
			}
		}()
	}

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)
	b := Build()
	metrics.RegisterBuildInfo(reg, b.Version, b.Revision, b.GoVersion)
	if r, ok := d.store.(server.BackgroundReporter); ok {
		metrics.RegisterBackground(reg, r)
	}
	if tlsr != nil {
		metrics.RegisterTLSExpiry(reg, tlsr.NotAfter)
	}
	metrics.RegisterLogSuppressed(reg, throttle.Suppressed)
	rpcMetrics := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	reg.MustRegister(rpcMetrics)

	cleaner := cleanup.NewCleaner(d.store, cleanup.Config{
		BatchSize: cfg.CleanupBatch, Concurrency: cfg.CleanupConcurrency,
		SoftLimit: cfg.CleanupSoftLimit, HardLimit: cfg.CleanupHardLimit,
	}, d.log, m)
	pruner := retention.New(d.store, retention.Config{
		Keep: map[server.RecordKind]time.Duration{
			server.RecordLeases: cfg.RetainLeases, server.RecordCleanupEvents: cfg.RetainCleanupEvents,
			server.RecordSeatEvents: cfg.RetainSeatEvents, server.RecordAudit: cfg.RetainAudit,
			server.RecordReturnedCertificates: cfg.RetainReturned,
			server.RecordWebhookDeliveries:    cfg.RetainWebhookEvents, server.RecordWebhookEvents: cfg.RetainWebhookEvents,
		},
		BatchSize: cfg.RetentionBatch, Interval: cfg.RetentionInterval,
	}, d.log, metrics.Retention{M: m})
	d.scheduler = &cleanup.Scheduler{Cleaner: cleaner, Interval: cfg.CleanupInterval, AfterPass: pruner.Tick}
	expiring, err := cfg.webhookExpiring()
	if err != nil {
		return nil, err
	}
	signals := webhooks.NewSignals(webhooks.SignalConfig{
		Store: d.store, Logger: d.log, Window: cfg.WebhookWindow, PeakShare: cfg.WebhookPeakShare, ExpiringBefore: expiring,
	})
	if hooks, ok := d.store.(server.WebhookStore); ok {
		d.deliverer = webhooks.New(webhooks.Config{
			Store:  hooks,
			Client: webhooks.NewClient(webhooks.ClientOptions{Timeout: cfg.WebhookTimeout, AllowPrivate: cfg.WebhookAllowPrivate}),
			Logger: d.log, Metrics: metrics.Webhooks{M: m},
			RetryFor: cfg.WebhookRetryFor, DisableAfter: cfg.WebhookDisableAfter, Concurrency: cfg.WebhookConcurrency,
			Expiring: signals.SweepExpiring, ExpiringEvery: cfg.WebhookExpiringEvery,
		})
	}
	m.CountActiveSeatsAtScrape(cleaner.CountActive)
	var leadership cleanup.Leadership = cleanup.Solo{ID: cfg.InstanceID}
	if cfg.Distributed() {
		d.elector = leader.New(leader.Config{
			PostgresURL: cfg.PostgresURL, InstanceID: cfg.InstanceID, Logger: d.log,
			PingInterval: cfg.LeaderPingInterval, PingTimeout: cfg.LeaderPingTimeout,
			RetryInterval: cfg.LeaderRetryInterval, FailingAfter: cfg.LeaderFailingAfter,
			OnElected: func(ctx context.Context) {
				m.Leader.Set(1)
				d.scheduler.Start(ctx)
				d.startDeliverer(ctx)
			},
			OnDemoted: func() {
				d.stopDeliverer()
				d.scheduler.Stop()
				m.Leader.Set(0)
			},
			OnHealth: func(h leader.Health) { electionMetrics(m, h) },
		})
		leadership = d.elector
	}

	hub := notify.NewHub()
	var revocations notify.Publisher = notify.Local{Hub: hub}
	var queue waitqueue.Queue = waitqueue.NewMemory(cfg.WaitQueueMax)
	if cfg.Distributed() {
		// Queues and revocation news cross instances through the store's
		// Redis client.
		d.notifier = notify.NewRedis(hub, d.rdb, cfg.RedisKeyPrefix, d.log)
		revocations = d.notifier
		queue = waitqueue.NewRedis(d.rdb, cfg.RedisKeyPrefix, cfg.WaitQueueMax, 5*time.Second)
	}
	failedLookups, unauthenticatedCalls, quotas := cfg.apiLimits()
	signOn, err := openSSO(&cfg, operatorKey, d.log)
	if err != nil {
		return nil, err
	}
	var tokens grpcapi.TokenVerifier
	if signOn != nil {
		tokens = signOn
	}
	d.api = grpcapi.New(grpcapi.Config{
		Store: d.store, Cleaner: cleaner, Scheduler: d.scheduler, Leadership: leadership,
		OperatorKey: operatorKey, Logger: d.log, Metrics: m,
		WaitQueue: queue, Hub: hub, Revocations: revocations, WaitHold: cfg.WaitHold, WaitPoll: cfg.WaitPoll,
		MaxStreams: cfg.MaxStreams, MaxStreamsPerAddress: cfg.MaxStreamsPerAddress,
		FirstMessageTimeout: cfg.FirstMessageTimeout, StreamIdleTimeout: cfg.StreamIdleTimeout, Network: network,
		FailedLookups: failedLookups, UnauthenticatedCalls: unauthenticatedCalls, Quotas: quotas,
		Issuer: issuer, LicenseFile: licenseFile, Tokens: tokens,
		Webhooks: service.WebhookOptions{
			Signals: signals, AllowPrivate: cfg.WebhookAllowPrivate, MaxEndpoints: cfg.TenantMaxWebhookEndpoints,
		},
	})
	panicked := recovery.WithRecoveryHandlerContext(func(ctx context.Context, p any) error {
		d.log.ErrorContext(ctx, "panic in handler", "panic", p)
		return status.Error(codes.Internal, "internal error")
	})
	// One chain for gRPC and REST (the gateway's in-process channel).
	unary := append([]grpc.UnaryServerInterceptor{
		rpcMetrics.UnaryServerInterceptor(), recovery.UnaryServerInterceptor(panicked),
	}, d.api.UnaryInterceptors()...)
	stream := append([]grpc.StreamServerInterceptor{
		rpcMetrics.StreamServerInterceptor(), recovery.StreamServerInterceptor(panicked),
	}, d.api.StreamInterceptors()...)
	d.grpc = grpc.NewServer(append(grpcNetworkOptions(cfg, tlsr),
		d.api.CodecOption(),
		grpc.NumStreamWorkers(grpcStreamWorkers),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	)...)
	d.api.Register(d.grpc)
	if cfg.BenchCeiling {
		if err := registerBenchCeiling(d.grpc, d.store); err != nil {
			return nil, err
		}
	}
	d.health = health.NewServer()
	healthpb.RegisterHealthServer(d.grpc, d.health)
	reflection.Register(d.grpc)
	rpcMetrics.InitializeMetrics(d.grpc)

	// The gateway calls the same handlers in this process, through the
	// same interceptors (ARCHITECTURE.md: how a REST call reaches a handler).
	d.gateway, err = gateway.New(ctx, d.api.InProcess(unary, stream), reg, gatewayLimits(cfg))
	if err != nil {
		return nil, err
	}
	if signOn != nil {
		d.gateway.UseSessions(signOn)
	}
	if d.elector != nil {
		d.gateway.SetCondition(func() (string, bool) { return electionProblem(d.elector.Health(), cfg.LeaderFailingUnready) })
	}
	d.serveBackup()
	d.http = httpServer(cfg, d.gateway, tlsr, d.log)
	d.ready = &readiness{publish: d.publishReadiness, gauge: m.Ready, log: d.log}

	go func() { d.serveErr <- d.grpc.Serve(d.grpcLn) }()
	go func() {
		serve := d.http.Serve
		if tlsr != nil {
			serve = func(ln net.Listener) error { return d.http.ServeTLS(ln, "", "") }
		}
		if err := serve(d.httpLn); !errors.Is(err, http.ErrServerClosed) {
			d.serveErr <- err
		}
	}()
	// Kept only now that the ports are bound: a start that fails before
	// this keeps no key. The key itself is never printed: output lands in
	// container logs, readable by more people than the data dir.
	if generated {
		if err := saveOperatorKey(cfg.DataDir, operatorKey); err != nil {
			return nil, err
		}
		d.log.Warn("seatd generated an operator key and kept it in the data dir, mode 0600 (it is printed nowhere); use it as authorization: Bearer <key>",
			"file", filepath.Join(cfg.DataDir, operatorKeyFile))
	}
	if pprofLn != nil {
		d.pprof = servePprof(pprofLn, d.log)
	}
	if d.elector != nil {
		d.elector.Start(context.WithoutCancel(ctx))
	} else {
		m.Leader.Set(1)
		d.scheduler.Start(context.WithoutCancel(ctx))
		d.startDeliverer(context.WithoutCancel(ctx))
	}

	d.ready.setServing(true)
	if rc, ok := d.store.(server.ReadyChecker); ok {
		d.ready.watch(rc, cfg.ReadinessInterval)
	}
	if d.licenseFile != nil {
		d.fileWatch, d.fileWatched = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(d.fileWatched)
			watchLicenseFile(d.licenseFile, cfg.LicenseFileWatchInterval, cfg.LicenseFileWatchTimeout, d.ready, d.log, d.fileWatch)
		}()
	}
	where := slog.String("data_dir", cfg.DataDir)
	if cfg.Distributed() {
		where = slog.String("redis_key_prefix", cfg.RedisKeyPrefix)
	}
	d.log.Info("seatd serving", "mode", cfg.mode(), "grpc", d.GRPCAddr(), "http", d.HTTPAddr(), where,
		"tls", tlsr != nil, "mtls", tlsr != nil && tlsr.MutualTLS(), "console", consoleURL(d.HTTPAddr(), tlsr != nil),
		"locked", d.licenseFile != nil)
	return d, nil
}

// publishReadiness tells gRPC health and /readyz (readiness.go); why is
// "" when ready.
func (d *Daemon) publishReadiness(why string) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if why == "" {
		st = healthpb.HealthCheckResponse_SERVING
	}
	d.health.SetServingStatus("", st)
	for _, name := range grpcapi.ServiceNames {
		d.health.SetServingStatus(name, st)
	}
	d.gateway.SetNotReady(why)
}

// Shutdown drains in GracefulStop order (docs/guides/upgrades.md): not-ready first, wait
// for load balancers, stop cleanup, stop gRPC gracefully within the timeout,
// stop HTTP, then close storage last: the store flushes and closes its
// PostgreSQL pool, then the process's Redis client, which the store, the
// wait queues and the revocation news share, closes after its last user.
func (d *Daemon) Shutdown() error {
	step := func(name string, f func()) {
		start := time.Now()
		f()
		d.log.Info("shutdown step done", "step", name, "took", time.Since(start).Round(time.Millisecond))
	}
	d.log.Info("shutting down; a second signal stops at once", "drain_delay", d.cfg.DrainDelay, "shutdown_timeout", d.cfg.ShutdownTimeout)
	start := time.Now()
	defer func() { d.log.Info("shutdown complete", "took", time.Since(start).Round(time.Millisecond)) }()
	var err error
	step("not ready", func() {
		d.ready.setServing(false)
		d.ready.stopWatching()
	})
	step("drain delay", func() { time.Sleep(d.cfg.DrainDelay) })
	step("stop cleanup leader", d.stopCleanup)
	step("end streams", d.api.BeginShutdown)
	step("grpc graceful stop", func() {
		t := time.AfterFunc(d.cfg.ShutdownTimeout, d.grpc.Stop)
		d.grpc.GracefulStop()
		t.Stop()
	})
	step("http shutdown", func() {
		ctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownTimeout)
		defer cancel()
		if e := d.http.Shutdown(ctx); e != nil {
			err = errors.Join(err, fmt.Errorf("http: %w", e))
		}
	})
	step("close storage", func() {
		if e := d.closeAll(); e != nil {
			err = errors.Join(err, e)
		}
	})
	return err
}

// stopCleanup finishes or abandons the current pass and, in distributed
// mode, releases the leader lock so another instance takes over at once.
func (d *Daemon) stopCleanup() {
	if d.elector != nil {
		d.elector.Stop()
	}
	d.stopDeliverer()
	d.scheduler.Stop()
}

func (d *Daemon) startDeliverer(ctx context.Context) {
	if d.deliverer != nil {
		d.deliverer.Start(ctx)
	}
}

func (d *Daemon) stopDeliverer() {
	if d.deliverer != nil {
		d.deliverer.Stop()
	}
}

// closeAll releases what Start opened; safe after a partial Start.
func (d *Daemon) closeAll() error {
	var err error
	d.closeOnce.Do(func() {
		if d.scheduler != nil {
			d.stopCleanup()
		}
		if d.grpc != nil {
			d.grpc.Stop()
		}
		if d.http != nil {
			_ = d.http.Close()
		}
		if d.pprof != nil {
			_ = d.pprof.Close()
		}
		for _, ln := range []net.Listener{d.grpcLn, d.httpLn} {
			if ln != nil {
				_ = ln.Close()
			}
		}
		if d.ready != nil {
			d.ready.stopWatching() // it asks the store
		}
		if d.fileWatch != nil {
			close(d.fileWatch) // it asks the store too
			<-d.fileWatched
		}
		if d.notifier != nil {
			d.notifier.Close()
		}
		if d.store != nil {
			err = d.store.Close()
		}
		if d.rdb != nil { // last: the store uses Redis until its Close returns (its flush ends in Redis)
			err = errors.Join(err, d.rdb.Close())
		}
	})
	return err
}

// electionMetrics follows the elector's Health: OnHealth runs once per
// campaign that could not reach the lock, and once on recovery.
func electionMetrics(m *metrics.Metrics, h leader.Health) {
	if h.Failures > 0 {
		m.LeaderElectionErrors.Inc()
	}
	failing := 0.0
	if h.Failing {
		failing = 1
	}
	m.LeaderElectionFailing.Set(failing)
}

// electionProblem is what /readyz says of the cleanup leader election.
// Only an instance that cannot reach the lock has a problem: a follower
// that finds another instance leading is fine. It stays ready unless told
// otherwise (--leader-failing-unready): it serves seats without a leader
// (expired seats stop counting at their deadline, cleanup or not), while
// a PostgreSQL that every instance fails to reach would otherwise take
// every instance out of the load balancer, heartbeats (Redis only)
// included.
func electionProblem(h leader.Health, unready bool) (string, bool) {
	if !h.Failing {
		return "", false
	}
	return fmt.Sprintf("no cleanup leader can be elected from this instance: the leader lock in PostgreSQL unreachable for %d tries since %s",
		h.Failures, h.Since.UTC().Format(time.RFC3339)), unready
}

func ensureDefaultTenant(ctx context.Context, s server.Store) error {
	_, err := s.CreateTenant(ctx, server.Tenant{ID: server.DefaultTenantID, Name: "Default", CreatedAt: time.Now()})
	if err != nil && server.ErrorCode(err) != server.ECONFLICT {
		return fmt.Errorf("create default tenant: %w", err)
	}
	return nil
}

// grpcStreamWorkers is how many goroutines serve gRPC calls and stay alive
// between them. A call served on a fresh goroutine first grows its stack
// by copying (measured: ~10% of the CPU of a distributed heartbeat); a
// worker keeps its grown stack. Calls beyond this many at once (e.g. the
// long-lived streams) get their own goroutine as before.
const grpcStreamWorkers = 256
