package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestShutdownEndsHeartbeatStreams: on SIGTERM an open heartbeat stream is
// told to reconnect and ended, so that GracefulStop returns at once instead
// of waiting out --shutdown-timeout (DESIGN.md, graceful shutdown step 4).
func TestShutdownEndsHeartbeatStreams(t *testing.T) {
	t.Parallel()
	const shutdownTimeout = 6 * time.Second
	p := start(t, options{args: []string{"--shutdown-timeout", shutdownTimeout.String()}})
	ctx := testContext(t)
	created, err := p.admin().CreateLicense(p.asOperator(ctx), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Seats: 1, LeaseTtl: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	lease, err := p.seats().AcquireSeat(ctx, &seatdv1.AcquireSeatRequest{LicenseKey: created.GetLicense().GetKey(), Fingerprint: "streamer"})
	require.NoError(t, err)

	stream, err := p.heartbeats().HeartbeatStream(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.NotNil(t, resp.GetExpiresAt(), "a ping is answered with the new deadline")
	require.Equal(t, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_UNSPECIFIED, resp.GetSignal())
	// Later pings may be empty.
	require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{}))
	resp, err = stream.Recv()
	require.NoError(t, err)
	require.NotNil(t, resp.GetExpiresAt())

	began := time.Now()
	p.signal(syscall.SIGTERM)
	var signals []seatdv1.HeartbeatSignal
	for {
		resp, err := stream.Recv()
		if err != nil {
			break
		}
		signals = append(signals, resp.GetSignal())
	}
	require.Equal(t, 0, p.wait(), "exit code after SIGTERM")
	took := time.Since(began)
	require.Contains(t, signals, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT,
		"an open heartbeat stream is told to reconnect on shutdown")
	require.Less(t, took, shutdownTimeout-2*time.Second,
		"shutdown waited for the open stream instead of ending it (took %s, --shutdown-timeout %s)", took, shutdownTimeout)
}
