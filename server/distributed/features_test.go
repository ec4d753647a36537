package distributed

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/internal/redistest"
	"github.com/seatd/seatd/server"
)

// Feature grants in distributed mode: each grant a pool of its own
// (invariant 12), all pools of a license judged by one script.

func mkGrant(t *testing.T, s *Store, lic server.License, feature, version string, seats int, expires time.Time) server.Grant {
	t.Helper()
	now := time.Now().UTC()
	g, err := s.CreateGrant(t.Context(), server.Grant{
		ID: server.NewGrantID(lic.ID), LicenseID: lic.ID, TenantID: lic.TenantID, Feature: feature, Version: version,
		Seats: seats, ExpiresAt: expires, CreatedAt: now, UpdatedAt: now,
	})
	require.NoError(t, err)
	return g
}

func tryFeature(ctx context.Context, s *Store, key, fp, feature, version string) (server.AcquireResult, string, error) {
	tok := server.NewSecret(server.PrefixLeaseToken)
	res, err := s.Acquire(ctx, server.AcquireRequest{
		LicenseKey: key, Fingerprint: fp, LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: server.HashSecret(tok),
		Feature: feature, Version: version,
	})
	return res, tok, err
}

func acqFeature(t *testing.T, s *Store, key, fp, feature, version string) (server.AcquireResult, string) {
	t.Helper()
	res, tok, err := tryFeature(t.Context(), s, key, fp, feature, version)
	require.NoError(t, err, "Acquire(%s, %s %s)", fp, feature, version)
	return res, tok
}

// TestFeatureAcquisitionTakesGrantsInPickOrder: the grant that expires
// first, then the next; the lease names its pool, feature and version; a
// full feature is refused with the sums; base seats are apart.
func TestFeatureAcquisitionTakesGrantsInPickOrder(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	soon := mkGrant(t, s, lic, "render", "2024", 1, time.Now().Add(24*time.Hour))
	later := mkGrant(t, s, lic, "render", "2025", 1, time.Now().Add(48*time.Hour))
	mkGrant(t, s, lic, "sim", "", 2, time.Time{})

	a, tokA := acqFeature(t, s, lic.Key, "a", "render", "2024")
	require.Equal(t, soon.ID, a.Lease.LicenseID)
	require.Equal(t, soon.ID, a.Lease.GrantID())
	require.Equal(t, lic.ID, a.Lease.LicenseOf())
	require.Equal(t, "render", a.Lease.Feature)
	require.Equal(t, "2024", a.Lease.Version)
	require.NotNil(t, a.Grant)
	require.Equal(t, soon.ID, a.Grant.ID)
	require.Equal(t, lic.ID, a.License.ID)
	require.Len(t, a.License.Grants, 3)
	require.Equal(t, 1, a.SeatsInUse)

	b, _ := acqFeature(t, s, lic.Key, "b", "render", "2024")
	require.Equal(t, later.ID, b.Lease.LicenseID, "the first grant is full: the next in pick order")
	_, _, err := tryFeature(t.Context(), s, lic.Key, "c", "render", "2024")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
	require.Contains(t, err.Error(), "2 of 2")
	_, _, err = tryFeature(t.Context(), s, lic.Key, "c", "render", "2026")
	requireCode(t, err, server.EPRECONDITION, server.ReasonVersionNotLicensed)
	_, _, err = tryFeature(t.Context(), s, lic.Key, "c", "cam", "")
	requireCode(t, err, server.EPRECONDITION, server.ReasonFeatureNotLicensed)

	// Dedupe is per feature: a's base lease is another lease; a's render
	// again is the same one.
	base, _ := acq(t, s, lic.Key, "a")
	require.False(t, base.Existing)
	require.Equal(t, lic.ID, base.Lease.LicenseID)
	again, tokA2 := acqFeature(t, s, lic.Key, "a", "render", "2024")
	require.True(t, again.Existing)
	require.Equal(t, a.Lease.ID, again.Lease.ID)
	require.Equal(t, "render", again.Lease.Feature)

	// Heartbeat, views and release work per pool.
	hb, err := s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA2))
	require.NoError(t, err)
	require.Equal(t, "render", hb.Feature)
	require.Equal(t, soon.ID, hb.LicenseID)
	_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
	requireCode(t, err, server.EPERMISSION, server.ReasonLeaseTokenWrong)
	all, _, err := s.ListLeases(t.Context(), tn.ID, lic.ID, "", server.Page{})
	require.NoError(t, err)
	require.Len(t, all, 3, "the license's leases include its grants'")
	only, _, err := s.ListLeases(t.Context(), tn.ID, later.ID, "", server.Page{})
	require.NoError(t, err)
	require.Len(t, only, 1)
	require.Equal(t, b.Lease.ID, only[0].ID)
	n, err := s.SeatsInUse(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the base pool only")
	per, err := s.SeatsInUseOf(t.Context(), tn.ID, []string{lic.ID, soon.ID, later.ID})
	require.NoError(t, err)
	require.Equal(t, map[string]int{lic.ID: 1, soon.ID: 1, later.ID: 1}, per)
	got, err := s.GetLicense(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Len(t, got.Grants, 3)
	lics, _, err := s.ListLicenses(t.Context(), tn.ID, server.Page{})
	require.NoError(t, err)
	require.Len(t, lics, 1, "grants are no licenses")
	require.Len(t, lics[0].Grants, 3)
	byKey, err := s.LicenseByKey(t.Context(), lic.Key)
	require.NoError(t, err)
	require.Len(t, byKey.Grants, 3)

	rel, err := s.Release(t.Context(), a.Lease.ID, server.HashSecret(tokA2))
	require.NoError(t, err)
	require.Equal(t, server.LeaseReleased, rel.State)
	c, _ := acqFeature(t, s, lic.Key, "c", "render", "2024")
	require.Equal(t, soon.ID, c.Lease.LicenseID, "the seat released is free again")
	evs, _, err := s.ListUsageEvents(t.Context(), server.EventRange{TenantID: tn.ID, LicenseID: lic.ID, Feature: "render"}, server.Page{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "render", evs[0].Feature)
	require.Equal(t, soon.ID, evs[0].LicenseID)
}

// TestGrantChangesReachEveryInstance: a grant created, updated or deleted
// through one instance is what the next acquisition on another judges by
// (its cached grants are stale by the license's version in Redis).
func TestGrantChangesReachEveryInstance(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	other := loc.open(t, nil)
	t.Cleanup(func() { _ = other.Close() })
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	mkGrant(t, s, lic, "render", "", 1, time.Time{})
	acqFeature(t, other, lic.Key, "a", "render", "") // other caches the grants
	_, _, err := tryFeature(t.Context(), other, lic.Key, "x", "sim", "")
	requireCode(t, err, server.EPRECONDITION, server.ReasonFeatureNotLicensed)

	sim := mkGrant(t, s, lic, "sim", "", 1, time.Time{})
	r, _ := acqFeature(t, other, lic.Key, "b", "sim", "")
	require.Equal(t, sim.ID, r.Lease.LicenseID, "a grant created elsewhere grants at once")

	_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, sim.ID, func(g *server.Grant) error { g.Seats = 2; return nil })
	require.NoError(t, err)
	acqFeature(t, other, lic.Key, "c", "sim", "")

	revoked, err := s.DeleteGrant(t.Context(), tn.ID, lic.ID, sim.ID)
	require.NoError(t, err)
	require.Equal(t, 2, revoked)
	_, _, err = tryFeature(t.Context(), other, lic.Key, "d", "sim", "")
	requireCode(t, err, server.EPRECONDITION, server.ReasonFeatureNotLicensed)
	_, err = s.DeleteGrant(t.Context(), tn.ID, lic.ID, sim.ID)
	requireCode(t, err, server.ENOTFOUND, server.ReasonGrantNotFound)
}

// TestGrantNotStartedAndLicenseSettingsReachGrants: a grant refuses before
// its start; switching the license off reaches its grants' pools.
func TestGrantNotStartedAndLicenseSettingsReachGrants(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	now := time.Now().UTC()
	start := now.Add(time.Hour)
	_, err := s.CreateGrant(t.Context(), server.Grant{ID: server.NewGrantID(lic.ID), LicenseID: lic.ID, TenantID: tn.ID,
		Feature: "later", Seats: 1, StartsAt: start, CreatedAt: now, UpdatedAt: now})
	require.NoError(t, err)
	_, _, err = tryFeature(t.Context(), s, lic.Key, "a", "later", "")
	requireCode(t, err, server.EPRECONDITION, server.ReasonGrantNotStarted)

	g := mkGrant(t, s, lic, "render", "", 1, time.Time{})
	acqFeature(t, s, lic.Key, "a", "render", "")
	_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Active = false; return nil })
	require.NoError(t, err)
	_, _, err = tryFeature(t.Context(), s, lic.Key, "b", "render", "")
	requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive)
	pools, _, err := s.rec.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
		l.Active, l.LeaseTTL = true, 2*time.Hour
		return nil
	})
	_ = pools
	require.NoError(t, err)
	row, err := s.rec.License(t.Context(), g.ID)
	require.NoError(t, err)
	require.Equal(t, 2*time.Hour, row.LeaseTTL, "the grant's pool takes the license's TTL")
	require.True(t, row.Active)
}

// TestRedisLossWithLeasesInSeveralGrants: after Redis restarts empty, every
// pool is rebuilt from the record before a feature acquisition judges it:
// no grant is over its limit, old tokens work, dedupe holds.
func TestRedisLossWithLeasesInSeveralGrants(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	g1 := mkGrant(t, s, lic, "render", "2024", 2, time.Now().Add(24*time.Hour))
	g2 := mkGrant(t, s, lic, "render", "2025", 2, time.Now().Add(48*time.Hour))
	toks := map[string]string{}
	var leases []server.Lease
	for i := range 4 {
		r, tok := acqFeature(t, s, lic.Key, fmt.Sprintf("fp-%d", i), "render", "2024")
		toks[r.Lease.ID] = tok
		leases = append(leases, r.Lease)
	}
	_, rdb := testServers(t)
	require.NoError(t, deletePrefix(t.Context(), rdb, loc.prefix), "simulate Redis restarting empty")

	s2 := loc.open(t, nil)
	t.Cleanup(func() { _ = s2.Close() })
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 30 {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			_, _, err := tryFeature(t.Context(), st, lic.Key, fmt.Sprintf("new-%d", i), "render", "")
			switch {
			case err == nil:
				granted.Add(1)
			case server.ErrorCode(err) != server.EEXHAUSTED:
				t.Errorf("acquire after Redis loss: %v", err)
			}
		})
	}
	wg.Wait()
	require.Zero(t, granted.Load(), "seats granted over the grants' limits after Redis loss")
	per, err := s.SeatsInUseOf(t.Context(), tn.ID, []string{g1.ID, g2.ID})
	require.NoError(t, err)
	require.Equal(t, map[string]int{g1.ID: 2, g2.ID: 2}, per)
	for _, l := range leases {
		_, err := s2.Heartbeat(t.Context(), l.ID, server.HashSecret(toks[l.ID]))
		require.NoError(t, err, "lease %s of %s", l.ID, l.LicenseID)
	}
	again, _ := acqFeature(t, s2, lic.Key, "fp-3", "render", "2024")
	require.True(t, again.Existing, "dedupe survives Redis loss, in whichever grant")
	require.Equal(t, leases[3].ID, again.Lease.ID)
}

// TestDeleteLicenseEndsItsGrantsLeases: one transaction revokes the leases
// of the license and its grants; the grants' leases stop heartbeating.
func TestDeleteLicenseEndsItsGrantsLeases(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	mkGrant(t, s, lic, "render", "", 2, time.Time{})
	acq(t, s, lic.Key, "a")
	r, tok := acqFeature(t, s, lic.Key, "a", "render", "")
	revoked, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
	require.NoError(t, err)
	require.Equal(t, 2, revoked)
	_, err = s.Heartbeat(t.Context(), r.Lease.ID, server.HashSecret(tok))
	require.Error(t, err)
	_, _, err = tryFeature(t.Context(), s, lic.Key, "b", "render", "")
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound)
}

// TestGrantLeasesLapseAndAreCleanedUp: the expiry hint, DueLeases and
// ExpireLeases work per pool; the cleanup event names the feature.
func TestGrantLeasesLapseAndAreCleanedUp(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Second)
	g := mkGrant(t, s, lic, "render", "", 1, time.Time{})
	r, _ := acqFeature(t, s, lic.Key, "a", "render", "")
	require.Eventually(t, func() bool {
		refs, err := s.DueLeases(t.Context(), nil, 10)
		return err == nil && len(refs) == 1 && refs[0].LeaseID == r.Lease.ID && refs[0].LicenseID == g.ID
	}, 10*time.Second, 50*time.Millisecond)
	refs, err := s.DueLeases(t.Context(), nil, 10)
	require.NoError(t, err)
	exp, err := s.ExpireLeases(t.Context(), refs)
	require.NoError(t, err)
	require.Len(t, exp, 1)
	require.Equal(t, "render", exp[0].Feature)
	evs, _, err := s.ListCleanupEvents(t.Context(), server.EventRange{TenantID: tn.ID, LicenseID: lic.ID}, server.Page{})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, "render", evs[0].Feature)
	none, _, err := s.ListCleanupEvents(t.Context(), server.EventRange{TenantID: tn.ID, Feature: "sim"}, server.Page{})
	require.NoError(t, err)
	require.Empty(t, none)
	acqFeature(t, s, lic.Key, "b", "render", "")
}

// TestGrantDeletedAndUpdatedUnderLoad: acquisitions, heartbeats and
// releases of a feature go on while its grants are updated and one is
// deleted: no grant is ever over its limit (counted from the record), and
// every call answers a proper error.
func TestGrantDeletedAndUpdatedUnderLoad(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	s2 := loc.open(t, nil)
	t.Cleanup(func() { _ = s2.Close() })
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	g1 := mkGrant(t, s, lic, "render", "", 3, time.Now().Add(time.Hour))
	g2 := mkGrant(t, s, lic, "render", "", 3, time.Time{})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range 6 {
		st := s
		if w%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				r, tok, err := tryFeature(ctx, st, lic.Key, fmt.Sprintf("w%d-%d", w, i%5), "render", "")
				switch {
				case err == nil:
					if i%2 == 0 {
						_, _ = st.Release(ctx, r.Lease.ID, server.HashSecret(tok))
					} else {
						_, _ = st.Heartbeat(ctx, r.Lease.ID, server.HashSecret(tok))
					}
				case ctx.Err() != nil:
				case server.ErrorCode(err) == server.EEXHAUSTED, server.ErrorCode(err) == server.EUNAVAILABLE:
				default:
					t.Errorf("acquire under grant changes: %v", err)
				}
			}
		})
	}
	for i := range 5 {
		_, err := s.UpdateGrant(t.Context(), tn.ID, lic.ID, g2.ID, func(g *server.Grant) error { g.Seats = 1 + i%3; return nil })
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
	}
	_, err := s2.DeleteGrant(t.Context(), tn.ID, lic.ID, g1.ID)
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	cancel()
	wg.Wait()

	db := loc.db(t)
	var active int
	require.NoError(t, db.QueryRow(t.Context(), `SELECT count(*) FROM sessions WHERE license_id = $1 AND state = 'active'`,
		g1.ID).Scan(&active))
	require.Zero(t, active, "a deleted grant holds no active lease")
	require.NoError(t, db.QueryRow(t.Context(), `SELECT count(*) FROM sessions WHERE license_id = $1 AND state = 'active'`,
		g2.ID).Scan(&active))
	require.LessOrEqual(t, active, 3, "the record never holds more than the grant's limit (seats were 3 at most)")
	n, err := s.SeatsInUse(t.Context(), tn.ID, g2.ID)
	require.NoError(t, err)
	require.LessOrEqual(t, n, 3)
}

// TestFeatureSeatLimitAcrossInstancesOnRedisCluster: the pools of a
// license share one slot (the license's hash tag), so one script judges
// them all on a cluster; three stores never grant more than the grants'
// limits.
func TestFeatureSeatLimitAcrossInstancesOnRedisCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.StartCluster(t, 3)
	loc := newLocation(t)
	loc.redisURL = cluster.URL()
	var stores []*Store
	for range 3 {
		s := loc.open(t, nil)
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	tn := mkTenant(t, stores[0])
	var lics []server.License
	for range 3 {
		lic := mkLicense(t, stores[0], tn.ID, 1, time.Hour)
		mkGrant(t, stores[0], lic, "render", "2024", 2, time.Now().Add(time.Hour))
		mkGrant(t, stores[0], lic, "render", "2025", 1, time.Time{})
		lics = append(lics, lic)
	}
	var granted [3]atomic.Int64
	var wg sync.WaitGroup
	for i := range 45 {
		wg.Go(func() {
			li := i % len(lics)
			_, _, err := tryFeature(t.Context(), stores[i%len(stores)], lics[li].Key, fmt.Sprintf("fp-%d", i), "render", "2024")
			switch {
			case err == nil:
				granted[li].Add(1)
			case server.ErrorCode(err) != server.EEXHAUSTED:
				t.Errorf("acquire: %v", err)
			}
		})
	}
	wg.Wait()
	for i := range lics {
		require.EqualValues(t, 3, granted[i].Load(), "license %d: seats of its two grants", i)
	}
	keys := stores[0].live.Keys()
	g := server.NewGrantID(lics[0].ID)
	require.Equal(t, keys.License(lics[0].ID)[0][:len(loc.prefix)+len(lics[0].ID)+2], keys.License(g)[0][:len(loc.prefix)+len(lics[0].ID)+2],
		"a grant's keys carry its license's hash tag")
}

// TestGrantPoolsAreReconciledTakenAndAdopted: the per-license repairs work
// per pool: a grant's settings left behind in Redis are pushed again
// (syncConf), and so are the license's (whose version carries its grants:
// a stale one is brought up to date by the acquisition itself); a waiter's
// unconfirmed grant of a feature is taken back (take.lua).
func TestGrantPoolsAreReconciledAndTaken(t *testing.T) {
	t.Parallel()
	_, s, tn := openStore(t, nil)
	lic := mkLicense(t, s, tn.ID, 1, time.Hour)
	g := mkGrant(t, s, lic, "render", "", 3, time.Time{})
	acqFeature(t, s, lic.Key, "a", "render", "")
	_, err := s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 1; return nil })
	require.NoError(t, err)
	version, seats := liveConf(t, s, g.ID)
	require.Equal(t, "1", seats)
	// Roll Redis back to the settings before the update, pool and license.
	require.NoError(t, s.rdb.HSet(t.Context(), s.live.Keys().License(g.ID)[0], "version", "1", "seats", "3").Err())
	licVersion, _ := liveConf(t, s, lic.ID)
	require.NoError(t, s.syncConf(t.Context()))
	v, seats := liveConf(t, s, g.ID)
	require.Equal(t, [2]string{version, "1"}, [2]string{v, seats}, "the grant's settings pushed again from the record")
	v, _ = liveConf(t, s, lic.ID)
	require.Equal(t, licVersion, v)
	_, _, err = tryFeature(t.Context(), s, lic.Key, "b", "render", "")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)

	// A license's version in Redis behind its record: the acquisition
	// pushes it and judges again.
	require.NoError(t, s.rdb.HSet(t.Context(), s.live.Keys().License(lic.ID)[0], "version", "1").Err())
	_, _, err = tryFeature(t.Context(), s, lic.Key, "b", "render", "")
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
	v, _ = liveConf(t, s, lic.ID)
	require.Equal(t, licVersion, v)

	// take.lua on a grant's pool.
	_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 2; return nil })
	require.NoError(t, err)
	w, _ := acqFeature(t, s, lic.Key, "waiter", "render", "")
	revoked, ok, err := s.RevokeUnconfirmed(t.Context(), w.Lease)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, server.LeaseRevoked, revoked.State)
	require.Equal(t, "render", revoked.Feature)
}
