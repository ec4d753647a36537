package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/server"
)

func TestToStatus(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		name       string
		err        error
		code       codes.Code
		reason     string
		msg        string
		noInternal string // text that must not reach the client
	}{
		{name: "exhausted", err: server.SeatsExhausted(2, 2), code: codes.ResourceExhausted, reason: "SEATS_EXHAUSTED", msg: "no seat free: 2 of 2 in use"},
		{name: "expired", err: server.ErrLeaseExpired, code: codes.FailedPrecondition, reason: "LEASE_EXPIRED"},
		{name: "not found", err: server.ErrLicenseNotFound, code: codes.NotFound, reason: "LICENSE_NOT_FOUND"},
		{name: "invalid names field", err: server.Invalid("license.seats", "must be between 1 and 10"), code: codes.InvalidArgument, reason: "INVALID_ARGUMENT", msg: "license.seats: must be between 1 and 10"},
		{name: "token", err: server.ErrLeaseToken, code: codes.PermissionDenied, reason: "LEASE_TOKEN_INVALID"},
		{name: "unavailable hides cause", err: server.Unavailable(errors.New("dial tcp 10.0.0.1:5432: refused")), code: codes.Unavailable, reason: "BACKEND_UNAVAILABLE", noInternal: "10.0.0.1"},
		{name: "plain error is internal", err: errors.New("pq: relation \"x\" does not exist"), code: codes.Internal, msg: "internal error", noInternal: "relation"},
		{name: "canceled", err: context.Canceled, code: codes.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(toStatus(context.Background(), log, tt.err))
			require.Equal(t, tt.code, st.Code())
			if tt.msg != "" {
				require.Equal(t, tt.msg, st.Message())
			}
			if tt.noInternal != "" {
				require.NotContains(t, st.Message(), tt.noInternal)
			}
			var reason string
			for _, d := range st.Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok {
					reason = info.GetReason()
					require.Equal(t, ErrorDomain, info.GetDomain())
				}
			}
			require.Equal(t, tt.reason, reason)
		})
	}
}
