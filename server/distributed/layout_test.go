package distributed

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// layoutOne runs the scripts of an older seatd (testdata/layout1: the
// live state's layout 1) on the keys it used.
type layoutOne struct {
	t    *testing.T
	rdb  redis.UniversalClient
	keys []string // conf ... borrowed, incarnation
}

func oldScript(t *testing.T, name string) *redis.Script {
	t.Helper()
	common, err := os.ReadFile("testdata/layout1/common.lua")
	require.NoError(t, err)
	body, err := os.ReadFile("testdata/layout1/" + name + ".lua")
	require.NoError(t, err)
	return redis.NewScript(string(common) + "\n" + string(body))
}

func (o layoutOne) run(name string, args ...any) ([]any, error) {
	return oldScript(o.t, name).Run(context.Background(), o.rdb, o.keys, args...).Slice()
}

// TestOlderSeatdIsFencedOff: an older seatd (layout 1) serves a license
// from its own keys; this seatd's first rebuild of the license fences
// those keys off, so that from then on every script of the older seatd
// fails on it (WRONGTYPE: it answers UNAVAILABLE, and clients retry
// elsewhere) instead of serving the license beside this layout. A release
// the older seatd completes during the rebuild (end.lua needs no
// settings) stays a release.
func TestOlderSeatdIsFencedOff(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 3, time.Hour)
	leases, toks := fill(t, s, lic, 2)
	old := layoutOne{t: t, rdb: s.rdb, keys: s.live.Keys().RebuildKeys(lic.ID)[15:]}

	// The older seatd's live state of the license, built as its rebuild did.
	loc.loseRedis(t)
	st, err := old.run("state", "inc-old")
	require.NoError(t, err)
	now, inc := st[3], st[4]
	args := []any{loc.epochOf(t, lic.ID), 1, 3, 0, time.Hour.Microseconds(), 0, 1, 0, string(server.PerFingerprint), tn.ID, "{}", 0, 0, now, 0, inc}
	for i, l := range leases {
		args = append(args, l.ID, server.HashSecret(toks[i]), l.AcquiredAt.UnixMicro(), l.LastHeartbeatAt.UnixMicro(),
			l.ExpiresAt.UnixMicro(), l.DedupeKey, "", 0, 0)
	}
	_, err = old.run("rebuild", args...)
	require.NoError(t, err)
	beat, err := old.run("heartbeat", leases[1].ID, server.HashSecret(toks[1]))
	require.NoError(t, err)
	require.EqualValues(t, 0, beat[4], "the older seatd renews the lease from its keys")

	chunked(s, 1, func(int) {
		// The older seatd completes a release it had begun: recorded,
		// then dropped from its keys.
		loc.endInRecordOnly(t, leases[0].ID, "released")
		assert.NoError(t, oldScript(t, "end").Run(context.Background(), old.rdb, old.keys, leases[0].ID).Err())
	})
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID) // this seatd's first use: the rebuild
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = s.Heartbeat(t.Context(), leases[0].ID, server.HashSecret(toks[0]))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "the lease the older seatd released came back")
	_, err = s.Heartbeat(t.Context(), leases[1].ID, server.HashSecret(toks[1]))
	require.NoError(t, err)

	for _, call := range [][]any{
		{"heartbeat", leases[1].ID, server.HashSecret(toks[1])},
		{"check", leases[1].ID, server.HashSecret(toks[1])},
		{"acquire", server.NewID(server.PrefixLeaseID), "tok", "", 0, "fingerprint", "fp:x", "user", "fp:x", "hostname", "fp:x", "acquisition", ""},
		{"state", "inc-again"},
		append([]any{"rebuild"}, args...),
	} {
		_, err := old.run(call[0].(string), call[1:]...)
		require.ErrorContains(t, err, "WRONGTYPE", "the older seatd's %s.lua on a license this seatd serves", call[0])
	}
	for _, k := range old.keys[1:] {
		if k == old.keys[6] {
			continue // ended: the older seatd's end.lua may still add to it
		}
		require.Zero(t, s.rdb.Exists(t.Context(), k).Val(), "key %s of the older layout left behind", k)
	}
}
