package embedded

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// schema1 is a data dir as seatd wrote it before schema 2: every lease a
// JSON record in bucketLeases, the active ones' ids in bucketActiveIDs.
type schema1 struct {
	tenant  string
	license server.License
	active  []server.Lease // with their tokens' hashes
	ended   server.Lease
	at      time.Time
}

// writeSchema1 writes a schema-1 database at path with raw bbolt puts of
// the records the schema-1 code wrote; crashed sets the "open" mark a
// killed process leaves.
func writeSchema1(t *testing.T, path string, crashed bool) schema1 {
	t.Helper()
	at := time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)
	d := schema1{tenant: "tnt_old", at: at}
	d.license = server.License{
		ID: "lic_old", TenantID: d.tenant, Key: "slk_old", Name: "old license", Seats: 5,
		LeaseTTL: 10 * time.Minute, RevivalWindow: time.Minute, LeasingStrategy: server.PerFingerprint,
		Active: true, Metadata: map[string]string{"tier": "gold"}, CreatedAt: at, UpdatedAt: at,
	}
	lease := func(id, fp string, acquired time.Time) server.Lease {
		return server.Lease{
			ID: id, LicenseID: d.license.ID, TenantID: d.tenant, TokenHash: server.HashSecret("slt_" + id),
			Fingerprint: fp, DedupeKey: "fp:" + fp, State: server.LeaseActive,
			AcquiredAt: acquired, LastHeartbeatAt: acquired.Add(time.Minute), ExpiresAt: acquired.Add(11 * time.Minute),
		}
	}
	a := lease("lse_a", "machine-a", at.Add(time.Second))
	a.User, a.Hostname, a.IdempotencyKey = "ann", "host-a", "idem-a"
	a.Metadata = map[string]string{"build": "42", "os": "linux"}
	b := lease("lse_b", "machine-b", at.Add(2*time.Second))
	b.TokenHash = "not-a-hex-hash" // any string a caller gave is kept as is
	d.active = []server.Lease{a, b}
	d.ended = lease("lse_c", "machine-c", at)
	d.ended.State, d.ended.EndedAt = server.LeaseReleased, at.Add(5*time.Minute)

	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		for _, name := range schemaBuckets[1] {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		open := byte(0)
		if crashed {
			open = 1
		}
		u := server.UsageEvent{
			LeaseID: d.ended.ID, LicenseID: d.license.ID, TenantID: d.tenant, EndState: server.LeaseReleased,
			StartedAt: d.ended.AcquiredAt, EndedAt: d.ended.EndedAt, Duration: d.ended.EndedAt.Sub(d.ended.AcquiredAt),
		}
		puts := []put{
			{tx.Bucket(bucketMeta), keySchema, uint64Bytes(1)},
			{tx.Bucket(bucketMeta), keyOpen, []byte{open}},
			{tx.Bucket(bucketTenants), []byte(d.tenant), encode(server.Tenant{ID: d.tenant, CreatedAt: at})},
			{tx.Bucket(bucketLicenses), []byte(d.license.ID), encode(licenseRecord{License: d.license})},
			{tx.Bucket(bucketLicensesTenant), timeKey(d.tenant, at, d.license.ID), nil},
			{tx.Bucket(bucketLeaseCounts), []byte(d.license.ID), uint64Bytes(3)},
			{tx.Bucket(bucketUsage), timeKey(d.license.ID, u.EndedAt, u.LeaseID), encode(u)},
		}
		for i, l := range append([]server.Lease{d.ended}, d.active...) {
			puts = append(puts,
				put{tx.Bucket(bucketLeases), []byte(l.ID), encode(leaseRecord{Lease: l, Rev: uint64(i + 3)})},
				put{tx.Bucket(bucketLeasesLicense), timeKey(l.LicenseID, l.AcquiredAt, l.ID), nil})
			if l.State == server.LeaseActive {
				puts = append(puts, put{tx.Bucket(bucketActiveIDs), []byte(l.ID), nil})
			}
		}
		return putAll(puts...)
	}))
	return d
}

// requireSchema1Data checks that a store opened on a migrated schema-1
// dir serves every lease as it was, and keeps serving them.
func requireSchema1Data(t *testing.T, s *Store, d schema1) {
	t.Helper()
	ctx := t.Context()
	for _, want := range d.active {
		got, err := s.GetLease(ctx, d.tenant, want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	got, err := s.GetLease(ctx, d.tenant, d.ended.ID)
	require.NoError(t, err)
	require.Equal(t, d.ended, got, "an ended lease's JSON record is read as it was")

	list, _, err := s.ListLeases(ctx, d.tenant, d.license.ID, "", server.Page{})
	require.NoError(t, err)
	require.Equal(t, []server.Lease{d.active[1], d.active[0], d.ended}, list, "newest first, active and ended together")
	n, err := s.SeatsInUse(ctx, d.tenant, d.license.ID)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	usage, err := s.UsageEvents(ctx, d.tenant, d.license.ID)
	require.NoError(t, err)
	require.Len(t, usage, 1)
	tenantUsage, _, err := s.ListUsageEvents(ctx, server.EventRange{TenantID: d.tenant}, server.Page{})
	require.NoError(t, err)
	require.Equal(t, usage, tenantUsage, "the tenant index of usage events is filled")
}

// TestOpenMigratesSchema1: a schema-1 data dir opens as schema 2, once:
// its active leases move to binary records, every lease reads back as it
// was (JSON history included), and the leases keep working: token,
// dedupe and idempotency keys, seats.
func TestOpenMigratesSchema1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := writeSchema1(t, filepath.Join(dir, dbFileName), false)
	clock := &fakeClock{t: d.at.Add(3 * time.Minute)}
	open := func() *Store {
		s, err := Open(dir, Options{Clock: clock.Now, HeartbeatFlushInterval: time.Hour})
		require.NoError(t, err)
		return s
	}
	s := open()
	requireSchema1Data(t, s, d)

	require.NoError(t, s.view(func(tx *bolt.Tx) error {
		require.Equal(t, uint64(2), bytesUint64(tx.Bucket(bucketMeta).Get(keySchema)))
		require.Nil(t, tx.Bucket(bucketActiveIDs), "schema 1's index of active ids is gone")
		require.Equal(t, 2, tx.Bucket(bucketActiveLeases).Stats().KeyN)
		for _, l := range d.active {
			v := tx.Bucket(bucketActiveLeases).Get(activeKey(l.LicenseID, l.AcquiredAt.UnixNano(), l.ID))
			require.NotNil(t, v, "lease %s", l.ID)
			require.Equal(t, byte(activeRecordV1), v[0])
		}
		require.Equal(t, 1, tx.Bucket(bucketLeases).Stats().KeyN, "only the ended lease stays in the history")
		require.Equal(t, 1, tx.Bucket(bucketLeasesLicense).Stats().KeyN)
		return nil
	}))

	ctx := t.Context()
	a, b := d.active[0], d.active[1]
	hb, err := s.Heartbeat(ctx, b.ID, b.TokenHash)
	require.NoError(t, err, "a token hash that is not hex still opens its lease")
	require.Equal(t, clock.Now().Add(d.license.LeaseTTL), hb.ExpiresAt)
	_, err = s.Heartbeat(ctx, a.ID, b.TokenHash)
	requireReason(t, err, server.ReasonLeaseTokenWrong)
	res, err := s.Acquire(ctx, server.AcquireRequest{LicenseKey: d.license.Key, Fingerprint: "other", IdempotencyKey: "idem-a", LeaseID: "lse_new", TokenHash: server.HashSecret("slt_new")})
	require.NoError(t, err)
	require.True(t, res.Existing)
	require.Equal(t, a.ID, res.Lease.ID, "the idempotency key finds its lease")
	res, err = s.Acquire(ctx, server.AcquireRequest{LicenseKey: d.license.Key, Fingerprint: "machine-b", LeaseID: "lse_new", TokenHash: server.HashSecret("slt_new")})
	require.NoError(t, err)
	require.True(t, res.Existing)
	require.Equal(t, b.ID, res.Lease.ID, "the dedupe key finds its lease")
	require.Equal(t, 2, res.SeatsInUse)
	want, err := s.GetLease(ctx, d.tenant, b.ID)
	require.NoError(t, err)

	require.NoError(t, s.Close())
	s = open() // once: nothing left to migrate
	defer s.Close()
	got, err := s.GetLease(ctx, d.tenant, b.ID)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestMigrationResumes: a start that stopped between two migration
// transactions leaves schema 2 set (an older seatd refuses the dir) and
// the rest to move; the next start moves it.
func TestMigrationResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, dbFileName)
	d := writeSchema1(t, path, false)
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		n, last, err := migrateSome(tx, 1)
		require.Equal(t, 1, n)
		require.False(t, last)
		return err
	}))
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		require.Equal(t, uint64(2), bytesUint64(tx.Bucket(bucketMeta).Get(keySchema)))
		require.Equal(t, 1, tx.Bucket(bucketActiveIDs).Stats().KeyN)
		require.Equal(t, 1, tx.Bucket(bucketActiveLeases).Stats().KeyN)
		return nil
	}))
	require.NoError(t, db.Close())

	clock := &fakeClock{t: d.at.Add(3 * time.Minute)}
	s, err := Open(dir, Options{Clock: clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	defer s.Close()
	requireSchema1Data(t, s, d)
}

// TestMigratedCrashGetsTheSlack: a schema-1 dir left by a killed process
// migrates and then gets the write-behind slack like any crash.
func TestMigratedCrashGetsTheSlack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := writeSchema1(t, filepath.Join(dir, dbFileName), true)
	clock := &fakeClock{t: d.at.Add(3 * time.Minute)}
	s, err := Open(dir, Options{Clock: clock.Now, HeartbeatFlushInterval: time.Second})
	require.NoError(t, err)
	defer s.Close()
	slack := server.WriteBehindSlack(time.Second, &d.license)
	for _, l := range d.active {
		got, err := s.GetLease(t.Context(), d.tenant, l.ID)
		require.NoError(t, err)
		require.Equal(t, l.ExpiresAt.Add(slack), got.ExpiresAt)
	}
}

// TestSchema1BackupRestores: a backup taken by a schema-1 seatd passes
// the check and restores; the first start migrates it.
func TestSchema1BackupRestores(t *testing.T) {
	t.Parallel()
	backup := filepath.Join(t.TempDir(), "old.backup")
	d := writeSchema1(t, backup, true) // a backup records the store as open
	require.NoError(t, CheckBackup(backup))

	dir := filepath.Join(t.TempDir(), "restored")
	_, err := Restore(dir, backup, d.at)
	require.NoError(t, err)
	clock := &fakeClock{t: d.at.Add(3 * time.Minute)}
	s, err := Open(dir, Options{Clock: clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	defer s.Close()
	for _, l := range d.active {
		got, err := s.GetLease(t.Context(), d.tenant, l.ID)
		require.NoError(t, err)
		require.False(t, got.ExpiresAt.Before(l.ExpiresAt))
		_, err = s.Heartbeat(t.Context(), l.ID, l.TokenHash)
		require.NoError(t, err)
	}
	got, err := s.GetLease(t.Context(), d.tenant, d.ended.ID)
	require.NoError(t, err)
	require.Equal(t, d.ended, got)
}

// TestOpenRefusesALeaseRecordedTwice: two active records of one lease id
// (a damaged file) stop the start with the id, rather than one of them
// being unreachable.
func TestOpenRefusesALeaseRecordedTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 5 })
	lease, _ := b.mustAcquire(t, l, "a")
	require.NoError(t, b.s.Close())

	db, err := bolt.Open(filepath.Join(b.dir, dbFileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketActiveLeases)
		v := bk.Get(activeKey(l.ID, lease.AcquiredAt.UnixNano(), lease.ID))
		require.NotNil(t, v)
		return bk.Put(activeKey(l.ID, lease.AcquiredAt.Add(time.Second).UnixNano(), lease.ID), append([]byte(nil), v...))
	}))
	require.NoError(t, db.Close())
	_, err = Open(b.dir, Options{Clock: b.clock.Now})
	require.ErrorContains(t, err, "active lease "+lease.ID+": recorded twice")
}
