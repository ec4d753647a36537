package e2e

import (
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
)

// TestShutdownEndsHeartbeatStreams: on SIGTERM an open heartbeat stream is
// told to reconnect and ended, so that GracefulStop returns at once instead
// of waiting out --shutdown-timeout (docs/guides/upgrades.md, step 4).
func TestShutdownEndsHeartbeatStreams(t *testing.T) {
	t.Parallel()
	// A shutdown timeout far beyond the harness's wait for the exit: had
	// GracefulStop waited for the open stream, seatd would not exit in time
	// and the stream would be cut (UNAVAILABLE), not ended.
	const shutdownTimeout = time.Hour
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
	var (
		signals []seatdv1.HeartbeatSignal
		end     error
	)
	for end == nil {
		var resp *seatdv1.HeartbeatStreamResponse
		if resp, end = stream.Recv(); end == nil {
			signals = append(signals, resp.GetSignal())
		}
	}
	require.Contains(t, signals, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT,
		"an open heartbeat stream is told to reconnect on shutdown")
	require.ErrorIs(t, end, io.EOF, "the server ends the stream cleanly (status OK) instead of cutting it")
	require.Equal(t, 0, p.wait(), "exit code after SIGTERM")
	_, took := loggedShutdownSteps(t, p.Output())
	t.Logf("exited %s after SIGTERM; GracefulStop took %s", time.Since(began).Round(time.Millisecond), took["grpc graceful stop"])
}
