package embedded

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// bundle is one test's store with a tenant and a license on it.
type bundle struct {
	dir    string
	clock  *fakeClock
	s      *Store
	tenant string
}

func setup(t testing.TB) *bundle {
	t.Helper()
	b := &bundle{dir: t.TempDir(), clock: newFakeClock(), tenant: "tnt_test"}
	b.open(t)
	_, err := b.s.CreateTenant(t.Context(), server.Tenant{ID: b.tenant, CreatedAt: b.clock.Now()})
	require.NoError(t, err)
	return b
}

// open opens the bundle's data dir; the store is closed when t ends.
func (b *bundle) open(t testing.TB) {
	t.Helper()
	s, err := Open(b.dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	b.s = s
}

// reopen closes the store and opens the same data again.
func (b *bundle) reopen(t testing.TB) {
	t.Helper()
	require.NoError(t, b.s.Close())
	b.open(t)
}

func (b *bundle) license(t testing.TB, mut func(*server.License)) server.License {
	t.Helper()
	now := b.clock.Now()
	l := server.License{
		ID:              server.NewID(server.PrefixLicenseID),
		TenantID:        b.tenant,
		Key:             server.NewSecret(server.PrefixLicenseKey),
		Name:            "test license",
		Seats:           1,
		LeaseTTL:        10 * time.Second,
		LeasingStrategy: server.PerAcquisition,
		Active:          true,
		CreatedAt:       now,
		UpdatedAt:       now,
	}
	if mut != nil {
		mut(&l)
	}
	l, err := b.s.CreateLicense(t.Context(), l)
	require.NoError(t, err)
	return l
}

// acquire returns the result and the token hash, or the error.
func (b *bundle) acquire(t testing.TB, l server.License, fingerprint string) (server.AcquireResult, string, error) {
	t.Helper()
	hash := server.HashSecret(server.NewSecret(server.PrefixLeaseToken))
	res, err := b.s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey:  l.Key,
		Fingerprint: fingerprint,
		LeaseID:     server.NewID(server.PrefixLeaseID),
		TokenHash:   hash,
	})
	return res, hash, err
}

func (b *bundle) mustAcquire(t testing.TB, l server.License, fingerprint string) (server.Lease, string) {
	t.Helper()
	res, hash, err := b.acquire(t, l, fingerprint)
	require.NoError(t, err)
	return res.Lease, hash
}

// stored reads a lease as it is on disk, skipping memory: the record of
// an active lease (memory knows its key), or of an ended one.
func (b *bundle) stored(t testing.TB, id string) server.Lease {
	t.Helper()
	b.s.mu.Lock()
	var w activeWrite
	if r, ok := b.s.idx.lookup(id); ok {
		w = b.s.idx.activeWrite(r)
	}
	b.s.mu.Unlock()
	if w.key == nil {
		l, err := b.s.storedLease(id)
		require.NoError(t, err)
		return l
	}
	var l server.Lease
	require.NoError(t, b.s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketActiveLeases).Get(w.key)
		require.NotNil(t, v, "active lease %s has no record", id)
		var err error
		l, err = activeLease(w.key, v, b.tenant)
		return err
	}))
	return l
}

func requireReason(t testing.TB, err error, reason string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, reason, server.ErrorReason(err), "%v", err)
}
