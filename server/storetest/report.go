package storetest

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// testUsageReport: the usage report over leases taken and ended now, with
// every expected figure worked out from the leases as stored, by brute
// force (every instant a lease starts or ends, every lease against every
// hour), and the seat events recorded.
func testUsageReport(t *testing.T, newBackend Backend) {
	s := openStore(t, newBackend)
	ctx := t.Context()
	tn, other := newTenant(t, s), newTenant(t, s)
	l := newLicense(t, s, tn.ID, seats(2))
	m := newLicense(t, s, tn.ID, seats(1))
	f := newLicense(t, s, other.ID, seats(1))
	user := func(u string) func(*server.AcquireRequest) { return func(r *server.AcquireRequest) { r.User = u } }

	a, aTok := acquire(t, s, l, "a", user("alice"))
	b, bTok := acquire(t, s, l, "b", user("bob"))
	_, _, err := tryAcquire(ctx, s, l.Key, "c", nil)
	requireCode(t, err, server.EEXHAUSTED, server.ReasonSeatsExhausted, "the third seat")
	release(t, s, a.Lease.ID, aTok)
	c, cTok := acquire(t, s, l, "c", user("alice"))
	release(t, s, b.Lease.ID, bTok)
	release(t, s, c.Lease.ID, cTok)
	mm, _ := acquire(t, s, m, "m-host", nil) // no user: counted by fingerprint
	_, err = s.Revoke(ctx, tn.ID, mm.Lease.ID)
	require.NoError(t, err)
	fl, fTok := acquire(t, s, f, "f", user("alice"))
	release(t, s, fl.Lease.ID, fTok)

	at := time.Now().UTC()
	seatEvent := func(lic server.License, kind server.SeatEventKind, wait time.Duration, reason ...string) {
		require.NoError(t, s.RecordSeatEvent(ctx, server.SeatEvent{ID: server.NewID("sev_"), TenantID: lic.TenantID,
			LicenseID: lic.ID, Kind: kind, At: at, Wait: wait, Reason: strings.Join(reason, "")}))
	}
	// Denials by reason: one without (recorded before reasons were), one
	// SEATS_EXHAUSTED, two a policy's (the report counts those apart).
	seatEvent(l, server.SeatDenied, 0)
	seatEvent(l, server.SeatDenied, 0, server.ReasonSeatsExhausted)
	seatEvent(l, server.SeatDenied, 0, server.ReasonUserLimit)
	seatEvent(l, server.SeatDenied, 0, server.ReasonUserLimit)
	seatEvent(l, server.SeatDenied, 0, server.ReasonExcluded)
	seatEvent(l, server.SeatWaited, 2*time.Second)
	seatEvent(l, server.SeatWaited, 4*time.Second)
	seatEvent(m, server.SeatDenied, 0)
	seatEvent(f, server.SeatDenied, 0)

	var leases []server.Lease
	for _, id := range []string{a.Lease.ID, b.Lease.ID, c.Lease.ID, mm.Lease.ID} {
		leases = append(leases, getLease(t, s, tn.ID, id))
	}
	first := leases[0].AcquiredAt.Truncate(time.Hour)
	q := server.UsageQuery{TenantID: tn.ID, Start: first.Add(-time.Hour), End: at.Truncate(time.Hour).Add(2 * time.Hour),
		Bucket: time.Hour, Users: 10, MaxRows: 100}
	rep, err := s.UsageReport(ctx, q)
	require.NoError(t, err, "UsageReport")

	want := bruteForceReport(q, leases)
	// The seat events, in at's hour (a row of their own if no lease has one).
	var rowAt func(license string) *server.UsageRow
	rowAt = func(license string) *server.UsageRow {
		for i := range want {
			if want[i].LicenseID == license && want[i].BucketStart.Equal(at.Truncate(time.Hour)) {
				return &want[i]
			}
		}
		want = append(want, server.UsageRow{LicenseID: license, BucketStart: at.Truncate(time.Hour)})
		slices.SortFunc(want, func(x, y server.UsageRow) int {
			return cmp.Or(cmp.Compare(x.LicenseID, y.LicenseID), x.BucketStart.Compare(y.BucketStart))
		})
		return rowAt(license)
	}
	rowAt(l.ID).Denials = 5
	rowAt(l.ID).PolicyDenials = map[string]int64{server.ReasonUserLimit: 2, server.ReasonExcluded: 1}
	rowAt(m.ID).Denials = 1
	rowAt(l.ID).QueueWaits, rowAt(l.ID).MeanWait = 2, 3*time.Second
	require.Len(t, rep.Rows, len(want), "rows: %+v", rep.Rows)
	var peakL int
	for i, w := range want {
		g := rep.Rows[i]
		require.Equal(t, w.LicenseID, g.LicenseID, "row %d", i)
		require.True(t, w.BucketStart.Equal(g.BucketStart), "row %d: bucket %v, want %v", i, g.BucketStart, w.BucketStart)
		require.Equal(t, w.PeakSeats, g.PeakSeats, "row %d: peak", i)
		require.InDelta(t, w.SeatHours, g.SeatHours, 1e-9, "row %d: seat-hours", i)
		require.Equal(t, w.Acquisitions, g.Acquisitions, "row %d: acquisitions", i)
		require.Equal(t, w.Denials, g.Denials, "row %d: denials", i)
		require.Equal(t, w.PolicyDenials, g.PolicyDenials, "row %d: policy denials by reason", i)
		require.Equal(t, w.DistinctUsers, g.DistinctUsers, "row %d: distinct users", i)
		require.Equal(t, w.QueueWaits, g.QueueWaits, "row %d: queue waits", i)
		require.Equal(t, w.MeanWait, g.MeanWait, "row %d: mean wait", i)
		if w.LicenseID == l.ID {
			peakL = max(peakL, g.PeakSeats)
		}
	}
	require.Equal(t, 2, peakL, "a and b, then b and c, held seats at once")

	// Users: alice (a, c), bob (b), and m's fingerprint.
	wantUsers := map[string]server.UserUsage{}
	for _, ls := range leases {
		who := server.LeaseUser(&ls)
		u := wantUsers[who]
		u.User, u.Sessions = who, u.Sessions+1
		u.SeatHours += server.SeatHeldUntil(&ls, time.Now()).Sub(ls.AcquiredAt).Hours()
		wantUsers[who] = u
	}
	require.Len(t, rep.Users, 3)
	for i, g := range rep.Users {
		w := wantUsers[g.User]
		require.Equal(t, w.Sessions, g.Sessions, "user %s: sessions", g.User)
		require.InDelta(t, w.SeatHours, g.SeatHours, 1e-9, "user %s: seat-hours", g.User)
		if i > 0 {
			require.GreaterOrEqual(t, rep.Users[i-1].SeatHours, g.SeatHours, "users by seat-hours")
		}
	}
	require.Equal(t, int64(2), wantUsers["alice"].Sessions)

	// One license; one user row; another tenant's license; too many rows.
	one, err := s.UsageReport(ctx, withLicense(q, m.ID))
	require.NoError(t, err)
	for _, r := range one.Rows {
		require.Equal(t, m.ID, r.LicenseID)
	}
	require.Len(t, one.Users, 1)
	require.Equal(t, "m-host", one.Users[0].User)
	q1 := q
	q1.Users = 1
	top, err := s.UsageReport(ctx, q1)
	require.NoError(t, err)
	require.Equal(t, rep.Users[:1], top.Users)
	_, err = s.UsageReport(ctx, withLicense(q, f.ID))
	requireCode(t, err, server.ENOTFOUND, server.ReasonLicenseNotFound, "another tenant's license")
	q1.MaxRows = 1
	_, err = s.UsageReport(ctx, q1)
	requireCode(t, err, server.EINVALID, "", "more rows than MaxRows")
}

func withLicense(q server.UsageQuery, id string) server.UsageQuery { q.LicenseID = id; return q }

// bruteForceReport works the lease figures of every (license, hour) out the
// slow way, with no sweep: the peak is the most leases holding a seat at any
// instant where one starts or ends, or at the bucket's start.
func bruteForceReport(q server.UsageQuery, leases []server.Lease) []server.UsageRow {
	var out []server.UsageRow
	now := time.Now()
	licenses := []string{}
	seen := map[string]bool{}
	for _, l := range leases {
		if !seen[l.LicenseID] {
			seen[l.LicenseID] = true
			licenses = append(licenses, l.LicenseID)
		}
	}
	slices.Sort(licenses)
	for _, lic := range licenses {
		for bs := q.Start; bs.Before(q.End); bs = bs.Add(q.Bucket) {
			be := bs.Add(q.Bucket)
			row := server.UsageRow{LicenseID: lic, BucketStart: bs}
			users := map[string]bool{}
			instants := []time.Time{bs}
			for _, l := range leases {
				if l.LicenseID != lic {
					continue
				}
				st, en := l.AcquiredAt, server.SeatHeldUntil(&l, now)
				if !st.Before(bs) && st.Before(be) {
					row.Acquisitions++
					users[server.LeaseUser(&l)] = true
				}
				if d := minTime(en, be).Sub(maxTime(st, bs)); d > 0 {
					row.SeatHours += d.Hours()
					users[server.LeaseUser(&l)] = true
				}
				for _, x := range []time.Time{st, en} {
					if !x.Before(bs) && x.Before(be) {
						instants = append(instants, x)
					}
				}
			}
			for _, x := range instants {
				n := 0
				for _, l := range leases {
					if l.LicenseID == lic && !l.AcquiredAt.After(x) && server.SeatHeldUntil(&l, now).After(x) {
						n++
					}
				}
				row.PeakSeats = max(row.PeakSeats, n)
			}
			row.DistinctUsers = int64(len(users))
			if row.Acquisitions > 0 || row.SeatHours > 0 || row.PeakSeats > 0 || len(users) > 0 {
				out = append(out, row)
			}
		}
	}
	return out
}
