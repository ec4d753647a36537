package client

import (
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors to test with errors.Is.
var (
	ErrNoSeat    = errors.New("no seat free")
	ErrLeaseLost = errors.New("lease lost (expired, revoked or released)")
)

// Reasons (google.rpc.ErrorInfo) that Reason returns for the errors a lease
// holder acts on.
const (
	ReasonSeatsExhausted    = "SEATS_EXHAUSTED"
	ReasonLeaseExpired      = "LEASE_EXPIRED"
	ReasonLeaseRevoked      = "LEASE_REVOKED"
	ReasonLeaseReleased     = "LEASE_RELEASED"
	ReasonLeaseNotFound     = "LEASE_NOT_FOUND"
	ReasonLeaseTokenInvalid = "LEASE_TOKEN_INVALID" // another acquisition took the lease over
)

// lostReasons mean the seat is no longer ours, whatever we retry.
var lostReasons = map[string]bool{
	ReasonLeaseExpired:      true,
	ReasonLeaseRevoked:      true,
	ReasonLeaseReleased:     true,
	ReasonLeaseNotFound:     true,
	ReasonLeaseTokenInvalid: true,
	ReasonBadCertificate:    true,
}

// Error is a seatd error with its machine-readable reason.
type Error struct {
	Status *status.Status
	Reason string // google.rpc.ErrorInfo reason, e.g. SEATS_EXHAUSTED
	cause  error  // what the client concluded it from (a *CertificateError), or nil
}

func (e *Error) Error() string { return "seatd: " + e.Status.Message() }

// Unwrap is the client's own finding behind an error it concluded itself
// (ReasonBadCertificate: the *CertificateError), or nil.
func (e *Error) Unwrap() error { return e.cause }

// GRPCStatus lets status.FromError see through the wrapper.
func (e *Error) GRPCStatus() *status.Status { return e.Status }

// Is makes errors.Is(err, ErrNoSeat) and errors.Is(err, ErrLeaseLost) work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoSeat:
		return e.Reason == ReasonSeatsExhausted
	case ErrLeaseLost:
		return lostReasons[e.Reason]
	}
	return false
}

// Reason returns the ErrorInfo reason of a seatd error, or "".
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// wrap turns a gRPC status error into an *Error; other errors pass through.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := &Error{Status: st}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			e.Reason = info.GetReason()
		}
	}
	return e
}

// localError is a lease failure the client concludes itself (a deadline
// passed, or the server's signal arrived without its status), shaped like the
// server's so that Reason and errors.Is treat both alike.
func localError(code codes.Code, reason, msg string) *Error {
	return &Error{Status: status.New(code, msg), Reason: reason}
}

// certLost is the loss of a lease whose answer failed verification: shaped
// like the server's errors (ReasonBadCertificate, ErrLeaseLost), unwrapping
// to the *CertificateError (ErrBadCertificate).
func certLost(cause error) *Error {
	return &Error{Status: status.New(codes.Unauthenticated, cause.Error()), Reason: ReasonBadCertificate, cause: cause}
}

// isLost reports whether err means the lease is gone for good.
func isLost(err error) bool { return errors.Is(err, ErrLeaseLost) }

// retryable reports whether a failed call may succeed if simply repeated.
func retryable(err error) bool {
	if errors.Is(err, errStreamClosed) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted:
		return true
	case codes.ResourceExhausted:
		// A limit on this client's address or on the server's streams,
		// not "no seat": it passes (RetryInfo says when).
		r := Reason(err)
		return r == "RATE_LIMITED" || r == "TOO_MANY_STREAMS"
	}
	return false
}

// retryDelay is the wait the server asked for (RetryInfo), or 0.
func retryDelay(err error) time.Duration {
	st, ok := status.FromError(err)
	if !ok {
		return 0
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}
