package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/internal/syncbuffer"
	"github.com/seatd/seatd/server"
	"github.com/seatd/seatd/server/service"
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
		{name: "feature not licensed", err: server.FeatureNotLicensed("render"), code: codes.FailedPrecondition, reason: "FEATURE_NOT_LICENSED"},
		{name: "version not licensed", err: server.VersionNotLicensed("render", "2026", []server.Grant{{Version: "2025"}}), code: codes.FailedPrecondition, reason: "VERSION_NOT_LICENSED"},
		{name: "grant not started", err: server.GrantNotStarted("render", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)), code: codes.FailedPrecondition, reason: "GRANT_NOT_STARTED"},
		{name: "grant not found", err: server.ErrGrantNotFound, code: codes.NotFound, reason: "GRANT_NOT_FOUND"},
		{name: "feature seats exhausted", err: server.FeatureSeatsExhausted("render", 3, 3), code: codes.ResourceExhausted, reason: "SEATS_EXHAUSTED"},
		{name: "group not found", err: server.ErrGroupNotFound, code: codes.NotFound, reason: "GROUP_NOT_FOUND"},
		{name: "group in use", err: server.GroupInUse("night", []string{"lic_a"}), code: codes.FailedPrecondition, reason: "GROUP_IN_USE"},
		{name: "excluded", err: server.Verdict{Reason: server.ReasonExcluded, Rule: 2, Subject: server.Subject{Kind: server.SubjectUser, Name: "intern"}, Detail: "rule 2 excludes user intern"}.Err(""),
			code: codes.PermissionDenied, reason: "EXCLUDED", msg: "the site policy excludes this client from the license: rule 2 excludes user intern"},
		{name: "not included", err: server.Verdict{Reason: server.ReasonNotIncluded, Rule: -1}.Err("render"), code: codes.PermissionDenied, reason: "NOT_INCLUDED"},
		{name: "seats reserved", err: server.Verdict{Reason: server.ReasonSeatsReserved, Rule: 0, InUse: 2, Limit: 3}.Err(""), code: codes.ResourceExhausted, reason: "SEATS_RESERVED"},
		{name: "user limit", err: server.Verdict{Reason: server.ReasonUserLimit, Rule: 1, InUse: 1, Limit: 1}.Err(""), code: codes.ResourceExhausted, reason: "USER_LIMIT"},
		{name: "host limit", err: server.Verdict{Reason: server.ReasonHostLimit, Rule: 1, InUse: 1, Limit: 1}.Err(""), code: codes.ResourceExhausted, reason: "HOST_LIMIT"},
		{name: "group limit", err: server.Verdict{Reason: server.ReasonGroupLimit, Rule: 1, InUse: 1, Limit: 1}.Err(""), code: codes.ResourceExhausted, reason: "GROUP_LIMIT"},
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

// TestErrorTable: every error a client may see maps to the gRPC code and
// ErrorInfo reason of the error table (docs/concepts/errors.md), with the domain "seatd";
// internal detail stays in the log.
func TestErrorTable(t *testing.T) {
	t.Parallel()
	cause := errors.New(`pq: password authentication failed for user "seatd" at 10.0.0.7:5432`)
	withCause := func(e *server.Error) *server.Error { c := *e; c.Err = cause; return &c }
	tests := []struct {
		err    error
		code   codes.Code
		reason string
	}{
		{server.SeatsExhausted(1, 1), codes.ResourceExhausted, "SEATS_EXHAUSTED"},
		{service.ErrQueueFull, codes.ResourceExhausted, "QUEUE_FULL"},
		{server.ErrLicenseNotFound, codes.NotFound, "LICENSE_NOT_FOUND"},
		{server.ErrLeaseNotFound, codes.NotFound, "LEASE_NOT_FOUND"},
		{server.ErrTenantNotFound, codes.NotFound, "TENANT_NOT_FOUND"},
		{server.ErrAPIKeyNotFound, codes.NotFound, "API_KEY_NOT_FOUND"},
		{server.ErrLeaseExpired, codes.FailedPrecondition, "LEASE_EXPIRED"},
		{server.ErrLeaseReleased, codes.FailedPrecondition, "LEASE_RELEASED"},
		{server.ErrLeaseRevoked, codes.FailedPrecondition, "LEASE_REVOKED"},
		{server.ErrLicenseInactive, codes.FailedPrecondition, "LICENSE_INACTIVE"},
		{server.ErrLicenseExpired, codes.FailedPrecondition, "LICENSE_EXPIRED"},
		{server.ErrLeaseToken, codes.PermissionDenied, "LEASE_TOKEN_INVALID"},
		{server.ErrBorrowNotAllowed, codes.FailedPrecondition, "BORROW_NOT_ALLOWED"},
		{server.BorrowLimit(2, 2), codes.ResourceExhausted, "BORROW_LIMIT_REACHED"},
		{server.ErrLeaseBorrowed, codes.FailedPrecondition, "LEASE_BORROWED"},
		{server.BorrowedNotRevocable("2026-03-01T12:00:00Z"), codes.FailedPrecondition, "LEASE_BORROWED"},
		{server.LeaseAlreadyEnded(server.Lease{State: server.LeaseRevoked}), codes.FailedPrecondition, "LEASE_REVOKED"},
		{server.LeaseAlreadyEnded(server.Lease{State: server.LeaseReleased}), codes.FailedPrecondition, "LEASE_RELEASED"},
		{server.LeaseAlreadyEnded(server.Lease{State: server.LeaseExpired}), codes.FailedPrecondition, "LEASE_EXPIRED"},
		{server.ErrGroupNotFound, codes.NotFound, "GROUP_NOT_FOUND"},
		{server.GroupInUse("night", []string{"lic_a", "lic_b"}), codes.FailedPrecondition, "GROUP_IN_USE"},
		{server.Invalid("fingerprint", "is required"), codes.InvalidArgument, "INVALID_ARGUMENT"},
		{errNoCredentials, codes.Unauthenticated, "UNAUTHENTICATED"},
		{Principal{TenantID: "acme"}.requireOperator(), codes.PermissionDenied, "PERMISSION_DENIED"},
		{server.Errorf(server.ECONFLICT, server.ReasonAlreadyExists, "tenant acme exists"), codes.AlreadyExists, "ALREADY_EXISTS"},
		{server.Unavailable(cause), codes.Unavailable, "BACKEND_UNAVAILABLE"},
		{service.ErrShuttingDown, codes.Unavailable, "SERVER_SHUTTING_DOWN"},
		// Wrapped, and with an internal cause: the same answer.
		{fmt.Errorf("acquire: %w", withCause(server.ErrLicenseNotFound)), codes.NotFound, "LICENSE_NOT_FOUND"},
		{withCause(server.SeatsExhausted(2, 2)), codes.ResourceExhausted, "SEATS_EXHAUSTED"},
	}
	for _, tt := range tests {
		logs := &syncbuffer.Buffer{}
		log := slog.New(slog.NewTextHandler(logs, nil))
		st := status.Convert(toStatus(context.Background(), log, tt.err))
		require.Equal(t, tt.code, st.Code(), "%v", tt.err)
		info := errorInfo(st)
		require.NotNil(t, info, "%v", tt.err)
		require.Equal(t, tt.reason, info.GetReason())
		require.Equal(t, ErrorDomain, info.GetDomain())
		require.NotContains(t, st.Message(), "10.0.0.7", "internal detail reached the client: %v", st)
		require.NotContains(t, st.Message(), "pq:")
		if errors.Is(tt.err, cause) {
			require.Contains(t, logs.String(), "10.0.0.7", "the cause is logged")
		}
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r
			}
		}
		require.Equal(t, tt.code == codes.Unavailable, retry != nil, "RetryInfo exactly on UNAVAILABLE: %v", st)
	}
}

// TestEveryCodeHasAStatus: no domain code falls through to INTERNAL by
// accident.
func TestEveryCodeHasAStatus(t *testing.T) {
	t.Parallel()
	for _, c := range []server.Code{
		server.EINVALID, server.ENOTFOUND, server.ECONFLICT, server.EEXHAUSTED, server.EEXPIRED,
		server.EPRECONDITION, server.EUNAUTHENTICATED, server.EPERMISSION, server.EUNAVAILABLE,
	} {
		code, ok := grpcCodes[c]
		require.True(t, ok, "code %s has no gRPC status", c)
		require.NotEqual(t, codes.Internal, code, c)
	}
}

func TestStatusDetails(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)

	st := status.Convert(toStatus(context.Background(), log, server.SeatsExhausted(3, 3)))
	require.Equal(t, map[string]string{"seats_in_use": "3", "seat_limit": "3"}, errorInfo(st).GetMetadata())

	st = status.Convert(toStatus(context.Background(), log, server.Invalid("license.lease_ttl", "must be between 1s and 168h0m0s")))
	require.Equal(t, "license.lease_ttl: must be between 1s and 168h0m0s", st.Message())
	br := badRequest(st)
	require.NotNil(t, br)
	require.Len(t, br.GetFieldViolations(), 1)
	require.Equal(t, "license.lease_ttl", br.GetFieldViolations()[0].GetField())
	require.Equal(t, "must be between 1s and 168h0m0s", br.GetFieldViolations()[0].GetDescription())

	require.Nil(t, badRequest(status.Convert(toStatus(context.Background(), log, server.ErrLeaseExpired))), "BadRequest only for bad input")

	// Errors that are statuses already pass through; nil stays nil.
	already := status.Error(codes.ResourceExhausted, "grpc: received message larger than max")
	require.Equal(t, already, toStatus(context.Background(), log, already))
	require.NoError(t, toStatus(context.Background(), log, nil))

	st = status.Convert(toStatus(context.Background(), log, fmt.Errorf("query: %w", context.DeadlineExceeded)))
	require.Equal(t, codes.DeadlineExceeded, st.Code())
	require.Equal(t, "deadline exceeded", st.Message())
}

// TestInternalErrorsSayNothing: an error that is not a domain error, or is
// one with the internal code, reaches the client as a bare INTERNAL; the
// log has the detail.
func TestInternalErrorsSayNothing(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		errors.New(`ERROR: relation "sessions" does not exist (SQLSTATE 42P01)`),
		&server.Error{Code: server.EINTERNAL, Message: `relation "sessions" does not exist`},
		fmt.Errorf("wrapped: %w", errors.New(`relation "sessions" does not exist`)),
	} {
		logs := &syncbuffer.Buffer{}
		st := status.Convert(toStatus(context.Background(), slog.New(slog.NewTextHandler(logs, nil)), err))
		require.Equal(t, codes.Internal, st.Code())
		require.Equal(t, "internal error", st.Message())
		require.Empty(t, st.Details())
		require.Contains(t, logs.String(), "sessions", "the detail is logged")
	}
}
