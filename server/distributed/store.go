package distributed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/cache"
	"github.com/seatd/seatd/server/distributed/internal/connect"
	"github.com/seatd/seatd/server/distributed/internal/failure"
	"github.com/seatd/seatd/server/distributed/live"
	"github.com/seatd/seatd/server/distributed/record"
)

var _ server.Store = (*Store)(nil)

// Options configure a Store. Zero values take the defaults.
type Options struct {
	// PostgresURL is the system of record, e.g.
	// postgres://seatd@db:5432/seatd?sslmode=require. A search_path
	// parameter selects the schema.
	PostgresURL string
	// RedisURL holds the live leases, e.g. redis://cache:6379/0.
	RedisURL string
	// Redis, when set, is the client to use instead of opening one from
	// RedisURL: a process shares one client per server (wait queues and
	// revocation news use it too). The caller closes it, after Close.
	Redis redis.UniversalClient
	// RedisKeyPrefix starts every Redis key of this store (default
	// "seatd:"), so that several deployments can share one Redis.
	RedisKeyPrefix string
	// PoolMaxConns and PoolMinConns size the PostgreSQL pool (defaults:
	// max(16, 4 × GOMAXPROCS), unless the URL sets pool_max_conns, and
	// 0). The hot path needs few connections (acquisitions and releases
	// are committed in groups, record/commit.go), but cleanup batches, the
	// heartbeat flush and reads of leases this instance has not cached
	// share the pool with it.
	PoolMaxConns int32
	PoolMinConns int32
	// HeartbeatFlushInterval is how often heartbeats are written to
	// PostgreSQL (default 10s). A Redis loss costs at most this much
	// heartbeat progress, which the rebuild makes up for (doc.go).
	HeartbeatFlushInterval time.Duration
	// LeaseCacheSize bounds the leases whose fixed fields (license,
	// tenant, fingerprint ...) this process caches, so that their
	// heartbeats read only Redis (default DefaultLeaseCacheSize; about
	// 100 bytes each, more with long fields or metadata, none of them
	// scanned by the garbage collector).
	// With more active leases than that, heartbeats of the ones beyond it
	// read their row from PostgreSQL; the oldest cached leases are
	// forgotten first, about 1/64 of the cache at a time.
	LeaseCacheSize int
	// EndRepairBatch bounds the recorded ends (releases, revokes) the
	// cleanup leader's reconciliation removes from Redis per batch
	// (record.PendingEnds; default DefaultEndRepairBatch): one query, one
	// end.lua per license and one delete a batch, batches until one comes
	// back short.
	EndRepairBatch int
	// ConnectTimeout bounds how long Open retries unreachable servers
	// (default 30s).
	ConnectTimeout time.Duration
	// SkipMigrations leaves the schema alone at Open (run `seatd migrate
	// up` instead). By default Open applies pending migrations, under a
	// PostgreSQL lock so that instances starting together do not race.
	SkipMigrations bool
	// Logger reports background failures (default slog.Default()).
	Logger *slog.Logger

	// prepareConn, when set, vets every PostgreSQL connection the pool
	// hands out: the tests' fault hook (an error fails the call as an
	// unreachable server would).
	prepareConn record.ConnCheck
}

const (
	defaultKeyPrefix      = "seatd:"
	defaultFlushInterval  = 10 * time.Second
	defaultConnectTimeout = 30 * time.Second
	// defaultReconcileEvery spaces the passes that re-derive expiry hints
	// from PostgreSQL (see DueLeases).
	defaultReconcileEvery = 10 * time.Second
	// DefaultEndRepairBatch is Options.EndRepairBatch's default: a batch
	// of one license holds Redis for about a millisecond (end.lua).
	DefaultEndRepairBatch = 1000
	// defaultRecordWait bounds how long a retry waits for the acquisition
	// that granted the lease it is handed back to record it.
	defaultRecordWait = 5 * time.Second
)

// Store is the distributed server.Store: PostgreSQL is the record, Redis
// holds the live leases. See doc.go for the design.
type Store struct {
	rec        *record.Postgres // the truth (package record)
	live       *live.Redis      // the leases that count now (package live)
	rdb        redis.UniversalClient
	closeRedis bool // Open opened rdb, so Close closes it
	log        *slog.Logger
	flushEvery time.Duration

	// rebuilds runs one rebuild per license at a time in this process.
	rebuilds singleflight.Group

	licenseKeys *cache.Bounded[string, string] // license key -> license id
	// licenseGrants: license id -> its grants at a settings version, for
	// feature acquisitions (grants.go: how they stay fresh).
	licenseGrants *cache.Bounded[string, *licenseGrants]
	// policied holds the licenses last seen with a site policy: their
	// base acquisitions go to acquire_pools.lua at once (policy.go).
	policied  sync.Map       // license id -> struct{}
	leaseInfo leaseInfoCache // lease id -> immutable fields

	hb heartbeatBuffer

	// recordWait is how long handing back a lease waits for the
	// acquisition that granted it to record it.
	recordWait time.Duration
	// reconcileEvery spaces the reconciliation passes (a field for tests).
	reconcileEvery time.Duration
	// sweepPage is how many active sessions a reconciliation sweeps for
	// orphans (a field for tests).
	sweepPage int
	// hintPage is how many licenses a reconciliation compares the hints
	// of (a field for tests).
	hintPage int
	// endBatch is how many recorded ends a reconciliation removes from
	// Redis a batch (Options.EndRepairBatch).
	endBatch int
	// rebuildStale is how long another instance's rebuild may make no
	// progress before this one takes it for dead (a field for tests).
	rebuildStale time.Duration
	// insertHook, when set (tests only), runs every session insert: it may
	// make the insert fail before or after it commits.
	insertHook func(insert func() (bool, error)) (bool, error)

	reconcileMu   sync.Mutex
	lastReconcile time.Time
	sweepAfter    string // the reconciliation's sweep continues after this lease id
	hintsAfter    string // and its comparison of hints after this license id
	// pruneAfter: where the pruning of each license's policy index goes
	// on (prunePolicyIndexes).
	pruneAfter map[string]string

	// confBehind holds the licenses whose settings this process failed to
	// copy into the live state (pushConf); the flush loop retries them,
	// and the leader's reconciliation (syncConf) is the backstop.
	confBehindMu sync.Mutex
	confBehind   map[string]bool

	// For BackgroundStats.
	flushFailures, liveRebuilds, adopted, hintsRederived, endsRepaired atomic.Int64
	endsBehind                                                         atomic.Int64 // as of the last reconciliation

	// bg tracks the work started by background, which Close waits for;
	// none starts once closing is set.
	bg        sync.WaitGroup
	bgMu      sync.Mutex
	closing   bool
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open connects to PostgreSQL and Redis (retrying for up to
// Options.ConnectTimeout), applies pending migrations and starts the
// heartbeat flusher.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.PostgresURL == "" {
		return nil, errors.New("distributed store: no PostgreSQL URL")
	}
	if opts.RedisURL == "" && opts.Redis == nil {
		return nil, errors.New("distributed store: no Redis URL")
	}
	log := cmp.Or(opts.Logger, slog.Default())
	timeout := cmp.Or(opts.ConnectTimeout, defaultConnectTimeout)

	rdb, raddr, ownRedis := opts.Redis, live.Addr(opts.Redis), false
	if rdb == nil {
		var err error
		if rdb, raddr, err = live.Dial(opts.RedisURL); err != nil {
			return nil, fmt.Errorf("distributed store: %w", err)
		}
		ownRedis = true
	}
	closeRedis := func() {
		if ownRedis {
			_ = rdb.Close()
		}
	}
	rec, err := record.Open(ctx, record.Options{
		URL: opts.PostgresURL, MaxConns: opts.PoolMaxConns, MinConns: opts.PoolMinConns,
		ConnectTimeout: timeout, SkipMigrations: opts.SkipMigrations, Logger: log, PrepareConn: opts.prepareConn,
	})
	if err != nil {
		closeRedis()
		return nil, fmt.Errorf("distributed store: %w", err)
	}
	// go-redis retries a command or pipeline that failed on the network
	// (3 times by default), which may replay a script that did run. Every
	// script is safe to replay, so the retries stay on: acquire.lua answers
	// a replay of its own grant (the lease id is new per call, see there);
	// heartbeat.lua renews again (a deadline no earlier than the one told);
	// check, peek, state, count and due read only; end, expire, adopt,
	// tombstone and hint converge to the same state; rebuild and setconf
	// refuse what is not newer (epoch, version).
	if err := connect.Retry(ctx, timeout, func(ctx context.Context) error { return live.Ping(ctx, rdb) }); err != nil {
		closeRedis()
		rec.Close()
		return nil, fmt.Errorf("distributed store: cannot reach Redis at %s (gave up after %v): %w", raddr, timeout, err)
	}
	if err := live.CheckEviction(ctx, rdb, log); err != nil {
		closeRedis()
		rec.Close()
		return nil, fmt.Errorf("distributed store: %w", err)
	}

	s := &Store{
		rec:            rec,
		live:           live.New(rdb, cmp.Or(opts.RedisKeyPrefix, defaultKeyPrefix), log),
		rdb:            rdb,
		closeRedis:     ownRedis,
		log:            log,
		flushEvery:     cmp.Or(opts.HeartbeatFlushInterval, defaultFlushInterval),
		licenseKeys:    cache.New[string, string](100_000),
		licenseGrants:  cache.New[string, *licenseGrants](10_000),
		leaseInfo:      newLeaseInfoCache(cmp.Or(opts.LeaseCacheSize, DefaultLeaseCacheSize)),
		hb:             heartbeatBuffer{pending: map[string]pendingBeat{}},
		confBehind:     map[string]bool{},
		recordWait:     defaultRecordWait,
		reconcileEvery: defaultReconcileEvery,
		sweepPage:      defaultSweepPage,
		hintPage:       defaultHintPage,
		endBatch:       cmp.Or(opts.EndRepairBatch, DefaultEndRepairBatch),
		rebuildStale:   defaultRebuildStale,
		stop:           make(chan struct{}),
		stopped:        make(chan struct{}),
	}
	s.live.MoveLegacyHint(ctx)
	go s.flushLoop()
	return s, nil
}

// Close stops the flusher, writes pending heartbeats (which needs both:
// the record first, then Redis drops what the record says ended), then
// closes the PostgreSQL pool, and Redis last if Open opened it (docs/guides/upgrades.md,
// step 7). The rule is that a client closes after
// its last user: the pool is the store's alone, while a shared Redis client
// (Options.Redis) also serves the wait queues and the revocation news, so
// its owner closes it after this returns. Once the flush is done neither
// is used, so nothing depends on the order but the rule keeps it the same
// in both cases.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.live.Stop()
		s.rec.StopBatches()
		close(s.stop)
		<-s.stopped
		s.bgMu.Lock()
		s.closing = true
		s.bgMu.Unlock()
		s.bg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		flushErr := s.flush(ctx)
		s.rec.Close()
		var redisErr error
		if s.closeRedis {
			redisErr = s.rdb.Close()
		}
		s.closeErr = errors.Join(flushErr, redisErr)
	})
	return s.closeErr
}

// background runs f outside the call that needs it, within rebuildTimeout;
// Close waits for it, and it does not start once Close has begun.
func (s *Store) background(f func(ctx context.Context)) {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.closing {
		return
	}
	s.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), rebuildTimeout)
		defer cancel()
		f(ctx)
	})
}

// fail turns a backend failure into the error clients see
// (failure.Public).
func (s *Store) fail(op string, err error) error { return failure.Public(s.log, op, err) }

// OpenRedis makes a Redis client for a seatd Redis URL (live.Dial), to
// share with Options.Redis.
func OpenRedis(rawURL string) (redis.UniversalClient, string, error) { return live.Dial(rawURL) }
