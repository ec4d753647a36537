package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// TestStreamsBeyondTheCapAreRefused: with the cap reached, a new stream is
// refused with TOO_MANY_STREAMS and a retry hint; when one ends, the next
// is let in.
func TestStreamsBeyondTheCapAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.MaxStreams = 2; c.FirstMessageTimeout = -1 })
	lic := e.license(t, 5, time.Minute)
	lease := e.acquire(t, lic.GetKey(), "a")
	ping := &seatdv1.HeartbeatStreamRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()}

	var open []seatdv1.HeartbeatService_HeartbeatStreamClient
	for range 2 {
		s, err := e.beats.HeartbeatStream(t.Context())
		require.NoError(t, err)
		require.NoError(t, s.Send(ping))
		_, err = s.Recv() // the stream is open on the server
		require.NoError(t, err)
		open = append(open, s)
	}
	over, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	_, err = over.Recv()
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonTooManyStreams)
	require.NotNil(t, retryInfo(st), "a refused stream is told when to retry")

	require.NoError(t, open[0].CloseSend())
	_, err = open[0].Recv() // the server ended it
	require.Error(t, err)
	require.Eventually(t, func() bool { return e.api.streams.open.Load() < 2 }, 10*time.Second, 5*time.Millisecond)
	again, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, again.Send(ping))
	_, err = again.Recv()
	require.NoError(t, err, "a stream that ended made room")
}

// TestSilentHeartbeatStreamIsEnded: a stream that never names its lease is
// ended with FIRST_MESSAGE_TIMEOUT, and its slot is given back.
func TestSilentHeartbeatStreamIsEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.MaxStreams = 1; c.FirstMessageTimeout = 100 * time.Millisecond })
	silent, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	_, err = silent.Recv()
	requireStatus(t, err, codes.DeadlineExceeded, server.ReasonFirstMessageTimeout)
	require.Eventually(t, func() bool { return e.api.streams.open.Load() == 0 }, 10*time.Second, 5*time.Millisecond)
}

// TestHeartbeatStreamLivesPastTheFirstMessageDeadline: the deadline is for
// the first message only; a stream that named its lease stays open.
func TestHeartbeatStreamLivesPastTheFirstMessageDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.FirstMessageTimeout = 50 * time.Millisecond })
	lic := e.license(t, 1, time.Minute)
	lease := e.acquire(t, lic.GetKey(), "a")
	ping := &seatdv1.HeartbeatStreamRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()}
	s, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, s.Send(ping))
	_, err = s.Recv()
	require.NoError(t, err)
	// Wait until a deadline timer would surely have fired (the server's
	// clock, not ours: poll until it has been open 4× the deadline).
	opened := time.Now()
	for time.Since(opened) < 200*time.Millisecond {
		require.NoError(t, s.Send(ping))
		_, err = s.Recv()
		require.NoError(t, err, "a stream that named its lease is not ended by the first-message deadline")
	}
}

func retryInfo(st *status.Status) *errdetails.RetryInfo {
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			return r
		}
	}
	return nil
}
