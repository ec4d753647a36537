package embedded

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/seatd/seatd/server"
)

func TestExpiryFreesSeatAtDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil) // one seat, TTL 10s
	first, hash := b.mustAcquire(t, l, "a")

	_, _, err := b.acquire(t, l, "b")
	requireReason(t, err, server.ReasonSeatsExhausted)

	b.clock.Advance(l.LeaseTTL - time.Nanosecond)
	_, _, err = b.acquire(t, l, "b")
	requireReason(t, err, server.ReasonSeatsExhausted)

	b.clock.Advance(time.Nanosecond) // at the deadline: no cleanup has run
	n, err := b.s.SeatsInUse(t.Context(), b.tenant, l.ID)
	require.NoError(t, err)
	require.Zero(t, n)
	second, _ := b.mustAcquire(t, l, "b")
	require.NotEqual(t, first.ID, second.ID)

	_, err = b.s.Heartbeat(t.Context(), first.ID, hash)
	requireReason(t, err, server.ReasonLeaseExpired)
	_, err = b.s.Release(t.Context(), first.ID, hash)
	requireReason(t, err, server.ReasonLeaseExpired)
}

func TestRevival(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		late      time.Duration // after the deadline
		seatTaken bool
		want      string // error reason, "" for revived
	}{
		{name: "within window, seat free", late: time.Second},
		{name: "within window, seat taken", late: time.Second, seatTaken: true, want: server.ReasonLeaseExpired},
		{name: "past window", late: 5 * time.Second, want: server.ReasonLeaseExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			l := b.license(t, func(l *server.License) { l.RevivalWindow = 5 * time.Second })
			ls, hash := b.mustAcquire(t, l, "a")
			b.clock.Advance(l.LeaseTTL + tc.late)
			if tc.seatTaken {
				b.mustAcquire(t, l, "b")
			}
			got, err := b.s.Heartbeat(t.Context(), ls.ID, hash)
			if tc.want != "" {
				requireReason(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			require.Equal(t, b.clock.Now().Add(l.LeaseTTL), got.ExpiresAt)
			_, _, err = b.acquire(t, l, "b")
			requireReason(t, err, server.ReasonSeatsExhausted)
		})
	}
}

func TestHeartbeatWriteBehind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := b.license(t, nil)
	ls, hash := b.mustAcquire(t, l, "a")

	b.clock.Advance(3 * time.Second)
	hb, err := b.s.Heartbeat(t.Context(), ls.ID, hash)
	require.NoError(t, err)
	require.Equal(t, ls.ExpiresAt, b.stored(t, ls.ID).ExpiresAt, "a heartbeat is not written at once")

	require.NoError(t, b.s.flush())
	require.Equal(t, hb.ExpiresAt, b.stored(t, ls.ID).ExpiresAt, "flushed")

	b.clock.Advance(3 * time.Second)
	hb, err = b.s.Heartbeat(t.Context(), ls.ID, hash)
	require.NoError(t, err)
	b.reopen(t) // Close flushes
	got, err := b.s.GetLease(t.Context(), b.tenant, ls.ID)
	require.NoError(t, err)
	require.Equal(t, hb, got)
}

// A flush holding an older version must not undo a newer synchronous write.
func TestFlushNeverOverwritesNewer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, b *bundle, l server.License, ls server.Lease, hash string) server.Lease
	}{
		{"release", func(t *testing.T, b *bundle, _ server.License, ls server.Lease, hash string) server.Lease {
			got, err := b.s.Release(t.Context(), ls.ID, hash)
			require.NoError(t, err)
			return got
		}},
		{"renewal with a new token", func(t *testing.T, b *bundle, l server.License, ls server.Lease, _ string) server.Lease {
			res, err := b.s.Acquire(t.Context(), server.AcquireRequest{
				LicenseKey: l.Key, Fingerprint: "a", LeaseID: server.NewID(server.PrefixLeaseID), TokenHash: "new",
			})
			require.NoError(t, err)
			require.True(t, res.Existing)
			return res.Lease
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			l := b.license(t, func(l *server.License) { l.LeasingStrategy = server.PerFingerprint })
			ls, hash := b.mustAcquire(t, l, "a")
			b.clock.Advance(time.Second)
			_, err := b.s.Heartbeat(t.Context(), ls.ID, hash)
			require.NoError(t, err)

			// Take the flusher's snapshot before the synchronous write,
			// store it after, as a slow flush would.
			b.s.mu.Lock()
			r, ok := b.s.idx.lookup(ls.ID)
			require.True(t, ok)
			stale := b.s.idx.activeWrite(r)
			b.s.mu.Unlock()
			want := tc.after(t, b, l, ls, hash)
			require.NoError(t, b.s.db.Update(func(tx *bolt.Tx) error {
				_, err := updateLease(tx, stale)
				return err
			}))

			got := b.stored(t, ls.ID)
			require.Equal(t, want.State, got.State)
			require.Equal(t, want.TokenHash, got.TokenHash)
		})
	}
}

func TestReopenKeepsEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 5; l.Metadata = map[string]string{"tier": "gold"} })
	key, err := b.s.CreateAPIKey(ctx, server.APIKey{ID: "key_1", TenantID: b.tenant, SecretHash: "h1", CreatedAt: b.clock.Now()})
	require.NoError(t, err)

	released, rhash := b.mustAcquire(t, l, "r")
	zombie, _ := b.mustAcquire(t, l, "z")
	b.clock.Advance(5 * time.Second)
	live, lhash := b.mustAcquire(t, l, "l")
	released, err = b.s.Release(ctx, released.ID, rhash)
	require.NoError(t, err)
	b.clock.Advance(6 * time.Second) // zombie is due, live is not
	expired, err := b.s.ExpireLeases(ctx, []server.LeaseRef{{LeaseID: zombie.ID, LicenseID: l.ID}})
	require.NoError(t, err)
	require.Len(t, expired, 1)
	live, err = b.s.Heartbeat(ctx, live.ID, lhash)
	require.NoError(t, err)

	before := b.snapshot(t, l)
	b.reopen(t)
	require.Equal(t, before, b.snapshot(t, l))

	gotKey, err := b.s.APIKeyBySecretHash(ctx, "h1")
	require.NoError(t, err)
	require.Equal(t, key, gotKey)
	got, err := b.s.GetLease(ctx, b.tenant, live.ID)
	require.NoError(t, err)
	require.Equal(t, live, got, "the heartbeat's deadline survives")

	// The reloaded expiry index still finds the live lease at its deadline.
	b.clock.Advance(l.LeaseTTL)
	due, err := b.s.DueLeases(ctx, nil, 10)
	require.NoError(t, err)
	require.Equal(t, []string{live.ID}, refIDs(due))
}

// snapshot is what a restart must keep for a license.
type snapshotOf struct {
	License server.License
	Leases  []server.Lease
	Seats   int
	Usage   []server.UsageEvent
	Cleanup []server.CleanupEvent
	Audit   []server.AuditEntry
}

func (b *bundle) snapshot(t *testing.T, l server.License) snapshotOf {
	t.Helper()
	ctx := t.Context()
	var s snapshotOf
	var err error
	s.License, err = b.s.GetLicense(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	s.Leases, _, err = b.s.ListLeases(ctx, b.tenant, l.ID, "", server.Page{})
	require.NoError(t, err)
	s.Seats, err = b.s.SeatsInUse(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	s.Usage, err = b.s.UsageEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	s.Cleanup, err = b.s.CleanupEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	s.Audit, _, err = b.s.AuditLog(ctx, b.tenant, server.Page{})
	require.NoError(t, err)
	require.Len(t, s.Leases, 3)
	require.Len(t, s.Usage, 2)
	require.Len(t, s.Cleanup, 1)
	require.Len(t, s.Audit, 1)
	require.Equal(t, 1, s.Seats)
	return s
}

func TestDueLeasesOrderAndCursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 100 })

	var want []server.LeaseRef
	for i := range 3 { // three deadlines, three leases on each
		for range 3 {
			ls, _ := b.mustAcquire(t, l, "x")
			want = append(want, server.LeaseRef{LeaseID: ls.ID, LicenseID: l.ID, ExpiresAt: ls.ExpiresAt})
		}
		b.clock.Advance(time.Duration(i+1) * time.Second)
	}
	notDue, _ := b.mustAcquire(t, l, "late")
	slices.SortFunc(want, func(a, b server.LeaseRef) int {
		if c := a.ExpiresAt.Compare(b.ExpiresAt); c != 0 {
			return c
		}
		return strings.Compare(a.LeaseID, b.LeaseID)
	})

	due, err := b.s.DueLeases(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, due, "nothing is due yet")

	b.clock.Advance(7 * time.Second) // at the last of the nine deadlines, before notDue's
	var got []server.LeaseRef
	var after *server.LeaseRef
	for {
		page, err := b.s.DueLeases(ctx, after, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = &page[len(page)-1]
	}
	require.Equal(t, want, got)
	require.NotContains(t, refIDs(got), notDue.ID)

	// DueLeases changes nothing.
	again, err := b.s.DueLeases(ctx, nil, 100)
	require.NoError(t, err)
	require.Equal(t, want, again)
}

func TestExpireLeasesConcurrentlyRecordsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 50 })
	for range 40 {
		b.mustAcquire(t, l, "x")
	}
	b.clock.Advance(l.LeaseTTL)
	refs, err := b.s.DueLeases(ctx, nil, 100)
	require.NoError(t, err)
	require.Len(t, refs, 40)

	var wg sync.WaitGroup
	results := make([][]server.Lease, 4)
	for i := range results {
		wg.Go(func() {
			got, err := b.s.ExpireLeases(ctx, refs)
			require.NoError(t, err)
			results[i] = got
		})
	}
	wg.Wait()

	seen := map[string]int{}
	for _, r := range results {
		for _, ls := range r {
			require.Equal(t, server.LeaseExpired, ls.State)
			seen[ls.ID]++
		}
	}
	require.Len(t, seen, 40)
	for id, n := range seen {
		require.Equal(t, 1, n, "lease %s expired by two calls", id)
	}

	again, err := b.s.ExpireLeases(ctx, refs)
	require.NoError(t, err)
	require.Empty(t, again)

	usage, err := b.s.UsageEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	cleanup, err := b.s.CleanupEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	require.Len(t, usage, 40)
	require.Len(t, cleanup, 40)
	audit, _, err := b.s.AuditLog(ctx, b.tenant, server.Page{})
	require.NoError(t, err)
	require.Len(t, audit, 40)
	for _, a := range audit {
		require.Equal(t, "system", a.Actor)
		require.Equal(t, "lease.expire", a.Action)
	}
}

func TestZombieReport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	big := b.license(t, func(l *server.License) { l.Seats = 10; l.Name = "big" })
	small := b.license(t, func(l *server.License) { l.Seats = 10; l.Name = "small" })
	start := b.clock.Now()

	// Day 1: three zombies on big (a fourth lease is released), one on small.
	b.mustAcquire(t, big, "x")
	rel, relHash := b.mustAcquire(t, big, "x")
	b.mustAcquire(t, big, "x")
	b.mustAcquire(t, big, "x")
	b.mustAcquire(t, small, "x")
	_, err := b.s.Release(ctx, rel.ID, relHash)
	require.NoError(t, err)
	b.clock.Advance(big.LeaseTTL + 2*time.Minute) // cleaned 2m10s after the last heartbeat
	require.Len(t, expireAll(t, b), 4)

	// Day 2: one zombie on small.
	b.clock.Advance(24 * time.Hour)
	b.mustAcquire(t, small, "x")
	b.clock.Advance(small.LeaseTTL + 50*time.Second) // cleaned 1m after
	require.Len(t, expireAll(t, b), 1)

	rep, err := b.s.ZombieReport(ctx, server.ZombieQuery{TenantID: b.tenant, Start: start, End: b.clock.Now().Add(time.Second)})
	require.NoError(t, err)
	require.EqualValues(t, 5, rep.Total)
	require.Equal(t, []server.ZombieDay{
		{Date: "2030-01-02", ZombiesCleaned: 4, AffectedLicenses: 2},
		{Date: "2030-01-03", ZombiesCleaned: 1, AffectedLicenses: 1},
	}, rep.Days)
	require.InDelta(t, (4*(2*60+10)+60)/5.0/60.0, rep.MeanMinutesToCleanup, 1e-9)
	require.Len(t, rep.TopLicenses, 2)
	top := rep.TopLicenses[0]
	require.Equal(t, server.LicenseZombies{LicenseID: big.ID, LicenseName: "big", ZombieCount: 3, LeaseCount: 4, Percentage: 75}, top)
	require.Equal(t, server.LicenseZombies{LicenseID: small.ID, LicenseName: "small", ZombieCount: 2, LeaseCount: 2, Percentage: 100}, rep.TopLicenses[1])

	rep, err = b.s.ZombieReport(ctx, server.ZombieQuery{TenantID: b.tenant, Start: start, End: start.Add(24 * time.Hour), TopLimit: 1})
	require.NoError(t, err)
	require.EqualValues(t, 4, rep.Total, "the window's end is exclusive of day 2")
	require.Len(t, rep.TopLicenses, 1)

	rep, err = b.s.ZombieReport(ctx, server.ZombieQuery{TenantID: "other", Start: start, End: b.clock.Now()})
	require.NoError(t, err)
	require.Zero(t, rep.Total)
}

func TestOpenFailsWhileInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := Open(b.dir, Options{})
	require.ErrorContains(t, err, "in use by another seatd process")
}

func expireAll(t *testing.T, b *bundle) []server.Lease {
	t.Helper()
	refs, err := b.s.DueLeases(t.Context(), nil, 1000)
	require.NoError(t, err)
	got, err := b.s.ExpireLeases(t.Context(), refs)
	require.NoError(t, err)
	return got
}

func refIDs(refs []server.LeaseRef) []string {
	var ids []string
	for _, r := range refs {
		ids = append(ids, r.LeaseID)
	}
	return ids
}

func TestDeletedLicenseStaysDeletedAfterReopen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	l := b.license(t, func(l *server.License) { l.Seats = 2 })
	b.mustAcquire(t, l, "a")
	b.mustAcquire(t, l, "b")
	n, err := b.s.DeleteLicense(ctx, b.tenant, l.ID)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	b.reopen(t)
	_, err = b.s.GetLicense(ctx, b.tenant, l.ID)
	requireReason(t, err, server.ReasonLicenseNotFound)
	_, _, err = b.acquire(t, l, "c")
	requireReason(t, err, server.ReasonLicenseNotFound)
	list, _, err := b.s.ListLicenses(ctx, b.tenant, server.Page{})
	require.NoError(t, err)
	require.Empty(t, list)
	usage, err := b.s.UsageEvents(ctx, b.tenant, l.ID)
	require.NoError(t, err, "history stays readable")
	require.Len(t, usage, 2)
	for _, u := range usage {
		require.Equal(t, server.LeaseRevoked, u.EndState)
	}
	audit, _, err := b.s.AuditLog(ctx, b.tenant, server.Page{})
	require.NoError(t, err)
	require.Len(t, audit, 2)
	require.Equal(t, "lease.revoke", audit[0].Action)

	// The key is free again; the id is not.
	_, err = b.s.CreateLicense(ctx, server.License{ID: server.NewID(server.PrefixLicenseID), TenantID: b.tenant, Key: l.Key, Seats: 1, LeaseTTL: time.Second, Active: true})
	require.NoError(t, err)
	l.Key = server.NewSecret(server.PrefixLicenseKey)
	_, err = b.s.CreateLicense(ctx, l)
	require.Equal(t, server.ECONFLICT, server.ErrorCode(err))
}
