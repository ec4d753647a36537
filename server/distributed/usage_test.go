package distributed

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/storetest"
)

// insertLeases writes ended leases with chosen times straight into the
// record (as the store would have, minus the live state they no longer
// need).
func insertLeases(t *testing.T, loc location, leases []server.Lease) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), loc.pgURL)
	require.NoError(t, err)
	defer pool.Close()
	for _, l := range leases {
		_, err := pool.Exec(t.Context(), `INSERT INTO sessions (id, license_id, tenant_id, token_hash, fingerprint, "user",
			state, acquired_at, last_heartbeat_at, expires_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10)`,
			l.ID, l.LicenseID, l.TenantID, l.TokenHash, l.Fingerprint, l.User, string(l.State), l.AcquiredAt, l.ExpiresAt, l.EndedAt)
		require.NoError(t, err)
	}
}

// The window-function report over known intervals gives the figures
// worked out by hand (storetest.KnownUsage), as the Go sweep does.
func TestUsageReportKnownIntervals(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	l := mkLicense(t, s, tn.ID, 3, time.Minute)
	m := mkLicense(t, s, tn.ID, 1, time.Minute)
	leases, events, q, want := storetest.KnownUsage(tn.ID, l.ID, m.ID)
	insertLeases(t, loc, leases)
	for _, e := range events {
		require.NoError(t, s.RecordSeatEvent(t.Context(), e))
	}
	got, err := s.UsageReport(t.Context(), q)
	require.NoError(t, err)
	storetest.RequireUsageReport(t, want, got)

	q.LicenseID = m.ID
	got, err = s.UsageReport(t.Context(), q)
	require.NoError(t, err)
	for _, r := range want.Rows {
		if r.LicenseID == m.ID {
			require.Equal(t, []server.UsageRow{r}, got.Rows)
		}
	}
	require.Nil(t, got.Users)
}

// Random intervals (microsecond times, ties included): the SQL report and
// the Go sweep agree, in hours and in days.
func TestUsageReportMatchesSweep(t *testing.T) {
	t.Parallel()
	loc, s, tn := openStore(t, nil)
	var licenses []string
	for range 3 {
		licenses = append(licenses, mkLicense(t, s, tn.ID, 5, time.Minute).ID)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func() time.Time {
		// On the minute now and then, so that starts and ends meet.
		if rng.IntN(3) == 0 {
			return base.Add(time.Duration(rng.IntN(3*24*60)) * time.Minute)
		}
		return base.Add(time.Duration(rng.Int64N(int64(3*24*time.Hour))) / time.Microsecond * time.Microsecond)
	}
	states := []server.LeaseState{server.LeaseReleased, server.LeaseExpired, server.LeaseRevoked}
	var leases []server.Lease
	for range 300 {
		a, b := at(), at()
		if b.Before(a) {
			a, b = b, a
		}
		deadline := b.Add(time.Duration(rng.IntN(120)-60) * time.Minute)
		if deadline.Before(a) {
			deadline = a
		}
		leases = append(leases, server.Lease{
			ID: server.NewID(server.PrefixLeaseID), LicenseID: licenses[rng.IntN(len(licenses))], TenantID: tn.ID,
			Fingerprint: "fp" + string(rune('a'+rng.IntN(8))), User: []string{"", "u1", "u2", "u3"}[rng.IntN(4)],
			State: states[rng.IntN(len(states))], AcquiredAt: a, LastHeartbeatAt: a, ExpiresAt: deadline, EndedAt: b,
			TokenHash: server.HashSecret("t"),
		})
	}
	insertLeases(t, loc, leases)
	var events []server.SeatEvent
	for range 100 {
		kind, wait := server.SeatDenied, time.Duration(0)
		if rng.IntN(2) == 0 {
			kind, wait = server.SeatWaited, time.Duration(rng.IntN(1e6))*time.Microsecond
		}
		e := server.SeatEvent{ID: server.NewID("sev_"), TenantID: tn.ID, LicenseID: licenses[rng.IntN(len(licenses))],
			Kind: kind, At: at(), Wait: wait}
		require.NoError(t, s.RecordSeatEvent(t.Context(), e))
		events = append(events, e)
	}
	for _, q := range []server.UsageQuery{
		{TenantID: tn.ID, Start: base.Add(6 * time.Hour), End: base.Add(60 * time.Hour), Bucket: time.Hour, Users: 100, MaxRows: 10000},
		{TenantID: tn.ID, Start: base.Add(-24 * time.Hour), End: base.Add(4 * 24 * time.Hour), Bucket: 24 * time.Hour, Users: 3, MaxRows: 10000},
		{TenantID: tn.ID, LicenseID: licenses[1], Start: base, End: base.Add(24 * time.Hour), Bucket: time.Hour, Users: 100, MaxRows: 10000},
	} {
		want, err := server.BuildUsageReport(q, leases, events, time.Now())
		require.NoError(t, err)
		got, err := s.UsageReport(context.Background(), q)
		require.NoError(t, err)
		require.NotEmpty(t, want.Rows)
		storetest.RequireUsageReport(t, want, got)
	}
}
