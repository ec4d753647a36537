package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// Features: a license's feature grants (server/grants.go). Each grant is a
// pool of its own (invariant 12): a request for a feature at a version
// takes a seat of the first grant, in pick order, that covers the version,
// is current and has a free seat, in one atomic step with the count.

// grantFor returns a valid grant of the license, not yet stored: one seat
// of feature, every version, no dates. mut adjusts it.
func grantFor(l server.License, feature string, mut func(*server.Grant)) server.Grant {
	at := now()
	g := server.Grant{
		ID: server.NewGrantID(l.ID), LicenseID: l.ID, TenantID: l.TenantID,
		Feature: feature, Seats: 1, CreatedAt: at, UpdatedAt: at,
	}
	if mut != nil {
		mut(&g)
	}
	return g
}

// newGrant stores grantFor(l, feature, mut).
func newGrant(t *testing.T, s server.Store, l server.License, feature string, mut func(*server.Grant)) server.Grant {
	t.Helper()
	want := grantFor(l, feature, mut)
	got, err := s.CreateGrant(t.Context(), want)
	require.NoError(t, err, "CreateGrant(%s)", feature)
	requireGrant(t, want, got)
	return got
}

func requireGrant(t *testing.T, want, got server.Grant) {
	t.Helper()
	require.Equal(t, want.ID, got.ID, "grant ID")
	require.Equal(t, want.LicenseID, got.LicenseID, "grant LicenseID")
	require.Equal(t, want.TenantID, got.TenantID, "grant TenantID")
	require.Equal(t, want.Feature, got.Feature, "grant Feature")
	require.Equal(t, want.Version, got.Version, "grant Version")
	require.Equal(t, want.Seats, got.Seats, "grant Seats")
	require.Equal(t, want.Overdraft, got.Overdraft, "grant Overdraft")
	require.Equal(t, want.MaxBorrowDuration, got.MaxBorrowDuration, "grant MaxBorrowDuration")
	require.Equal(t, want.MaxBorrowedSeats, got.MaxBorrowedSeats, "grant MaxBorrowedSeats")
	requireSameTime(t, want.StartsAt, got.StartsAt, "grant StartsAt")
	requireSameTime(t, want.ExpiresAt, got.ExpiresAt, "grant ExpiresAt")
	requireSameTime(t, want.CreatedAt, got.CreatedAt, "grant CreatedAt")
}

// Grant adjusters.
func grantVersion(v string) func(*server.Grant) { return func(g *server.Grant) { g.Version = v } }

func grantSeats(n int) func(*server.Grant) { return func(g *server.Grant) { g.Seats = n } }

func grantExpires(at time.Time) func(*server.Grant) {
	return func(g *server.Grant) { g.ExpiresAt = at }
}

func grantStarts(at time.Time) func(*server.Grant) { return func(g *server.Grant) { g.StartsAt = at } }

func grantWith(muts ...func(*server.Grant)) func(*server.Grant) {
	return func(g *server.Grant) {
		for _, m := range muts {
			m(g)
		}
	}
}

// with2 applies both request adjusters.
func with2(a, b func(*server.AcquireRequest)) func(*server.AcquireRequest) {
	return func(r *server.AcquireRequest) { a(r); b(r) }
}

// ofFeature asks for a feature at a version.
func ofFeature(feature, version string) func(*server.AcquireRequest) {
	return func(r *server.AcquireRequest) { r.Feature, r.Version = feature, version }
}

// acquireFeature acquires a seat of a feature that must be granted from
// grant want, and checks what every such grant returns.
func acquireFeature(t *testing.T, s server.Store, l server.License, want server.Grant, fingerprint, version string, mut func(*server.AcquireRequest)) (server.AcquireResult, string) {
	t.Helper()
	req, token := acquireReq(l.Key, fingerprint, func(r *server.AcquireRequest) {
		r.Feature, r.Version = want.Feature, version
		if mut != nil {
			mut(r)
		}
	})
	res, err := s.Acquire(t.Context(), req)
	require.NoError(t, err, "Acquire(%s %s for %q)", want.Feature, version, fingerprint)
	ls := res.Lease
	require.Equal(t, want.ID, ls.LicenseID, "the lease is of grant %s (%s)", want.ID, want.Version)
	require.Equal(t, want.ID, ls.GrantID())
	require.Equal(t, l.ID, ls.LicenseOf())
	require.Equal(t, l.ID, res.License.ID, "result License is the license")
	require.NotNil(t, res.Grant, "result Grant")
	require.Equal(t, want.ID, res.Grant.ID, "result Grant")
	require.Equal(t, want.Feature, ls.Feature, "lease Feature")
	require.Equal(t, server.LeaseActive, ls.State)
	require.Equal(t, req.TokenHash, ls.TokenHash)
	require.GreaterOrEqual(t, res.SeatsInUse, 1)
	if !res.Existing {
		require.Equal(t, version, ls.Version, "lease Version: the version asked")
		require.Equal(t, req.LeaseID, ls.ID)
		require.LessOrEqual(t, res.SeatsInUse, res.Grant.SeatLimit(), "SeatsInUse above the grant's limit")
		if !ls.Borrowed {
			require.WithinDuration(t, ls.LastHeartbeatAt.Add(l.LeaseTTL), ls.ExpiresAt, timeSlack, "deadline = LastHeartbeatAt + the license's TTL")
		}
	}
	return res, token
}

func testFeatures(t *testing.T, newBackend Backend) {
	w := sleepers(t)
	defer w.wait()

	t.Run("GrantsAreKeptAndListedWithTheirLicense", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(5))
		at := now()
		sim := newGrant(t, s, lic, "sim", nil)
		r25 := newGrant(t, s, lic, "render", grantWith(grantVersion("2025"), grantSeats(3), grantExpires(at.Add(48*time.Hour)),
			func(g *server.Grant) { g.Overdraft, g.MaxBorrowDuration, g.MaxBorrowedSeats = 1, time.Hour, 2 }))
		r24 := newGrant(t, s, lic, "render", grantWith(grantVersion("2024"), grantSeats(2), grantExpires(at.Add(24*time.Hour)), grantStarts(at.Add(-time.Hour))))

		for _, got := range []server.License{getLicense(t, s, tn.ID, lic.ID), licenseByKey(t, s, lic.Key), listLicenses(t, s, tn.ID, 10)[0]} {
			requireLicense(t, lic, got)
			require.Len(t, got.Grants, 3, "grants of the license")
			requireGrant(t, r24, got.Grants[0]) // render, first to expire
			requireGrant(t, r25, got.Grants[1])
			requireGrant(t, sim, got.Grants[2])
		}
		require.Len(t, listLicenses(t, s, tn.ID, 10), 1, "a grant is not a license")
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, lic.ID))

		// Update: the fields change, the feature and the ids do not.
		up, err := s.UpdateGrant(t.Context(), tn.ID, lic.ID, r25.ID, func(g *server.Grant) error {
			g.Seats, g.Version, g.Feature = 4, "2025.1", "other"
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 4, up.Seats)
		require.Equal(t, "2025.1", up.Version)
		require.Equal(t, "render", up.Feature, "a grant's feature cannot change")
		require.Equal(t, r25.ID, up.ID)
		got := getLicense(t, s, tn.ID, lic.ID)
		requireGrant(t, up, *got.Grant(r25.ID))

		// A refused update changes nothing.
		_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, r25.ID, func(g *server.Grant) error {
			g.Seats = 9
			return server.Invalid("grant.seats", "no")
		})
		requireCode(t, err, server.EINVALID, "")
		got = getLicense(t, s, tn.ID, lic.ID)
		require.Equal(t, 4, got.Grant(r25.ID).Seats)

		// Unknown grants and licenses, and another tenant's.
		_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, server.NewGrantID(lic.ID), func(*server.Grant) error { return nil })
		requireCode(t, err, server.ENOTFOUND, server.ReasonGrantNotFound)
		_, err = s.DeleteGrant(t.Context(), tn.ID, lic.ID, server.NewGrantID(lic.ID))
		requireCode(t, err, server.ENOTFOUND, server.ReasonGrantNotFound)
		other := newTenant(t, s)
		_, err = s.UpdateGrant(t.Context(), other.ID, lic.ID, r25.ID, func(*server.Grant) error { return nil })
		requireCode(t, err, server.ENOTFOUND, "", "another tenant's grant")
		_, err = s.DeleteGrant(t.Context(), other.ID, lic.ID, r25.ID)
		requireCode(t, err, server.ENOTFOUND, "", "another tenant's grant")
		g := grantFor(lic, "cam", nil)
		g.TenantID = other.ID
		_, err = s.CreateGrant(t.Context(), g)
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "a grant on another tenant's license")
		missing := licenseFor(tn.ID, nil)
		_, err = s.CreateGrant(t.Context(), grantFor(missing, "cam", nil))
		requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "a grant on a missing license")
		require.Len(t, getLicense(t, s, tn.ID, lic.ID).Grants, 3, "refused creates add nothing")

		// Delete.
		n, err := s.DeleteGrant(t.Context(), tn.ID, lic.ID, sim.ID)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Len(t, getLicense(t, s, tn.ID, lic.ID).Grants, 2)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "a", ofFeature("sim", ""))
		requireCode(t, err, server.EPRECONDITION, server.ReasonFeatureNotLicensed, "a deleted grant's feature")
	})

	t.Run("PickOrderFirstExpiringThenLowestCoveringVersion", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		at := now()
		r24 := newGrant(t, s, lic, "render", grantWith(grantVersion("2024"), grantExpires(at.Add(24*time.Hour))))
		r25 := newGrant(t, s, lic, "render", grantWith(grantVersion("2025"), grantExpires(at.Add(48*time.Hour))))
		// Same expiry as r25, a higher version: r25 is taken before it.
		r26 := newGrant(t, s, lic, "render", grantWith(grantVersion("2026"), grantExpires(at.Add(48*time.Hour))))
		sim := newGrant(t, s, lic, "sim", grantSeats(2))

		// The base pool is apart: its seat is not a render seat.
		base, _ := acquire(t, s, lic, "m1", nil)
		require.Empty(t, base.Lease.Feature)
		require.Empty(t, base.Lease.GrantID())
		require.Nil(t, base.Grant)

		a, _ := acquireFeature(t, s, lic, r24, "m1", "2024", nil) // the grant that expires first
		require.False(t, a.Existing, "base and render are two leases of one machine")
		b, _ := acquireFeature(t, s, lic, r25, "m2", "2024", nil) // r24 is full: the next to expire
		require.Equal(t, 1, b.SeatsInUse, "the grant's seats in use")
		c, _ := acquireFeature(t, s, lic, r26, "m3", "2024.5", nil) // same expiry as r25: the lowest version that covers
		_, _, err := tryAcquire(t.Context(), s, lic.Key, "m4", ofFeature("render", "2024"))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "every covering grant is full")
		require.Equal(t, map[string]string{"seats_in_use": "3", "seat_limit": "3", "feature": "render"}, errMeta(err))
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m4", ofFeature("render", "2027"))
		requireCode(t, err, server.EPRECONDITION, server.ReasonVersionNotLicensed)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m4", ofFeature("cam", ""))
		requireCode(t, err, server.EPRECONDITION, server.ReasonFeatureNotLicensed)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m4", nil)
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the base pool's one seat")
		// A request for 2026 may only take r26's seat, which is taken.
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m5", ofFeature("render", "2026"))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		require.Equal(t, "1", errMeta(err)["seat_limit"], "only the grants that cover 2026 count")
		// Another feature has its own seats.
		acquireFeature(t, s, lic, sim, "m4", "7.1", nil)
		// Expiry first, even when the grant that expires first is the newer.
		newer := newGrant(t, s, lic, "cad", grantWith(grantVersion("2025"), grantExpires(at.Add(24*time.Hour))))
		newGrant(t, s, lic, "cad", grantWith(grantVersion("2024"), grantExpires(at.Add(48*time.Hour))))
		acquireFeature(t, s, lic, newer, "m1", "2024", nil)

		inUse, err := s.SeatsInUseOf(t.Context(), tn.ID, []string{lic.ID, r24.ID, r25.ID, r26.ID, sim.ID})
		require.NoError(t, err)
		require.Equal(t, map[string]int{lic.ID: 1, r24.ID: 1, r25.ID: 1, r26.ID: 1, sim.ID: 1}, inUse)
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, lic.ID), "a license's own count is its base pool's")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, r24.ID))

		// The leases record the feature, the version asked and the grant.
		got := getLease(t, s, tn.ID, c.Lease.ID)
		require.Equal(t, r26.ID, got.LicenseID)
		require.Equal(t, "render", got.Feature)
		require.Equal(t, "2024.5", got.Version)
		all := listLeases(t, s, tn.ID, lic.ID, "")
		require.Len(t, all, 6, "a license's leases include its grants'")
		one := listLeases(t, s, tn.ID, r25.ID, "")
		require.Equal(t, []string{b.Lease.ID}, leaseIDs(one), "a grant id lists that grant's leases")
		require.Equal(t, a.Lease.ID, getLease(t, s, tn.ID, a.Lease.ID).ID)
	})

	t.Run("VersionsCompareAsNumbers", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)
		g19 := newGrant(t, s, lic, "a", grantVersion("1.9"))
		g3 := newGrant(t, s, lic, "b", grantWith(grantVersion("3"), grantSeats(5)))
		_, _, err := tryAcquire(t.Context(), s, lic.Key, "m", ofFeature("a", "1.10"))
		requireCode(t, err, server.EPRECONDITION, server.ReasonVersionNotLicensed, "1.10 > 1.9")
		acquireFeature(t, s, lic, g19, "m", "1.9", nil)
		acquireFeature(t, s, lic, g3, "m1", "3.0.0", nil)
		acquireFeature(t, s, lic, g3, "m2", "2.99", nil)
		acquireFeature(t, s, lic, g3, "m3", "", nil)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m4", ofFeature("b", "3.0.1"))
		requireCode(t, err, server.EPRECONDITION, server.ReasonVersionNotLicensed, "3.0.1 > 3")
	})

	t.Run("DedupeAndIdempotencyArePerFeature", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))
		at := now()
		first := newGrant(t, s, lic, "render", grantExpires(at.Add(24*time.Hour)))
		second := newGrant(t, s, lic, "render", grantWith(grantExpires(at.Add(48*time.Hour)), grantSeats(2)))

		x, tokX := acquireFeature(t, s, lic, first, "x", "", nil)
		y, _ := acquireFeature(t, s, lic, second, "y", "", nil)
		base, _ := acquire(t, s, lic, "y", nil)
		require.NotEqual(t, y.Lease.ID, base.Lease.ID)
		again, _ := acquireFeature(t, s, lic, second, "y", "", nil)
		require.True(t, again.Existing, "the same machine gets its render lease back")
		require.Equal(t, y.Lease.ID, again.Lease.ID)
		// With the first grant's seat free again, y still gets its own
		// lease of the second grant back: no second render seat.
		release(t, s, x.Lease.ID, tokX)
		again, _ = acquireFeature(t, s, lic, second, "y", "", nil)
		require.True(t, again.Existing)
		require.Equal(t, y.Lease.ID, again.Lease.ID)
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, first.ID))
		baseAgain, _ := acquire(t, s, lic, "y", nil)
		require.True(t, baseAgain.Existing)
		require.Equal(t, base.Lease.ID, baseAgain.Lease.ID)

		// An idempotency key hands back its lease of the feature.
		idem := func(r *server.AcquireRequest) { r.IdempotencyKey = "k1" }
		z, _ := acquireFeature(t, s, lic, first, "z", "", idem)
		z2, _ := acquireFeature(t, s, lic, first, "z-other", "", idem)
		require.True(t, z2.Existing)
		require.Equal(t, z.Lease.ID, z2.Lease.ID)
	})

	t.Run("ConcurrentRequestsTakeEachGrantsSeatsOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(1))
		at := now()
		g1 := newGrant(t, s, lic, "render", grantWith(grantExpires(at.Add(24*time.Hour)), grantSeats(2)))
		g2 := newGrant(t, s, lic, "render", grantWith(grantExpires(at.Add(48*time.Hour)), grantSeats(3)))
		const callers = 24
		var mu sync.Mutex
		per := map[string]int{}
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				res, _, err := tryAcquire(t.Context(), s, lic.Key, "m"+string(rune('A'+i)), ofFeature("render", "1"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					per[res.Lease.LicenseID]++
				case !isCode(err, server.EEXHAUSTED, server.ReasonSeatsExhausted):
					t.Errorf("acquire: %v", err)
				}
			})
		}
		wg.Wait()
		require.Equal(t, map[string]int{g1.ID: 2, g2.ID: 3}, per, "each grant's seats taken once, no more")
		require.Zero(t, seatsInUse(t, s, tn.ID, lic.ID), "no render request took a base seat")
	})

	w.run("GrantsStartAndExpireAroundRequests", func(t *testing.T) {
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		// The store's clock may not move (the real one, Redis's): a short
		// wait then, doubled and tried again on a new license if the steps
		// that must come before it took longer (a busy machine).
		wait := 2 * time.Second
		if clockMoves(s) {
			wait = time.Hour
		}
		var (
			lic           server.License
			at            time.Time
			later, ending server.Grant
			held          server.AcquireResult
			tok           string
		)
		for {
			lic = newLicense(t, s, tn.ID, leaseTTL(3*time.Hour)) // outlives the wait below
			at = now()
			later = newGrant(t, s, lic, "render", grantWith(grantVersion("2025"), grantStarts(at.Add(wait))))
			_, _, errEarly := tryAcquire(t.Context(), s, lic.Key, "m", ofFeature("render", "2025"))
			ending = newGrant(t, s, lic, "sim", grantExpires(at.Add(wait)))
			var errHeld error
			held, tok, errHeld = tryAcquire(t.Context(), s, lic.Key, "m", ofFeature("sim", ""))
			if time.Now().Before(at.Add(wait)) {
				requireCode(t, errEarly, server.EPRECONDITION, server.ReasonGrantNotStarted, "a grant not yet started")
				require.Equal(t, "render", errMeta(errEarly)["feature"])
				require.NoError(t, errHeld, "a seat of the grant before it expires")
				require.Equal(t, ending.ID, held.Lease.LicenseID)
				break
			}
			require.Less(t, wait, 10*time.Minute, "the steps before the deadline never fit in it")
			wait *= 2
		}
		require.True(t, held.Lease.ExpiresAt.After(at.Add(wait)), "the lease's deadline is past the grant's expiry")

		passDeadline(t, s, at.Add(wait))
		acquireFeature(t, s, lic, later, "m", "2025", nil)
		_, err := s.Heartbeat(t.Context(), held.Lease.ID, server.HashSecret(tok))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseExpired, "a lease of an expired grant, at its next heartbeat")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m2", ofFeature("sim", ""))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseExpired, "an expired grant never grants")
		// The license's base pool is untouched.
		acquire(t, s, lic, "m", nil)
	})

	t.Run("ExpiredGrantIsSkippedForTheNext", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)
		at := now()
		newGrant(t, s, lic, "render", grantWith(grantStarts(at.Add(-2*time.Hour)), grantExpires(at.Add(-time.Hour))))
		current := newGrant(t, s, lic, "render", grantExpires(at.Add(time.Hour)))
		acquireFeature(t, s, lic, current, "m", "", nil)
	})

	t.Run("BorrowEndsByItsPoolsExpiry", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		at := now()
		const month = 30 * 24 * time.Hour
		// The base pool: the license's own expiry.
		soon := newLicense(t, s, tn.ID, with(seats(2), borrowing(month, 0), func(l *server.License) { l.ExpiresAt = at.Add(time.Hour) }))
		_, _, err := tryAcquire(t.Context(), s, soon.Key, "laptop", borrowFor(7*24*time.Hour))
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "a borrow past the license's expiry")
		require.Equal(t, "borrow_duration", errField(err))
		require.Equal(t, 0, seatsInUse(t, s, tn.ID, soon.ID), "a refused borrow takes no seat")
		acquire(t, s, soon, "laptop", borrowFor(30*time.Minute))

		// A grant's expiry: the old grant (1h left) refuses a 7-day borrow,
		// which its renewal takes; a short one still goes to the old grant.
		lic := newLicense(t, s, tn.ID, borrowing(month, 0))
		lends := func(g *server.Grant) { g.MaxBorrowDuration = month }
		old := newGrant(t, s, lic, "render", grantWith(lends, grantExpires(at.Add(time.Hour))))
		renewal := newGrant(t, s, lic, "render", grantWith(lends, grantExpires(at.Add(365*24*time.Hour))))
		acquireFeature(t, s, lic, old, "m1", "", borrowFor(30*time.Minute))
		_, err = s.UpdateGrant(t.Context(), tn.ID, lic.ID, old.ID, func(g *server.Grant) error { g.Seats = 2; return nil })
		require.NoError(t, err)
		b, _ := acquireFeature(t, s, lic, renewal, "m2", "", borrowFor(7*24*time.Hour))
		require.True(t, b.Lease.Borrowed)
		// The renewal is full now: the old grant's refusal is not the
		// answer, the feature's seats are.
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "m3", with2(ofFeature("render", ""), borrowFor(7*24*time.Hour)))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the grant that could lend is full")
		require.Equal(t, 1, seatsInUse(t, s, tn.ID, old.ID), "the old grant lent nothing past its expiry")

		// A grant that alone covers the request: its refusal is the answer.
		only := newLicense(t, s, tn.ID, nil)
		newGrant(t, s, only, "sim", grantWith(lends, grantExpires(at.Add(time.Hour))))
		_, _, err = tryAcquire(t.Context(), s, only.Key, "m1", with2(ofFeature("sim", ""), borrowFor(7*24*time.Hour)))
		requireCode(t, err, server.EINVALID, server.ReasonInvalidArgument, "a borrow past the grant's expiry")
		require.Equal(t, "borrow_duration", errField(err))
	})

	t.Run("LicenseStateBeforeCoverage", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		// An inactive license says so, whatever the feature or version.
		off := newLicense(t, s, tn.ID, func(l *server.License) { l.Active = false })
		newGrant(t, s, off, "render", grantVersion("2024"))
		for _, req := range [][2]string{{"render", "2024"}, {"render", "2025"}, {"cam", ""}} {
			_, _, err := tryAcquire(t.Context(), s, off.Key, "m", ofFeature(req[0], req[1]))
			requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive, req[0]+" "+req[1]+" on an inactive license")
		}

		// A license that was used, then switched off.
		lic := newLicense(t, s, tn.ID, nil)
		g := newGrant(t, s, lic, "render", grantVersion("2024"))
		acquireFeature(t, s, lic, g, "m1", "2024", nil)
		_, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error { l.Active = false; return nil })
		require.NoError(t, err)
		for _, req := range [][2]string{{"render", "2025"}, {"cam", ""}} {
			_, _, err := tryAcquire(t.Context(), s, lic.Key, "m2", ofFeature(req[0], req[1]))
			requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive, req[0]+" "+req[1]+" on a license switched off")
		}

		// A license that expired (at the store's clock) since it was used.
		life := 2 * time.Second
		if clockMoves(s) {
			life = time.Hour
		}
		ending := newLicense(t, s, tn.ID, func(l *server.License) { l.ExpiresAt = now().Add(life) })
		eg := newGrant(t, s, ending, "render", grantVersion("2024"))
		acquireFeature(t, s, ending, eg, "m1", "2024", nil)
		passDeadline(t, s, ending.ExpiresAt)
		for _, req := range [][2]string{{"render", "2025"}, {"cam", ""}} {
			_, _, err := tryAcquire(t.Context(), s, ending.Key, "m2", ofFeature(req[0], req[1]))
			requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseExpired, req[0]+" "+req[1]+" on an expired license")
		}
	})

	t.Run("UpdatedGrantUnderLoad", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)
		g := newGrant(t, s, lic, "render", grantSeats(3))
		var held []server.AcquireResult
		for _, m := range []string{"a", "b", "c"} {
			r, _ := acquireFeature(t, s, lic, g, m, "", nil)
			held = append(held, r)
		}
		_, err := s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 1; return nil })
		require.NoError(t, err)
		require.Equal(t, 3, seatsInUse(t, s, tn.ID, g.ID), "fewer seats end no lease")
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "d", ofFeature("render", ""))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted)
		// Concurrent acquisitions while the limit goes up: never more than
		// the limit in force.
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := s.UpdateGrant(t.Context(), tn.ID, lic.ID, g.ID, func(g *server.Grant) error { g.Seats = 5; return nil })
			if err != nil {
				t.Errorf("update: %v", err)
			}
		})
		for i := range 8 {
			wg.Go(func() {
				_, _, err := tryAcquire(t.Context(), s, lic.Key, "n"+string(rune('A'+i)), ofFeature("render", ""))
				if err != nil && !isCode(err, server.EEXHAUSTED, server.ReasonSeatsExhausted) {
					t.Errorf("acquire: %v", err)
				}
			})
		}
		wg.Wait()
		// Whatever the concurrent ones got, later ones fill the raised
		// limit and no more.
		for i := 0; ; i++ {
			require.Less(t, i, 5, "the raised limit never refuses")
			_, _, err := tryAcquire(t.Context(), s, lic.Key, "late"+string(rune('A'+i)), ofFeature("render", ""))
			if isCode(err, server.EEXHAUSTED, server.ReasonSeatsExhausted) {
				break
			}
			require.NoError(t, err)
		}
		require.Equal(t, 5, seatsInUse(t, s, tn.ID, g.ID), "the raised limit is filled, not passed")
		for _, h := range held {
			require.Equal(t, server.LeaseActive, getLease(t, s, tn.ID, h.Lease.ID).State)
		}
	})

	t.Run("DeletedGrantEndsItsLeasesAsADeletedLicense", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)
		g := newGrant(t, s, lic, "render", grantSeats(2))
		keep := newGrant(t, s, lic, "sim", nil)
		a, tokA := acquireFeature(t, s, lic, g, "a", "", nil)
		b, tokB := acquireFeature(t, s, lic, g, "b", "", nil)
		k, tokK := acquireFeature(t, s, lic, keep, "a", "", nil)
		base, tokBase := acquire(t, s, lic, "a", nil)
		rb := release(t, s, b.Lease.ID, tokB)

		n, err := s.DeleteGrant(t.Context(), tn.ID, lic.ID, g.ID)
		require.NoError(t, err)
		require.Equal(t, 1, n, "active leases revoked")
		_, err = s.DeleteGrant(t.Context(), tn.ID, lic.ID, g.ID)
		requireCode(t, err, server.ENOTFOUND, server.ReasonGrantNotFound, "delete twice")
		_, err = s.Heartbeat(t.Context(), a.Lease.ID, server.HashSecret(tokA))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLeaseRevoked)
		ra := getLease(t, s, tn.ID, a.Lease.ID)
		require.Equal(t, server.LeaseRevoked, ra.State)
		require.Equal(t, "render", ra.Feature, "history keeps the feature")
		evs := usageEvents(t, s, tn.ID, g.ID)
		require.Len(t, evs, 2)
		requireOneUsage(t, evs, ra)
		e := requireOneUsage(t, evs, rb)
		require.Equal(t, "render", e.Feature)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "c", ofFeature("render", ""))
		requireCode(t, err, server.EPRECONDITION, server.ReasonFeatureNotLicensed)
		// The license, its other grants and their leases are untouched.
		heartbeat(t, s, k.Lease.ID, tokK)
		heartbeat(t, s, base.Lease.ID, tokBase)
		require.Len(t, getLicense(t, s, tn.ID, lic.ID).Grants, 1)
		require.Len(t, listLeases(t, s, tn.ID, lic.ID, ""), 4, "history of the deleted grant stays listed with its license")
	})

	t.Run("LicenseSettingsReachItsGrants", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, with(seats(2), strategy(server.PerUser)))
		g := newGrant(t, s, lic, "render", grantSeats(2))
		a, _ := acquireFeature(t, s, lic, g, "fp1", "", func(r *server.AcquireRequest) { r.User = "ann" })
		again, _ := acquireFeature(t, s, lic, g, "fp2", "", func(r *server.AcquireRequest) { r.User = "ann" })
		require.True(t, again.Existing, "the license's leasing strategy applies to its grants")
		require.Equal(t, a.Lease.ID, again.Lease.ID)

		lic, err := s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.LeaseTTL = 2 * time.Hour
			return nil
		})
		require.NoError(t, err)
		require.Len(t, lic.Grants, 1, "UpdateLicense answers with the grants")
		b, tokB := acquireFeature(t, s, lic, g, "fp3", "", func(r *server.AcquireRequest) { r.User = "bob" })
		hb := heartbeat(t, s, b.Lease.ID, tokB)
		require.WithinDuration(t, hb.LastHeartbeatAt.Add(2*time.Hour), hb.ExpiresAt, timeSlack, "the license's new TTL")

		_, err = s.UpdateLicense(t.Context(), tn.ID, lic.ID, func(l *server.License) error {
			l.Active = false
			return nil
		})
		require.NoError(t, err)
		_, _, err = tryAcquire(t.Context(), s, lic.Key, "fp4", ofFeature("render", ""))
		requireCode(t, err, server.EPRECONDITION, server.ReasonLicenseInactive, "an inactive license's grants grant nothing")

		n, err := s.DeleteLicense(t.Context(), tn.ID, lic.ID)
		require.NoError(t, err)
		require.Equal(t, 2, n, "a license's delete revokes its grants' leases")
		require.Equal(t, server.LeaseRevoked, getLease(t, s, tn.ID, b.Lease.ID).State)
	})

	t.Run("GrantLeasesAreCleanedUpOnce", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, leaseTTL(lapsingTTL(s)))
		g := newGrant(t, s, lic, "render", grantSeats(2))
		a, _ := acquireFeature(t, s, lic, g, "a", "2", nil)
		passDeadlines(t, s, a.Lease)
		// The lapsed seat is free at once (invariant 2).
		acquireFeature(t, s, lic, g, "b", "", nil)
		acquireFeature(t, s, lic, g, "c", "", nil)
		expired := expireAllDue(t, s)
		var mine []server.Lease
		for _, l := range expired {
			if l.ID == a.Lease.ID {
				mine = append(mine, l)
			}
		}
		if len(mine) == 0 { // a grant may have displaced it into its expiry already
			require.Equal(t, server.LeaseExpired, getLease(t, s, tn.ID, a.Lease.ID).State)
		}
		ce := cleanupOf(cleanupEvents(t, s, tn.ID, g.ID), a.Lease.ID)
		require.Len(t, ce, 1, "one cleanup event")
		require.Equal(t, g.ID, ce[0].LicenseID)
		require.Equal(t, "render", ce[0].Feature)
		ue := requireOneUsage(t, usageEvents(t, s, tn.ID, g.ID), getLease(t, s, tn.ID, a.Lease.ID))
		require.Equal(t, "render", ue.Feature)
		// b's and c's short leases may lapse meanwhile (a busy machine):
		// only a's must not expire again.
		for _, l := range expireAllDue(t, s) {
			require.NotEqual(t, a.Lease.ID, l.ID, "a's lease expired twice")
		}
	})

	t.Run("EventListsCutByFeature", func(t *testing.T) {
		t.Parallel()
		s := openStore(t, newBackend)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, seats(2))
		r := newGrant(t, s, lic, "render", nil)
		sim := newGrant(t, s, lic, "sim", nil)
		ar, tr := acquireFeature(t, s, lic, r, "a", "", nil)
		as, ts := acquireFeature(t, s, lic, sim, "a", "", nil)
		ab, tb := acquire(t, s, lic, "a", nil)
		release(t, s, ar.Lease.ID, tr)
		release(t, s, as.Lease.ID, ts)
		release(t, s, ab.Lease.ID, tb)
		list := func(rg server.EventRange) []server.UsageEvent {
			return listAll(t, 10, func(e server.UsageEvent) string { return e.LeaseID }, func(p server.Page) ([]server.UsageEvent, string, error) {
				return s.ListUsageEvents(t.Context(), rg, p)
			})
		}
		all := list(server.EventRange{TenantID: tn.ID, LicenseID: lic.ID})
		require.Len(t, all, 3, "a license's events include its grants'")
		render := list(server.EventRange{TenantID: tn.ID, LicenseID: lic.ID, Feature: "render"})
		require.Len(t, render, 1)
		require.Equal(t, ar.Lease.ID, render[0].LeaseID)
		require.Equal(t, r.ID, render[0].LicenseID)
		require.Equal(t, "render", render[0].Feature)
		require.Len(t, list(server.EventRange{TenantID: tn.ID, Feature: "sim"}), 1)
	})

	w.run("GrantsAndTheirLeasesSurviveReopen", func(t *testing.T) {
		open := newBackend(t)
		s := openReopenable(t, open)
		tn := newTenant(t, s)
		lic := newLicense(t, s, tn.ID, nil)
		g := newGrant(t, s, lic, "render", grantWith(grantVersion("2025.2"), grantSeats(1), grantExpires(now().Add(24*time.Hour))))
		a, tok := acquireFeature(t, s, lic, g, "a", "2025", nil)
		require.NoError(t, s.Close())

		s2 := openWith(t, open)
		got := getLicense(t, s2, tn.ID, lic.ID)
		require.Len(t, got.Grants, 1)
		requireGrant(t, g, got.Grants[0])
		hb := heartbeat(t, s2, a.Lease.ID, tok)
		require.Equal(t, g.ID, hb.LicenseID)
		require.Equal(t, "render", hb.Feature)
		require.Equal(t, "2025", hb.Version)
		_, _, err := tryAcquire(t.Context(), s2, lic.Key, "b", ofFeature("render", "2025"))
		requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the grant's seat is still held after a reopen")
		again, _ := acquireFeature(t, s2, lic, g, "a", "2025", nil)
		require.True(t, again.Existing)
	})
}

func licenseByKey(t *testing.T, s server.Store, key string) server.License {
	t.Helper()
	l, err := s.LicenseByKey(t.Context(), key)
	require.NoError(t, err, "LicenseByKey")
	return l
}

func listLeases(t *testing.T, s server.Store, tenantID, licenseID string, state server.LeaseState) []server.Lease {
	t.Helper()
	return listAll(t, 3, func(l server.Lease) string { return l.ID }, func(p server.Page) ([]server.Lease, string, error) {
		return s.ListLeases(t.Context(), tenantID, licenseID, state, p)
	})
}
