package embedded

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

// grant stores a grant of feature on l: one seat, every version; mut
// adjusts it.
func (b *bundle) grant(t testing.TB, l server.License, feature string, mut func(*server.Grant)) server.Grant {
	t.Helper()
	now := b.clock.Now()
	g := server.Grant{
		ID: server.NewGrantID(l.ID), LicenseID: l.ID, TenantID: l.TenantID, Feature: feature,
		Seats: 1, CreatedAt: now, UpdatedAt: now,
	}
	if mut != nil {
		mut(&g)
	}
	g, err := b.s.CreateGrant(t.Context(), g)
	require.NoError(t, err)
	return g
}

// acquireFeature asks for a seat of feature at version.
func (b *bundle) acquireFeature(t testing.TB, l server.License, feature, version, fingerprint string) (server.AcquireResult, string, error) {
	t.Helper()
	hash := server.HashSecret(server.NewSecret(server.PrefixLeaseToken))
	res, err := b.s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: fingerprint, Feature: feature, Version: version,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: hash,
	})
	return res, hash, err
}

func (b *bundle) mustAcquireFeature(t testing.TB, l server.License, feature, version, fingerprint string) (server.Lease, string) {
	t.Helper()
	res, hash, err := b.acquireFeature(t, l, feature, version, fingerprint)
	require.NoError(t, err)
	return res.Lease, hash
}

// TestGrantsSurviveReopen: grants, deleted ones and their leases' history
// come back from disk as they were: a deleted grant stays deleted, a
// deleted license's grants too, and a lease of a grant keeps its feature,
// version and pool.
func TestGrantsSurviveReopen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 2 })
	r24 := b.grant(t, l, "render", func(g *server.Grant) { g.Version = "2024"; g.ExpiresAt = b.clock.Now().Add(time.Hour) })
	r25 := b.grant(t, l, "render", func(g *server.Grant) { g.Version = "2025"; g.Seats = 2 })
	sim := b.grant(t, l, "sim", nil)
	held, tok := b.mustAcquireFeature(t, l, "render", "2024.0.0", "a")
	simLease, _ := b.mustAcquireFeature(t, l, "sim", "", "a")
	_, err := b.s.DeleteGrant(t.Context(), b.tenant, l.ID, sim.ID)
	require.NoError(t, err)
	gone := b.license(t, nil)
	goneGrant := b.grant(t, gone, "render", nil)
	_, err = b.s.DeleteLicense(t.Context(), b.tenant, gone.ID)
	require.NoError(t, err)
	before, err := b.s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)

	b.reopen(t)
	got, err := b.s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, before, got)
	require.Equal(t, []string{r24.ID, r25.ID}, grantIDs(got.Grants), "%+v", got.Grants)
	hb, err := b.s.Heartbeat(t.Context(), held.ID, tok)
	require.NoError(t, err)
	require.Equal(t, r24.ID, hb.LicenseID)
	require.Equal(t, "render", hb.Feature)
	require.Equal(t, "2024.0.0", hb.Version)
	ended, err := b.s.GetLease(t.Context(), b.tenant, simLease.ID)
	require.NoError(t, err)
	require.Equal(t, server.LeaseRevoked, ended.State)
	require.Equal(t, "sim", ended.Feature)

	_, _, err = b.acquireFeature(t, l, "sim", "", "b")
	requireReason(t, err, server.ReasonFeatureNotLicensed)
	_, err = b.s.UpdateGrant(t.Context(), b.tenant, l.ID, sim.ID, func(*server.Grant) error { return nil })
	requireReason(t, err, server.ReasonGrantNotFound)
	_, err = b.s.SeatsInUse(t.Context(), b.tenant, goneGrant.ID)
	requireReason(t, err, server.ReasonLicenseNotFound)
	_, _, err = b.acquireFeature(t, l, "render", "2024", "b") // r24's seat is held: r25's
	require.NoError(t, err)
	n, err := b.s.SeatsInUse(t.Context(), b.tenant, r25.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TestOlderDataDirOpensWithoutGrants: a data dir written before grants
// existed has no grants bucket; it opens as it was, and takes grants.
func TestOlderDataDirOpensWithoutGrants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	lease, tok := b.mustAcquire(t, l, "a")
	require.NoError(t, b.s.Close())
	db, err := bolt.Open(filepath.Join(b.dir, dbFileName), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketGrants) }))
	require.NoError(t, db.Close())
	backup := filepath.Join(b.dir, dbFileName)
	require.NoError(t, CheckBackup(backup), "a backup without grants is sound")

	b.open(t)
	_, err = b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err)
	got, err := b.s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Empty(t, got.Grants)
	g := b.grant(t, l, "render", nil)
	res, _, err := b.acquireFeature(t, l, "render", "", "a")
	require.NoError(t, err)
	require.Equal(t, g.ID, res.Lease.LicenseID)
}

// TestBackupRestoreKeepsGrants: a hot backup holds the grants and their
// active leases; the restored store counts each grant's seats.
func TestBackupRestoreKeepsGrants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	g := b.grant(t, l, "render", func(g *server.Grant) { g.Version = "3" })
	lease, tok := b.mustAcquireFeature(t, l, "render", "2", "a")
	b.clock.Advance(5 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok) // written behind: flushed by the backup
	require.NoError(t, err)

	backup := writeBackup(t, b.s)
	require.NoError(t, CheckBackup(backup))
	dir := filepath.Join(t.TempDir(), "restored")
	_, err = Restore(dir, backup, b.clock.Now())
	require.NoError(t, err)
	s, err := Open(dir, Options{Clock: b.clock.Now, HeartbeatFlushInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	got, err := s.GetLicense(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, []string{g.ID}, grantIDs(got.Grants))
	restored, err := s.GetLease(t.Context(), b.tenant, lease.ID)
	require.NoError(t, err)
	require.Equal(t, g.ID, restored.LicenseID)
	require.Equal(t, "2", restored.Version)
	require.False(t, restored.ExpiresAt.Before(hb.ExpiresAt), "the heartbeat acknowledged before the backup")
	_, err = s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: "b", Feature: "render", LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: tok,
	})
	requireReason(t, err, server.ReasonSeatsExhausted)
}

// TestCrashGivesGrantLeasesTheSlack: a lease of a grant gets the
// write-behind slack after a crash, as a license's does (invariant 9),
// from its pool's settings (the license's TTL).
func TestCrashGivesGrantLeasesTheSlack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = 10 * time.Second })
	b.grant(t, l, "render", nil)
	lease, tok := b.mustAcquireFeature(t, l, "render", "", "laptop")
	b.clock.Advance(4 * time.Second)
	_, err := b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err)

	crash(b.s) // the heartbeat never reached the disk
	b.open(t)
	b.clock.Advance(8 * time.Second) // past the deadline on disk, before the one told
	hb, err := b.s.Heartbeat(t.Context(), lease.ID, tok)
	require.NoError(t, err, "a lease of a grant heartbeated on time survives the crash")
	require.Equal(t, "render", hb.Feature)
	_, _, err = b.acquireFeature(t, l, "render", "", "other")
	requireReason(t, err, server.ReasonSeatsExhausted)
}

// TestListsPageAcrossPools: a license's leases and events, from its base
// pool and its grants, page in one order with tokens of the license,
// whether read from memory (active), from disk (ended) or both.
func TestListsPageAcrossPools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.Seats = 10; l.LeaseTTL = time.Hour })
	r := b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 10 })
	sim := b.grant(t, l, "sim", func(g *server.Grant) { g.Seats = 10 })
	other := b.license(t, func(l *server.License) { l.Seats = 20 }) // its leases never show
	type held struct {
		l   server.Lease
		tok string
	}
	var all []held
	for i := range 12 {
		var ls server.Lease
		var tok string
		switch i % 3 {
		case 0:
			ls, tok = b.mustAcquire(t, l, fmt.Sprint("m", i))
		case 1:
			ls, tok = b.mustAcquireFeature(t, l, "render", "", fmt.Sprint("m", i))
		default:
			ls, tok = b.mustAcquireFeature(t, l, "sim", "", fmt.Sprint("m", i))
		}
		b.mustAcquire(t, other, fmt.Sprint("m", i))
		all = append(all, held{ls, tok})
		if i%4 != 3 {
			b.clock.Advance(time.Second) // some share an acquisition time
		}
	}
	for i, h := range all {
		if i%2 == 0 {
			_, err := b.s.Release(t.Context(), h.l.ID, h.tok)
			require.NoError(t, err)
			b.clock.Advance(time.Second)
		}
	}
	newest := func(keep func(i int, l server.Lease) bool) []string {
		var ls []server.Lease
		for i, h := range all {
			if keep(i, h.l) {
				ls = append(ls, h.l)
			}
		}
		slices.SortFunc(ls, func(a, b server.Lease) int {
			if c := b.AcquiredAt.Compare(a.AcquiredAt); c != 0 {
				return c
			}
			return strings.Compare(b.ID, a.ID)
		})
		return leaseIDList(ls)
	}
	list := func(id string, st server.LeaseState) []string {
		var ids []string
		p := server.Page{Size: 2}
		for {
			page, next, err := b.s.ListLeases(t.Context(), b.tenant, id, st, p)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 2)
			for _, ls := range page {
				require.Equal(t, l.ID, ls.LicenseOf())
				if st != "" {
					require.Equal(t, st, ls.State)
				}
			}
			ids = append(ids, leaseIDList(page)...)
			if next == "" {
				return ids
			}
			p.Token = next
		}
	}
	require.Equal(t, newest(func(int, server.Lease) bool { return true }), list(l.ID, ""))
	require.Equal(t, newest(func(i int, _ server.Lease) bool { return i%2 == 1 }), list(l.ID, server.LeaseActive))
	require.Equal(t, newest(func(i int, _ server.Lease) bool { return i%2 == 0 }), list(l.ID, server.LeaseReleased))
	require.Equal(t, newest(func(_ int, ls server.Lease) bool { return ls.LicenseID == r.ID }), list(r.ID, ""))
	require.Equal(t, newest(func(i int, ls server.Lease) bool { return ls.LicenseID == sim.ID && i%2 == 1 }), list(sim.ID, server.LeaseActive))

	// Usage events of the license, its grants' included, by (end, id).
	events := func(rg server.EventRange) []string {
		var ids []string
		p := server.Page{Size: 2}
		for {
			page, next, err := b.s.ListUsageEvents(t.Context(), rg, p)
			require.NoError(t, err)
			for _, e := range page {
				ids = append(ids, e.LeaseID)
			}
			if next == "" {
				return ids
			}
			p.Token = next
		}
	}
	released := func(keep func(server.Lease) bool) []string {
		var ids []string
		for i, h := range all {
			if i%2 == 0 && keep(h.l) {
				ids = append(ids, h.l.ID) // released in this order, a second apart
			}
		}
		return ids
	}
	require.Equal(t, released(func(server.Lease) bool { return true }), events(server.EventRange{TenantID: b.tenant, LicenseID: l.ID}))
	require.Equal(t, released(func(ls server.Lease) bool { return ls.Feature == "render" }),
		events(server.EventRange{TenantID: b.tenant, LicenseID: l.ID, Feature: "render"}))
	require.Equal(t, released(func(ls server.Lease) bool { return ls.Feature == "sim" }),
		events(server.EventRange{TenantID: b.tenant, Feature: "sim"}))
	require.Equal(t, released(func(ls server.Lease) bool { return ls.LicenseID == r.ID }),
		events(server.EventRange{TenantID: b.tenant, LicenseID: r.ID}))
	third, err := b.s.GetLease(t.Context(), b.tenant, all[4].l.ID)
	require.NoError(t, err)
	require.Equal(t, released(func(server.Lease) bool { return true })[2:],
		events(server.EventRange{TenantID: b.tenant, LicenseID: l.ID, Start: third.EndedAt}), "from the third release on")
}

// TestZombieAndUsageReportsByFeature: the zombie report ranks a license's
// base pool and each of its features apart (a feature: all its grants),
// and both reports cut by feature.
func TestZombieAndUsageReportsByFeature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	start := b.clock.Now().Truncate(time.Hour)
	l := b.license(t, func(l *server.License) { l.Seats = 5; l.Name = "cad"; l.LeasingStrategy = server.PerFingerprint })
	b.grant(t, l, "render", func(g *server.Grant) { g.Version = "2024"; g.ExpiresAt = b.clock.Now().Add(time.Hour) })
	b.grant(t, l, "render", func(g *server.Grant) { g.Version = "2025" })
	b.grant(t, l, "sim", nil)
	b.mustAcquire(t, l, "a")
	b.mustAcquireFeature(t, l, "render", "", "a") // the 2024 grant
	b.mustAcquireFeature(t, l, "render", "", "b") // the 2025 grant
	b.mustAcquireFeature(t, l, "sim", "", "a")
	_, tok := b.mustAcquireFeature(t, l, "sim", "", "a") // handed back: no second lease
	require.NotEmpty(t, tok)
	b.clock.Advance(l.LeaseTTL)
	due, err := b.s.DueLeases(t.Context(), nil, 100)
	require.NoError(t, err)
	expired, err := b.s.ExpireLeases(t.Context(), due)
	require.NoError(t, err)
	require.Len(t, expired, 4)

	rep, err := b.s.ZombieReport(t.Context(), server.ZombieQuery{TenantID: b.tenant, Start: start, End: start.Add(24 * time.Hour)})
	require.NoError(t, err)
	require.EqualValues(t, 4, rep.Total)
	require.Len(t, rep.Days, 1)
	require.EqualValues(t, 1, rep.Days[0].AffectedLicenses, "one license")
	require.Equal(t, []server.LicenseZombies{
		{LicenseID: l.ID, Feature: "render", LicenseName: "cad", ZombieCount: 2, LeaseCount: 2, Percentage: 100},
		{LicenseID: l.ID, LicenseName: "cad", ZombieCount: 1, LeaseCount: 1, Percentage: 100},
		{LicenseID: l.ID, Feature: "sim", LicenseName: "cad", ZombieCount: 1, LeaseCount: 1, Percentage: 100},
	}, rep.TopLicenses)
	rep, err = b.s.ZombieReport(t.Context(), server.ZombieQuery{TenantID: b.tenant, Start: start, End: start.Add(24 * time.Hour), Feature: "sim"})
	require.NoError(t, err)
	require.EqualValues(t, 1, rep.Total)
	require.Len(t, rep.TopLicenses, 1)

	usage, err := b.s.UsageReport(t.Context(), server.UsageQuery{
		TenantID: b.tenant, LicenseID: l.ID, Start: start, End: start.Add(24 * time.Hour), Bucket: 24 * time.Hour,
	})
	require.NoError(t, err)
	var rows []string
	for _, row := range usage.Rows {
		require.Equal(t, l.ID, row.LicenseID)
		rows = append(rows, fmt.Sprintf("%q:%d/%d", row.Feature, row.Acquisitions, row.PeakSeats))
	}
	require.Equal(t, []string{`"":1/1`, `"render":2/2`, `"sim":1/1`}, rows)
	usage, err = b.s.UsageReport(t.Context(), server.UsageQuery{
		TenantID: b.tenant, Feature: "render", Start: start, End: start.Add(24 * time.Hour), Bucket: 24 * time.Hour,
	})
	require.NoError(t, err)
	require.Len(t, usage.Rows, 1)
	require.Equal(t, "render", usage.Rows[0].Feature)
}

// TestBorrowPassesOverAGrantThatRefusesIt: borrowing is judged per grant;
// a grant without borrowing is passed over for the next.
func TestBorrowPassesOverAGrantThatRefusesIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	b.grant(t, l, "render", func(g *server.Grant) { g.ExpiresAt = b.clock.Now().Add(time.Hour) })
	lending := b.grant(t, l, "render", func(g *server.Grant) { g.MaxBorrowDuration = 24 * time.Hour })
	req := server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: "laptop", Feature: "render", BorrowFor: 8 * time.Hour,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret("t"),
	}
	res, err := b.s.Acquire(t.Context(), req)
	require.NoError(t, err)
	require.Equal(t, lending.ID, res.Lease.LicenseID)
	require.True(t, res.Lease.Borrowed)
	req.LeaseID, req.Fingerprint = server.NewID(server.PrefixLeaseID), "other"
	_, err = b.s.Acquire(t.Context(), req)
	requireReason(t, err, server.ReasonSeatsExhausted) // the lending grant is full
	_, err = b.s.UpdateGrant(t.Context(), b.tenant, l.ID, lending.ID, func(g *server.Grant) error { g.Seats = 2; g.MaxBorrowedSeats = 1; return nil })
	require.NoError(t, err)
	_, err = b.s.Acquire(t.Context(), req)
	requireReason(t, err, server.ReasonBorrowNotAllowed) // the first refusal
}

// TestPruneRemovesGrantHistory: retention reaches the leases and events
// of grants, deleted ones too.
func TestPruneRemovesGrantHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	g := b.grant(t, l, "render", nil)
	lease, tok := b.mustAcquireFeature(t, l, "render", "", "a")
	_, err := b.s.Release(t.Context(), lease.ID, tok)
	require.NoError(t, err)
	_, err = b.s.DeleteGrant(t.Context(), b.tenant, l.ID, g.ID)
	require.NoError(t, err)
	b.clock.Advance(time.Hour)
	n, err := b.s.PruneRecords(t.Context(), server.RecordLeases, b.clock.Now(), 100)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = b.s.GetLease(t.Context(), b.tenant, lease.ID)
	requireReason(t, err, server.ReasonLeaseNotFound)
	evs, err := b.s.UsageEvents(t.Context(), b.tenant, g.ID)
	require.NoError(t, err)
	require.Empty(t, evs)
}

func grantIDs(gs []server.Grant) []string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	return ids
}

func leaseIDList(ls []server.Lease) []string {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ID
	}
	return ids
}

// TestLicenseSettingsReachGrantPools: what a grant's pool takes from its
// license (expiry, early return, revival) changes with UpdateLicense.
func TestLicenseSettingsReachGrantPools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 2; g.MaxBorrowDuration = time.Hour })
	borrowed, err := b.s.Acquire(t.Context(), server.AcquireRequest{
		LicenseKey: l.Key, Fingerprint: "laptop", Feature: "render", BorrowFor: time.Hour,
		LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret("b"),
	})
	require.NoError(t, err)
	_, err = b.s.Release(t.Context(), borrowed.Lease.ID, server.HashSecret("b"))
	requireReason(t, err, server.ReasonLeaseBorrowed)
	_, err = b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error { l.AllowEarlyReturn = true; return nil })
	require.NoError(t, err)
	_, err = b.s.Release(t.Context(), borrowed.Lease.ID, server.HashSecret("b"))
	require.NoError(t, err, "the license's early return reaches its grants")
	rcs, err := b.s.ReturnedCertificates(t.Context(), b.tenant)
	require.NoError(t, err)
	require.Len(t, rcs, 1)

	lease, tok := b.mustAcquireFeature(t, l, "render", "", "a")
	_, err = b.s.UpdateLicense(t.Context(), b.tenant, l.ID, func(l *server.License) error {
		l.ExpiresAt = b.clock.Now().Add(time.Second)
		return nil
	})
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	_, err = b.s.Heartbeat(t.Context(), lease.ID, tok)
	requireReason(t, err, server.ReasonLicenseExpired)
}

// TestGrantsChangedUnderLoad: acquisitions of a feature racing with the
// creation and deletion of its grants never hold more seats than a grant
// allows, nor a seat of a deleted grant.
func TestGrantsChangedUnderLoad(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, func(l *server.License) { l.LeaseTTL = time.Hour })
	first := b.grant(t, l, "render", func(g *server.Grant) { g.Seats = 3 })
	now := b.clock.Now()
	second := server.Grant{
		ID: server.NewGrantID(l.ID), LicenseID: l.ID, TenantID: l.TenantID, Feature: "render",
		Seats: 2, CreatedAt: now, UpdatedAt: now,
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := b.s.CreateGrant(t.Context(), second); err != nil {
			t.Error(err)
		}
		if _, err := b.s.DeleteGrant(t.Context(), b.tenant, l.ID, first.ID); err != nil {
			t.Error(err)
		}
	})
	for i := range 16 {
		wg.Go(func() {
			_, _, err := b.acquireFeature(t, l, "render", "", fmt.Sprint("m", i))
			if err != nil && server.ErrorReason(err) != server.ReasonSeatsExhausted {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	active, _, err := b.s.ListLeases(t.Context(), b.tenant, l.ID, server.LeaseActive, server.Page{})
	require.NoError(t, err)
	for _, ls := range active {
		require.Equal(t, second.ID, ls.LicenseID, "no seat of the deleted grant")
	}
	require.LessOrEqual(t, len(active), 2)
	_, err = b.s.SeatsInUse(t.Context(), b.tenant, first.ID)
	requireReason(t, err, server.ReasonLicenseNotFound)
}
