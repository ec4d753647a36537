package embedded

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/internal/bolttest"
	"github.com/seatd/seatd/server"
)

// healthyDataDir returns a closed data dir holding a license with an
// active lease, and the database's high-water mark in bytes.
func healthyDataDir(t *testing.T) (dir string, used int64) {
	t.Helper()
	b := setup(t)
	l := b.license(t, nil)
	b.mustAcquire(t, l, "laptop")
	require.NoError(t, b.s.Close())
	f, err := os.Open(filepath.Join(b.dir, dbFileName))
	require.NoError(t, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(t, err)
	m, ok := readMeta(f, st.Size())
	require.True(t, ok, "a healthy database has a sound header")
	return b.dir, int64(m.pgid) * int64(m.pageSize)
}

func requireDamaged(t *testing.T, err error, path, reason string) {
	t.Helper()
	var d *DamagedError
	require.ErrorAs(t, err, &d)
	require.Equal(t, path, d.Path)
	require.Contains(t, d.Reason, reason)
	require.Contains(t, err.Error(), "seatd restore FILE --data-dir "+filepath.Dir(path))
	require.NotContains(t, err.Error(), "\n", "one line")
}

// TestOpenRefusesDamagedDataFile: Open refuses an empty, truncated,
// foreign or corrupt data file with a DamagedError naming it, instead of
// serving an empty store or crashing (issue 9).
func TestOpenRefusesDamagedDataFile(t *testing.T) {
	t.Parallel()
	random := func(n int) []byte { return bolttest.RandomBytes(n, 9) }
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, path string, used int64)
		reason string // "" for damage only opening finds
	}{
		{"empty file", func(t *testing.T, path string, _ int64) {
			require.NoError(t, os.Truncate(path, 0))
		}, "empty"},
		{"truncated inside the first page", func(t *testing.T, path string, _ int64) {
			require.NoError(t, os.Truncate(path, 100))
		}, "truncated"},
		{"truncated after the metas", func(t *testing.T, path string, _ int64) {
			require.NoError(t, os.Truncate(path, 3*4096))
		}, "truncated"},
		{"truncated by one byte of data", func(t *testing.T, path string, used int64) {
			require.NoError(t, os.Truncate(path, used-1))
		}, "truncated"},
		{"random bytes, small", func(t *testing.T, path string, _ int64) {
			require.NoError(t, os.WriteFile(path, random(1000), 0o600))
		}, "no valid header"},
		{"random bytes, large", func(t *testing.T, path string, _ int64) {
			require.NoError(t, os.WriteFile(path, random(1<<20), 0o600))
		}, "no valid header"},
		{"random pages behind a sound header", func(t *testing.T, path string, used int64) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(random(int(used)-2*4096), 2*4096)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, used := healthyDataDir(t)
			path := filepath.Join(dir, dbFileName)
			tc.damage(t, path, used)
			s, err := Open(dir, Options{})
			if s != nil {
				_ = s.Close()
			}
			t.Log(err)
			requireDamaged(t, err, path, tc.reason)
			if tc.reason != "" { // the header check alone finds it
				requireDamaged(t, CheckDataDir(dir), path, tc.reason)
			}
		})
	}
}

// TestOpenAcceptsSoundDataFile: the check refuses nothing bbolt can
// serve: a file cut back to its high-water mark (bbolt grows files ahead
// of use) opens with its data.
func TestOpenAcceptsSoundDataFile(t *testing.T) {
	t.Parallel()
	dir, used := healthyDataDir(t)
	require.NoError(t, os.Truncate(filepath.Join(dir, dbFileName), used))
	require.NoError(t, CheckDataDir(dir))
	s, err := Open(dir, Options{})
	require.NoError(t, err)
	defer s.Close()
	ls, _, err := s.ListLicenses(t.Context(), "tnt_test", server.Page{})
	require.NoError(t, err)
	require.Len(t, ls, 1)
}

// TestCheckDataDir: a missing database is refused when the dir shows
// earlier use, and a new dir starts fresh.
func TestCheckDataDir(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, dir, name string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600))
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		trace string // "" when the dir must pass
	}{
		{"no dir", func(t *testing.T, dir string) { require.NoError(t, os.Remove(dir)) }, ""},
		{"empty dir", func(*testing.T, string) {}, ""},
		{"unrelated files", func(t *testing.T, dir string) { write(t, dir, "notes.txt") }, ""},
		{"operator key", func(t *testing.T, dir string) { write(t, dir, "operator.key") }, "operator.key"},
		{"kept database", func(t *testing.T, dir string) { write(t, dir, "seatd.db.before-restore-20300102T100000Z") }, "seatd.db.before-restore-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tc.setup(t, dir)
			err := CheckDataDir(dir, "operator.key")
			if tc.trace == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), filepath.Join(dir, dbFileName)+" is missing")
			require.Contains(t, err.Error(), tc.trace)
			require.Contains(t, err.Error(), "seatd restore FILE --data-dir "+dir)
		})
	}
}

// TestOpenDamagedIsNotInUse: a data dir in use by another store is
// reported as in use, never as damaged.
func TestOpenDamagedIsNotInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := Open(b.dir, Options{})
	require.ErrorContains(t, err, "in use by another seatd process")
	var d *DamagedError
	require.False(t, errors.As(err, &d))
}

// foreignBolt writes a sound bbolt file that is not seatd's.
func foreignBolt(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("things"))
		return err
	}))
	require.NoError(t, db.Close())
	return path
}
