// Package leader elects the one seatd instance that runs scheduled cleanup,
// with a PostgreSQL session-level advisory lock held on a dedicated
// connection (seed "Multi-Instance + Production Hardening").
//
// The connection is a standalone pgx.Conn, never a pooled one: a session
// lock on a pooled connection would leak into whatever borrows it next, and
// the pool's MaxConnLifetime would silently drop it. The leader pings that
// connection every PingInterval and steps down at once when a ping fails or
// the lock is gone (e.g. pg_terminate_backend). Records are exactly-once
// (ARCHITECTURE.md, "Invariants and their guards": exactly-once records), so a stale leader that has not noticed yet is
// harmless, only wasteful.
//
// A transaction-pooling PgBouncer breaks session advisory locks: point
// --postgres-url at PostgreSQL or a session-pooling bouncer.
package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatd/seatd/server/internal/startstop"
)

// LockClassID namespaces seatd's advisory locks (the first of the two
// integers); the second identifies the lock within seatd and the schema.
const LockClassID int32 = 0x5EA7D

// Lock ids within LockClassID.
const cleanupLock = "cleanup-leader"

// Defaults.
const (
	DefaultPingInterval  = 5 * time.Second
	DefaultPingTimeout   = 5 * time.Second
	DefaultRetryInterval = 5 * time.Second
	// DefaultFailingAfter is how many campaigns in a row may fail to reach
	// the lock before Health reports the election failing.
	DefaultFailingAfter = 3
	applicationPrefix   = "seatd-leader "
)

// Config configures an Elector.
type Config struct {
	PostgresURL  string
	InstanceID   string
	PingInterval time.Duration // leader: how often to check the lock connection
	// PingTimeout bounds one check of the lock connection; a check that
	// takes longer steps the leader down (default DefaultPingTimeout).
	PingTimeout   time.Duration
	RetryInterval time.Duration // follower: how often to try for the lock (±25% jitter)
	// FailingAfter is how many campaigns in a row that cannot reach the
	// lock (PostgreSQL unreachable, or refusing the connection or the lock
	// query) make Health report Failing (default DefaultFailingAfter). A
	// campaign that finds the lock held by another instance reached it.
	FailingAfter int
	Logger       *slog.Logger
	// OnElected runs when this instance becomes leader; ctx ends when it
	// stops leading. OnDemoted runs after, once ctx is done. Both run on the
	// elector's goroutine, so they must not block for long.
	OnElected func(ctx context.Context)
	OnDemoted func()
	// OnHealth runs on the elector's goroutine after every campaign that
	// could not reach the lock, and once when one reaches it again.
	OnHealth func(Health)
}

// Health is this instance's part in the election: whether it can reach
// the lock at all. A follower that finds another instance leading is
// healthy.
type Health struct {
	// Failures counts the campaigns in a row that could not reach the
	// lock (0 once one does).
	Failures int
	// Failing is Failures >= Config.FailingAfter: from here no leader can
	// be elected, and none can be known.
	Failing bool
	// Since is when the first of those failures happened.
	Since time.Time
	// Err is the last failure, for logs (it may name hosts: not for
	// clients).
	Err error
}

// Elector campaigns for leadership until stopped.
type Elector struct {
	cfg Config
	log *slog.Logger

	run     startstop.Runner
	mu      sync.Mutex // guards leading and health
	leading bool
	health  Health
}

// New returns an Elector; call Start to campaign.
func New(cfg Config) *Elector {
	cfg.PingInterval = cmp.Or(cfg.PingInterval, DefaultPingInterval)
	cfg.PingTimeout = cmp.Or(cfg.PingTimeout, DefaultPingTimeout)
	cfg.RetryInterval = cmp.Or(cfg.RetryInterval, DefaultRetryInterval)
	cfg.FailingAfter = max(cfg.FailingAfter, 0)
	cfg.FailingAfter = cmp.Or(cfg.FailingAfter, DefaultFailingAfter)
	log := cmp.Or(cfg.Logger, slog.Default())
	return &Elector{cfg: cfg, log: log}
}

// Health reports whether this instance can reach the lock.
func (e *Elector) Health() Health {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.health
}

// InstanceID is this instance's id.
func (e *Elector) InstanceID() string { return e.cfg.InstanceID }

// IsLeader reports whether this instance holds the lock now.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// LeaderID asks PostgreSQL who holds the lock: the holder's connection
// carries its instance id as application_name, so every instance sees the
// same answer and a dead leader vanishes with its connection.
func (e *Elector) LeaderID(ctx context.Context) (string, error) {
	conn, err := e.connect(ctx, "seatd-status "+e.cfg.InstanceID)
	if err != nil {
		return "", err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	objectID, err := lockObjectID(ctx, conn)
	if err != nil {
		return "", err
	}
	var app string
	err = conn.QueryRow(ctx, `
		SELECT a.application_name
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = $1::int::oid AND l.objid = $2::int::oid AND l.objsubid = 2
		LIMIT 1`, LockClassID, objectID).Scan(&app)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("find cleanup leader: %w", err)
	}
	if len(app) > len(applicationPrefix) && app[:len(applicationPrefix)] == applicationPrefix {
		return app[len(applicationPrefix):], nil
	}
	return app, nil
}

// Start campaigns in the background. A second Start is a no-op.
func (e *Elector) Start(ctx context.Context) { e.run.Start(ctx, e.campaignUntilStopped) }

// Stop steps down (running OnDemoted), releases the lock so that another
// instance takes over at once, and waits. Stop without Start, or twice, is
// a no-op.
func (e *Elector) Stop() { e.run.Stop() }

func (e *Elector) campaignUntilStopped(ctx context.Context) {
	for {
		if conn, objectID, ok := e.campaign(ctx); ok {
			e.lead(ctx, conn, objectID)
		}
		if !sleep(ctx, jitter(e.cfg.RetryInterval)) {
			return
		}
	}
}

// campaign tries once for the lock; it returns the connection holding it
// and the lock's object id.
func (e *Elector) campaign(ctx context.Context) (*pgx.Conn, int32, bool) {
	conn, err := e.connect(ctx, applicationPrefix+e.cfg.InstanceID)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("leader election: cannot reach PostgreSQL; retrying", "err", err)
			e.reached(err)
		}
		return nil, 0, false
	}
	objectID, err := lockObjectID(ctx, conn)
	var got bool
	if err == nil {
		err = conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", LockClassID, objectID).Scan(&got)
	}
	if err != nil || !got {
		if err != nil && ctx.Err() == nil {
			e.log.Warn("leader election: lock attempt failed; retrying", "err", err)
		}
		if ctx.Err() == nil {
			e.reached(err) // !got: another instance holds the lock, which this one reached
		}
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, 0, false
	}
	e.reached(nil)
	return conn, objectID, true
}

// reached records a campaign's outcome: err is why it could not reach the
// lock, nil when it did (won it or found it held).
func (e *Elector) reached(err error) {
	e.mu.Lock()
	h := e.health
	if err == nil {
		if h.Failures == 0 {
			e.mu.Unlock()
			return
		}
		if h.Failing {
			e.log.Info("leader election: the leader lock is reachable again", "after_failures", h.Failures)
		}
		h = Health{}
	} else {
		if h.Failures == 0 {
			h.Since = time.Now()
		}
		h.Failures++
		h.Err = err
		if !h.Failing && h.Failures >= e.cfg.FailingAfter {
			h.Failing = true
			e.log.Error("leader election: this instance cannot reach the leader lock; no cleanup leader can be elected from here",
				"failures", h.Failures, "since", h.Since, "err", err)
		}
	}
	e.health = h
	e.mu.Unlock()
	if e.cfg.OnHealth != nil {
		e.cfg.OnHealth(h)
	}
}

// lead holds leadership until the lock connection fails or ctx ends.
func (e *Elector) lead(ctx context.Context, conn *pgx.Conn, objectID int32) {
	leadCtx, stopLeading := context.WithCancel(ctx)
	e.setLeading(true)
	e.log.Info("leader election: this instance now leads cleanup")
	if e.cfg.OnElected != nil {
		e.cfg.OnElected(leadCtx)
	}
	reason := e.hold(ctx, conn, objectID)
	stopLeading()
	e.setLeading(false)
	if e.cfg.OnDemoted != nil {
		e.cfg.OnDemoted()
	}
	// Release explicitly on a clean stop so a follower takes over at once;
	// closing the session releases it anyway.
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ctx.Err() != nil {
		_, _ = conn.Exec(cctx, "SELECT pg_advisory_unlock($1, $2)", LockClassID, objectID)
	}
	_ = conn.Close(cctx)
	e.log.Info("leader election: this instance stepped down", "reason", reason)
}

// hold pings the lock connection until it fails (returns why) or ctx ends.
func (e *Elector) hold(ctx context.Context, conn *pgx.Conn, objectID int32) string {
	t := time.NewTicker(e.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return "stopping"
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, e.cfg.PingTimeout)
		var held bool
		err := conn.QueryRow(pctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted
			  AND classid = $1::int::oid AND objid = $2::int::oid AND objsubid = 2)`,
			LockClassID, objectID).Scan(&held)
		cancel()
		switch {
		case ctx.Err() != nil:
			return "stopping"
		case err != nil:
			return "lock connection failed: " + err.Error()
		case !held:
			return "lock lost"
		}
	}
}

func (e *Elector) setLeading(v bool) {
	e.mu.Lock()
	e.leading = v
	e.mu.Unlock()
}

// connect opens a dedicated connection that notices a dead peer even
// between pings. The keepalives are socket options of our side
// (keepaliveDialer), never startup parameters: a session-pooling PgBouncer
// refuses startup parameters it does not know (FATAL: unsupported startup
// parameter), and nobody would ever lead behind it.
func (e *Elector) connect(ctx context.Context, appName string) (*pgx.Conn, error) {
	// Parsed as the pool parses it, so that pool_* parameters (the store's
	// pool size) are taken out instead of sent to PostgreSQL as settings.
	pcfg, err := pgxpool.ParseConfig(e.cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL URL: %w", err)
	}
	cfg := pcfg.ConnConfig
	cfg.RuntimeParams["application_name"] = appName
	cfg.ConnectTimeout = cmp.Or(cfg.ConnectTimeout, 5*time.Second)
	cfg.DialFunc = keepaliveDialer(cfg.ConnectTimeout).DialContext
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// PostgreSQL's side too, as session settings (a bouncer passes SET
	// on; through one they apply to its link to PostgreSQL): a leader cut
	// off from the network, not killed, must lose its backend, and so the
	// lock, in seconds rather than after the OS default of two hours. Best
	// effort: our own side's options above already end our connection.
	if _, err := conn.Exec(ctx, `SELECT set_config('tcp_keepalives_idle', $1, false),
		set_config('tcp_keepalives_interval', $2, false), set_config('tcp_keepalives_count', $3, false),
		set_config('tcp_user_timeout', $4, false)`,
		seconds(keepaliveIdle), seconds(keepaliveInterval), strconv.Itoa(keepaliveCount),
		strconv.FormatInt(userTimeout.Milliseconds(), 10)); err != nil {
		if ctx.Err() != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
		e.log.Debug("leader election: PostgreSQL keeps its default keepalives on the lock connection", "err", err)
	}
	return conn, nil
}

// lockObjectID derives the second lock integer from the lock name and the
// schema, so deployments in different schemas of one database elect apart.
func lockObjectID(ctx context.Context, conn *pgx.Conn) (int32, error) {
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return 0, fmt.Errorf("current schema: %w", err)
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cleanupLock + "/" + schema))
	return int32(h.Sum32()), nil
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.75 + rand.Float64()/2))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
