// Package record is the distributed store's system of record in
// PostgreSQL: tenants, API keys, licenses, sessions (leases), usage and
// cleanup events, the audit log, and the schema's migrations. It knows
// nothing of Redis; the coordinating store (package distributed) decides
// when each statement runs (ARCHITECTURE.md, "Distributed mode").
package record

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/connect"
	"github.com/seatd/seatd/server/distributed/internal/failure"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// Options configure Open. Zero values take the defaults.
type Options struct {
	// URL is the database, e.g.
	// postgres://seatd@db:5432/seatd?sslmode=require. A search_path
	// parameter selects the schema.
	URL string
	// MaxConns and MinConns size the pool (defaults: max(16, 4 ×
	// GOMAXPROCS), unless the URL sets pool_max_conns, and 0).
	MaxConns, MinConns int32
	// ConnectTimeout bounds how long Open retries an unreachable server.
	ConnectTimeout time.Duration
	// SkipMigrations leaves the schema alone (see Migrate).
	SkipMigrations bool
	Logger         *slog.Logger
	// PrepareConn, when set, vets every connection the pool hands out:
	// the tests' fault hook (an error fails the call as an unreachable
	// server would).
	PrepareConn ConnCheck
}

// ConnCheck vets a connection before the pool hands it out (pgxpool's
// PrepareConn): false or an error refuses it.
type ConnCheck = func(context.Context, *pgx.Conn) (bool, error)

const defaultMaxConns = 16

// Postgres is the record. Its methods that serve server.Store directly
// (tenants, keys, history) answer *server.Error values; the others return
// PostgreSQL's errors for the coordinating store to judge (ErrNotFound,
// SurelyNotWritten, IsUniqueViolation).
type Postgres struct {
	pool *pgxpool.Pool
	log  *slog.Logger

	// Group commit (commit.go).
	inserts  *groupcommit.Batcher[newSession, bool]
	releases *groupcommit.Batcher[releaseReq, bool]
}

// ErrNotFound is returned when the row asked for does not exist.
var ErrNotFound = pgx.ErrNoRows

// Open connects (retrying for up to ConnectTimeout) and applies pending
// migrations unless told not to. Errors name the server's address.
func Open(ctx context.Context, opts Options) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("bad PostgreSQL URL: %w", err) // pgconn masks passwords
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(opts.URL, "pool_max_conns"):
		cfg.MaxConns = int32(max(defaultMaxConns, 4*runtime.GOMAXPROCS(0)))
	}
	if opts.MinConns > 0 {
		cfg.MinConns = opts.MinConns
		cfg.MaxConns = max(cfg.MaxConns, cfg.MinConns) // a default maximum never refuses a minimum
	}
	if opts.PrepareConn != nil {
		cfg.PrepareConn = opts.PrepareConn
	}
	addr := net.JoinHostPort(cfg.ConnConfig.Host, fmt.Sprint(cfg.ConnConfig.Port))
	log := cmp.Or(opts.Logger, slog.Default())
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL at %s: %w", addr, err)
	}
	if err := connect.Retry(ctx, opts.ConnectTimeout, pool.Ping); err != nil {
		pool.Close()
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s (gave up after %v): %w", addr, opts.ConnectTimeout, err)
	}
	if !opts.SkipMigrations {
		db := stdlib.OpenDBFromPool(pool)
		_, err := Migrate(ctx, db, log)
		_ = db.Close()
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("migrate PostgreSQL at %s: %w", addr, err)
		}
	}
	pg := &Postgres{pool: pool, log: log}
	pg.inserts = groupcommit.New(pgSlots, pgMin, pgMaxBatch, pg.runInserts)
	pg.releases = groupcommit.New(pgSlots, pgMin, pgMaxBatch, pg.runReleases)
	return pg, nil
}

// StopBatches makes later group-committed calls fail and waits for those
// made already: the first step of closing the store.
func (pg *Postgres) StopBatches() {
	pg.inserts.Stop()
	pg.releases.Stop()
}

// Close closes the pool, the last step of closing the store.
func (pg *Postgres) Close() { pg.pool.Close() }

// fail turns a failure into the error clients see (failure.Public).
func (pg *Postgres) fail(op string, err error) error { return failure.Public(pg.log, op, err) }

// ActiveLeases counts sessions not yet ended (a partial index covers it).
func (pg *Postgres) ActiveLeases(ctx context.Context) (int64, error) {
	var n int64
	if err := pg.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE state = 'active'`).Scan(&n); err != nil {
		return 0, server.Unavailable(err)
	}
	return n, nil
}

// usTime converts unix microseconds to a time.
func usTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

// timeUS converts a time to unix microseconds.
func timeUS(t time.Time) int64 { return t.UnixMicro() }

// Ping checks that PostgreSQL answers on a pooled connection.
func (pg *Postgres) Ping(ctx context.Context) error { return pg.pool.Ping(ctx) }
