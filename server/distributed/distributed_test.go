package distributed

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/storetest"
)

// The tests need a PostgreSQL and a Redis server. They never skip: a
// missing server fails them with what to start.
const (
	defaultTestPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultTestRedis    = "redis://127.0.0.1:6379/0"
)

func testPostgresURL() string {
	if u := os.Getenv("SEATD_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultTestPostgres
}

func testRedisURL() string {
	if u := os.Getenv("SEATD_TEST_REDIS_URL"); u != "" {
		return u
	}
	return defaultTestRedis
}

// servers are the connections the tests use to set up and inspect
// schemas and key prefixes (not the stores' own).
var servers struct {
	once sync.Once
	pg   *pgxpool.Pool
	rdb  *redis.Client
	err  error
}

func testServers(t *testing.T) (*pgxpool.Pool, *redis.Client) {
	t.Helper()
	servers.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pg, err := testPool(ctx, testPostgresURL())
		if err == nil {
			err = pg.Ping(ctx)
		}
		if err != nil {
			servers.err = fmt.Errorf("PostgreSQL is not reachable at %s: %w\n"+
				"Start PostgreSQL 15+ there (e.g. `docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15`) "+
				"or set SEATD_TEST_POSTGRES_URL", testPostgresURL(), err)
			return
		}
		opts, err := redis.ParseURL(testRedisURL())
		if err != nil {
			servers.err = fmt.Errorf("bad SEATD_TEST_REDIS_URL: %w", err)
			return
		}
		rdb := redis.NewClient(opts)
		if err := rdb.Ping(ctx).Err(); err != nil {
			servers.err = fmt.Errorf("redis is not reachable at %s: %w\n"+
				"Start Redis 7 there (e.g. `docker run -d -p 6379:6379 redis:7`) or set SEATD_TEST_REDIS_URL",
				testRedisURL(), err)
			return
		}
		servers.pg, servers.rdb = pg, rdb
	})
	if servers.err != nil {
		t.Fatal(servers.err)
	}
	return servers.pg, servers.rdb
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// location is one isolated data location: a PostgreSQL schema and a Redis
// key prefix.
type location struct {
	schema, prefix, pgURL string
	redisURL              string // the shared Redis unless set
}

// newLocation creates a fresh schema and key prefix, removed when t ends.
func newLocation(t *testing.T) location {
	t.Helper()
	pg, rdb := testServers(t)
	name := randomName()
	loc := location{schema: "seatd_t_" + name, prefix: "seatd_t_" + name + ":"}
	_, err := pg.Exec(context.Background(), "CREATE SCHEMA "+loc.schema)
	require.NoError(t, err, "create schema")
	t.Cleanup(func() {
		ctx := context.Background()
		if _, err := pg.Exec(ctx, "DROP SCHEMA "+loc.schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", loc.schema, err)
		}
		if err := deletePrefix(ctx, rdb, loc.prefix); err != nil {
			t.Errorf("delete Redis keys %s*: %v", loc.prefix, err)
		}
	})
	u, err := url.Parse(testPostgresURL())
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", loc.schema)
	u.RawQuery = q.Encode()
	loc.pgURL = u.String()
	return loc
}

// deletePrefix deletes every key under a prefix (SCAN + DEL), on every
// master of a cluster.
func deletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return deletePrefix(ctx, c, prefix)
		})
	}
	iter := rdb.Scan(ctx, 0, prefix+"*", 500).Iterator()
	pipe := rdb.Pipeline()
	for iter.Next(ctx) {
		pipe.Del(ctx, iter.Val()) // one key a command: keys of a cluster node differ in slot
		if pipe.Len() == 500 {
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if pipe.Len() > 0 {
		_, err := pipe.Exec(ctx)
		return err
	}
	return nil
}

var testLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// open opens a store on loc; the caller closes it.
func (loc location) open(t *testing.T, mut func(*Options)) *Store {
	t.Helper()
	opts := Options{
		PostgresURL:    loc.pgURL,
		RedisURL:       cmp.Or(loc.redisURL, testRedisURL()),
		RedisKeyPrefix: loc.prefix,
		PoolMaxConns:   6,
		ConnectTimeout: 5 * time.Second,
		Logger:         testLogger,
	}
	if mut != nil {
		mut(&opts)
	}
	s, err := Open(t.Context(), opts)
	require.NoError(t, err, "Open")
	return s
}

// openStore opens a store on a fresh location, closed when the test ends,
// and makes a tenant for it.
func openStore(t *testing.T, mut func(*Options)) (location, *Store, server.Tenant) {
	t.Helper()
	loc := newLocation(t)
	s := loc.open(t, mut)
	t.Cleanup(func() { _ = s.Close() })
	return loc, s, mkTenant(t, s)
}

func TestConformance(t *testing.T) {
	testServers(t)
	storetest.RunWith(t, func(t *testing.T) storetest.Opener {
		loc := newLocation(t)
		return func(t *testing.T) server.Store { return loc.openFaulty(t, nil) }
	}, storetest.Options{})
}

// db opens a pool on loc's schema, closed when the test ends: for
// inspecting and arranging the record around a store.
func (loc location) db(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := testPool(t.Context(), loc.pgURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// testPoolConns caps the pools the tests open for themselves (not the
// stores'): the shared PostgreSQL's 100 connections serve every package
// that go test runs at once, and pgxpool's default grows with the CPUs.
const testPoolConns = 4

// testPool is pgxpool.New with at most testPoolConns connections.
func testPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = testPoolConns
	return pgxpool.NewWithConfig(ctx, cfg)
}

// timeUS is a time as the live state keeps it: unix microseconds.
func timeUS(t time.Time) int64 { return t.UnixMicro() }

// waitRedisPast waits until the store's clock (Redis TIME, the judge of
// every deadline) is past t: a condition on the clock that decides, not a
// sleep that may be too short on a loaded machine.
func waitRedisPast(t *testing.T, s *Store, at time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		now, err := s.live.Now(t.Context())
		require.NoError(t, err)
		return now.After(at)
	}, 30*time.Second, time.Millisecond, "the store's clock passes %s", at)
}
