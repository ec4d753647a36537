package server_test

import (
	"testing"

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
