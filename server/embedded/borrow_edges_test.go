package embedded

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestCrashAddsNoSlackToABorrowedLease: a borrowed lease has no
// heartbeats to lose, so the start after a crash must not give it the
// write-behind slack (the distributed rebuild does not: rebuild.lua
// "elseif lost and not r[BOR]"). Its deadline is the one its holder was
// told and certified; past it the seat is free (invariants 1, 3).
func TestCrashAddsNoSlackToABorrowedLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) {
		l.LeaseTTL = 10 * time.Second
		l.MaxBorrowDuration = time.Hour
	})
	res, err := b.s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: "laptop", LeaseID: server.NewID(server.PrefixLeaseID),
		TokenHash: server.HashSecret(server.NewSecret(server.PrefixLeaseToken)), BorrowFor: 10 * time.Minute,
	})
	require.NoError(t, err)
	told := res.Lease.ExpiresAt

	crash(b.s)
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	got, err := s.GetLease(t.Context(), b.tenant, res.Lease.ID)
	require.NoError(t, err)
	require.Equal(t, told, got.ExpiresAt, "a borrowed lease keeps the deadline it was borrowed until after a crash")

	b.clock.Advance(10*time.Minute + time.Millisecond) // past the borrowed deadline
	_, err = s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: "desktop", LeaseID: server.NewID(server.PrefixLeaseID),
		TokenHash: server.HashSecret(server.NewSecret(server.PrefixLeaseToken)),
	})
	require.NoError(t, err, "the borrowed seat is free at the deadline its holder was told")
}
