package live

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
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
			Req: licReq{scriptHeartbeat, l.licenseID, []any{leaseKey(l.id), tokenKey("h-" + l.id)}, nil}})
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
	const head, width = 4, 12

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

// TestHeartbeatRunRevivesOneLapsedLeaseOnOneSeat: one run of heartbeat.lua
// that carries the heartbeats of two lapsed leases of a one-seat license
// (both within the revival window, no lease live) revives the first only.
// The second's seat count must see the first's renewal, which the script
// holds back to write once at the end (flush before a revival's count):
// invariants 1 and 3.
func TestHeartbeatRunRevivesOneLapsedLeaseOnOneSeat(t *testing.T) {
	t.Parallel()
	rs, rdb := openLive(t)
	lic, ids := buildLapsed(t, rs, 1, 2)

	var args []any
	for _, id := range ids {
		args = append(args, leaseKey(id), tokenKey(server.HashSecret("t"+id)))
	}
	reply, err := scriptHeartbeat.Run(t.Context(), rdb, rs.keysOf(lic.ID), args...).Slice()
	require.NoError(t, err)
	require.Equal(t, "OK", reply[0])
	codes := reply[4:]
	require.Len(t, codes, 2)
	require.EqualValues(t, 0, codes[0], "the first lapsed lease revives: a seat is free")
	require.EqualValues(t, 3, codes[1], "the second finds the seat the first just took: expired")
	c, err := rs.Count(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Equal(t, 1, c.InUse, "one seat, one live lease")
}

// buildLapsed builds the live state of a license of seats seats (a TTL
// and a revival window of an hour) holding n leases that lapsed a minute
// ago, earliest first; lease id's token is server.HashSecret("t"+id).
func buildLapsed(t *testing.T, rs *Redis, seats, n int) (server.License, []string) {
	t.Helper()
	lic := server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: "tn", Seats: seats,
		LeaseTTL: time.Hour, RevivalWindow: time.Hour, LeasingStrategy: server.PerFingerprint, Active: true}
	st, err := rs.State(t.Context(), lic.ID)
	require.NoError(t, err)
	b := Build{Epoch: 1, Conf: Conf{License: lic, Version: 1}, Snapshot: st.Now, Incarnation: st.Incarnation}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = server.NewID(server.PrefixLeaseID)
		dl := st.Now.Add(-time.Minute + time.Duration(i)*time.Millisecond)
		b.Leases = append(b.Leases, Lease{ID: ids[i], TokenHash: server.HashSecret("t" + ids[i]),
			Acquired: dl.Add(-2 * time.Hour), Heartbeat: dl.Add(-lic.LeaseTTL), Deadline: dl,
			DedupeKey: server.DedupeKey(lic.LeasingStrategy, ids[i], "", "")})
	}
	built, _, err := rs.Rebuild(t.Context(), lic.ID, b)
	require.NoError(t, err)
	require.True(t, built)
	c, err := rs.Count(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Zero(t, c.InUse, "every lease lapsed")
	return lic, ids
}

// TestAcquireRunDisplacesEveryLapsedLeaseItsGrantsNeed: one run of
// acquire.lua that grants two seats of a two-seat license holding two
// lapsed leases displaces both (each grant counts the leases the grants
// before it added): the record, told of the displaced leases, then never
// holds more active leases than seats, and neither lapsed lease can
// revive.
func TestAcquireRunDisplacesEveryLapsedLeaseItsGrantsNeed(t *testing.T) {
	t.Parallel()
	rs, rdb := openLive(t)
	lic, lapsed := buildLapsed(t, rs, 2, 2)
	var args []any
	granted := []string{server.NewID(server.PrefixLeaseID), server.NewID(server.PrefixLeaseID)}
	for _, id := range granted {
		args = append(args, leaseKey(id), tokenKey(server.HashSecret("t"+id)), "", 0)
		for _, st := range strategies {
			args = append(args, string(st), server.DedupeKey(st, id, "", ""))
		}
	}
	keys := rs.keysOf(lic.ID)
	res, err := scriptAcquire.Run(t.Context(), rdb, keys, args...).Slice()
	require.NoError(t, err)
	const head, width = 4, 12
	var displaced []string
	for i := range granted {
		r := res[head+i*width : head+(i+1)*width]
		require.Equal(t, "NEW", r[0], "acquisition %d: %v", i, r)
		for _, k := range r[10].([]any) {
			displaced = append(displaced, leaseIDOf(k.(string)))
		}
	}
	require.ElementsMatch(t, lapsed, slices.Compact(slices.Sorted(slices.Values(displaced))),
		"both lapsed leases displaced: their seats went to the run's grants")
	n, err := rdb.HLen(t.Context(), keys[1]).Result()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "the live state holds the two new leases only")
	for _, id := range lapsed {
		b, err := rs.Heartbeat(t.Context(), lic.ID, id, server.HashSecret("t"+id))
		require.NoError(t, err)
		require.Equal(t, StatusExpired, b.Status, "a displaced lease never revives")
	}
}
