// Package daemon is the seatd program: configuration, wiring, serving and
// shutdown. main only calls Main; tests run the same code in-process.
package daemon

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/distributed"
	"github.com/seatd/seatd/server/embedded"
	"github.com/seatd/seatd/server/gateway"
	"github.com/seatd/seatd/server/grpcapi"
	"github.com/seatd/seatd/server/internal/logthrottle"
	"github.com/seatd/seatd/server/leader"
	"github.com/seatd/seatd/server/retention"
	"github.com/seatd/seatd/server/service"
	"github.com/seatd/seatd/server/signing"
	"github.com/seatd/seatd/server/sso"
	"github.com/seatd/seatd/server/webhooks"
)

// webhookExpiring parses --webhook-expiring-before.
func (c *Config) webhookExpiring() ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(c.WebhookExpiring, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := time.ParseDuration(f)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--webhook-expiring-before: %q is not a positive duration", f)
		}
		out = append(out, d)
	}
	if len(out) == 0 || len(out) > 10 {
		return nil, errors.New("--webhook-expiring-before must name 1 to 10 durations")
	}
	return out, nil
}

// Config is everything seatd can be told. Every flag has an environment
// variable (SEATD_ + the flag name in upper snake case); a flag given on the
// command line wins.
type Config struct {
	GRPCAddr  string
	HTTPAddr  string
	PprofAddr string
	// BenchCeiling serves make bench's Redis ceiling (benchceiling.go).
	BenchCeiling bool
	DataDir      string
	OperatorKey  string
	InstanceID   string
	LogLevel     string
	LogFormat    string
	// LogRepeatInterval throttles per-call failure lines (logthrottle).
	LogRepeatInterval time.Duration

	CleanupInterval time.Duration
	CleanupBatch    int
	// Retention: how long each kind of history is kept (0: forever).
	RetainLeases, RetainCleanupEvents, RetainSeatEvents, RetainAudit time.Duration
	// RetainReturned: how long after its exp a returned certificate stays
	// on the tenant's signed list (docs/concepts/borrowing.md).
	RetainReturned time.Duration
	// RetainWebhookEvents: delivered and failed webhook deliveries and
	// the events fanned out (0: forever).
	RetainWebhookEvents time.Duration
	RetentionBatch      int
	RetentionInterval   time.Duration
	CleanupConcurrency  int
	CleanupSoftLimit    time.Duration
	CleanupHardLimit    time.Duration

	DrainDelay      time.Duration
	ShutdownTimeout time.Duration

	// Webhooks (server/webhooks, docs/concepts/webhooks.md).
	WebhookAllowPrivate  bool
	WebhookTimeout       time.Duration
	WebhookRetryFor      time.Duration
	WebhookDisableAfter  time.Duration
	WebhookConcurrency   int
	WebhookWindow        time.Duration
	WebhookPeakShare     int
	WebhookExpiring      string // comma-separated durations
	WebhookExpiringEvery time.Duration
	// TenantMaxWebhookEndpoints bounds each tenant's endpoints.
	TenantMaxWebhookEndpoints int

	// Readiness (readiness.go): how often the store is asked whether it
	// can write, and (embedded) how long a refused write counts.
	ReadinessInterval  time.Duration
	WriteFailureWindow time.Duration
	// VerifyDataFile walks the embedded data file's pages at start.
	VerifyDataFile bool

	// Distributed mode: both URLs switch it on.
	PostgresURL            string
	RedisURL               string
	RedisKeyPrefix         string
	PGMaxConns             int
	PGMinConns             int
	HeartbeatFlushInterval time.Duration
	LeaseCacheSize         int
	EndRepairBatch         int
	ConnectTimeout         time.Duration
	AutoMigrate            bool
	LeaderPingInterval     time.Duration
	LeaderPingTimeout      time.Duration
	LeaderRetryInterval    time.Duration
	LeaderFailingAfter     int
	LeaderFailingUnready   bool

	WaitQueueMax int
	WaitHold     time.Duration
	WaitPoll     time.Duration

	// Running on a network (docs/guides/tls.md).
	TLSCertFile, TLSKeyFile, TLSClientCAFile string
	MaxRequestBytes                          int
	MaxConnections                           int
	// MaxConnectionsGiven: --max-connections was set (flag or environment),
	// so it is not lowered to fit the file descriptor limit (fdlimit.go).
	MaxConnectionsGiven               bool
	MaxConnectionsPerAddress          int
	GRPCMaxHeaderBytes                int
	HTTPReadTimeout, HTTPWriteTimeout time.Duration
	HTTPIdleTimeout                   time.Duration
	ConnectionTimeout                 time.Duration
	GRPCMaxStreamsPerConn             int
	MaxStreams                        int
	MaxStreamsPerAddress              int
	FirstMessageTimeout               time.Duration
	StreamIdleTimeout                 time.Duration
	KeepaliveMinTime                  time.Duration

	// Per client address (docs/guides/tls.md); a rate of 0 is
	// no limit.
	FailedLookupRate, UnauthenticatedCallRate   float64
	FailedLookupBurst, UnauthenticatedCallBurst int
	// Per tenant; 0 is no quota.
	TenantMaxLicenses, TenantMaxSeats, TenantMaxAPIKeys, TenantMaxSigningKeys int64

	// At-rest protection of the lease-signing keys (signing.go): base64 of
	// 32 bytes, given as is or in a file. Never logged or echoed.
	SigningKeyEncryptionKey     string
	SigningKeyEncryptionKeyFile string

	// Locked mode (locked.go): the vendor-signed license file served, the
	// vendor's public keys that verify it, how often it is looked at and
	// how long one look may take.
	LicenseFile              string
	VendorKey                string
	LicenseFileWatchInterval time.Duration
	LicenseFileWatchTimeout  time.Duration

	// Single sign-on (sso.go): the OIDC issuers' file, and how long a
	// console session lasts.
	SSOConfig          string
	SSOSessionLifetime time.Duration
}

// Distributed reports whether the config selects PostgreSQL + Redis.
func (c *Config) Distributed() bool { return c.PostgresURL != "" || c.RedisURL != "" }

func defaultInstanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "seatd"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// flagSet declares the flags onto c.
func (c *Config) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("seatd", flag.ContinueOnError)
	fs.StringVar(&c.GRPCAddr, "grpc-addr", "127.0.0.1:7070", "gRPC listen address")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8080", "HTTP listen address (REST, /metrics, /healthz, /readyz)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", "", "Go profiling endpoints (/debug/pprof/) on this address; off when empty. Keep it private: profiles show internals")
	fs.BoolVar(&c.BenchCeiling, "bench-ceiling", false, "for make bench only: serve a call that runs one no-op script through the hot path's batching (distributed mode); off by default")
	fs.StringVar(&c.DataDir, "data-dir", "./seatd-data", "embedded mode: directory for the data files")
	fs.StringVar(&c.OperatorKey, "operator-key", "", "operator bearer key; generated and kept in the data dir when empty")
	fs.StringVar(&c.InstanceID, "instance-id", defaultInstanceID(), "this instance's id in logs and cleanup status")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&c.LogRepeatInterval, "log-repeat-interval", 10*time.Second, "a per-call failure line (request failed, a store's error) is logged at most once per this long, the next one counting those left out (similar_suppressed, seatd_log_lines_suppressed_total); 0: every one")
	fs.DurationVar(&c.CleanupInterval, "cleanup-interval", cleanup.DefaultInterval, "time between cleanup passes (±5% jitter)")
	fs.IntVar(&c.CleanupBatch, "cleanup-batch", cleanup.DefaultBatchSize, "leases expired per cleanup transaction")
	fs.DurationVar(&c.RetainLeases, "retain-leases", retention.DefaultKeep, "ended leases and their usage events are removed this long after they ended (the usage report and lease lists see no further back); 0: keep forever")
	fs.DurationVar(&c.RetainCleanupEvents, "retain-cleanup-events", retention.DefaultKeep, "cleanup events (the zombie report) are removed this long after the cleanup; 0: keep forever")
	fs.DurationVar(&c.RetainSeatEvents, "retain-seat-events", retention.DefaultKeep, "the usage report's denials and waits are removed after this long; 0: keep forever")
	fs.DurationVar(&c.RetainAudit, "retain-audit", retention.DefaultKeep, "audit entries are removed after this long; 0: keep forever")
	fs.DurationVar(&c.RetainReturned, "retain-returned-certificates", DefaultRetainReturned, "a borrowed certificate returned early stays on the signed list of returned certificates this long after it expires (for products whose clocks run late); at least 1s")
	fs.DurationVar(&c.RetainWebhookEvents, "retain-webhook-events", retention.DefaultKeepWebhooks, "delivered and failed webhook deliveries (the delivery log) and their events are removed this long after the event and the last attempt; one still retrying, or not yet fanned out, never. 0 (keep forever) or at least the largest --webhook-expiring-before and --webhook-signal-window (an event's dedupe key goes with it)")
	fs.IntVar(&c.RetentionBatch, "retention-batch", retention.DefaultBatchSize, "records removed per retention transaction")
	fs.DurationVar(&c.RetentionInterval, "retention-interval", retention.DefaultInterval, "how often the cleanup leader removes history older than the --retain-* ages (after a cleanup pass)")
	fs.IntVar(&c.CleanupConcurrency, "cleanup-concurrency", cleanup.DefaultConcurrency, "cleanup batches in flight at once")
	fs.DurationVar(&c.CleanupSoftLimit, "cleanup-soft-limit", cleanup.DefaultSoftLimit, "a pass takes no new batch after this long")
	fs.DurationVar(&c.CleanupHardLimit, "cleanup-hard-limit", cleanup.DefaultHardLimit, "a pass is cancelled after this long")
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private-addresses", false, "let webhook endpoints be loopback, link-local or private addresses, and plain http (tests, closed networks); off, such a destination is refused when the endpoint is created and when its address is dialled")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", webhooks.DefaultTimeout, "how long one webhook request may take, from the dial to the end of the answer")
	fs.DurationVar(&c.WebhookRetryFor, "webhook-retry-for", webhooks.DefaultRetryFor, "a webhook delivery is retried (exponential backoff with jitter) for this long after its event, then marked failed")
	fs.DurationVar(&c.WebhookDisableAfter, "webhook-disable-after", webhooks.DefaultDisableAfter, "a webhook endpoint whose every delivery failed for this long is disabled (event webhook_endpoint.disabled, seatd_webhook_endpoints_disabled_total)")
	fs.IntVar(&c.WebhookConcurrency, "webhook-concurrency", webhooks.DefaultConcurrency, "webhook requests in flight at once")
	fs.DurationVar(&c.WebhookWindow, "webhook-signal-window", webhooks.DefaultSignalWindow, "at most one license.exhausted and one license.peak event per license (or feature) per this long")
	fs.IntVar(&c.WebhookPeakShare, "webhook-peak-share", webhooks.DefaultPeakShare, "license.peak: a grant that brings a pool's use to this percent of its seat limit or more (1-100)")
	fs.StringVar(&c.WebhookExpiring, "webhook-expiring-before", "720h,168h,24h", "license.expiring: how long before a license's or a grant's expiry it is sent, once per threshold (comma-separated durations)")
	fs.IntVar(&c.TenantMaxWebhookEndpoints, "tenant-max-webhook-endpoints", service.DefaultMaxWebhookEndpoints, "webhook endpoints per tenant (1-1000); more get RESOURCE_EXHAUSTED WEBHOOK_ENDPOINT_LIMIT")
	fs.DurationVar(&c.WebhookExpiringEvery, "webhook-expiring-interval", 10*time.Minute, "how often the deliverer looks for licenses and grants near their expiry")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 5*time.Second, "on shutdown, how long to stay up reporting not-ready before closing")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 25*time.Second, "on shutdown, how long in-flight calls may take before they are cut")
	fs.DurationVar(&c.ReadinessInterval, "readiness-interval", 5*time.Second, "how often readiness (gRPC health, /readyz) asks the store whether it can write: embedded, the last commit or an empty one when idle; distributed, a ping of PostgreSQL and Redis")
	fs.DurationVar(&c.WriteFailureWindow, "write-failure-window", embedded.DefaultWriteFailureWindow, "embedded mode: after a write the data dir refused (a full disk), not ready for this long unless a write succeeds since")
	fs.BoolVar(&c.VerifyDataFile, "verify-data-file", true, "embedded mode: at start, read every page of the data file's tree, so that damaged pages stop the start (about 0.1 s per 500,000 records once cached) instead of being found by a call later; false starts without it")
	fs.IntVar(&c.WaitQueueMax, "wait-queue-max", grpcapi.DefaultWaitQueueLength, "most clients waiting for a seat per license (WaitForSeat); more get RESOURCE_EXHAUSTED")
	fs.DurationVar(&c.WaitHold, "wait-hold", grpcapi.DefaultWaitHold, "a seat granted to a waiter goes to the next one if not heartbeated within this")
	fs.DurationVar(&c.WaitPoll, "wait-poll", grpcapi.DefaultWaitPoll, "how often the head of a WaitForSeat queue tries for a seat (the waiters behind it look every 8 tries)")
	fs.StringVar(&c.PostgresURL, "postgres-url", "", "distributed mode: PostgreSQL URL (the record); needs --redis-url")
	fs.StringVar(&c.RedisURL, "redis-url", "", "distributed mode: Redis URL (live leases); needs --postgres-url")
	fs.StringVar(&c.RedisKeyPrefix, "redis-key-prefix", "seatd:", "distributed mode: prefix of every Redis key")
	fs.IntVar(&c.PGMaxConns, "pg-max-conns", 0, "distributed mode: PostgreSQL pool size (0: max(16, 4×CPUs))")
	fs.IntVar(&c.PGMinConns, "pg-min-conns", 0, "distributed mode: PostgreSQL connections kept open")
	fs.DurationVar(&c.HeartbeatFlushInterval, "heartbeat-flush-interval", 10*time.Second, "how often heartbeat times are written to durable storage (PostgreSQL, or the data dir); a crash loses at most this much, which a restart gives back")
	fs.IntVar(&c.LeaseCacheSize, "lease-cache-size", distributed.DefaultLeaseCacheSize, "distributed mode: leases whose fixed fields this instance caches (about 100 bytes each), so that their heartbeats read only Redis; heartbeats of leases beyond it read PostgreSQL")
	fs.IntVar(&c.EndRepairBatch, "end-repair-batch", distributed.DefaultEndRepairBatch, "distributed mode: recorded releases and revokes the cleanup leader removes from Redis per batch (a lease whose removal failed or whose instance died before it), batches until one comes back short")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", 30*time.Second, "distributed mode: how long to retry PostgreSQL/Redis at start")
	fs.DurationVar(&c.LeaderPingInterval, "leader-ping-interval", leader.DefaultPingInterval, "distributed mode: how often the cleanup leader checks its lock connection")
	fs.DurationVar(&c.LeaderPingTimeout, "leader-ping-timeout", leader.DefaultPingTimeout, "distributed mode: a check of the lock connection that takes longer steps the cleanup leader down")
	fs.DurationVar(&c.LeaderRetryInterval, "leader-retry-interval", leader.DefaultRetryInterval, "distributed mode: how often followers try for the leader lock (±25% jitter)")
	fs.IntVar(&c.LeaderFailingAfter, "leader-failing-after", leader.DefaultFailingAfter, "distributed mode: tries in a row that cannot reach the leader lock (PostgreSQL unreachable or refusing the connection) before this instance reports that no cleanup leader can be elected from here (/readyz degraded, seatd_leader_election_failing)")
	fs.BoolVar(&c.LeaderFailingUnready, "leader-failing-unready", false, "distributed mode: while no cleanup leader can be elected from here (--leader-failing-after), /readyz answers 503 instead of 200 degraded")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "serve TLS on the gRPC and HTTP ports with this PEM certificate (chain); re-read when it changes")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file; re-read when it changes")
	fs.StringVar(&c.TLSClientCAFile, "tls-client-ca-file", "", "require client certificates signed by this PEM CA bundle (mTLS); re-read when it changes")
	fs.IntVar(&c.MaxRequestBytes, "max-request-bytes", gateway.DefaultMaxBodyBytes, "largest request accepted (a REST body or a gRPC message); larger: 413 / RESOURCE_EXHAUSTED MESSAGE_TOO_LARGE")
	fs.IntVar(&c.MaxConnections, "max-connections", 10000, "open connections per listener (gRPC, HTTP); more wait to be accepted. Both listeners' caps plus a reserve must fit the file descriptor limit (RLIMIT_NOFILE): the soft limit is raised if the hard one allows, else a default is lowered to fit and a value given refuses the start")
	fs.IntVar(&c.MaxConnectionsPerAddress, "max-connections-per-address", DefaultMaxConnectionsPerAddress, "open connections per listener from one client address (an IPv6 /64 counts as one); more are closed as soon as accepted. Behind a proxy or a NAT that hides client addresses, raise it")
	fs.IntVar(&c.GRPCMaxHeaderBytes, "grpc-max-header-bytes", httpMaxHeaderBytes, "gRPC: largest metadata (header list) of one call; more: the call is reset (RST_STREAM) before it runs. The HTTP port's bound is 64 KiB (431)")
	fs.DurationVar(&c.HTTPReadTimeout, "http-read-timeout", 30*time.Second, "HTTP: longest time to read a whole request (headers and body)")
	fs.DurationVar(&c.HTTPWriteTimeout, "http-write-timeout", gateway.DefaultWriteTimeout, "HTTP: longest time to write an answer (not WaitForSeat streams)")
	fs.DurationVar(&c.HTTPIdleTimeout, "http-idle-timeout", 2*time.Minute, "HTTP: an idle keep-alive connection is closed after this")
	fs.DurationVar(&c.ConnectionTimeout, "connection-timeout", 10*time.Second, "gRPC: a new connection must finish its TLS and HTTP/2 handshake within this")
	fs.IntVar(&c.GRPCMaxStreamsPerConn, "grpc-max-streams-per-connection", 1000, "gRPC: calls and streams open at once on one connection")
	fs.IntVar(&c.MaxStreams, "max-streams", grpcapi.DefaultMaxStreams, "gRPC: seatd streams (heartbeat streams, waits) open at once on this instance; more get RESOURCE_EXHAUSTED TOO_MANY_STREAMS")
	fs.IntVar(&c.MaxStreamsPerAddress, "max-streams-per-address", grpcapi.DefaultMaxStreamsPerAddress, "gRPC and REST: seatd streams open at once from one client address (an IPv6 /64 counts as one); more get RESOURCE_EXHAUSTED TOO_MANY_STREAMS. Behind a proxy or a NAT that hides client addresses, raise it")
	fs.DurationVar(&c.FirstMessageTimeout, "first-message-timeout", grpcapi.DefaultFirstMessageTimeout, "gRPC: a heartbeat stream must send its first heartbeat within this")
	fs.DurationVar(&c.StreamIdleTimeout, "stream-idle-timeout", grpcapi.DefaultStreamIdleTimeout, "gRPC: a heartbeat stream that sends nothing for this long (or for two of its lease's heartbeat intervals, if longer) is ended with DEADLINE_EXCEEDED STREAM_IDLE_TIMEOUT; one silent past its lease's end is ended then")
	fs.DurationVar(&c.KeepaliveMinTime, "grpc-keepalive-min-time", 10*time.Second, "gRPC: clients pinging more often than this are disconnected (too_many_pings)")
	fs.Float64Var(&c.FailedLookupRate, "failed-lookup-rate", grpcapi.DefaultFailedLookups.PerSecond, "failed lookups (unknown license key, lease or bearer key; wrong lease token) allowed per second per client address, beyond the burst; over it RESOURCE_EXHAUSTED RATE_LIMITED / 429; 0: no limit")
	fs.IntVar(&c.FailedLookupBurst, "failed-lookup-burst", grpcapi.DefaultFailedLookups.Burst, "failed lookups one client address may make at once before --failed-lookup-rate applies")
	fs.Float64Var(&c.UnauthenticatedCallRate, "unauthenticated-call-rate", grpcapi.DefaultUnauthenticatedCalls.PerSecond, "seat and heartbeat calls (no bearer key) allowed per second per client address, beyond the burst; 0: no limit")
	fs.IntVar(&c.UnauthenticatedCallBurst, "unauthenticated-call-burst", grpcapi.DefaultUnauthenticatedCalls.Burst, "seat and heartbeat calls one client address may make at once before --unauthenticated-call-rate applies")
	fs.Int64Var(&c.TenantMaxLicenses, "tenant-max-licenses", grpcapi.DefaultQuotas.Licenses, "licenses (not deleted) per tenant; more get RESOURCE_EXHAUSTED QUOTA_EXCEEDED; 0: no quota")
	fs.Int64Var(&c.TenantMaxSeats, "tenant-max-seats", grpcapi.DefaultQuotas.Seats, "seats plus overdraft summed over a tenant's licenses; 0: no quota")
	fs.Int64Var(&c.TenantMaxAPIKeys, "tenant-max-api-keys", grpcapi.DefaultQuotas.APIKeys, "API keys (not revoked) per tenant; 0: no quota")
	fs.Int64Var(&c.TenantMaxSigningKeys, "tenant-max-signing-keys", grpcapi.DefaultQuotas.SigningKeys, "published lease-signing keys per tenant (its JWKS); a rotation that would publish more gets RESOURCE_EXHAUSTED QUOTA_EXCEEDED; 0: no quota")
	fs.StringVar(&c.SigningKeyEncryptionKey, "signing-key-encryption-key", "", "seal the lease-signing keys' private halves at rest with AES-256-GCM under this key: base64 of 32 random bytes (openssl rand -base64 32); prefer its environment variable or --signing-key-encryption-key-file (a flag shows in ps). Every instance needs the same key")
	fs.StringVar(&c.SigningKeyEncryptionKeyFile, "signing-key-encryption-key-file", "", "read --signing-key-encryption-key from this file (base64, surrounding white space ignored)")
	fs.StringVar(&c.LicenseFile, "license-file", "", "locked mode: serve the licenses of this vendor-signed license file, and only those (docs/concepts/license-files.md); admin changes of licenses and grants are refused. Reloaded on SIGHUP, ReloadLicenseFile, or when it changes")
	fs.StringVar(&c.VendorKey, "vendor-key", "", "locked mode: the vendor's public key(s) that sign --license-file: PEM (one or more PUBLIC KEY blocks), a JWK or a JWKS; not allowed in a seatd built with its vendor's key")
	fs.DurationVar(&c.LicenseFileWatchInterval, "license-file-watch-interval", 10*time.Second, "locked mode: how often --license-file is read again (a changed file is reloaded) and compared with the file in force in the store (another one: not ready)")
	fs.DurationVar(&c.LicenseFileWatchTimeout, "license-file-watch-timeout", 30*time.Second, "locked mode: how long one look of the watch may take (a reload and the sync of the file's licenses into the store); one that takes longer is logged and tried again at the next look")
	fs.StringVar(&c.SSOConfig, "sso-config", "", "single sign-on: a YAML file of OIDC issuers (each a tenant's or the operator's, its groups mapped to roles) whose tokens the admin API takes as bearer credentials and whose people sign in to the console (docs/guides/single-sign-on.md)")
	fs.DurationVar(&c.SSOSessionLifetime, "sso-session-lifetime", sso.DefaultSessionLifetime, "single sign-on: how long a console session lasts before its person signs in again (within it, the session is renewed with the IdP's refresh token, and the role mapped again, each time its ID token expires)")
	fs.BoolVar(&c.AutoMigrate, "auto-migrate", true, "distributed mode: apply pending migrations at start (else run 'seatd migrate up')")
	return fs
}

// EnvName is the environment variable of a flag: --grpc-addr → SEATD_GRPC_ADDR.
func EnvName(flagName string) string {
	return "SEATD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// usageText heads `seatd -h`: the server's flags follow it.
const usageText = `Usage:
  seatd [flags]                                 serve: embedded (--data-dir), or distributed (--postgres-url and --redis-url)
  seatd migrate [up|status] --postgres-url URL  apply or list the PostgreSQL schema migrations (distributed mode)
  seatd backup [--addr HOST:PORT] FILE          copy a running embedded seatd's data into FILE
  seatd restore FILE [--data-dir DIR]           with seatd stopped, put a backup back
  seatd site-id [--name NAME] [--this-host]     print this seatd's site request (its site key, made if missing) for its vendor's license file
  seatd version                                 print the version, revision and Go version (also seatd --version)

Run seatd <command> -h for a command's own flags.

Every flag can also be set through its environment variable, e.g. --grpc-addr as SEATD_GRPC_ADDR.

Flags:
`

// errHelp is returned by ParseConfig when -h was asked for.
var errHelp = flag.ErrHelp

// ParseConfig reads flags from args and, for flags not given, environment
// variables from getenv. Errors name the flag or variable at fault.
func ParseConfig(args []string, getenv func(string) string, usage io.Writer) (Config, error) {
	var c Config
	fs := c.flagSet()
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(usage)
			fmt.Fprint(usage, usageText)
			fs.PrintDefaults()
			return c, errHelp
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "max-connections" })
	if err := applyEnv(fs, getenv); err != nil {
		return c, err
	}
	c.MaxConnectionsGiven = given || getenv(EnvName("max-connections")) != ""
	return c, c.validate()
}

// applyEnv sets each flag of fs not given on the command line from its
// environment variable (EnvName), if set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		if v := getenv(EnvName(f.Name)); v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("invalid value %q for %s: %v", v, EnvName(f.Name), serr)
			}
		}
	})
	return err
}

func (c *Config) validate() error {
	switch {
	case c.GRPCAddr == "":
		return errors.New("--grpc-addr must not be empty")
	case c.HTTPAddr == "":
		return errors.New("--http-addr must not be empty")
	case c.DataDir == "":
		return errors.New("--data-dir must not be empty")
	case c.CleanupInterval < time.Second:
		return errors.New("--cleanup-interval must be at least 1s")
	case c.CleanupBatch < 1 || c.CleanupBatch > 10000:
		return errors.New("--cleanup-batch must be between 1 and 10000")
	case c.RetainLeases < 0 || c.RetainCleanupEvents < 0 || c.RetainSeatEvents < 0 || c.RetainAudit < 0:
		return errors.New("--retain-leases, --retain-cleanup-events, --retain-seat-events and --retain-audit must be 0 (keep forever) or positive")
	case c.RetainReturned < time.Second:
		return errors.New("--retain-returned-certificates must be at least 1s: the list must not grow forever")
	case c.RetentionBatch < 1 || c.RetentionBatch > 10000:
		return errors.New("--retention-batch must be between 1 and 10000")
	case c.RetentionInterval < time.Second:
		return errors.New("--retention-interval must be at least 1s")
	case c.CleanupConcurrency < 1 || c.CleanupConcurrency > 1000:
		return errors.New("--cleanup-concurrency must be between 1 and 1000")
	case c.CleanupSoftLimit <= 0 || c.CleanupHardLimit < c.CleanupSoftLimit:
		return errors.New("--cleanup-soft-limit must be positive and at most --cleanup-hard-limit")
	case c.DrainDelay < 0:
		return errors.New("--drain-delay must not be negative")
	case c.WebhookTimeout < 100*time.Millisecond || c.WebhookTimeout > 5*time.Minute:
		return errors.New("--webhook-timeout must be between 100ms and 5m")
	case c.WebhookRetryFor <= 0:
		return errors.New("--webhook-retry-for must be positive")
	case c.WebhookDisableAfter < time.Minute:
		return errors.New("--webhook-disable-after must be at least 1m")
	case c.WebhookConcurrency < 1 || c.WebhookConcurrency > 1000:
		return errors.New("--webhook-concurrency must be between 1 and 1000")
	case c.WebhookWindow < time.Second:
		return errors.New("--webhook-signal-window must be at least 1s")
	case c.WebhookPeakShare < 1 || c.WebhookPeakShare > 100:
		return errors.New("--webhook-peak-share must be between 1 and 100")
	case c.WebhookExpiringEvery < time.Second:
		return errors.New("--webhook-expiring-interval must be at least 1s")
	case c.TenantMaxWebhookEndpoints < 1 || c.TenantMaxWebhookEndpoints > 1000:
		return errors.New("--tenant-max-webhook-endpoints must be between 1 and 1000")
	case c.LogRepeatInterval < 0:
		return errors.New("--log-repeat-interval must not be negative (0: no throttling)")
	case c.ShutdownTimeout <= 0:
		return errors.New("--shutdown-timeout must be positive")
	case c.ReadinessInterval < 100*time.Millisecond:
		return errors.New("--readiness-interval must be at least 100ms")
	case c.WriteFailureWindow < time.Second:
		return errors.New("--write-failure-window must be at least 1s")
	// The mode's own flags first: with one URL of the two, the other is
	// what is missing, not the operator key.
	case c.PostgresURL != "" && c.RedisURL == "":
		return errors.New("--postgres-url needs --redis-url too (distributed mode uses both)")
	case c.RedisURL != "" && c.PostgresURL == "":
		return errors.New("--redis-url needs --postgres-url too (distributed mode uses both)")
	case c.Distributed() && c.OperatorKey == "":
		return errors.New("distributed mode needs --operator-key (SEATD_OPERATOR_KEY): every instance must share one")
	case c.PGMaxConns < 0 || c.PGMinConns < 0 || (c.PGMaxConns > 0 && c.PGMinConns > c.PGMaxConns):
		return errors.New("--pg-min-conns and --pg-max-conns must be non-negative, min at most max")
	case c.LeaseCacheSize < 1:
		return errors.New("--lease-cache-size must be at least 1")
	case c.EndRepairBatch < 1:
		return errors.New("--end-repair-batch must be at least 1")
	case c.HeartbeatFlushInterval < 100*time.Millisecond:
		return errors.New("--heartbeat-flush-interval must be at least 100ms")
	case c.LeaderPingInterval < 10*time.Millisecond || c.LeaderRetryInterval < 10*time.Millisecond:
		return errors.New("--leader-ping-interval and --leader-retry-interval must be at least 10ms")
	case c.LeaderPingTimeout < 10*time.Millisecond:
		return errors.New("--leader-ping-timeout must be at least 10ms")
	case c.LeaderFailingAfter < 1:
		return errors.New("--leader-failing-after must be at least 1")
	case c.WaitQueueMax < 1:
		return errors.New("--wait-queue-max must be at least 1")
	case c.WaitHold < time.Second:
		return errors.New("--wait-hold must be at least 1s")
	// 8 polls must fit in the Redis queue's 5 s liveness of a waiter.
	case c.WaitPoll < 10*time.Millisecond || c.WaitPoll > 500*time.Millisecond:
		return errors.New("--wait-poll must be between 10ms and 500ms")
	case c.ConnectTimeout <= 0:
		return errors.New("--connect-timeout must be positive")
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return errors.New("--tls-cert-file and --tls-key-file go together")
	case c.TLSClientCAFile != "" && c.TLSCertFile == "":
		return errors.New("--tls-client-ca-file needs --tls-cert-file and --tls-key-file (mTLS is TLS first)")
	case c.MaxRequestBytes < 1024 || c.MaxRequestBytes > 64<<20:
		return errors.New("--max-request-bytes must be between 1024 and 67108864")
	case c.MaxConnections < 1:
		return errors.New("--max-connections must be at least 1")
	case c.MaxConnectionsPerAddress < 1:
		return errors.New("--max-connections-per-address must be at least 1")
	case c.GRPCMaxHeaderBytes < 8<<10 || c.GRPCMaxHeaderBytes > 16<<20:
		return errors.New("--grpc-max-header-bytes must be between 8192 and 16777216")
	case c.HTTPReadTimeout < time.Second || c.HTTPWriteTimeout < time.Second || c.HTTPIdleTimeout < time.Second:
		return errors.New("--http-read-timeout, --http-write-timeout and --http-idle-timeout must be at least 1s")
	case c.ConnectionTimeout < 100*time.Millisecond:
		return errors.New("--connection-timeout must be at least 100ms")
	case c.GRPCMaxStreamsPerConn < 1:
		return errors.New("--grpc-max-streams-per-connection must be at least 1")
	case c.MaxStreams < 1:
		return errors.New("--max-streams must be at least 1")
	case c.MaxStreamsPerAddress < 1:
		return errors.New("--max-streams-per-address must be at least 1")
	case c.StreamIdleTimeout < time.Second:
		return errors.New("--stream-idle-timeout must be at least 1s")
	case c.FirstMessageTimeout < 100*time.Millisecond:
		return errors.New("--first-message-timeout must be at least 100ms")
	case c.KeepaliveMinTime < time.Second:
		return errors.New("--grpc-keepalive-min-time must be at least 1s")
	case !validRate(c.FailedLookupRate) || c.FailedLookupBurst < 1 || c.FailedLookupBurst > maxBurst:
		return errors.New("--failed-lookup-rate must be a number, 0 or more, and --failed-lookup-burst between 1 and 1000000")
	case !validRate(c.UnauthenticatedCallRate) || c.UnauthenticatedCallBurst < 1 || c.UnauthenticatedCallBurst > maxBurst:
		return errors.New("--unauthenticated-call-rate must be a number, 0 or more, and --unauthenticated-call-burst between 1 and 1000000")
	case c.TenantMaxLicenses < 0 || c.TenantMaxSeats < 0 || c.TenantMaxAPIKeys < 0 || c.TenantMaxSigningKeys < 0:
		return errors.New("--tenant-max-licenses, --tenant-max-seats, --tenant-max-api-keys and --tenant-max-signing-keys must not be negative (0: no quota)")
	}
	if err := c.validateLocked(); err != nil {
		return err
	}
	if c.SigningKeyEncryptionKey != "" && c.SigningKeyEncryptionKeyFile != "" {
		return errors.New("--signing-key-encryption-key and --signing-key-encryption-key-file: give one of them, not both")
	}
	if c.SigningKeyEncryptionKey != "" {
		if _, err := signing.ParseEncryptionKey(c.SigningKeyEncryptionKey); err != nil {
			return fmt.Errorf("--signing-key-encryption-key: %v", err)
		}
	}
	if c.SSOSessionLifetime < time.Minute || c.SSOSessionLifetime > 30*24*time.Hour {
		return errors.New("--sso-session-lifetime: between 1m and 720h")
	}
	if c.OperatorKey != "" {
		if err := checkOperatorKey(c.OperatorKey); err != nil {
			return fmt.Errorf("--operator-key: %v", err)
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return errors.New("--log-format must be text or json")
	}
	expiring, err := c.webhookExpiring()
	if err != nil {
		return err
	}
	return c.checkWebhookRetention(expiring)
}

// checkWebhookRetention: an event's dedupe key (license.expiring,
// .exhausted, .peak) is removed with it, so --retain-webhook-events must
// outlast the time the same key can be written again: the largest
// threshold before an expiry (the key is of that expiry, past then) and the
// signal window (the key is of that window).
func (c *Config) checkWebhookRetention(expiring []time.Duration) error {
	if c.RetainWebhookEvents == 0 {
		return nil
	}
	need := max(slices.Max(expiring), c.WebhookWindow)
	if c.RetainWebhookEvents < need {
		return fmt.Errorf("--retain-webhook-events must be 0 (keep forever) or at least %s (the largest --webhook-expiring-before and --webhook-signal-window)", need)
	}
	return nil
}

const maxBurst = 1_000_000

// DefaultMaxConnectionsPerAddress is --max-connections-per-address: a
// tenth of a listener's default cap, so that ten addresses are needed to
// fill it; a client uses one connection for all its calls.
const DefaultMaxConnectionsPerAddress = 1000

func validRate(r float64) bool { return r >= 0 && !math.IsInf(r, 1) } // NaN fails r >= 0

// apiLimits are the per-address limits and tenant quotas for grpcapi.
func (c *Config) apiLimits() (failed, calls grpcapi.RateLimit, quotas grpcapi.Quotas) {
	return grpcapi.RateLimit{PerSecond: c.FailedLookupRate, Burst: c.FailedLookupBurst},
		grpcapi.RateLimit{PerSecond: c.UnauthenticatedCallRate, Burst: c.UnauthenticatedCallBurst},
		grpcapi.Quotas{Licenses: c.TenantMaxLicenses, Seats: c.TenantMaxSeats, APIKeys: c.TenantMaxAPIKeys, SigningKeys: c.TenantMaxSigningKeys}
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level: unknown level %q (debug, info, warn, error)", s)
	}
	return l, nil
}

// throttledMessages start the lines written once per failed call: on a
// full disk or with a backend down they would flood the log.
var throttledMessages = []string{"request failed", "internal error", "embedded store: ", "distributed store: "}

func (c *Config) logger(w io.Writer) (*slog.Logger, *logthrottle.Handler) {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	t := logthrottle.New(h, c.LogRepeatInterval, nil, throttledMessages...)
	return slog.New(t).With("instance", c.InstanceID), t
}

// DefaultRetainReturned is --retain-returned-certificates: a returned
// certificate stays listed a day past its exp, for a product whose clock
// runs up to a day late (it would take the certificate for unexpired).
const DefaultRetainReturned = 24 * time.Hour
