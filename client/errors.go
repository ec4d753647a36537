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
	// ErrNoSeat: no seat for this client now. None is free
	// (ReasonSeatsExhausted), or the license's site policy keeps the free
	// ones from it: a cap on its user, host or group (ReasonUserLimit,
	// ReasonHostLimit, ReasonGroupLimit) or seats reserved for others
	// (ReasonSeatsReserved). It passes as leases end: retry later (not at
	// once), or WaitForSeat.
	ErrNoSeat = errors.New("no seat free")
	// ErrNotAllowed: the license's site policy refuses this client the
	// license or feature (ReasonExcluded, ReasonNotIncluded). No retry
	// helps until an administrator changes the policy.
	ErrNotAllowed = errors.New("the site policy does not allow this client")
	ErrLeaseLost  = errors.New("lease lost (expired, revoked or released)")
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

// Reasons of the refusals of a license's site policy (an acquisition's
// user and hostname judged by its rules): ErrNoSeat for those that pass as
// leases end, ErrNotAllowed for the others.
const (
	ReasonSeatsReserved = "SEATS_RESERVED" // every seat left is reserved for others
	ReasonUserLimit     = "USER_LIMIT"     // the user (or each member of its group) holds as many as a max rule allows
	ReasonHostLimit     = "HOST_LIMIT"     // the host (or each member of its host group) holds as many as a max rule allows
	ReasonGroupLimit    = "GROUP_LIMIT"    // the group or host group as a whole holds as many as a max rule allows
	ReasonExcluded      = "EXCLUDED"       // an exclude rule names the client
	ReasonNotIncluded   = "NOT_INCLUDED"   // the license or feature has include rules, and none names the client
)

// noSeatReasons mean no seat for this client now: retry later.
var noSeatReasons = map[string]bool{
	ReasonSeatsExhausted: true,
	ReasonSeatsReserved:  true,
	ReasonUserLimit:      true,
	ReasonHostLimit:      true,
	ReasonGroupLimit:     true,
}

// notAllowedReasons mean the policy refuses this client, whatever it retries.
var notAllowedReasons = map[string]bool{
	ReasonExcluded:    true,
	ReasonNotIncluded: true,
}

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

// Is makes errors.Is(err, ErrNoSeat), errors.Is(err, ErrNotAllowed) and
// errors.Is(err, ErrLeaseLost) work.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNoSeat:
		return noSeatReasons[e.Reason]
	case ErrNotAllowed:
		return notAllowedReasons[e.Reason]
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
