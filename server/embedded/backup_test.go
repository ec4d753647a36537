package embedded

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// writeBackup takes a backup of s into a file and returns its path.
func writeBackup(t *testing.T, s *Store) string {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Backup(&buf)
	require.NoError(t, err)
	require.Equal(t, int64(buf.Len()), n)
	path := filepath.Join(t.TempDir(), "seatd.backup")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
	return path
}

// TestBackupWhileServingRestores: a backup taken while the store serves
// (and writes) restores into a store that has the license, the lease and
// the heartbeat acknowledged before it.
func TestBackupWhileServingRestores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 100; l.LeaseTTL = time.Minute })
	lease, tok := b.mustAcquire(t, l, "laptop")
	b.clock.Advance(5 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok) // written behind: only in memory
	require.NoError(t, err)

	// Writers keep going while the backup reads.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 10 {
				_, _, err := b.acquire(t, l, string(rune('a'+i))+string(rune('a'+j)))
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	backup := writeBackup(t, b.s)
	wg.Wait()
	require.NoError(t, CheckBackup(backup))

	dir := filepath.Join(t.TempDir(), "restored")
	kept, err := Restore(dir, backup, b.clock.Now())
	require.NoError(t, err)
	require.Empty(t, kept, "nothing to keep in a new dir")
	s, err := Open(dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	defer s.Close()
	got, err := s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, l.Key, got.Key)
	gotLease, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseActive, gotLease.State)
	require.False(t, gotLease.ExpiresAt.Before(hb.ExpiresAt), "the heartbeat before the backup is in it")
	_, err = s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err, "the lease token works on the restored store")
}

// TestRestoreKeepsTheReplacedDatabase: restore replaces seatd.db and
// keeps the old one beside it.
func TestRestoreKeepsTheReplacedDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	backup := writeBackup(t, b.s)
	require.NoError(t, b.s.Close())
	old, err := os.ReadFile(filepath.Join(b.dir, dbFileName))
	require.NoError(t, err)

	at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	kept, err := Restore(b.dir, backup, at)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(b.dir, "seatd.db.before-restore-20300102T100000Z"), kept)
	keptBytes, err := os.ReadFile(kept)
	require.NoError(t, err)
	require.Equal(t, old, keptBytes)
	entries, err := os.ReadDir(b.dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "seatd.db and the kept copy, no temporary file")

	b.open(t)
	_, err = b.s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
}

// TestRestoreRefusesAnOpenDataDir: a running store holds the lock;
// restore refuses and changes nothing.
func TestRestoreRefusesAnOpenDataDir(t *testing.T) {
	t.Parallel()
	b := setup(t)
	backup := writeBackup(t, b.s)
	_, err := Restore(b.dir, backup, time.Now())
	require.ErrorContains(t, err, "in use by a running seatd")
	entries, err := os.ReadDir(b.dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing written")
}

// TestCheckBackupRefuses: restore takes only a sound seatd database.
func TestCheckBackupRefuses(t *testing.T) {
	t.Parallel()
	dir, used := healthyDataDir(t)
	good := filepath.Join(dir, dbFileName)
	require.NoError(t, CheckBackup(good))

	truncated := filepath.Join(t.TempDir(), "truncated")
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(truncated, data[:used/2], 0o600))
	random := filepath.Join(t.TempDir(), "random")
	require.NoError(t, os.WriteFile(random, bytes.Repeat([]byte{0x5a, 0x17, 0xc3}, 5000), 0o600))
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))

	for file, want := range map[string]string{
		truncated:               "truncated",
		random:                  "no valid header",
		empty:                   "empty",
		foreignBolt(t):          `no "meta" bucket`,
		filepath.Join(dir, "x"): "no such file",
	} {
		err := CheckBackup(file)
		require.ErrorContains(t, err, file)
		require.ErrorContains(t, err, want)
	}
}

// TestRestoreKeepsTheLicenseFileInForce: restoring a backup from before
// a newer license file (or from before locked mode) keeps the replaced
// database's file in force and its site key: an older file is not
// accepted again, and the file in force still names this seatd's key. A
// backup with a newer record keeps its own.
func TestRestoreKeepsTheLicenseFileInForce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	beforeLocked := writeBackup(t, b.s)
	_, err := b.s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 3, Hash: "h3"})
	require.NoError(t, err)
	serial3 := writeBackup(t, b.s)
	site := server.SigningKey{ID: "kid-site", PublicKey: []byte("pub"), PrivateKey: []byte("sealed"), CreatedAt: b.clock.Now()}
	_, err = b.s.EnsureSiteKey(t.Context(), site)
	require.NoError(t, err)
	f7, err := b.s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 7, Hash: "h7"})
	require.NoError(t, err)
	serial7 := writeBackup(t, b.s)

	for i, backup := range []string{beforeLocked, serial3} {
		require.NoError(t, b.s.Close())
		_, err = Restore(b.dir, backup, time.Date(2030, 1, 1, i, 0, 0, 0, time.UTC)) // a kept copy's name each
		require.NoError(t, err)
		b.open(t)
		got, err := b.s.FileInForce(t.Context())
		require.NoError(t, err)
		require.Equal(t, f7.Serial, got.Serial)
		require.Equal(t, f7.Hash, got.Hash)
		k, err := b.s.EnsureSiteKey(t.Context(), server.SigningKey{})
		require.NoError(t, err)
		require.Equal(t, site.ID, k.ID)
		require.Equal(t, site.PrivateKey, k.PrivateKey)
	}

	_, err = b.s.SetFileInForce(t.Context(), server.LicenseFileRecord{Serial: 9, Hash: "h9"})
	require.NoError(t, err)
	require.NoError(t, b.s.Close())
	require.NoError(t, os.Remove(filepath.Join(b.dir, dbFileName)))
	_, err = Restore(b.dir, serial7, time.Now())
	require.NoError(t, err)
	b.open(t)
	got, err := b.s.FileInForce(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(7), got.Serial, "no database replaced: the backup's record stands")
}
