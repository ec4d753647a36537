// Package live is the distributed store's live state in Redis: the leases
// that count now, per license (settings, leases, deadlines, dedupe and
// idempotency keys, leases being expired, recent ends), and the expiry
// hint that tells cleanup which licenses to look at. Every change is a Lua
// script (lua/) that works atomically on the keys of one license; the
// clock is Redis TIME. It knows nothing of PostgreSQL: the coordinating
// store (package distributed) decides what to do with each answer
// (ARCHITECTURE.md, "Distributed mode").
package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/cache"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// ErrNoState is the answer of a script that found the license's live
// state missing: never built, or lost by Redis. The caller rebuilds it
// from the record and asks again.
var ErrNoState = errors.New("the license's live state is missing")

// Redis is the live state of one store (one key prefix).
type Redis struct {
	rdb  redis.UniversalClient
	keys Keyspace
	log  *slog.Logger

	batches *groupcommit.Batcher[licReq, licRes]
	// licKeys caches the Redis keys of a license; licJSON decoded license
	// settings by their JSON text (which changes with every change).
	licKeys *cache.Bounded[string, []string]
	licJSON *cache.Bounded[string, server.License]

	// chunk is how many leases a call of rebuild.lua writes
	// (DefaultRebuildChunk; SetRebuildChunk); beforeChunk, if set, runs
	// before each call with the index of its first lease (tests).
	chunk       int
	beforeChunk func(licenseID string, start int)
}

// New serves the live state under prefix on rdb; Stop ends its batches.
// The caller owns rdb.
func New(rdb redis.UniversalClient, prefix string, log *slog.Logger) *Redis {
	rs := &Redis{
		rdb:     rdb,
		keys:    Keyspace{Prefix: prefix},
		log:     log,
		licKeys: cache.New[string, []string](100_000),
		licJSON: cache.New[string, server.License](10_000),
		chunk:   DefaultRebuildChunk,
	}
	rs.batches = groupcommit.New(redisSlots, redisMin, maxPipeline, rs.runLicenseScripts)
	return rs
}

// SetRebuildChunk sets how many leases a call of rebuild.lua writes (at
// least 1), and a hook run before each call with the index of its first
// lease (nil: none). For tests and benchmarks; call it before any use.
func (rs *Redis) SetRebuildChunk(n int, before func(licenseID string, start int)) {
	rs.chunk, rs.beforeChunk = max(n, 1), before
}

// Stop makes later hot-path calls fail and waits for those made already.
func (rs *Redis) Stop() { rs.batches.Stop() }

// Now is the store's clock: Redis TIME, the clock every script uses.
func (rs *Redis) Now(ctx context.Context) (time.Time, error) {
	t, err := rs.rdb.Time(ctx).Result()
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC().Truncate(time.Microsecond), nil
}

// keysOf returns the keys of a license (Keyspace.License), cached.
// Callers must not change the slice.
func (rs *Redis) keysOf(licenseID string) []string {
	if k, ok := rs.licKeys.Get(licenseID); ok {
		return k
	}
	k := rs.keys.License(licenseID)
	rs.licKeys.Put(licenseID, k)
	return k
}

// licenseOf decodes the license settings the live state holds (the json
// field of the conf hash), through a cache keyed by the JSON text itself:
// the text changes with every change of the license, so a hit is never
// stale.
func (rs *Redis) licenseOf(text string, l *server.License) error {
	if cached, ok := rs.licJSON.Get(text); ok {
		*l = cached
		l.Metadata = cloneMap(l.Metadata)
		return nil
	}
	if err := json.Unmarshal([]byte(text), l); err != nil {
		return fmt.Errorf("license settings in Redis: %w", err)
	}
	rs.licJSON.Put(text, *l)
	l.Metadata = cloneMap(l.Metadata)
	return nil
}

// Script replies are arrays of strings and integers; times are unix
// microseconds, the precision PostgreSQL keeps.

// replyString reads a string value of a script reply.
func replyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// replyInt reads an integer value of a script reply.
func replyInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// usTime converts unix microseconds to a time.
func usTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

// timeUS converts a time to unix microseconds.
func timeUS(t time.Time) int64 { return t.UnixMicro() }

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
