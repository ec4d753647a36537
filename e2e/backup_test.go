package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/internal/bolttest"
)

// TestBackupRestore: `seatd backup` copies a running server's data; the
// copy, restored into a new data dir with `seatd restore`, serves the same
// license and lease (docs/guides/backup.md).
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	// A generated operator key, kept in the data dir, where `seatd backup
	// --data-dir` finds it.
	first := start(t, options{noOperatorKey: true})
	ctx := testContext(t)
	lic := newLicense(t, first, 2, time.Hour, "backed up")
	lease, err := first.acquire(ctx, lic.GetKey(), "laptop")
	require.NoError(t, err)

	file := filepath.Join(t.TempDir(), "seatd.backup")
	code, out := runToExit(t, failTimeout, []string{"backup", "--addr", first.HTTPAddr, "--operator-key", "wrong-key-0123456789", file}, nil)
	require.NotEqual(t, 0, code, "a wrong key is refused; output:\n%s", out)
	require.Contains(t, out, "401")
	require.NoFileExists(t, file)

	code, out = runToExit(t, failTimeout, []string{"backup", file, "--addr", first.HTTPAddr, "--data-dir", first.DataDir}, nil)
	require.Equal(t, 0, code, "backup; output:\n%s", out)
	require.Contains(t, out, "wrote")
	require.FileExists(t, file)
	require.NoFileExists(t, file+".tmp")
	after := newLicense(t, first, 1, time.Hour, "after the backup")
	first.stopOK()

	dir := filepath.Join(t.TempDir(), "restored")
	code, out = runToExit(t, failTimeout, []string{"restore", file, "--data-dir", dir}, nil)
	require.Equal(t, 0, code, "restore; output:\n%s", out)

	second := start(t, options{dataDir: dir, operatorKey: first.OperatorKey})
	op := second.asOperator(ctx)
	got, err := second.admin().GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err, "the license is in the backup")
	require.Equal(t, lic.GetKey(), got.GetLicense().GetKey())
	_, err = second.admin().GetLicense(op, &seatdv1.GetLicenseRequest{LicenseId: after.GetId()})
	requireStatus(t, err, codes.NotFound, "LICENSE_NOT_FOUND")
	leases, err := second.admin().ListLeases(op, &seatdv1.ListLeasesRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.Len(t, leases.GetLeases(), 1)
	require.Equal(t, lease.GetLease().GetId(), leases.GetLeases()[0].GetId())
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, leases.GetLeases()[0].GetState())
	_, err = second.heartbeat(ctx, lease)
	require.NoError(t, err, "the lease token works after the restore")

	// A restore while seatd runs on the dir is refused, and changes nothing.
	code, out = runToExit(t, failTimeout, []string{"restore", file, "--data-dir", dir}, nil)
	require.NotEqual(t, 0, code, "restore into a running seatd's dir; output:\n%s", out)
	require.Contains(t, out, "in use by a running seatd")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only seatd.db")
	second.stopOK()
}

// TestStartRefusesLostData: a data dir whose database is damaged, or
// missing beside the operator key of an earlier start, stops seatd with
// one line naming the file and what to do, and is left as it was; it
// never starts empty or crashes (issue 9).
func TestStartRefusesLostData(t *testing.T) {
	t.Parallel()
	random := func(n int) []byte { return bolttest.RandomBytes(n, 9) }
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, db string)
	}{
		{"empty file", func(t *testing.T, db string) { require.NoError(t, os.Truncate(db, 0)) }},
		{"truncated", func(t *testing.T, db string) { require.NoError(t, os.Truncate(db, 3*4096)) }},
		{"random bytes", func(t *testing.T, db string) { require.NoError(t, os.WriteFile(db, random(64<<10), 0o600)) }},
		{"corrupt pages behind a sound header", func(t *testing.T, db string) {
			st, err := os.Stat(db)
			require.NoError(t, err)
			f, err := os.OpenFile(db, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(random(int(st.Size())-2*4096), 2*4096)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"missing beside operator.key", func(t *testing.T, db string) { require.NoError(t, os.Remove(db)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first := start(t, options{noOperatorKey: true})
			newLicense(t, first, 1, time.Hour, "kept")
			first.stopOK()
			db := filepath.Join(first.DataDir, "seatd.db")
			tc.damage(t, db)
			before := dirState(t, first.DataDir)

			code, out := runToExit(t, failTimeout, []string{
				"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data-dir", first.DataDir,
			}, nil)
			t.Logf("exit %d: %s", code, strings.TrimSpace(out))
			require.NotEqual(t, 0, code)
			require.NotContains(t, out, "goroutine")
			require.NotContains(t, out, "panic")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 1, "one line; output:\n%s", out)
			require.True(t, strings.HasPrefix(lines[0], "seatd: data file "+db+" is "), "names the file: %s", lines[0])
			require.Contains(t, lines[0], "seatd restore FILE --data-dir "+first.DataDir)
			require.Contains(t, lines[0], "move the data dir away")
			require.Equal(t, before, dirState(t, first.DataDir), "the data dir is left as it was")
		})
	}
}

// dirState is each file of dir with its size.
func dirState(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	state := map[string]int64{}
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		state[e.Name()] = info.Size()
	}
	return state
}
