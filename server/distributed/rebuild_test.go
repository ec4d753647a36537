package distributed

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/distributed/live"
)

// A rebuild writes a license's live state a chunk of leases per script
// call (live.Redis.Rebuild, rebuild.lua), so that a large license never
// holds Redis for long. These tests run rebuilds of a few leases in
// chunks of two or three, and act between the chunks.

// chunked sets the rebuild chunk of s and runs before(start) before
// every chunk but the first (start: the index of its first lease).
func chunked(s *Store, n int, before func(start int)) {
	s.live.SetRebuildChunk(n, func(_ string, start int) {
		if start > 0 && before != nil {
			before(start)
		}
	})
}

// fill acquires n seats of lic on s, in order, and returns them with
// their tokens.
func fill(t *testing.T, s *Store, lic server.License, n int) ([]server.Lease, []string) {
	t.Helper()
	var ls []server.Lease
	var toks []string
	for i := range n {
		r, tok := acq(t, s, lic.Key, fmt.Sprintf("fp-%d", i))
		ls, toks = append(ls, r.Lease), append(toks, tok)
	}
	return ls, toks
}

// acquireScript runs acquire.lua on a license's keys for a new lease, as
// an acquisition of any instance would, and returns its first value: the
// status shared by the run, or 'OK'.
func acquireScript(t *testing.T, s *Store, licenseID string) string {
	args := []any{live.LeaseKey(server.NewID(server.PrefixLeaseID)), "tok", "", 0}
	for _, st := range []server.LeasingStrategy{server.PerFingerprint, server.PerUser, server.PerHostname, server.PerAcquisition} {
		args = append(args, string(st), server.DedupeKey(st, "partial-"+server.NewID(""), "", ""))
	}
	res, err := live.Script("acquire").Run(context.Background(), s.rdb, s.live.Keys().License(licenseID), args...).Slice()
	if !assert.NoError(t, err) {
		return ""
	}
	return fmt.Sprint(res[0])
}

// TestChunkedRebuildCountsNoPartialLeaseSet: after a Redis loss, a full
// license of 11 leases is rebuilt in chunks of 3. Between chunks no
// acquisition is judged (acquire.lua finds no state and answers NOCONF,
// so the caller waits for the rebuild), an acquisition that comes in the
// middle gets SEATS_EXHAUSTED once the state is back, and every lease
// heartbeats with its token afterwards (invariant 1 throughout).
func TestChunkedRebuildCountsNoPartialLeaseSet(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	const n = 11
	lic := mkLicense(t, s, tn.ID, n, time.Hour)
	leases, toks := fill(t, s, lic, n)
	epoch := loc.epochOf(t, lic.ID)

	// The other instance's look at the state (state.lua): it sees the
	// rebuild under way, then polls it.
	var looks atomic.Int64
	other.rdb.AddHook(&scriptHook{sha: live.Script("state").Hash(), after: func() { looks.Add(1) }})
	var calls atomic.Int64
	late := make(chan error, 1)
	chunked(s, 3, func(start int) {
		calls.Add(1)
		assert.Equal(t, "NOCONF", acquireScript(t, s, lic.ID), "an acquisition judged against a partial state (before the chunk at %d)", start)
		st, err := s.live.State(context.Background(), lic.ID)
		assert.NoError(t, err)
		assert.Equal(t, epoch+1, st.Rebuilding, "the rebuild under way is visible")
		switch start {
		case 3:
			go func() { _, _, err := tryAcq(context.Background(), other, lic.Key, "late"); late <- err }()
		case 6: // go on once the other instance waits for this rebuild
			deadline := time.Now().Add(10 * time.Second)
			for looks.Load() < 2 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			assert.GreaterOrEqual(t, looks.Load(), int64(2), "the other instance looked at the rebuild under way")
		}
	})
	loc.loseRedis(t)
	inUse, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID) // rebuilds
	require.NoError(t, err)
	require.Equal(t, n, inUse)
	require.EqualValues(t, 3, calls.Load(), "11 leases in chunks of 3: the chunks at 3, 6 and 9 came after the first")
	requireCode(t, <-late, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the acquisition that came during the rebuild")
	require.Equal(t, epoch+1, loc.epochOf(t, lic.ID), "one snapshot: the other instance waited for the rebuild under way")
	for i, l := range leases {
		_, err := other.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i]))
		require.NoError(t, err, "lease %d after the rebuild", i)
	}
	st, err := s.live.State(t.Context(), lic.ID)
	require.NoError(t, err)
	require.EqualValues(t, -1, st.Rebuilding, "no rebuild under way once it switched in")
}

// TestLeaseEndedDuringAChunkedRebuildStaysEnded: a release passed its
// check just before a forced rebuild took the license's settings away; it
// is recorded and its lease removed (end.lua) after the rebuild staged
// that lease. The switch must leave the lease out: its client was told it
// ended (an observed end is final).
func TestLeaseEndedDuringAChunkedRebuildStaysEnded(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 6, time.Hour)
	leases, toks := fill(t, s, lic, 6)
	victim := leases[0] // staged by the first chunk

	checked, proceed := make(chan struct{}), make(chan struct{})
	var hookOnce sync.Once
	other.rdb.AddHook(&scriptHook{sha: live.Script("check").Hash(), after: func() {
		hookOnce.Do(func() { close(checked); <-proceed })
	}})
	released := make(chan error, 1)
	go func() {
		_, err := other.Release(context.Background(), victim.ID, server.HashSecret(toks[0]))
		released <- err
	}()
	<-checked

	staged, resume := make(chan struct{}), make(chan struct{})
	var chunkOnce sync.Once
	chunked(s, 2, func(int) { chunkOnce.Do(func() { close(staged); <-resume }) })
	rebuilt := make(chan error, 1)
	epoch := loc.epochOf(t, lic.ID)
	go func() { rebuilt <- s.rebuildFrom(context.Background(), lic.ID, epoch) }()
	<-staged
	close(proceed)
	require.NoError(t, <-released, "the release, recorded and dropped while the rebuild was under way")
	close(resume)
	require.NoError(t, <-rebuilt)

	_, err := s.Heartbeat(t.Context(), victim.ID, server.HashSecret(toks[0]))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseReleased, "the released lease came back with the rebuild")
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	for i, l := range leases[1:] {
		_, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i+1]))
		require.NoError(t, err)
	}
}

// TestForcedChunkedRebuildKeepsAcknowledgedDeadlines: a forced rebuild
// (Redis intact) keeps the deadline a heartbeat acknowledged after the
// last flush, for leases staged in every chunk, and gives no slack; a
// heartbeat that comes while the rebuild is under way waits for it, so
// that the deadline it is told is the one the new state holds.
func TestForcedChunkedRebuildKeepsAcknowledgedDeadlines(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	other := loc.open(t, func(o *Options) { o.HeartbeatFlushInterval = time.Hour })
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 5, time.Minute)
	leases, toks := fill(t, s, lic, 5)
	waitRedisPast(t, s, leases[4].AcquiredAt)
	told := map[string]time.Time{}
	for i, l := range leases {
		b, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i]))
		require.NoError(t, err)
		told[l.ID] = b.ExpiresAt
	}
	beatRan := make(chan struct{})
	var beatOnce sync.Once
	other.rdb.AddHook(&scriptHook{sha: live.Script("heartbeat").Hash(), after: func() { beatOnce.Do(func() { close(beatRan) }) }})
	late := make(chan server.Lease, 1)
	var once sync.Once
	chunked(s, 2, func(int) {
		once.Do(func() {
			// leases[0] is staged; its heartbeat reaches Redis now, and must
			// not be answered with a deadline the switch would undo.
			go func() {
				b, err := other.Heartbeat(context.Background(), leases[0].ID, server.HashSecret(toks[0]))
				assert.NoError(t, err)
				late <- b
			}()
			select {
			case <-beatRan:
			case <-time.After(10 * time.Second):
				assert.Fail(t, "the heartbeat never reached Redis")
			}
		})
	})
	require.NoError(t, s.rebuildFrom(t.Context(), lic.ID, loc.epochOf(t, lic.ID)))
	b := <-late
	told[leases[0].ID] = b.ExpiresAt
	vals, _, err := s.peek(t.Context(), lic.ID)
	require.NoError(t, err)
	require.Len(t, vals, 5)
	for id, at := range told {
		require.True(t, vals[id].Deadline.Equal(at), "lease %s: deadline %s after the rebuild, %s acknowledged", id, vals[id].Deadline, at)
	}
}

// TestDeadRebuildIsTakenOver: the instance rebuilding a license stops
// between two chunks (it died, or hangs). Another instance waits only as
// long as the rebuild shows no progress for rebuildStale, then rebuilds
// itself at a newer epoch; the first one, if it wakes up, finds itself
// superseded and writes nothing.
func TestDeadRebuildIsTakenOver(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	other.rebuildStale = 300 * time.Millisecond
	lic := mkLicense(t, s, tn.ID, 7, time.Hour)
	leases, toks := fill(t, s, lic, 7)
	epoch := loc.epochOf(t, lic.ID)

	hung, wake := make(chan struct{}), make(chan struct{})
	var once sync.Once
	chunked(s, 2, func(int) { once.Do(func() { close(hung); <-wake }) })
	loc.loseRedis(t)
	first := make(chan error, 1)
	go func() { _, err := s.SeatsInUse(context.Background(), tn.ID, lic.ID); first <- err }()
	<-hung

	n, err := other.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 7, n, "the other instance rebuilt the license")
	require.Equal(t, epoch+2, loc.epochOf(t, lic.ID), "it took over at a newer epoch")
	close(wake)
	require.NoError(t, <-first, "the woken rebuild, superseded, waits for the state that is there")
	n, err = s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	for i, l := range leases {
		_, err := s.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[i]))
		require.NoError(t, err)
	}
	_, _, err = tryAcq(t.Context(), s, lic.Key, "one more")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
}

// TestDeleteDuringAChunkedRebuild: a license deleted while its rebuild
// is under way stays deleted: the rebuild switches nothing in, and the
// staging keys are gone.
func TestDeleteDuringAChunkedRebuild(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 5, time.Hour)
	leases, toks := fill(t, s, lic, 5)

	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	chunked(s, 2, func(int) { once.Do(func() { close(paused); <-resume }) })
	loc.loseRedis(t)
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- s.ensureLive(context.Background(), lic.ID) }()
	<-paused
	revoked, err := other.DeleteLicense(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 5, revoked)
	close(resume)
	requireCode(t, <-rebuilt, server.ENOTFOUND, server.ReasonLicenseNotFound)

	_, rdb := testServers(t)
	for _, k := range s.live.Keys().RebuildKeys(lic.ID)[9:15] {
		require.Zero(t, rdb.Exists(t.Context(), k).Val(), "rebuild key %s left behind", k)
	}
	_, err = s.Heartbeat(t.Context(), leases[3].ID, server.HashSecret(toks[3]))
	requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
	_, _, err = tryAcq(t.Context(), s, lic.Key, "after the delete")
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
}

// TestRebuildDropsTheKeysOfTheFormerLayout: a license whose live state
// is still in the layout of an earlier seatd (text ids and token hashes,
// under other key names) has no state in this one: its first use
// rebuilds it from the record, and the old keys are dropped.
func TestRebuildDropsTheKeysOfTheFormerLayout(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 2, time.Hour)
	l, tok := acq(t, s, lic.Key, "a")
	_, rdb := testServers(t)
	keys := s.live.Keys().RebuildKeys(lic.ID)
	old := keys[15:]
	for _, k := range old {
		require.NoError(t, rdb.HSet(t.Context(), k, "x", "y").Err())
	}
	require.NoError(t, deletePrefix(t.Context(), rdb, keys[0][:len(keys[0])-len("conf")]), "the layout-2 state lost")
	_, err := s.Heartbeat(t.Context(), l.Lease.ID, server.HashSecret(tok))
	require.NoError(t, err, "rebuilt from the record")
	for _, k := range old {
		require.Zero(t, rdb.Exists(t.Context(), k).Val(), "key %s of the former layout left behind", k)
	}
}
