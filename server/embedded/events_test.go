package embedded

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/storetest"
)

// A data dir written before the tenant index of usage events existed gets
// it filled on its next Open: the tenant-wide list misses nothing.
func TestOpenFillsUsageTenantIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	for _, fp := range []string{"a", "b"} {
		lease, tok := b.mustAcquire(t, l, fp)
		b.clock.Advance(time.Second)
		_, err := b.s.Release(t.Context(), lease.ID, tok)
		require.NoError(t, err)
	}
	require.NoError(t, b.s.Close())

	db, err := bolt.Open(filepath.Join(b.dir, dbFileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketUsageTenant) }))
	require.NoError(t, db.Close())

	b.open(t)
	evs, next, err := b.s.ListUsageEvents(t.Context(), server.EventRange{TenantID: b.tenant}, server.Page{})
	require.NoError(t, err)
	require.Empty(t, next)
	want, err := b.s.UsageEvents(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Len(t, want, 2)
	require.Equal(t, want, evs)
}

// The usage report over known intervals, read from disk, gives the figures
// worked out by hand (storetest.KnownUsage).
func TestUsageReportKnownIntervals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l, m := b.license(t, nil), b.license(t, nil)
	leases, events, q, want := storetest.KnownUsage(b.tenant, l.ID, m.ID)
	require.NoError(t, b.s.commit.write(func(tx *bolt.Tx) error {
		for _, ls := range leases {
			if err := tx.Bucket(bucketLeases).Put([]byte(ls.ID), encode(leaseRecord{Lease: ls})); err != nil {
				return err
			}
			if err := tx.Bucket(bucketLeasesLicense).Put(timeKey(ls.LicenseID, ls.AcquiredAt, ls.ID), nil); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, e := range events {
		require.NoError(t, b.s.RecordSeatEvent(t.Context(), e))
	}
	got, err := b.s.UsageReport(t.Context(), q)
	require.NoError(t, err)
	storetest.RequireUsageReport(t, want, got)

	b.reopen(t) // the seat events are on disk
	got, err = b.s.UsageReport(t.Context(), q)
	require.NoError(t, err)
	storetest.RequireUsageReport(t, want, got)
}
