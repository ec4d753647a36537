package embedded

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
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
