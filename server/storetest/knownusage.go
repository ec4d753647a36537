package storetest

import (
	"cmp"
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// KnownUsage is a usage report's input with every figure worked out by
// hand: leases of two licenses (l and m) of tenant, with the times the
// report reads (AcquiredAt, ExpiresAt, EndedAt, State, User, Fingerprint),
// seat events, the query (09:00-12:00 on 2 March 2026, in hours) and the
// report it must give. A backend that can write records with chosen times
// (its own test) stores them and compares.
func KnownUsage(tenant, l, m string) (leases []server.Lease, events []server.SeatEvent, q server.UsageQuery, want server.UsageReport) {
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	hm := func(h, min int) time.Time {
		return day.Add(time.Duration(h)*time.Hour + time.Duration(min)*time.Minute)
	}
	lease := func(license, user string, state server.LeaseState, from, deadline, ended time.Time) server.Lease {
		return server.Lease{
			ID: server.NewID(server.PrefixLeaseID), LicenseID: license, TenantID: tenant, Fingerprint: "fp-" + user,
			User: user, State: state, AcquiredAt: from, LastHeartbeatAt: from, ExpiresAt: deadline, EndedAt: ended,
			TokenHash: server.HashSecret("t"),
		}
	}
	leases = []server.Lease{
		lease(l, "alice", server.LeaseReleased, hm(9, 0), hm(10, 36), hm(10, 30)),  // s1: 09:00-10:30
		lease(l, "bob", server.LeaseReleased, hm(9, 30), hm(9, 50), hm(9, 45)),     // s2: 09:30-09:45
		lease(l, "alice", server.LeaseExpired, hm(9, 45), hm(11, 0), hm(11, 20)),   // s3: to its deadline, 11:00
		lease(l, "carol", server.LeaseRevoked, hm(8, 30), hm(9, 15), hm(9, 50)),    // s4: revoked late: to 09:15
		lease(l, "dave", server.LeaseReleased, hm(10, 15), hm(10, 20), hm(10, 15)), // s5: no time held
		lease(l, "erin", server.LeaseReleased, hm(11, 30), hm(13, 0), hm(12, 30)),  // s6: past the range's end
		lease(l, "frank", server.LeaseReleased, hm(9, 40), hm(10, 0), hm(9, 50)),   // s7: 09:40-09:50
		lease(l, "gina", server.LeaseReleased, hm(7, 0), hm(8, 0), hm(8, 0)),       // before the range
		lease(l, "hal", server.LeaseReleased, hm(12, 0), hm(13, 0), hm(12, 10)),    // after it
	}
	ev := func(license string, kind server.SeatEventKind, at time.Time, wait time.Duration) server.SeatEvent {
		return server.SeatEvent{ID: server.NewID("sev_"), TenantID: tenant, LicenseID: license, Kind: kind, At: at, Wait: wait}
	}
	events = []server.SeatEvent{
		ev(l, server.SeatDenied, hm(9, 10), 0),
		ev(l, server.SeatDenied, hm(9, 10), 0),
		ev(l, server.SeatDenied, hm(10, 59).Add(59*time.Second), 0),
		ev(l, server.SeatDenied, hm(12, 0), 0), // End is exclusive
		ev(l, server.SeatDenied, hm(8, 59), 0),
		ev(l, server.SeatWaited, hm(9, 20), 30*time.Second),
		ev(l, server.SeatWaited, hm(9, 50), 90*time.Second),
		ev(m, server.SeatDenied, hm(11, 5), 0),
	}
	q = server.UsageQuery{TenantID: tenant, Start: hm(9, 0), End: hm(12, 0), Bucket: time.Hour,
		Users: server.DefaultUsageUsers, MaxRows: server.MaxUsageRows}
	// 09: at 09:40 s1, s2, s7 (s4 ended at 09:15), and at 09:45 s2 ends as s3
	// starts: 3. Held: s1 60 + s2 15 + s3 15 + s4 15 + s7 10 = 115 minutes.
	// 10: s1 and s3 at 10:00. 11: s3 ended at 11:00 sharp; s6 from 11:30.
	want.Rows = []server.UsageRow{
		{LicenseID: l, BucketStart: hm(9, 0), PeakSeats: 3, SeatHours: 115.0 / 60, Acquisitions: 4, Denials: 2,
			DistinctUsers: 4, QueueWaits: 2, MeanWait: time.Minute},
		{LicenseID: l, BucketStart: hm(10, 0), PeakSeats: 2, SeatHours: 1.5, Acquisitions: 1, Denials: 1, DistinctUsers: 2},
		{LicenseID: l, BucketStart: hm(11, 0), PeakSeats: 1, SeatHours: 0.5, Acquisitions: 1, DistinctUsers: 1},
		{LicenseID: m, BucketStart: hm(11, 0), Denials: 1},
	}
	slices.SortStableFunc(want.Rows, func(x, y server.UsageRow) int { return cmp.Compare(x.LicenseID, y.LicenseID) })
	want.Users = []server.UserUsage{
		{User: "alice", SeatHours: 2.75, Sessions: 2}, // 09:00-10:30 and 09:45-11:00
		{User: "erin", SeatHours: 0.5, Sessions: 1},
		{User: "bob", SeatHours: 0.25, Sessions: 1},
		{User: "carol", SeatHours: 0.25, Sessions: 1},
		{User: "frank", SeatHours: 10.0 / 60, Sessions: 1},
		{User: "dave", SeatHours: 0, Sessions: 1},
	}
	return leases, events, q, want
}

// RequireUsageReport fails t unless got is want, seat-hours within 1e-9.
func RequireUsageReport(t require.TestingT, want, got server.UsageReport) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Len(t, got.Rows, len(want.Rows), "rows: %+v", got.Rows)
	for i, w := range want.Rows {
		g := got.Rows[i]
		require.InDelta(t, w.SeatHours, g.SeatHours, 1e-9, "row %d (%s %v): seat-hours", i, w.LicenseID, w.BucketStart)
		g.SeatHours = w.SeatHours
		require.True(t, w.BucketStart.Equal(g.BucketStart), "row %d: bucket %v, want %v", i, g.BucketStart, w.BucketStart)
		g.BucketStart = w.BucketStart
		require.Equal(t, w, g, "row %d", i)
	}
	require.Len(t, got.Users, len(want.Users), "users: %+v", got.Users)
	for i, w := range want.Users {
		g := got.Users[i]
		require.InDelta(t, w.SeatHours, g.SeatHours, 1e-9, "user %d (%s): seat-hours", i, w.User)
		g.SeatHours = w.SeatHours
		require.Equal(t, w, g, "user %d", i)
	}
}
