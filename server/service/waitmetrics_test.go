package service

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/seatd/seatd/server"
)

// TestWaitTriesAreNotRefusedAcquisitions: a waiter's tries that find no
// seat free are the wait going on; seatd_acquisitions_total counts the
// wait once, when it ends in a grant.
func TestWaitTriesAreNotRefusedAcquisitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lic := e.license(t, 1)
	held := e.acquire(t, lic.Key, "holder")

	w := e.wait(t.Context(), lic.Key, "waiter")
	w.placeIs(t, 1)
	e.headRefused(t, 8) // a 2 s wait at the default --wait-poll
	_, err := e.svc.Release(t.Context(), held.Lease.ID, held.Token)
	require.NoError(t, err)
	within(t, w.granted, "the waiter's grant")

	count := func(result string) float64 {
		var m dto.Metric
		require.NoError(t, e.metrics.Acquisitions.WithLabelValues(result).Write(&m))
		return m.GetCounter().GetValue()
	}
	require.Zero(t, count(string(server.EEXHAUSTED)), "no acquisition was refused")
	require.Equal(t, 2.0, count("ok"), "the holder's and the waiter's")

	// A refused AcquireSeat still counts as exhausted, once.
	_, err = e.svc.Acquire(t.Context(), SeatRequest{LicenseKey: lic.Key, Fingerprint: "third"})
	require.Equal(t, server.EEXHAUSTED, server.ErrorCode(err))
	require.Equal(t, 1.0, count(string(server.EEXHAUSTED)))
}
