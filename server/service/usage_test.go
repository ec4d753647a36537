package service

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// A refused AcquireSeat call is one denial, however often a waiter's own
// tries are refused meanwhile; a wait that ends in a seat is one queue
// wait, as long as the waiter waited.
func TestUsageReportCountsDenialsOncePerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	held, err := e.svc.AcquireSeat(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: "holder", User: "ann"})
	require.NoError(t, err)
	for range 3 {
		_, err := e.svc.AcquireSeat(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: "late"})
		require.Equal(t, server.ReasonSeatsExhausted, server.ErrorReason(err))
	}

	granted := make(chan Grant, 1)
	go func() {
		g, err := e.svc.WaitForSeatCounted(context.Background(), SeatRequest{LicenseKey: lic.Key, Fingerprint: "waiter"}, "",
			func(Place) error { return nil })
		if err == nil {
			granted <- g
		}
	}()
	e.headRefused(t, 5) // the waiter's tries: not denials
	e.clock.Advance(30 * time.Second)
	_, err = e.svc.Release(t.Context(), held.Lease.ID, held.Token)
	require.NoError(t, err)
	g := within(t, granted, "the waiter's seat")
	_, err = e.svc.Release(t.Context(), g.Lease.ID, g.Token)
	require.NoError(t, err)

	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	q, err := e.svc.UsageQuery(server.DefaultTenantID, UsageWindow{Start: &start, End: &end})
	require.NoError(t, err)
	rep, err := e.svc.UsageReport(t.Context(), q)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 1)
	r := rep.Rows[0]
	require.Equal(t, int64(3), r.Denials, "one a refused call, none a waiter's try")
	require.Equal(t, int64(2), r.Acquisitions)
	require.Equal(t, 1, r.PeakSeats)
	require.Equal(t, int64(1), r.QueueWaits)
	require.Equal(t, 30*time.Second, r.MeanWait)
	require.InDelta(t, (30 * time.Second).Hours(), r.SeatHours, 1e-9, "the holder held 30 s, the waiter no time")
	require.Equal(t, int64(2), r.DistinctUsers, "ann and the waiter's fingerprint")
}

// TestUsageReportCountsPolicyRefusalsAsDenials: a call the site policy
// refuses is a denial, by reason, as one refused for want of a seat is
// (SEATS_EXHAUSTED): AcquireSeat refused USER_LIMIT or EXCLUDED, and a
// WaitForSeat the policy ends. Only SEATS_EXHAUSTED used to count, so a
// report said nothing of clients the policy kept out.
func TestUsageReportCountsPolicyRefusalsAsDenials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 2)
	e.setPolicy(t, lic.ID,
		server.PolicyRule{Kind: server.RuleMax, Count: 1, Subject: user("bob")},
		server.PolicyRule{Kind: server.RuleExclude, Subject: user("intern")})
	acquire := func(fingerprint, userName string) error {
		_, err := e.svc.AcquireSeat(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: fingerprint, User: userName, Hostname: "h"})
		return err
	}
	require.NoError(t, acquire("b1", "bob"))
	require.Equal(t, server.ReasonUserLimit, server.ErrorReason(acquire("b2", "bob")))
	for range 2 {
		require.Equal(t, server.ReasonExcluded, server.ErrorReason(acquire("i1", "intern")))
	}
	require.NoError(t, acquire("d1", "dave"))
	require.Equal(t, server.ReasonSeatsExhausted, server.ErrorReason(acquire("e1", "erin")))
	_, err := e.svc.WaitForSeatCounted(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: "i2", User: "intern", Hostname: "h"}, "",
		func(Place) error { return nil })
	require.Equal(t, server.ReasonExcluded, server.ErrorReason(err), "the policy ends the wait")

	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	end := start.Add(24 * time.Hour)
	q, err := e.svc.UsageQuery(server.DefaultTenantID, UsageWindow{Start: &start, End: &end})
	require.NoError(t, err)
	rep, err := e.svc.UsageReport(t.Context(), q)
	require.NoError(t, err)
	require.Len(t, rep.Rows, 1)
	r := rep.Rows[0]
	require.Equal(t, int64(5), r.Denials, "every refused call, the wait the policy ended too")
	require.Equal(t, map[string]int64{server.ReasonUserLimit: 1, server.ReasonExcluded: 3}, r.PolicyDenials)
	require.Equal(t, map[string]int64{server.ReasonUserLimit: 1, server.ReasonExcluded: 3, server.ReasonSeatsExhausted: 1}, r.DenialsByReason())
	require.Zero(t, r.QueueWaits, "a wait the policy ended is no queue wait")
}

func TestUsageQueryBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return &v
	}
	q, err := e.svc.UsageQuery("t", UsageWindow{})
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, q.Bucket, "a day by default")
	require.Equal(t, *at("2026-03-03T00:00:00Z"), q.End, "now, widened to the bucket's end")
	require.Equal(t, *at("2026-02-23T00:00:00Z"), q.Start, "7 days before, widened to the bucket's start")
	require.Equal(t, server.DefaultUsageUsers, q.Users)

	q, err = e.svc.UsageQuery("t", UsageWindow{Bucket: time.Hour, Start: at("2026-03-01T10:30:00Z"), End: at("2026-03-01T12:00:00Z")})
	require.NoError(t, err)
	require.Equal(t, *at("2026-03-01T10:00:00Z"), q.Start)
	require.Equal(t, *at("2026-03-01T12:00:00Z"), q.End)

	for _, c := range []struct {
		w     UsageWindow
		field string
	}{
		{UsageWindow{Bucket: time.Minute}, "bucket"},
		{UsageWindow{Start: at("2026-03-02T00:00:00Z"), End: at("2026-03-01T00:00:00Z")}, "start_time"},
		{UsageWindow{Bucket: time.Hour, Start: at("2026-01-01T00:00:00Z"), End: at("2026-03-01T00:00:00Z")}, "start_time"},
		{UsageWindow{Users: server.MaxUsageUsers + 1}, "user_limit"},
		{UsageWindow{Users: -1}, "user_limit"},
	} {
		_, err := e.svc.UsageQuery("t", c.w)
		require.Equal(t, server.EINVALID, server.ErrorCode(err), "%+v", c.w)
		var se *server.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, c.field, se.Field, "%+v", c.w)
	}
}
