package grpcapi

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	seatdv1 "github.com/seatd/seatd/gen/seatd/v1"
	"github.com/seatd/seatd/server"
)

func TestSeatLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 2, 6*time.Minute)

	a := e.acquire(t, lic.GetKey(), "laptop-1")
	require.Regexp(t, `^slt_`, a.GetLeaseToken())
	require.Regexp(t, `^lse_`, a.GetLease().GetId())
	require.Equal(t, time.Minute, a.GetHeartbeatInterval().AsDuration(), "TTL/6")
	require.EqualValues(t, 1, a.GetSeatsInUse())
	require.EqualValues(t, 2, a.GetSeatLimit())
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_ACTIVE, a.GetLease().GetState())
	require.Equal(t, "laptop-1", a.GetLease().GetFingerprint())

	// The same fingerprint again: the same lease, a new token.
	again := e.acquire(t, lic.GetKey(), "laptop-1")
	require.Equal(t, a.GetLease().GetId(), again.GetLease().GetId())
	require.NotEqual(t, a.GetLeaseToken(), again.GetLeaseToken())
	_, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
	requireStatus(t, err, codes.PermissionDenied, server.ReasonLeaseTokenWrong, "the old token stops working")

	hb, err := e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: again.GetLease().GetId(), LeaseToken: again.GetLeaseToken()})
	require.NoError(t, err)
	require.False(t, hb.GetExpiresAt().AsTime().Before(again.GetLease().GetExpiresAt().AsTime()), "the deadline moves ahead")
	require.Equal(t, hb.GetExpiresAt().AsTime(), hb.GetLease().GetExpiresAt().AsTime())
	require.Equal(t, time.Minute, hb.GetHeartbeatInterval().AsDuration())

	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: "lse_000000000000000000000000", LeaseToken: again.GetLeaseToken()})
	requireStatus(t, err, codes.NotFound, server.ReasonLeaseNotFound)

	rel, err := e.seats.ReleaseSeat(t.Context(), &seatdv1.ReleaseSeatRequest{LeaseId: again.GetLease().GetId(), LeaseToken: again.GetLeaseToken()})
	require.NoError(t, err)
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_RELEASED, rel.GetLease().GetState())
	require.NotNil(t, rel.GetLease().GetEndedAt())
	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: again.GetLease().GetId(), LeaseToken: again.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLeaseReleased)
}

func TestNoSeatFree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	e.acquire(t, lic.GetKey(), "first")
	_, err := e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "second"})
	st := requireStatus(t, err, codes.ResourceExhausted, server.ReasonSeatsExhausted)
	require.Equal(t, map[string]string{"seats_in_use": "1", "seat_limit": "1"}, errorInfo(st).GetMetadata())

	_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: "slk_no-such-key", Fingerprint: "x"})
	requireStatus(t, err, codes.NotFound, server.ReasonLicenseNotFound)
}

func TestInactiveLicense(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 2, time.Minute)
	a := e.acquire(t, lic.GetKey(), "before")
	inactive := false
	_, err := e.admin.UpdateLicense(operator(t), &seatdv1.UpdateLicenseRequest{
		License:    &seatdv1.License{Id: lic.GetId(), Active: &inactive},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"active"}},
	})
	require.NoError(t, err)
	_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "after"})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseInactive)
	_, err = e.beats.Heartbeat(t.Context(), &seatdv1.HeartbeatRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()})
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLicenseInactive, "an inactive license's leases cannot be heartbeated")
}

func TestRevokeReachesTheStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	a := e.acquire(t, lic.GetKey(), "fp")
	stream, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.NotNil(t, resp.GetExpiresAt(), "the stream watches the lease from its first answer on")

	revoked, err := e.admin.RevokeLease(operator(t), &seatdv1.RevokeLeaseRequest{LeaseId: a.GetLease().GetId(), Reason: "testing"})
	require.NoError(t, err)
	require.Equal(t, seatdv1.LeaseState_LEASE_STATE_REVOKED, revoked.GetLease().GetState())

	resp, err = stream.Recv()
	require.NoError(t, err)
	require.Equal(t, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_REVOKED, resp.GetSignal(), "told without pinging")
	_, err = stream.Recv()
	requireStatus(t, err, codes.FailedPrecondition, server.ReasonLeaseRevoked)

	// The seat is free again.
	e.acquire(t, lic.GetKey(), "next")
}

func TestShutdownEndsStreamsAndWaiters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	lic := e.license(t, 1, time.Minute)
	a := e.acquire(t, lic.GetKey(), "holder")
	stream, err := e.beats.HeartbeatStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&seatdv1.HeartbeatStreamRequest{LeaseId: a.GetLease().GetId(), LeaseToken: a.GetLeaseToken()}))
	_, err = stream.Recv()
	require.NoError(t, err)

	wait, err := e.seats.WaitForSeat(t.Context(), &seatdv1.WaitForSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "waiter"})
	require.NoError(t, err)
	pos, err := wait.Recv()
	require.NoError(t, err)
	require.EqualValues(t, 1, pos.GetPosition().GetPosition(), "queued: the seat is taken")
	require.Regexp(t, `^w_[0-9a-f]{24}$`, pos.GetPosition().GetTicket())

	e.api.BeginShutdown()
	e.api.BeginShutdown() // twice is fine

	resp, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, seatdv1.HeartbeatSignal_HEARTBEAT_SIGNAL_RECONNECT, resp.GetSignal())
	_, err = stream.Recv()
	require.ErrorIs(t, err, io.EOF, "the stream ends cleanly, so the client moves on")

	_, err = wait.Recv()
	requireStatus(t, err, codes.Unavailable, "SERVER_SHUTTING_DOWN")
}

// brokenStore fails GetLicense with an internal error and Acquire as
// unavailable, each carrying detail that must not reach clients.
type brokenStore struct{ server.Store }

var errSecret = errors.New(`ERROR: permission denied for table licenses at db-7.internal:5432 (SQLSTATE 42501)`)

func (brokenStore) GetLicense(context.Context, string, string) (server.License, error) {
	return server.License{}, errSecret
}

func (brokenStore) Acquire(context.Context, server.AcquireRequest) (server.AcquireResult, error) {
	return server.AcquireResult{}, server.Unavailable(errSecret)
}

func TestStoreFailuresSayNothingInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(s server.Store) server.Store { return brokenStore{s} })
	lic := e.license(t, 1, time.Minute)

	_, err := e.admin.GetLicense(operator(t), &seatdv1.GetLicenseRequest{LicenseId: lic.GetId()})
	st := requireStatus(t, err, codes.Internal, "")
	require.Equal(t, "internal error", st.Message())

	_, err = e.seats.AcquireSeat(t.Context(), &seatdv1.AcquireSeatRequest{LicenseKey: lic.GetKey(), Fingerprint: "fp"})
	st = requireStatus(t, err, codes.Unavailable, server.ReasonUnavailable)
	require.NotContains(t, st.Message(), "db-7")
	require.NotContains(t, st.Message(), "SQLSTATE")

	require.Contains(t, e.logs.String(), "db-7.internal", "the server logs what it does not tell")
}
