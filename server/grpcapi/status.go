package grpcapi

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatd/seatd/server"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every seatd error.
const ErrorDomain = "seatd"

// codes maps domain error codes to gRPC status codes; the gateway maps those
// to HTTP (RESOURCE_EXHAUSTED → 429, FAILED_PRECONDITION → 400, ...).
var grpcCodes = map[server.Code]codes.Code{
	server.EINVALID:         codes.InvalidArgument,
	server.ENOTFOUND:        codes.NotFound,
	server.ECONFLICT:        codes.AlreadyExists,
	server.EEXHAUSTED:       codes.ResourceExhausted,
	server.EEXPIRED:         codes.FailedPrecondition,
	server.EPRECONDITION:    codes.FailedPrecondition,
	server.EUNAUTHENTICATED: codes.Unauthenticated,
	server.EPERMISSION:      codes.PermissionDenied,
	server.EUNAVAILABLE:     codes.Unavailable,
	server.EINTERNAL:        codes.Internal,
}

// toStatus turns any error into a gRPC status a client may see. Domain errors
// keep their message and gain ErrorInfo (and BadRequest for bad input);
// anything else is logged and becomes a bare INTERNAL.
func toStatus(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // already a status (e.g. from an interceptor)
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, "request canceled")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	var e *server.Error
	if !errors.As(err, &e) || e.Code == server.EINTERNAL {
		log.ErrorContext(ctx, "internal error", "err", err)
		return status.Error(codes.Internal, "internal error")
	}
	if e.Err != nil {
		log.WarnContext(ctx, "request failed", "code", e.Code, "err", e.Err)
	}
	code, ok := grpcCodes[e.Code]
	if !ok {
		code = codes.Internal
	}
	msg := e.Message
	if e.Field != "" {
		msg = e.Field + ": " + e.Message
	}
	st := status.New(code, msg)
	details := []protoadaptMessage{&errdetails.ErrorInfo{Reason: e.Reason, Domain: ErrorDomain, Metadata: e.Metadata}}
	if e.Field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.Field, Description: e.Message}}})
	}
	if code == codes.Unavailable {
		details = append(details, &errdetails.RetryInfo{})
	}
	withDetails, derr := st.WithDetails(details...)
	if derr != nil {
		return st.Err()
	}
	return withDetails.Err()
}
