package grpcapi

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

// A heartbeat stream that falls silent does not hold its slot for ever
// (issue 24, item 11): it ends when its lease does, or after the idle
// timeout; and one client address cannot take every slot.

// openStream opens a heartbeat stream on lease and waits for the answer to
// its first heartbeat.
func openStream(t *testing.T, e *env, lease *seatdv1.AcquireSeatResponse) seatdv1.HeartbeatService_HeartbeatStreamClient {
	t.Helper()
	s, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()}))
	_, err = s.Recv()
	require.NoError(t, err)
	return s
}

// recvEnd reads s until it ends (bounded by within: the stream must end
// on its own) and returns the signals it sent before its status.
func recvEnd(t *testing.T, s seatdv1.HeartbeatService_HeartbeatStreamClient, within time.Duration) ([]seatdv1.HeartbeatSignal, error) {
	t.Helper()
	type answer struct {
		r   *seatdv1.HeartbeatStreamResponse
		err error
	}
	got := make(chan answer, 1)
	var signals []seatdv1.HeartbeatSignal
	deadline := time.After(within)
	for {
		go func() {
			r, err := s.Recv()
			got <- answer{r, err}
		}()
		select {
		case a := <-got:
			if a.err != nil {
				return signals, a.err
			}
			signals = append(signals, a.r.GetSignal())
		case <-deadline:
			t.Fatalf("the silent stream was still open %v later", within)
		}
	}
}

// TestSilentStreamEndsWhenItsLeaseExpires: the stream says EXPIRED and
// ends LEASE_EXPIRED once the lease's deadline passed with no heartbeat;
// the expiry is recorded first, so a later heartbeat cannot revive the
// lease its client was told had ended (invariant 3).
func TestSilentStreamEndsWhenItsLeaseExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.StreamIdleTimeout = time.Hour })
	lic := e.license(t, 1, time.Second)
	lease := e.acquire(t, lic.GetKey(), "a")
	s := openStream(t, e, lease)
	signals, err := recvEnd(t, s, 30*time.Second)
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLeaseExpired)
	require.Equal(t, []seatdv1.HeartbeatSignal{seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_EXPIRED}, signals)

	got, err := e.store.GetLease(t.Context(), server.DefaultTenantID, lease.GetLease().GetId())
	require.NoError(t, err)
	require.Equal(t, server.LeaseExpired, got.State, "the expiry told was recorded")
	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLeaseExpired)
}

// TestSilentStreamWaitsOutTheRevivalWindow: a lease a late heartbeat may
// still revive keeps its stream until the window has passed.
func TestSilentStreamWaitsOutTheRevivalWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.StreamIdleTimeout = time.Hour })
	resp, err := e.admin.CreateLicense(operator(t), &seatdv1.CreateLicenseRequest{License: &seatdv1.License{
		Name: "revivable", Seats: 1, LeaseTtl: durationpb.New(time.Second), RevivalWindow: durationpb.New(2 * time.Second),
	}})
	require.NoError(t, err)
	lease := e.acquire(t, resp.GetLicense().GetKey(), "a")
	s := openStream(t, e, lease)
	start := time.Now()
	_, err = recvEnd(t, s, 30*time.Second)
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLeaseExpired)
	require.GreaterOrEqual(t, time.Since(start), 2*time.Second, "ended before the revival window had passed")
}

// TestSilentStreamEndsWhenItsLeaseIsReleased: released by another call,
// the lease's stream ends LEASE_RELEASED at the deadline it was told.
func TestSilentStreamEndsWhenItsLeaseIsReleased(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.StreamIdleTimeout = time.Hour })
	lic := e.license(t, 1, time.Second)
	lease := e.acquire(t, lic.GetKey(), "a")
	s := openStream(t, e, lease)
	_, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()})
	require.NoError(t, err)
	_, err = recvEnd(t, s, 30*time.Second)
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLeaseReleased)
}

// TestSilentStreamOfARenewedLeaseStaysOpen: a lease kept alive by other
// calls keeps its silent stream (until the idle timeout).
func TestSilentStreamOfARenewedLeaseStaysOpen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.StreamIdleTimeout = time.Hour })
	lic := e.license(t, 1, time.Second)
	lease := e.acquire(t, lic.GetKey(), "a")
	s := openStream(t, e, lease)
	ended := make(chan error, 1)
	go func() {
		_, err := s.Recv()
		ended <- err
	}()
	// Heartbeat by unary calls for three TTLs, each well within the TTL.
	for range 12 {
		_, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()})
		require.NoError(t, err)
		select {
		case err := <-ended:
			t.Fatalf("the stream of a live lease ended: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// TestIdleStreamIsEnded: a stream that stops heartbeating is ended after
// the idle timeout, but never before two of its lease's heartbeat
// intervals.
func TestIdleStreamIsEnded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.StreamIdleTimeout = 100 * time.Millisecond })
	lic := e.license(t, 1, time.Minute) // heartbeat interval 10 s: the idle floor is 20 s
	lease := e.acquire(t, lic.GetKey(), "a")
	// Before the stream opens: the server's idle clock starts at its last
	// heartbeat on it, which openStream waits for the answer of.
	start := time.Now()
	s := openStream(t, e, lease)
	_, err := recvEnd(t, s, 2*time.Minute)
	requireStatus(t, err, codes.DeadlineExceeded, server.ReasonStreamIdleTimeout)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Second, "ended within two heartbeat intervals")
}

// TestStreamsPerAddressAreCapped: one client address gets at most
// MaxStreamsPerAddress streams, below the instance's cap; a stream that
// ends gives its slot back to the address.
func TestStreamsPerAddressAreCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, func(c *Config) { c.MaxStreams = 100; c.MaxStreamsPerAddress = 2 })
	lic := e.license(t, 1, time.Minute)
	lease := e.acquire(t, lic.GetKey(), "a")
	first := openStream(t, e, lease)
	openStream(t, e, lease)
	over, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	_, err = over.Recv()
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonTooManyStreams)
	require.Contains(t, st.Message(), "per address")
	require.NotNil(t, retryInfo(st))

	require.NoError(t, first.CloseSend())
	_, err = first.Recv()
	require.Error(t, err)
	require.Eventually(t, func() bool {
		s, err := e.beats.HeartbeatStream(t.Context())
		if err != nil {
			return false
		}
		defer s.CloseSend()
		if s.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: lease.GetLease().GetId(), LeaseToken: lease.GetLeaseToken()}) != nil {
			return false
		}
		_, err = s.Recv()
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "a stream that ended made room for its address")
}
