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

	"github.com/seatd/seatd/server/distributed/internal/connect"
	"github.com/seatd/seatd/server/distributed/internal/failure"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
	"github.com/seatd/seatd/server/distributed/record"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/seatd/seatd/server"
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
	prepareConn func(context.Context, *pgx.Conn) (bool, error)
}

const (
	defaultKeyPrefix      = "seatd:"
	defaultFlushInterval  = 10 * time.Second
	defaultConnectTimeout = 30 * time.Second
	// defaultReconcileEvery spaces the passes that re-derive expiry hints
	// from PostgreSQL (see DueLeases).
	defaultReconcileEvery = 10 * time.Second
	// defaultRecordWait bounds how long a retry waits for the acquisition
	// that granted the lease it is handed back to record it.
	defaultRecordWait = 5 * time.Second
)

// Store is the distributed server.Store: PostgreSQL is the record, Redis
// holds the live leases. See doc.go for the design.
type Store struct {
	rec        *record.Postgres
	rdb        redis.UniversalClient
	closeRedis bool // Open opened rdb, so Close closes it
	keys       keyspace
	log        *slog.Logger
	flushEvery time.Duration

	// rebuilds runs one rebuild per license at a time in this process.
	rebuilds singleflight.Group

	licenseKeys *boundedCache[string, string]     // license key -> license id
	leaseInfo   *boundedCache[string, *leaseInfo] // lease id -> immutable fields

	hb heartbeatBuffer

	// The hot path's script calls, in pipelines (batch.go; the record
	// commits its inserts and releases in groups itself).
	hot *groupcommit.Batcher[licReq, licRes]
	// licJSON caches decoded license settings by their JSON text.
	licJSON *boundedCache[string, server.License]
	// licKeys caches the Redis keys of a license.
	licKeys *boundedCache[string, []string]

	// recordWait is how long handing back a lease waits for the
	// acquisition that granted it to record it.
	recordWait time.Duration
	// reconcileEvery spaces the reconciliation passes (a field for tests).
	reconcileEvery time.Duration
	// insertHook, when set (tests only), runs every session insert: it may
	// make the insert fail before or after it commits.
	insertHook func(insert func() (bool, error)) (bool, error)

	reconcileMu   sync.Mutex
	lastReconcile time.Time

	// confBehind holds the licenses whose settings this process failed to
	// copy into Redis (pushConf); the flush loop retries them, and the
	// leader's reconciliation (syncConf) is the backstop.
	behindMu   sync.Mutex
	confBehind map[string]bool

	// For BackgroundStats.
	flushFailures, liveRebuilds, adopted atomic.Int64

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

	rdb, raddr, ownRedis := opts.Redis, redisAddr(opts.Redis), false
	if rdb == nil {
		var err error
		if rdb, raddr, err = OpenRedis(opts.RedisURL); err != nil {
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
	if err := connect.Retry(ctx, timeout, func(ctx context.Context) error { return pingRedis(ctx, rdb) }); err != nil {
		closeRedis()
		rec.Close()
		return nil, fmt.Errorf("distributed store: cannot reach Redis at %s (gave up after %v): %w", raddr, timeout, err)
	}
	if err := checkEviction(ctx, rdb, log); err != nil {
		closeRedis()
		rec.Close()
		return nil, fmt.Errorf("distributed store: %w", err)
	}

	s := &Store{
		rec:            rec,
		rdb:            rdb,
		closeRedis:     ownRedis,
		keys:           keyspace{prefix: cmp.Or(opts.RedisKeyPrefix, defaultKeyPrefix)},
		log:            log,
		flushEvery:     cmp.Or(opts.HeartbeatFlushInterval, defaultFlushInterval),
		licenseKeys:    newBoundedCache[string, string](100_000),
		leaseInfo:      newBoundedCache[string, *leaseInfo](1_000_000),
		licKeys:        newBoundedCache[string, []string](100_000),
		licJSON:        newBoundedCache[string, server.License](10_000),
		hb:             heartbeatBuffer{pending: map[string]pendingBeat{}},
		confBehind:     map[string]bool{},
		recordWait:     defaultRecordWait,
		reconcileEvery: defaultReconcileEvery,
		stop:           make(chan struct{}),
		stopped:        make(chan struct{}),
	}
	s.hot = groupcommit.New(redisSlots, redisMin, maxPipeline, s.runLicenseScripts)
	s.moveLegacyHint(ctx)
	go s.flushLoop()
	return s, nil
}

// moveLegacyHint moves the one-piece expiry hint of earlier versions into
// its pieces (keys.go). Best effort: a hint left behind is re-derived from
// PostgreSQL by the leader's reconciliation.
func (s *Store) moveLegacyHint(ctx context.Context) {
	old := s.keys.legacyExpiry()
	hints, err := s.rdb.ZRangeWithScores(ctx, old[0], 0, -1).Result()
	if err != nil || len(hints) == 0 {
		return
	}
	var lower []any
	for _, h := range hints {
		lower = append(lower, fmt.Sprint(h.Member), int64(h.Score))
	}
	s.applyHints(ctx, nil, lower)
	if err := s.rdb.Del(ctx, old[0]).Err(); err == nil {
		_ = s.rdb.Del(ctx, old[1]).Err()
	}
	s.log.Info("distributed store: moved the expiry hint into its pieces", "licenses", len(hints))
}

// Close stops the flusher, writes pending heartbeats, then closes Redis and
// the PostgreSQL pool, last (README, "Zero-downtime deploys", step 7).
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.hot.Stop()
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
		var redisErr error
		if s.closeRedis {
			redisErr = s.rdb.Close()
		}
		s.rec.Close()
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

// redisNow is the store's clock: Redis TIME, the clock every script uses.
func (s *Store) redisNow(ctx context.Context) (time.Time, error) {
	t, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// usTime converts unix microseconds (Redis) to a time.
func usTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

// timeUS converts a time to unix microseconds.
func timeUS(t time.Time) int64 { return t.UnixMicro() }

// redisKeys returns the Redis keys of a license (keyspace.license),
// cached. Callers must not change the slice.
func (s *Store) redisKeys(licenseID string) []string {
	if k, ok := s.licKeys.get(licenseID); ok {
		return k
	}
	k := s.keys.license(licenseID)
	s.licKeys.put(licenseID, k)
	return k
}
