package e2e

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatd/seatd/client"
	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestGoClient uses the shipped Go client library against the binary.
func TestGoClient(t *testing.T) {
	t.Parallel()
	p := start(t, options{})
	ctx := testContext(t)
	created, err := p.admin().CreateLicense(p.asOperator(ctx), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 1, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	key := created.GetLicense().GetKey()

	c, err := client.Dial(p.GRPCAddr)
	require.NoError(t, err)
	defer c.Close()

	lease, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: key, Fingerprint: "app-1", User: "u", Hostname: "h"})
	require.NoError(t, err)
	require.Equal(t, 1, lease.SeatsInUse())
	require.Equal(t, 1, lease.SeatLimit())
	require.Equal(t, 10*time.Second, lease.HeartbeatInterval())
	require.Equal(t, created.GetLicense().GetId(), lease.LicenseID())

	_, err = c.Acquire(ctx, client.AcquireOptions{LicenseKey: key, Fingerprint: "app-2"})
	require.True(t, errors.Is(err, client.ErrNoSeat), "want ErrNoSeat, got %v", err)
	require.Equal(t, "SEATS_EXHAUSTED", client.Reason(err))

	before := lease.ExpiresAt()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, lease.Heartbeat(ctx))
	require.True(t, lease.ExpiresAt().After(before), "Heartbeat moves ExpiresAt")

	require.NoError(t, lease.Release(ctx))
	require.NoError(t, lease.Release(ctx), "releasing twice is fine")
	err = lease.Heartbeat(ctx)
	require.True(t, errors.Is(err, client.ErrLeaseLost), "want ErrLeaseLost, got %v", err)
	require.Equal(t, "LEASE_RELEASED", client.Reason(err))

	other, err := c.Acquire(ctx, client.AcquireOptions{LicenseKey: key, Fingerprint: "app-2"})
	require.NoError(t, err, "the released seat is free")
	require.NoError(t, other.Release(ctx))
}
