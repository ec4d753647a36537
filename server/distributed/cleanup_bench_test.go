package distributed

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/cleanup"
	"github.com/seatd/seatd/server/distributed/live"
)

// One cleanup pass in distributed mode (server/cleanup.Cleaner.Pass over
// this store) beside the seed's algorithm (seeds/001, "Zombie Session
// Cleaner", with the pipelined TTL checks of its "Performance
// Optimization"), on the same machine in the same run. bench/cleanup.sh
// (make bench/cleanup) runs them and prints the comparison. PostgreSQL and
// Redis unreachable fail them (SEATD_TEST_POSTGRES_URL, SEATD_TEST_REDIS_URL
// as for the tests).
//
// Data: benchLicenses licenses of benchPerLicense active leases each,
// written in bulk (COPY) into PostgreSQL; the live state in Redis is built
// from that record by the store's own rebuild (live.go, rebuild.lua), so
// it is exactly what the scripts work on. Expired leases are spread evenly
// (every license holds some). Every iteration starts from the same state:
// between iterations, untimed, the expired leases are put back as they were
// (record reset, live state rebuilt from it), the tables vacuumed as
// autovacuum keeps them, and the store's reconciliation from PostgreSQL
// made due again: a scheduled pass (every 60 s) always runs it (every 10 s
// at most), so every timed pass includes it.

const (
	benchLicenses   = 1_000
	benchPerLicense = 100
	benchLeases     = benchLicenses * benchPerLicense
	// benchTTL is long so that the live leases stay live for the whole
	// run (their deadlines are 58 to 60 minutes ahead); the cost of a pass
	// does not depend on it.
	benchTTL = time.Hour
)

// benchShape is one benchmarked state.
type benchShape struct {
	name    string
	expired int // leases past their deadline, among benchLeases
	// staleHints puts every license's expiry hint in the past although no
	// lease is due: the state after all leases were renewed since the last
	// pass, the worst case of a pass with nothing to expire. (Without it
	// the hints are where a previous pass leaves them: at the earliest
	// deadline.)
	staleHints bool
}

var benchShapes = []benchShape{
	{name: "live=100000/expired=0", expired: 0},
	{name: "live=100000/expired=0/hints=stale", expired: 0, staleHints: true},
	{name: "live=100000/expired=10000", expired: 10_000},
}

// benchLogger shows errors only: resets rebuild live states, which the
// store reports as warnings.
var benchLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

// --- data ---------------------------------------------------------------

type benchLicense struct{ id, key string }

type benchLease struct {
	id, licenseID, tokenHash, fingerprint, dedupe string
	acquired, hb, deadline                        time.Time
	expired                                       bool
}

type benchData struct {
	tenantID string
	licenses []benchLicense
	leases   []benchLease
	expired  []int // indexes into leases
}

// makeBenchData builds benchLeases leases over benchLicenses licenses, of
// which `expired` (spread evenly) are past their deadline at now: live
// leases heartbeated within the last 2 minutes, expired ones 1 to 6 minutes
// past their deadline.
func makeBenchData(now time.Time, expired int) benchData {
	rng := rand.New(rand.NewPCG(1, uint64(expired)))
	d := benchData{tenantID: server.NewID("ten_")}
	every := 0
	if expired > 0 {
		every = benchLeases / expired
	}
	us := func(x time.Time) time.Time { return x.UTC().Truncate(time.Microsecond) }
	jitter := func(max time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(max))) }
	for i := range benchLicenses {
		lic := benchLicense{id: server.NewID(server.PrefixLicenseID), key: server.NewID(server.PrefixLicenseKey)}
		d.licenses = append(d.licenses, lic)
		for j := range benchPerLicense {
			k := i*benchPerLicense + j
			fp := fmt.Sprintf("fp-%d-%d", i, j)
			l := benchLease{
				id: server.NewID(server.PrefixLeaseID), licenseID: lic.id,
				tokenHash:   server.HashSecret(server.NewSecret(server.PrefixLeaseToken)),
				fingerprint: fp, dedupe: server.DedupeKey(server.PerFingerprint, fp, "", ""),
			}
			if every > 0 && k%every == 0 && len(d.expired) < expired {
				l.expired = true
				l.deadline = us(now.Add(-time.Minute - jitter(5*time.Minute)))
				l.hb = l.deadline.Add(-benchTTL)
				d.expired = append(d.expired, len(d.leases))
			} else {
				l.hb = us(now.Add(-jitter(2 * time.Minute)))
				l.deadline = l.hb.Add(benchTTL)
			}
			l.acquired = l.hb.Add(-jitter(8 * time.Hour))
			d.leases = append(d.leases, l)
		}
	}
	return d
}

// writeRecord writes the tenant, licenses and active sessions with COPY.
func (d benchData) writeRecord(ctx context.Context, pg *pgxpool.Pool) error {
	now := time.Now().UTC().Truncate(time.Microsecond)
	if _, err := pg.Exec(ctx, `INSERT INTO tenants (id, name, created_at) VALUES ($1, 'bench', $2)`, d.tenantID, now); err != nil {
		return fmt.Errorf("insert tenant: %w", err)
	}
	_, err := pg.CopyFrom(ctx, pgx.Identifier{"licenses"},
		[]string{"id", "tenant_id", "key", "name", "seats", "overdraft", "lease_ttl_us", "revival_window_us",
			"leasing_strategy", "active", "created_at", "updated_at"},
		pgx.CopyFromSlice(len(d.licenses), func(i int) ([]any, error) {
			l := d.licenses[i]
			return []any{l.id, d.tenantID, l.key, "bench " + strconv.Itoa(i), int32(benchPerLicense * 2), int32(0),
				benchTTL.Microseconds(), int64(0), string(server.PerFingerprint), true, now, now}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy licenses: %w", err)
	}
	_, err = pg.CopyFrom(ctx, pgx.Identifier{"sessions"},
		[]string{"id", "license_id", "tenant_id", "token_hash", "token_seq", "fingerprint", "dedupe_key",
			"state", "acquired_at", "last_heartbeat_at", "expires_at"},
		pgx.CopyFromSlice(len(d.leases), func(i int) ([]any, error) {
			l := d.leases[i]
			return []any{l.id, l.licenseID, d.tenantID, l.tokenHash, int64(0), l.fingerprint, l.dedupe,
				"active", l.acquired, l.hb, l.deadline}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy sessions: %w", err)
	}
	return vacuum(ctx, pg)
}

// vacuum brings the tables to the state autovacuum keeps them in (visibility
// map set, statistics current), so that every iteration starts from it.
func vacuum(ctx context.Context, pg *pgxpool.Pool) error {
	for _, t := range []string{"licenses", "sessions", "usage_events", "cleanup_events", "audit_log"} {
		if _, err := pg.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	return nil
}

// resetRecord makes the expired leases active again with their original
// values and removes what a pass wrote about them.
func (d benchData) resetRecord(ctx context.Context, pg *pgxpool.Pool) error {
	if len(d.expired) == 0 {
		return nil
	}
	ids := make([]string, len(d.expired))
	hbs := make([]time.Time, len(d.expired))
	dls := make([]time.Time, len(d.expired))
	for i, k := range d.expired {
		ids[i], hbs[i], dls[i] = d.leases[k].id, d.leases[k].hb, d.leases[k].deadline
	}
	err := pgx.BeginFunc(ctx, pg, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM usage_events WHERE lease_id = ANY($1)`,
			`DELETE FROM cleanup_events WHERE lease_id = ANY($1)`,
			`DELETE FROM audit_log WHERE resource = 'lease' AND resource_id = ANY($1)`,
		} {
			if _, err := tx.Exec(ctx, q, ids); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE sessions s SET state = 'active', ended_at = NULL, expired_at = NULL,
				last_heartbeat_at = v.hb, expires_at = v.dl
			FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS v(id, hb, dl) WHERE s.id = v.id`,
			ids, hbs, dls)
		return err
	})
	if err != nil {
		return err
	}
	return vacuum(ctx, pg)
}

// --- servers and locations ------------------------------------------------

// benchLocation is a fresh PostgreSQL schema and Redis key prefix, removed
// when the benchmark ends. PostgreSQL or Redis unreachable fails it.
type benchLocation struct {
	schema, prefix, pgURL string
	pg                    *pgxpool.Pool // search_path = schema
	rdb                   *redis.Client
}

func newBenchLocation(b *testing.B, tag string) *benchLocation {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgxpool.New(ctx, testPostgresURL())
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		b.Fatalf("PostgreSQL is not reachable at %s: %v\nStart PostgreSQL 15+ there (make services) or set SEATD_TEST_POSTGRES_URL",
			testPostgresURL(), err)
	}
	ropts, err := redis.ParseURL(testRedisURL())
	if err != nil {
		b.Fatalf("bad SEATD_TEST_REDIS_URL %q: %v", testRedisURL(), err)
	}
	rdb := redis.NewClient(ropts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		admin.Close()
		b.Fatalf("Redis is not reachable at %s: %v\nStart Redis 7 there (make services) or set SEATD_TEST_REDIS_URL",
			testRedisURL(), err)
	}
	name := "seatd_b_" + tag + "_" + randomName()
	loc := &benchLocation{schema: name, prefix: name + ":", rdb: rdb}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+loc.schema); err != nil {
		b.Fatalf("create schema %s: %v", loc.schema, err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if loc.pg != nil {
			loc.pg.Close()
		}
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+loc.schema+" CASCADE"); err != nil {
			b.Errorf("drop schema %s: %v", loc.schema, err)
		}
		admin.Close()
		if err := deletePrefix(ctx, rdb, loc.prefix); err != nil {
			b.Errorf("delete Redis keys %s*: %v", loc.prefix, err)
		}
		_ = rdb.Close()
	})
	u, err := url.Parse(testPostgresURL())
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", loc.schema)
	u.RawQuery = q.Encode()
	loc.pgURL = u.String()
	return loc
}

// openStore opens the store on the location (applying the migrations) with
// the daemon's defaults, and a pool of the benchmark's own.
func (loc *benchLocation) openStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(context.Background(), Options{
		PostgresURL:    loc.pgURL,
		RedisURL:       testRedisURL(),
		RedisKeyPrefix: loc.prefix,
		ConnectTimeout: 5 * time.Second,
		Logger:         benchLogger,
	})
	if err != nil {
		b.Fatalf("open distributed store: %v", err)
	}
	b.Cleanup(func() { _ = s.Close() })
	if loc.pg, err = pgxpool.New(context.Background(), loc.pgURL); err != nil {
		b.Fatal(err)
	}
	return s
}

// --- seatd ------------------------------------------------------------------

type seatdEnv struct {
	s    *Store
	loc  *benchLocation
	data benchData
}

func newSeatdEnv(b *testing.B, expired int) *seatdEnv {
	b.Helper()
	ctx := context.Background()
	loc := newBenchLocation(b, "seatd")
	s := loc.openStore(b)
	now, err := s.live.Now(ctx)
	if err != nil {
		b.Fatal(err)
	}
	e := &seatdEnv{s: s, loc: loc, data: makeBenchData(now, expired)}
	start := time.Now()
	if err := e.data.writeRecord(ctx, loc.pg); err != nil {
		b.Fatal(err)
	}
	// The live state of every license, built by the store from the record.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, l := range e.data.licenses {
		g.Go(func() error { return s.ensureLive(gctx, l.id) })
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("build live state: %v", err)
	}
	b.Logf("seeded %d leases (%d expired) over %d licenses in %v", len(e.data.leases), expired,
		len(e.data.licenses), time.Since(start).Round(time.Millisecond))
	return e
}

// reset brings the store back to its seeded state: expired leases active
// again in the record and in the live state, and the reconciliation due
// (a scheduled pass runs every 60 s, the reconciliation every 10 s: every
// scheduled pass reconciles).
func (e *seatdEnv) reset(b *testing.B, staleHints bool) {
	b.Helper()
	ctx := context.Background()
	if len(e.data.expired) > 0 {
		if err := e.data.resetRecord(ctx, e.loc.pg); err != nil {
			b.Fatalf("reset record: %v", err)
		}
		owners := map[string]bool{}
		for _, k := range e.data.expired {
			owners[e.data.leases[k].licenseID] = true
		}
		rows, _ := e.loc.pg.Query(ctx, `SELECT id, live_epoch FROM licenses WHERE id = ANY($1)`, keysOf(owners))
		epochs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
			ID    string
			Epoch int64
		}])
		if err != nil {
			b.Fatal(err)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for _, l := range epochs {
			g.Go(func() error { return e.s.rebuildFrom(gctx, l.ID, l.Epoch) })
		}
		if err := g.Wait(); err != nil {
			b.Fatalf("rebuild live state: %v", err)
		}
	}
	if staleHints {
		now, err := e.s.live.Now(ctx)
		if err != nil {
			b.Fatal(err)
		}
		pipe := e.loc.rdb.Pipeline()
		for _, l := range e.data.licenses {
			live.Script("hint").Eval(ctx, pipe, e.s.live.Keys().ExpiryOf(l.id), l.id, timeUS(now.Add(-time.Second)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	e.s.reconcileMu.Lock()
	e.s.lastReconcile = time.Time{}
	e.s.reconcileMu.Unlock()
}

// check verifies what a pass did, from the record and the live state.
func (e *seatdEnv) check(b *testing.B, run cleanup.Run) {
	b.Helper()
	want := int64(len(e.data.expired))
	if run.Result != cleanup.ResultOK || run.Errors != 0 || run.Expired != want || run.Scanned != want {
		b.Fatalf("pass: %+v, want result ok, %d scanned and expired, no errors", run, want)
	}
	ctx := context.Background()
	var active, expired, cleanups, usage int64
	err := e.loc.pg.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM sessions WHERE state = 'active'),
		(SELECT count(*) FROM sessions WHERE state = 'expired'),
		(SELECT count(*) FROM cleanup_events), (SELECT count(*) FROM usage_events)`).Scan(&active, &expired, &cleanups, &usage)
	if err != nil {
		b.Fatal(err)
	}
	if active != benchLeases-want || expired != want || cleanups != want || usage != want {
		b.Fatalf("record after pass: %d active, %d expired, %d cleanup events, %d usage events; want %d, %d, %d, %d",
			active, expired, cleanups, usage, benchLeases-want, want, want, want)
	}
}

// liveCount counts the leases in the live state (every license's
// deadlines zset) and in the expiring hashes.
func (e *seatdEnv) liveCount(b *testing.B) (live, expiring int64) {
	b.Helper()
	ctx := context.Background()
	pipe := e.loc.rdb.Pipeline()
	var zc, hc []*redis.IntCmd
	for _, l := range e.data.licenses {
		k := e.s.live.Keys().License(l.id)
		zc = append(zc, pipe.ZCard(ctx, k[2]))
		hc = append(hc, pipe.HLen(ctx, k[5]))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range zc {
		live += zc[i].Val()
		expiring += hc[i].Val()
	}
	return live, expiring
}

func BenchmarkCleanupPass(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) {
			e := newSeatdEnv(b, shape.expired)
			c := cleanup.NewCleaner(e.s, cleanup.Config{}, benchLogger, nil)
			ctx := context.Background()
			e.reset(b, shape.staleHints)
			var worst, passes time.Duration
			for b.Loop() {
				start := time.Now()
				run := c.Pass(ctx, cleanup.TriggerManual)
				took := time.Since(start)
				b.StopTimer()
				worst = max(worst, took)
				passes += run.Duration
				e.check(b, run)
				live, expiring := e.liveCount(b)
				if live != int64(benchLeases-len(e.data.expired)) || expiring != 0 {
					b.Fatalf("live state after pass: %d live, %d expiring; want %d, 0", live, expiring, benchLeases-len(e.data.expired))
				}
				e.reset(b, shape.staleHints)
				b.StartTimer()
			}
			b.ReportMetric(float64(benchLeases), "leases/op")
			b.ReportMetric(float64(len(e.data.expired)), "expired/op")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
			// The pass proper (Run.Duration: finding and expiring); the rest
			// of ns/op is what Pass does after it (the active seats gauge).
			b.ReportMetric(float64(passes.Microseconds())/1000/float64(b.N), "pass-ms")
		})
	}
}

// --- the seed's algorithm ---------------------------------------------------

// seedEnv is the seed's layout: PostgreSQL tables as seatd's (the seed's
// Session model), and in Redis a set license:<key>:sessions of session ids
// per license and a key session:<id> per live session whose TTL is its
// deadline (a zombie's key has expired: TTL answers -2).
type seedEnv struct {
	loc  *benchLocation
	data benchData
	// records: per zombie also the seed's usage event, cleanup event and
	// audit entry (the records seatd's pass writes), one INSERT each.
	records bool
}

func newSeedEnv(b *testing.B, expired int, records bool) *seedEnv {
	b.Helper()
	ctx := context.Background()
	loc := newBenchLocation(b, "seed")
	s := loc.openStore(b) // for the schema only
	now, err := s.live.Now(ctx)
	if err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	e := &seedEnv{loc: loc, data: makeBenchData(now, expired), records: records}
	if err := e.data.writeRecord(ctx, loc.pg); err != nil {
		b.Fatal(err)
	}
	keyOf := map[string]string{}
	for _, l := range e.data.licenses {
		keyOf[l.id] = l.key
	}
	pipe := loc.rdb.Pipeline()
	for i, l := range e.data.leases {
		pipe.SAdd(ctx, e.setKey(keyOf[l.licenseID]), l.id)
		if !l.expired {
			pipe.Set(ctx, e.sessionKey(l.id), `{"license":"`+keyOf[l.licenseID]+`","fingerprint":"`+l.fingerprint+`"}`,
				time.Until(l.deadline).Round(time.Second))
		}
		if i%5000 == 4999 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	return e
}

func (e *seedEnv) setKey(licenseKey string) string {
	return e.loc.prefix + "license:" + licenseKey + ":sessions"
}
func (e *seedEnv) sessionKey(id string) string { return e.loc.prefix + "session:" + id }

// reset puts the zombies back: in their license's set, active in the record.
func (e *seedEnv) reset(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	if len(e.data.expired) == 0 {
		return
	}
	keyOf := map[string]string{}
	for _, l := range e.data.licenses {
		keyOf[l.id] = l.key
	}
	pipe := e.loc.rdb.Pipeline()
	ids := make([]string, 0, len(e.data.expired))
	for _, k := range e.data.expired {
		l := e.data.leases[k]
		pipe.SAdd(ctx, e.setKey(keyOf[l.licenseID]), l.id)
		ids = append(ids, l.id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM usage_events WHERE lease_id = ANY($1)`,
		`DELETE FROM cleanup_events WHERE lease_id = ANY($1)`,
		`DELETE FROM audit_log WHERE resource = 'session' AND resource_id = ANY($1)`,
		`UPDATE sessions SET state = 'active', ended_at = NULL, expired_at = NULL WHERE id = ANY($1)`,
	} {
		if _, err := e.loc.pg.Exec(ctx, q, ids); err != nil {
			b.Fatal(err)
		}
	}
	if err := vacuum(ctx, e.loc.pg); err != nil {
		b.Fatal(err)
	}
}

// seedPass is ZombieSessionCleaner.cleanup_all_licenses of seeds/001: for
// every active license, SMEMBERS its sessions set, the TTL of every session
// key (pipelined, as its "Performance Optimization" section suggests), and
// for every zombie (TTL -2) SREM and an UPDATE of its session row, each
// statement its own transaction as with Django's autocommit. It is kept
// favourable to the seed: no SCARD per license and per zombie, one UPDATE
// instead of a SELECT and a save, and the usage event, cleanup event and
// audit entry (all three written by seatd's pass) only with e.records.
func (e *seedEnv) seedPass(ctx context.Context) (checked, zombies int, err error) {
	rows, _ := e.loc.pg.Query(ctx, `SELECT key FROM licenses WHERE active AND deleted_at IS NULL`)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, 0, err
	}
	for _, key := range keys {
		setKey := e.setKey(key)
		ids, err := e.loc.rdb.SMembers(ctx, setKey).Result()
		if err != nil {
			return 0, 0, err
		}
		if len(ids) == 0 {
			continue
		}
		checked += len(ids)
		pipe := e.loc.rdb.Pipeline()
		ttls := make([]*redis.DurationCmd, len(ids))
		for i, id := range ids {
			ttls[i] = pipe.TTL(ctx, e.sessionKey(id))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, err
		}
		var found []string
		for i, c := range ttls {
			switch c.Val() {
			case -2: // the key is gone: a zombie
				found = append(found, ids[i])
			case -1: // no TTL: the seed gives it one
				if err := e.loc.rdb.Expire(ctx, e.sessionKey(ids[i]), 360*time.Second).Err(); err != nil {
					return 0, 0, err
				}
			}
		}
		for _, id := range found {
			if err := e.loc.rdb.SRem(ctx, setKey, id).Err(); err != nil {
				return 0, 0, err
			}
			if !e.records {
				if _, err := e.loc.pg.Exec(ctx, `UPDATE sessions SET state = 'expired', expired_at = now(), ended_at = now()
					WHERE id = $1`, id); err != nil {
					return 0, 0, err
				}
				zombies++
				continue
			}
			var (
				licenseID, tenantID string
				acquired, ended     time.Time
			)
			err := e.loc.pg.QueryRow(ctx, `UPDATE sessions SET state = 'expired', expired_at = now(), ended_at = now()
				WHERE id = $1 RETURNING license_id, tenant_id, acquired_at, ended_at`, id).Scan(&licenseID, &tenantID, &acquired, &ended)
			if err != nil {
				return 0, 0, err
			}
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO usage_events (lease_id, license_id, tenant_id, end_state, started_at, ended_at, duration_us)
					VALUES ($1, $2, $3, 'expired', $4, $5, $6)`, []any{id, licenseID, tenantID, acquired, ended, ended.Sub(acquired).Microseconds()}},
				{`INSERT INTO cleanup_events (lease_id, license_id, tenant_id, cleanup_type, last_heartbeat_at, expires_at, cleaned_at)
					VALUES ($1, $2, $3, 'zombie', $4, $4, $4)`, []any{id, licenseID, tenantID, ended}},
				{`INSERT INTO audit_log (id, tenant_id, actor, action, resource, resource_id, details, at)
					VALUES ($1, $2, 'system', 'cleanup', 'session', $3, '{"cleanup_type": "zombie"}', $4)`,
					[]any{server.NewID("aud_"), tenantID, id, ended}},
			} {
				if _, err := e.loc.pg.Exec(ctx, q.sql, q.args...); err != nil {
					return 0, 0, err
				}
			}
			zombies++
		}
	}
	return checked, zombies, nil
}

func BenchmarkSeedBaselinePass(b *testing.B) {
	type seedShape struct {
		name    string
		expired int
		records bool
	}
	// The seed has no hints (it scans everything anyway): no stale shape.
	for _, shape := range []seedShape{
		{"live=100000/expired=0", 0, false},
		{"live=100000/expired=10000", 10_000, false},
		{"live=100000/expired=10000/records=seed", 10_000, true},
	} {
		b.Run(shape.name, func(b *testing.B) {
			if shape.records && os.Getenv("SEATD_BENCH_SEED_RECORDS") == "" {
				b.Skip("about a minute per iteration: set SEATD_BENCH_SEED_RECORDS=1 (bench/cleanup.sh does)")
			}
			e := newSeedEnv(b, shape.expired, shape.records)
			ctx := context.Background()
			var worst time.Duration
			for b.Loop() {
				start := time.Now()
				checked, zombies, err := e.seedPass(ctx)
				took := time.Since(start)
				b.StopTimer()
				worst = max(worst, took)
				if err != nil {
					b.Fatalf("seed pass: %v", err)
				}
				if checked != benchLeases || zombies != len(e.data.expired) {
					b.Fatalf("seed pass checked %d sessions, found %d zombies; want %d, %d", checked, zombies, benchLeases, len(e.data.expired))
				}
				e.reset(b)
				b.StartTimer()
			}
			b.ReportMetric(float64(benchLeases), "leases/op")
			b.ReportMetric(float64(len(e.data.expired)), "expired/op")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
		})
	}
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
