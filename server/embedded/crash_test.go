package embedded

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestCrashKeepsAcknowledgedDeadlines: heartbeats are written behind, so a
// killed process loses the ones of its last flush interval; on the next
// start the active leases get that interval back, and a client that
// heartbeat on time keeps its lease (invariant 9).
func TestCrashKeepsAcknowledgedDeadlines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = 10 * time.Second })
	lease, tok := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(4 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err)
	require.Equal(t, lease.ExpiresAt.Add(4*time.Second), hb.ExpiresAt)

	crash(b.s) // the heartbeat never reached the disk
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	b.clock.Advance(8 * time.Second) // past the deadline on disk, before the one told
	_, err = s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err, "a lease heartbeated on time survives the crash")
}

// TestCleanShutdownAddsNothing: after a clean Close every heartbeat is on
// disk; deadlines come back exactly as they were told.
func TestCleanShutdownAddsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = 10 * time.Second })
	lease, tok := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(4 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err)
	require.NoError(t, b.s.Close())
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.Equal(t, hb.ExpiresAt, got.ExpiresAt)
}

// TestCrashKeepsDeadlinesAcrossAHeartbeatInterval: the heartbeat on disk
// before the one a crash lost may be a whole heartbeat interval (TTL/6)
// older, longer than the flush interval: the lease gets that much back,
// and keeps the deadline it was told to within one flush interval. (It got
// the flush interval + 1 s: 2 s of a 4 s gap lost.)
func TestCrashKeepsDeadlinesAcrossAHeartbeatInterval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = time.Minute }) // heartbeat interval 10 s
	lease, tok := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(4 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err)

	crash(b.s)
	const flush = time.Second
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: flush})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.False(t, got.ExpiresAt.Before(hb.ExpiresAt.Add(-flush)),
		"deadline %v after the crash; told %v", got.ExpiresAt, hb.ExpiresAt)
}

// TestCrashSlackSurvivesACleanRestart: the time a start after a crash
// gives the leases back is stored (the leases are marked for the flusher),
// so that a clean shutdown and start after it keep it: a deadline the
// client was told does not fall back to the one on disk before the crash
// (invariant 9).
func TestCrashSlackSurvivesACleanRestart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = 10 * time.Second })
	lease, tok := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(4 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err)

	crash(b.s) // the heartbeat never reached the disk
	const flush = time.Second
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: flush})
	require.NoError(t, err)
	after, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.True(t, after.ExpiresAt.After(lease.ExpiresAt), "the start after the crash gave time back")
	require.False(t, after.ExpiresAt.After(hb.ExpiresAt), "no more than the client was told")
	require.NoError(t, s.Close()) // clean: the next start adds nothing

	s, err = Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: flush})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.Equal(t, after.ExpiresAt, got.ExpiresAt, "the deadline given back after the crash falls back after a clean restart")
	b.clock.Set(lease.ExpiresAt.Add(time.Second)) // past the deadline on disk before the crash, before the one told
	_, err = s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err, "a lease heartbeated on time survives the crash and the restart after it")
}

// TestCrashGivesALingerNoSlack: a lingering lease's deadline (its release
// + the linger) is written with the release, not behind: a start after a
// crash gives it nothing, and it still lingers.
func TestCrashGivesALingerNoSlack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = 10 * time.Second })
	_, err := b.s.SetPolicy(t.Context(), b.tenant, l.ID, &server.Policy{Linger: []server.Linger{{Duration: time.Minute}}})
	require.NoError(t, err)
	lease, tok := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(4 * time.Second)
	rel, err := b.s.Release(t.Context(), lease.ID, tok)
	require.NoError(t, err)
	require.True(t, rel.Lingering)

	crash(b.s)
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.True(t, got.Lingering)
	require.Equal(t, rel.ExpiresAt, got.ExpiresAt, "no write-behind slack for a linger")
	require.Equal(t, rel.LastHeartbeatAt, got.LastHeartbeatAt)
}
