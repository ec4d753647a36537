package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server/distributed/live"
)

// redisProbe reads what the harness's keys cost Redis, and takes a
// license's live state away.
type redisProbe struct {
	rdb    *redis.Client
	prefix string
}

func newRedisProbe(url, prefix string) (*redisProbe, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	return &redisProbe{rdb: redis.NewClient(opt), prefix: prefix}, nil
}

func (r *redisProbe) close() { _ = r.rdb.Close() }

// usedMemory is INFO memory's used_memory: the whole server's, other
// users' keys included.
func (r *redisProbe) usedMemory(ctx context.Context) (int64, error) {
	info, err := r.rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("redis info memory: %w", err)
	}
	v, err := strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redis used_memory: %w", err)
	}
	return v, nil
}

// keys lists the keys matching pattern.
func (r *redisProbe) keys(ctx context.Context, pattern string) ([]string, error) {
	var keys []string
	iter := r.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	return keys, iter.Err()
}

// keysMemory sums MEMORY USAGE (every element counted: SAMPLES 0) of the
// harness's keys (all under its prefix). Exact, and blind to other users
// of the same Redis; a 500k-element key takes Redis some tens of ms.
func (r *redisProbe) keysMemory(ctx context.Context) (total int64, n int, err error) {
	keys, err := r.keys(ctx, r.prefix+"*")
	if err != nil {
		return 0, 0, err
	}
	for _, k := range keys {
		v, err := r.rdb.MemoryUsage(ctx, k, 0).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, fmt.Errorf("memory usage %s: %w", k, err)
		}
		total += v
	}
	return total, len(keys), nil
}

// keysMemoryByKind is keysMemory per kind of key: the name after the
// license's hash tag ("v2:leases", "v2:deadlines" ...), "hint" for the
// expiry hint's pieces.
func (r *redisProbe) keysMemoryByKind(ctx context.Context) (map[string]int64, error) {
	keys, err := r.keys(ctx, r.prefix+"*")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, k := range keys {
		v, err := r.rdb.MemoryUsage(ctx, k, 0).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("memory usage %s: %w", k, err)
		}
		kind := "other"
		if i := strings.Index(k, "}:"); i >= 0 {
			kind = k[i+2:]
			if strings.HasPrefix(k[len(r.prefix):], "{expiry") {
				kind = "hint"
			}
		}
		out[kind] += v
	}
	return out, nil
}

// slowlog records every Redis command slower than 1 ms from start until
// longest reads it back: Redis's own time for a call, during which it
// served nobody else. The server's settings are put back.
type slowlog struct {
	r              *redisProbe
	slower, maxLen string
}

func (r *redisProbe) startSlowlog(ctx context.Context) (*slowlog, error) {
	cfg, err := r.rdb.ConfigGet(ctx, "slowlog-*").Result()
	if err != nil {
		return nil, fmt.Errorf("redis config get slowlog-*: %w", err)
	}
	s := &slowlog{r: r, slower: cfg["slowlog-log-slower-than"], maxLen: cfg["slowlog-max-len"]}
	if err := r.rdb.ConfigSet(ctx, "slowlog-log-slower-than", "1000").Err(); err != nil {
		return nil, err
	}
	if err := r.rdb.ConfigSet(ctx, "slowlog-max-len", "100000").Err(); err != nil {
		return nil, err
	}
	return s, r.rdb.Do(ctx, "slowlog", "reset").Err()
}

// slowCommands is what the slow log held: every command over 1 ms.
type slowCommands struct {
	n, over10ms int
	longest     []slowCommand // the slowest first, at most 5
}

type slowCommand struct {
	took time.Duration
	name string // the command, or the script's name (rebuild first/last)
}

// read is the slow log since start; the server's settings are put back.
func (s *slowlog) read(ctx context.Context) (slowCommands, error) {
	defer func() {
		_ = s.r.rdb.ConfigSet(ctx, "slowlog-log-slower-than", s.slower).Err()
		_ = s.r.rdb.ConfigSet(ctx, "slowlog-max-len", s.maxLen).Err()
	}()
	logs, err := s.r.rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		return slowCommands{}, err
	}
	var out slowCommands
	cmds := make([]slowCommand, 0, len(logs))
	for _, l := range logs {
		if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "slowlog") {
			continue // the harness's own SLOWLOG RESET, freeing what the log held
		}
		out.n++
		if l.Duration > 10*time.Millisecond {
			out.over10ms++
		}
		cmds = append(cmds, slowCommand{took: l.Duration, name: commandName(l.Args)})
	}
	slices.SortFunc(cmds, func(a, b slowCommand) int { return cmp.Compare(b.took, a.took) })
	out.longest = cmds[:min(5, len(cmds))]
	return out, nil
}

// scriptNames are seatd's scripts by their SHA1.
var scriptNames = func() map[string]string {
	m := map[string]string{}
	for _, name := range live.ScriptNames() {
		m[live.Script(name).Hash()] = name
	}
	return m
}()

// commandName names a logged command: an EVALSHA of seatd's by its
// script, and a rebuild call by its flags (first, last, a chunk between).
func commandName(args []string) string {
	if len(args) == 0 {
		return "?"
	}
	cmd := strings.ToLower(args[0])
	if cmd != "evalsha" || len(args) < 3 {
		return cmd
	}
	name, ok := scriptNames[args[1]]
	if !ok {
		return cmd
	}
	if name == "rebuild" {
		// ARGV[1] (the flags) follows the keys; the log may have cut the
		// arguments short (32 at most).
		if nkeys, err := strconv.Atoi(args[2]); err == nil && len(args) > 3+nkeys {
			name += map[string]string{"": " (a chunk)", "F": " (first call)", "L": " (last call)", "FL": " (the only call)"}[args[3+nkeys]]
		}
	}
	return name
}

func (c slowCommands) String() string {
	if c.n == 0 {
		return "none over 1 ms"
	}
	parts := make([]string, len(c.longest))
	for i, l := range c.longest {
		parts[i] = fmt.Sprintf("%s %s", dur(l.took), l.name)
	}
	return fmt.Sprintf("%s; %d commands over 1 ms, %d over 10 ms; the longest: %s",
		dur(c.longest[0].took), c.n, c.over10ms, strings.Join(parts, ", "))
}

func (c slowCommands) max() time.Duration {
	if len(c.longest) == 0 {
		return 0
	}
	return c.longest[0].took
}

// dropLicense unlinks every key of a license (they share the hash tag
// {license id}): its live state is lost, as after a Redis restart.
func (r *redisProbe) dropLicense(ctx context.Context, licenseID string) (int, error) {
	keys, err := r.keys(ctx, r.prefix+"{"+licenseID+"}:*")
	if err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, fmt.Errorf("no Redis keys match %s{%s}:*", r.prefix, licenseID)
	}
	return len(keys), r.rdb.Unlink(ctx, keys...).Err()
}

// pinger times a PING every millisecond until stopped: how long Redis
// kept other clients waiting.
type pinger struct {
	mu   sync.Mutex
	at   []time.Time
	took []time.Duration
	stop chan struct{}
	done chan struct{}
}

func (r *redisProbe) startPinger(ctx context.Context) *pinger {
	p := &pinger{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			t := time.Now()
			_ = r.rdb.Ping(ctx).Err()
			d := time.Since(t)
			p.mu.Lock()
			p.at, p.took = append(p.at, t), append(p.took, d)
			p.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	return p
}

func (p *pinger) finish() { close(p.stop); <-p.done }

// maxDuring is the longest PING that overlapped [from, to], and how many did.
func (p *pinger) maxDuring(from, to time.Time) (longest time.Duration, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.at {
		if t.Add(p.took[i]).Before(from) || t.After(to) {
			continue
		}
		n++
		longest = max(longest, p.took[i])
	}
	return longest, n
}

// pgSizes is what the record's tables take (bytes).
type pgSizes struct {
	sessionsTotal, sessionsTable, sessionsIndexes int64
	sessionsRows                                  int64
	schema                                        int64 // every table of the schema, with indexes and TOAST
}

// readPG reads the sizes through url (whose search_path is seatd's schema).
func readPG(ctx context.Context, url string) (pgSizes, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return pgSizes{}, fmt.Errorf("postgres: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var s pgSizes
	err = conn.QueryRow(ctx, `
		SELECT pg_total_relation_size('sessions'), pg_table_size('sessions'), pg_indexes_size('sessions'),
		       (SELECT count(*) FROM sessions),
		       (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		         WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'm'))`).
		Scan(&s.sessionsTotal, &s.sessionsTable, &s.sessionsIndexes, &s.sessionsRows, &s.schema)
	if err != nil {
		return pgSizes{}, fmt.Errorf("postgres sizes: %w", err)
	}
	return s, nil
}
