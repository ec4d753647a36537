package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/storetest"
)

// The sweep over known intervals gives the figures worked out by hand.
func TestBuildUsageReportKnownIntervals(t *testing.T) {
	t.Parallel()
	leases, events, q, want := storetest.KnownUsage("tnt_a", "lic_l", "lic_m")
	got, err := server.BuildUsageReport(q, leases, events, q.End)
	if err != nil {
		t.Fatal(err)
	}
	storetest.RequireUsageReport(t, want, got)
}

// Denials by reason: the site policy's are counted apart (PolicyDenials);
// the others, of any reason or none (recorded before reasons were, or by a
// store that keeps none), are SEATS_EXHAUSTED.
func TestBuildUsageReportDenialsByReason(t *testing.T) {
	t.Parallel()
	leases, _, q, _ := storetest.KnownUsage("tnt_a", "lic_l", "lic_m")
	at := q.Start.Add(10 * time.Minute)
	denial := func(reason string) server.SeatEvent {
		return server.SeatEvent{ID: "sev_" + reason, TenantID: "tnt_a", LicenseID: "lic_m", Kind: server.SeatDenied, At: at, Reason: reason}
	}
	events := []server.SeatEvent{
		denial(""), denial(server.ReasonSeatsExhausted), denial(server.ReasonUserLimit), denial(server.ReasonExcluded),
		denial(server.ReasonExcluded), denial(server.ReasonSeatsReserved),
	}
	got, err := server.BuildUsageReport(q, leases, events, q.End)
	require.NoError(t, err)
	var row *server.UsageRow
	for i := range got.Rows {
		if got.Rows[i].LicenseID == "lic_m" {
			row = &got.Rows[i]
		}
	}
	require.NotNil(t, row)
	require.Equal(t, int64(6), row.Denials)
	require.Equal(t, map[string]int64{server.ReasonUserLimit: 1, server.ReasonExcluded: 2, server.ReasonSeatsReserved: 1}, row.PolicyDenials)
	require.Equal(t, map[string]int64{server.ReasonUserLimit: 1, server.ReasonExcluded: 2, server.ReasonSeatsReserved: 1, server.ReasonSeatsExhausted: 2},
		row.DenialsByReason())
	require.Nil(t, server.UsageRow{}.DenialsByReason(), "no denials: no reasons")
	require.Equal(t, map[string]int64{server.ReasonSeatsExhausted: 3}, server.UsageRow{Denials: 3}.DenialsByReason(),
		"a store that keeps no reasons enforces no policy")
}
