package embedded

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/bolttest"
	"github.com/seatd/seatd/server"
)

// endedLeasesThenDamage gives the license's ended leases pages of their
// own (300 acquired and released), closes the store, and writes random
// bytes over the root page of the ended leases' bucket: damage behind a
// sound header that Open does not read (it loads the active leases only),
// as the attack's random pages in the middle of the file were. Before the
// damage, check (if set) sees the closed, sound dir.
func endedLeasesThenDamage(t *testing.T, b *bundle, l server.License, check func()) {
	t.Helper()
	for i := range 300 {
		lease, hash := b.mustAcquire(t, l, "laptop")
		_, err := b.s.Release(t.Context(), lease.ID, hash)
		require.NoError(t, err, "release %d", i)
	}
	require.NoError(t, b.s.Close())
	if check != nil {
		check()
	}
	bolttest.DamageBucketRoot(t, filepath.Join(b.dir, dbFileName), string(bucketLeases), 13)
}

// TestDamageMetWhileServing: a data file whose pages are damaged behind a
// sound header opens (nothing at start reads them), but the first write or
// read that meets a bad page marks it damaged: that call and every later
// write answer UNAVAILABLE saying so (bbolt's panic is recovered, not a
// crash of the process nor an INTERNAL answer), even a write that would
// touch only sound pages; CheckReady reports it, and the damage shows in
// BackgroundStats. Active leases in memory still answer reads (issue 24,
// item 13).
func TestDamageMetWhileServing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		meet func(t *testing.T, b *bundle, l server.License) error
	}{
		{"by a write", func(t *testing.T, b *bundle, l server.License) error {
			// An acquisition looks its new id up among the ended leases.
			_, _, err := b.acquire(t, l, "desktop")
			return err
		}},
		{"by a read", func(t *testing.T, b *bundle, l server.License) error {
			_, _, err := b.s.ListLeases(t.Context(), b.tenant, l.ID, "", server.Page{})
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			l := b.license(t, func(l *server.License) { l.Seats = 10 })
			kept, _ := b.mustAcquire(t, l, "kept")
			endedLeasesThenDamage(t, b, l, nil)
			b.open(t)
			reason, err := b.s.CheckReady(t.Context())
			require.NoError(t, err, "nothing has read the damaged pages yet")
			require.Empty(t, reason)
			require.Zero(t, b.s.BackgroundStats().DataFileDamaged)

			requireDamagedRefusal(t, tt.meet(t, b, l))
			reason, err = b.s.CheckReady(t.Context())
			require.Equal(t, "the data file is damaged", reason)
			var d *DamagedError
			require.ErrorAs(t, err, &d)
			require.Equal(t, int64(1), b.s.BackgroundStats().DataFileDamaged)

			// Every later write is refused, whatever pages it would touch:
			// these two touch only the licenses' bucket.
			_, err = b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error { l.Name = "renamed"; return nil })
			requireDamagedRefusal(t, err)
			_, err = b.s.CreateLicense(t.Context(), server.License{
				ID: server.NewID(server.PrefixLicenseID), TenantID: b.tenant, Key: server.NewSecret(server.PrefixLicenseKey),
				Name: "another", Seats: 1, LeaseTTL: time.Minute, LeasingStrategy: server.PerAcquisition, Active: true,
				CreatedAt: b.clock.Now(), UpdatedAt: b.clock.Now(),
			})
			requireDamagedRefusal(t, err)
			// A read of the bad page answers UNAVAILABLE, not a panic.
			_, _, err = b.s.ListLeases(t.Context(), b.tenant, l.ID, server.LeaseReleased, server.Page{})
			requireDamagedRefusal(t, err)
			// The active lease, in memory, still reads.
			got, err := b.s.GetLease(t.Context(), b.tenant, kept.ID)
			require.NoError(t, err)
			require.Equal(t, kept.ID, got.ID)
		})
	}
}

func requireDamagedRefusal(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, server.EUNAVAILABLE, server.ErrorCode(err), "%v", err)
	var e *server.Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Message, "the data file is damaged")
	require.NotContains(t, e.Message, "/", "no path in what a client sees")
}

// TestWriteFailureMakesNotReady: a commit the data dir refuses (a full
// disk) makes the store not ready for the window unless a commit
// succeeds since; an idle store probes with an empty commit (issue 24,
// item 14: /readyz stayed ready on a full disk).
func TestWriteFailureMakesNotReady(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	reason, err := b.s.CheckReady(t.Context())
	require.NoError(t, err)
	require.Empty(t, reason)

	fail := func(on bool) { b.s.commit.failing.Store(on) }
	fail(true)
	_, _, err = b.acquire(t, l, "laptop")
	require.Error(t, err)
	reason, err = b.s.CheckReady(t.Context())
	require.Equal(t, "writes to the data dir fail", reason)
	require.ErrorIs(t, err, errInjected)

	// Still refused after the window: the idle store's probe fails too.
	b.clock.Advance(DefaultWriteFailureWindow)
	reason, err = b.s.CheckReady(t.Context())
	require.Equal(t, "writes to the data dir fail", reason)
	require.ErrorIs(t, err, errInjected)

	// The disk has room again: a probe (idle) or a write clears it.
	fail(false)
	reason, err = b.s.CheckReady(t.Context())
	require.NoError(t, err)
	require.Empty(t, reason)
	fail(true)
	_, _, err = b.acquire(t, l, "laptop")
	require.Error(t, err)
	fail(false)
	reason, _ = b.s.CheckReady(t.Context())
	require.NotEmpty(t, reason, "within the window, the failure stands until a write succeeds")
	b.mustAcquire(t, l, "laptop")
	reason, err = b.s.CheckReady(t.Context())
	require.NoError(t, err)
	require.Empty(t, reason)
}

// TestVerifyPagesStopsTheStart: with VerifyPages, damage the start would
// not otherwise read stops Open with a DamagedError naming the file.
func TestVerifyPagesStopsTheStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 10 })
	endedLeasesThenDamage(t, b, l, func() {
		s, err := Open(b.dir, Options{VerifyPages: true})
		require.NoError(t, err, "a sound file passes")
		require.NoError(t, s.Close())
	})
	s, err := Open(b.dir, Options{VerifyPages: true})
	if s != nil {
		_ = s.Close()
	}
	requireDamaged(t, err, filepath.Join(b.dir, dbFileName), "unreadable pages")
	s, err = Open(b.dir, Options{})
	require.NoError(t, err, "without the walk the damage is found later")
	require.NoError(t, s.Close())
}
