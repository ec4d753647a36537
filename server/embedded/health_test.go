package embedded

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// damageLeasesBucket writes random bytes over the root page of the ended
// leases' bucket of a closed data dir: damage behind a sound header that
// Open does not read (it loads the active leases only), as the attack's
// random pages in the middle of the file were.
func damageLeasesBucket(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, dbFileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	var root, pageSize int64
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		root = int64(tx.Bucket(bucketLeases).Root())
		pageSize = int64(db.Info().PageSize)
		return nil
	}))
	require.NoError(t, db.Close())
	require.NotZero(t, root, "the ended leases fill pages of their own")
	junk := make([]byte, pageSize)
	rng := rand.New(rand.NewPCG(13, 24))
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(junk, root*pageSize)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestDamagedPagesStopWritesAndReadiness: a data file whose pages are
// damaged behind a sound header opens (nothing at start reads them), but
// the first write or read that meets a bad page marks it damaged: that
// call and every later write answer UNAVAILABLE saying so (bbolt's panic
// is recovered, not a crash of the process nor an INTERNAL answer),
// CheckReady reports it, and the damage shows in BackgroundStats. Active
// leases in memory still answer reads (issue 24, item 13).
func TestDamagedPagesStopWritesAndReadiness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 10 })
	for i := range 300 {
		lease, hash := b.mustAcquire(t, l, "laptop")
		_, err := b.s.Release(t.Context(), lease.ID, hash)
		require.NoError(t, err, "release %d", i)
	}
	kept, _ := b.mustAcquire(t, l, "kept")
	require.NoError(t, b.s.Close())
	damageLeasesBucket(t, b.dir)

	b.open(t)
	reason, err := b.s.CheckReady(t.Context())
	require.NoError(t, err, "nothing has read the damaged pages yet")
	require.Empty(t, reason)
	require.Zero(t, b.s.BackgroundStats().DataFileDamaged)

	// A write whose transaction meets the bad page (an acquisition looks
	// its new id up among the ended leases).
	_, _, err = b.acquire(t, l, "desktop")
	requireDamagedRefusal(t, err)
	reason, err = b.s.CheckReady(t.Context())
	require.Equal(t, "the data file is damaged", reason)
	var d *DamagedError
	require.ErrorAs(t, err, &d)
	require.Equal(t, int64(1), b.s.BackgroundStats().DataFileDamaged)

	// Every later write is refused, whatever pages it would touch.
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
}

// TestDamagedReadStopsWrites: a read that meets a bad page first marks
// the file damaged too, and the next write is refused before it touches
// the file.
func TestDamagedReadStopsWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 10 })
	for range 300 {
		lease, hash := b.mustAcquire(t, l, "laptop")
		_, err := b.s.Release(t.Context(), lease.ID, hash)
		require.NoError(t, err)
	}
	require.NoError(t, b.s.Close())
	damageLeasesBucket(t, b.dir)
	b.open(t)

	_, _, err := b.s.ListLeases(t.Context(), b.tenant, l.ID, "", server.Page{})
	requireDamagedRefusal(t, err)
	// This write would touch only sound pages (the licenses' bucket):
	// refused all the same.
	_, err = b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error { l.Name = "renamed"; return nil })
	requireDamagedRefusal(t, err)
	reason, _ := b.s.CheckReady(t.Context())
	require.Equal(t, "the data file is damaged", reason)
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
	for range 300 {
		lease, hash := b.mustAcquire(t, l, "laptop")
		_, err := b.s.Release(t.Context(), lease.ID, hash)
		require.NoError(t, err)
	}
	require.NoError(t, b.s.Close())
	s, err := Open(b.dir, Options{VerifyPages: true})
	require.NoError(t, err, "a sound file passes")
	require.NoError(t, s.Close())

	damageLeasesBucket(t, b.dir)
	s, err = Open(b.dir, Options{VerifyPages: true})
	if s != nil {
		_ = s.Close()
	}
	requireDamaged(t, err, filepath.Join(b.dir, dbFileName), "unreadable pages")
	s, err = Open(b.dir, Options{})
	require.NoError(t, err, "without the walk the damage is found later")
	require.NoError(t, s.Close())
}
