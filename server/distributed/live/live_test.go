package live

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/internal/groupcommit"
)

// The tests need a Redis server; they never skip (a missing server fails
// them with what to start).
func testRedisURL() string {
	if u := os.Getenv("SEATD_TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// openLive serves a live state under a fresh key prefix, deleted when the
// test ends.
func openLive(t *testing.T) (*Redis, *redis.Client) {
	t.Helper()
	opts, err := redis.ParseURL(testRedisURL())
	require.NoError(t, err)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	require.NoError(t, rdb.Ping(t.Context()).Err(),
		"Redis is not reachable at %s: start Redis 7 there (make services) or set SEATD_TEST_REDIS_URL", testRedisURL())
	prefix := "seatd_l_" + strings.ToLower(server.NewID("")) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			_ = rdb.Del(ctx, keys...).Err()
		}
	})
	rs := New(rdb, prefix, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	t.Cleanup(rs.Stop)
	return rs, rdb
}

// build builds a license's live state holding leases that last an hour,
// as a rebuild from the record does.
func build(t *testing.T, rs *Redis, seats int, leaseIDs ...string) server.License {
	t.Helper()
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: seats,
		LeaseTTL: time.Hour, LeasingStrategy: server.PerAcquisition, Active: true}
	st, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	require.EqualValues(t, -1, st.Epoch, "no live state yet")
	b := Build{Epoch: 1, Conf: Conf{License: lic, Version: 1}, Snapshot: st.Now, Incarnation: st.Incarnation}
	for _, id := range leaseIDs {
		b.Leases = append(b.Leases, Lease{ID: id, TokenHash: "h-" + id, Acquired: st.Now, Heartbeat: st.Now,
			Deadline: st.Now.Add(time.Hour), DedupeKey: id})
	}
	built, first, err := rs.Rebuild(t.Context(), lic.ID, b)
	require.NoError(t, err)
	require.True(t, built)
	if len(leaseIDs) > 0 {
		require.Equal(t, timeUS(st.Now.Add(time.Hour)), first, "the earliest deadline")
	}
	return lic
}

// TestHotScriptsAfterScriptFlush: a pipeline whose scripts Redis no longer
// knows (restart, SCRIPT FLUSH) falls back to EVAL for each run.
func TestHotScriptsAfterScriptFlush(t *testing.T) {
	rs, rdb := openLive(t)
	type held struct{ licenseID, id string }
	var leases []held
	for range 3 {
		ids := []string{server.NewID(server.PrefixLeaseID), server.NewID(server.PrefixLeaseID), server.NewID(server.PrefixLeaseID)}
		lic := build(t, rs, 5, ids...)
		for _, id := range ids {
			leases = append(leases, held{lic.ID, id})
		}
	}
	require.NoError(t, rdb.ScriptFlush(t.Context()).Err())
	// One batch with runs for three licenses: a pipeline.
	var calls []*groupcommit.Call[licReq, licRes]
	for _, l := range leases {
		calls = append(calls, &groupcommit.Call[licReq, licRes]{Ctx: t.Context(),
			Req: licReq{scriptHeartbeat, l.licenseID, []any{leaseKey(l.id), tokenKey("h-" + l.id)}}})
	}
	rs.runLicenseScripts(calls)
	for _, c := range calls {
		require.NoError(t, c.Err)
		require.EqualValues(t, 0, replyInt(c.Res.mine[0]), "renewed")
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(leases))
	require.NoError(t, rdb.ScriptFlush(t.Context()).Err())
	for _, l := range leases {
		wg.Go(func() {
			b, err := rs.Heartbeat(t.Context(), l.licenseID, l.id, "h-"+l.id)
			if err == nil && b.Status != StatusRenewed {
				err = fmt.Errorf("heartbeat answered %s", b.Status)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestAcquireScriptIsIdempotentAndAtomicPerCall: a replayed acquire.lua
// (a client library retrying after a timeout) answers the grant it made
// instead of granting twice or refusing; one acquisition of a run that
// fails leaves the others' answers and writes intact.
func TestAcquireScriptIsIdempotentAndAtomicPerCall(t *testing.T) {
	t.Parallel()
	rs, rdb := openLive(t)
	lic := build(t, rs, 5, server.NewID(server.PrefixLeaseID))
	keys := rs.keys.License(lic.ID)
	args := func(leaseID, idem string) []any {
		a := []any{leaseID, "tokenhash", idem, 0}
		for _, st := range strategies {
			a = append(a, string(st), server.DedupeKey(st, leaseID, "", ""))
		}
		return a
	}
	run := func(a ...any) []any {
		res, err := scriptAcquire.Run(t.Context(), rdb, keys, a...).Slice()
		require.NoError(t, err)
		return res
	}
	const head, width = 4, 11

	id := server.NewID(server.PrefixLeaseID)
	first := run(args(id, "")...)
	replay := run(args(id, "")...)
	require.Equal(t, "NEW", first[head], "%v", first)
	require.Equal(t, first[head:head+6], replay[head:head+6], "a replay answers the same grant")
	c, err := rs.Count(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, 2, c.InUse, "one seat for the call and its replay")

	// An idempotency-key hash of the wrong type makes the second
	// acquisition of the run fail (WRONGTYPE).
	require.NoError(t, rdb.Del(t.Context(), keys[4]).Err())
	require.NoError(t, rdb.Set(t.Context(), keys[4], "not a hash", 0).Err())
	ok, bad := server.NewID(server.PrefixLeaseID), server.NewID(server.PrefixLeaseID)
	res := run(append(args(ok, ""), args(bad, "idem")...)...)
	require.Equal(t, "NEW", res[head], "the first acquisition of the run is granted")
	require.Equal(t, "ERR", res[head+width], "the second fails alone")
	c, err = rs.Count(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, 3, c.InUse, "the failed acquisition took no seat, the granted one did")
}
