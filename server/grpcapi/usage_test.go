package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

func TestLicenseSeatsInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 3, time.Minute)
	idle := e.license(t, 1, time.Minute)
	e.acquire(t, lic.GetKey(), "a")
	e.acquire(t, lic.GetKey(), "b")
	b := e.acquire(t, lic.GetKey(), "c")
	_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: b.GetLease().GetId(), LeaseToken: b.GetLeaseToken()})
	require.NoError(t, err)

	got, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	require.NoError(t, err)
	require.EqualValues(t, 2, got.GetLicense().GetSeatsInUse())

	list, err := e.admin.ListLicenses(operator(t), &seatdv1.ListLicensesRequest{})
	require.NoError(t, err)
	inUse := map[string]int32{}
	for _, l := range list.GetLicenses() {
		inUse[l.GetId()] = l.GetSeatsInUse()
	}
	require.Equal(t, map[string]int32{lic.GetId(): 2, idle.GetId(): 0}, inUse)
}
