package server

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Code classifies an Error. Transports map codes to their own status (see
// grpcapi); anything that is not an *Error is internal and never shown.
type Code string

const (
	EINVALID         Code = "invalid"         // bad input; Field names it
	ENOTFOUND        Code = "not_found"       // no such license, lease, tenant or key (or not yours)
	ECONFLICT        Code = "conflict"        // already exists
	EEXHAUSTED       Code = "exhausted"       // no seat free, queue full
	EEXPIRED         Code = "lease_expired"   // heartbeat after the deadline
	EPRECONDITION    Code = "precondition"    // license inactive/expired, lease already ended
	EUNAUTHENTICATED Code = "unauthenticated" // missing or unknown credentials
	EPERMISSION      Code = "permission"      // known credentials, not allowed
	EUNAVAILABLE     Code = "unavailable"     // backend down or rebuilding; retry
	EINTERNAL        Code = "internal"
)

// Reasons are the machine-readable google.rpc.ErrorInfo reasons clients see.
const (
	ReasonInvalidArgument  = "INVALID_ARGUMENT"
	ReasonLicenseNotFound  = "LICENSE_NOT_FOUND"
	ReasonLeaseNotFound    = "LEASE_NOT_FOUND"
	ReasonTenantNotFound   = "TENANT_NOT_FOUND"
	ReasonAPIKeyNotFound   = "API_KEY_NOT_FOUND"
	ReasonAlreadyExists    = "ALREADY_EXISTS"
	ReasonSeatsExhausted   = "SEATS_EXHAUSTED"
	ReasonQueueFull        = "QUEUE_FULL"
	ReasonLeaseExpired     = "LEASE_EXPIRED"
	ReasonLeaseReleased    = "LEASE_RELEASED"
	ReasonLeaseRevoked     = "LEASE_REVOKED"
	ReasonLeaseTokenWrong  = "LEASE_TOKEN_INVALID"
	ReasonLicenseInactive  = "LICENSE_INACTIVE"
	ReasonLicenseExpired   = "LICENSE_EXPIRED"
	ReasonUnauthenticated  = "UNAUTHENTICATED"
	ReasonPermissionDenied = "PERMISSION_DENIED"
	ReasonUnavailable      = "BACKEND_UNAVAILABLE"
	// Limits a hostile or broken client runs into (docs/guides/tls.md,
	// "Limits").
	ReasonMessageTooLarge     = "MESSAGE_TOO_LARGE"
	ReasonTooManyStreams      = "TOO_MANY_STREAMS"
	ReasonFirstMessageTimeout = "FIRST_MESSAGE_TIMEOUT"
	ReasonStreamIdleTimeout   = "STREAM_IDLE_TIMEOUT"
	// Too many failed lookups or calls from one client address (with a
	// RetryInfo delay), and a tenant at one of its quotas.
	ReasonRateLimited   = "RATE_LIMITED"
	ReasonQuotaExceeded = "QUOTA_EXCEEDED"
	// The request's bytes are not a message of the method's request type.
	ReasonMalformedRequest = "MALFORMED_REQUEST"
	// Borrowing: the license does not allow it, its borrowed seats are all
	// out, or the lease is borrowed (no heartbeats, no revocation).
	ReasonBorrowNotAllowed = "BORROW_NOT_ALLOWED"
	ReasonBorrowLimit      = "BORROW_LIMIT_REACHED"
	ReasonLeaseBorrowed    = "LEASE_BORROWED"
	// Features (grants.go): the license holds no grant of the feature, none
	// covering the version, none started yet; no such grant.
	ReasonFeatureNotLicensed = "FEATURE_NOT_LICENSED"
	ReasonVersionNotLicensed = "VERSION_NOT_LICENSED"
	ReasonGrantNotStarted    = "GRANT_NOT_STARTED"
	ReasonGrantNotFound      = "GRANT_NOT_FOUND"
	// Site policy (policy.go, Judge); each reason's meaning is on its line.

	ReasonSeatsReserved            = "SEATS_RESERVED"              // every seat left is reserved for users, hosts or groups the client is not one of
	ReasonUserLimit                = "USER_LIMIT"                  // the user (or a member of a group capped member by member) holds all the seats a max rule allows it
	ReasonHostLimit                = "HOST_LIMIT"                  // the host (or a member of a host group capped member by member) holds all the seats a max rule allows it
	ReasonGroupLimit               = "GROUP_LIMIT"                 // the group or host group as a whole holds all the seats a max rule allows it
	ReasonNotIncluded              = "NOT_INCLUDED"                // the feature has include rules and none names the client
	ReasonExcluded                 = "EXCLUDED"                    // an exclude rule names the client (exclude wins over include)
	ReasonGroupNotFound            = "GROUP_NOT_FOUND"             // the tenant has no group of that name
	ReasonGroupInUse               = "GROUP_IN_USE"                // a group that policies name cannot be deleted, nor change kind
	ReasonLicenseFileLocked        = "LICENSE_FILE_LOCKED"         // licenses and grants come only from the license file
	ReasonLicenseFileRefused       = "LICENSE_FILE_REFUSED"        // a license file seatd will not serve (metadata cause says why)
	ReasonEndpointNotFound         = "WEBHOOK_ENDPOINT_NOT_FOUND"  // the tenant has no webhook endpoint of that id
	ReasonDeliveryNotFound         = "WEBHOOK_DELIVERY_NOT_FOUND"  // the tenant has no webhook delivery of that id
	ReasonEndpointLimit            = "WEBHOOK_ENDPOINT_LIMIT"      // the tenant has --tenant-max-webhook-endpoints endpoints: delete one first
	ReasonLicenseFileNotConfigured = "LICENSE_FILE_NOT_CONFIGURED" // a license-file call on a seatd without --license-file
)

// Single sign-on (server/sso): why a bearer token or console session was
// refused.
const (
	ReasonTokenExpired        = "TOKEN_EXPIRED"                 // the OIDC token's exp has passed: get a new one (refresh)
	ReasonTokenInvalid        = "TOKEN_INVALID"                 // not a token its issuer signed (signature, format, not yet valid)
	ReasonTokenIssuerUnknown  = "TOKEN_ISSUER_UNKNOWN"          // its iss is no issuer seatd is configured with
	ReasonTokenAudience       = "TOKEN_AUDIENCE_MISMATCH"       // its aud does not name seatd's audience for that issuer
	ReasonRoleNotMapped       = "ROLE_NOT_MAPPED"               // signed in, but none of the person's groups maps to a role
	ReasonSessionExpired      = "SESSION_EXPIRED"               // the console session's lifetime has passed: sign in again
	ReasonCSRFTokenInvalid    = "CSRF_TOKEN_INVALID"            // a console call that changes state without its session's CSRF token
	ReasonIdentityUnavailable = "IDENTITY_PROVIDER_UNAVAILABLE" // the issuer's discovery document or keys could not be fetched; retry
)

// Error is a failure a caller may see. Message is written for the client and
// must not contain internal detail (SQL, addresses, stack).
type Error struct {
	Code     Code
	Reason   string            // ErrorInfo reason; defaults per code
	Message  string            // for the client
	Field    string            // for EINVALID: the offending request field
	Metadata map[string]string // ErrorInfo metadata, e.g. seats_in_use
	Err      error             // internal cause, logged, never shown
}

func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.Field != "" {
		s = string(e.Code) + ": " + e.Field + ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code, reason and client message.
func Errorf(code Code, reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports bad input in one request field.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Code: EINVALID, Reason: ReasonInvalidArgument, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Unavailable wraps a transient backend failure: the client may retry.
func Unavailable(err error) *Error {
	return &Error{Code: EUNAVAILABLE, Reason: ReasonUnavailable, Message: "storage backend unavailable, retry", Err: err}
}

// ErrorCode returns the code of err, EINTERNAL for anything that is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorReason returns the ErrorInfo reason of err ("" if none).
func ErrorReason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// FileNotNewer refuses a license file whose serial is below the one in
// force, or equal to it with other content (SetFileInForce).
func FileNotNewer(serial int64, inForce LicenseFileRecord) *Error {
	msg := fmt.Sprintf("license file serial %d is not newer than the license file in force (serial %d)", serial, inForce.Serial)
	if serial == inForce.Serial {
		msg = fmt.Sprintf("license file serial %d is another file than the license file in force, which has that serial too", serial)
	}
	return &Error{
		Code: EPRECONDITION, Reason: ReasonLicenseFileRefused, Message: msg,
		Metadata: map[string]string{
			"cause": "not_newer", "serial": strconv.FormatInt(serial, 10), "serial_in_force": strconv.FormatInt(inForce.Serial, 10),
		},
	}
}

// Common errors. Compare with ErrorCode/ErrorReason, not ==, since callers
// may wrap them.
var (
	ErrLicenseNotFound = Errorf(ENOTFOUND, ReasonLicenseNotFound, "license not found")
	ErrLeaseNotFound   = Errorf(ENOTFOUND, ReasonLeaseNotFound, "lease not found")
	ErrTenantNotFound  = Errorf(ENOTFOUND, ReasonTenantNotFound, "tenant not found")
	ErrAPIKeyNotFound  = Errorf(ENOTFOUND, ReasonAPIKeyNotFound, "api key not found")
	ErrLeaseExpired    = Errorf(EEXPIRED, ReasonLeaseExpired, "lease expired; acquire a new seat")
	ErrLeaseReleased   = Errorf(EPRECONDITION, ReasonLeaseReleased, "lease was released; acquire a new seat")
	ErrLeaseRevoked    = Errorf(EPRECONDITION, ReasonLeaseRevoked, "lease was revoked")
	ErrLeaseToken      = Errorf(EPERMISSION, ReasonLeaseTokenWrong, "lease token does not match the lease")
	ErrLicenseInactive = Errorf(EPRECONDITION, ReasonLicenseInactive, "license is not active")
	ErrLicenseExpired  = Errorf(EPRECONDITION, ReasonLicenseExpired, "license has expired")
	// ErrBorrowNotAllowed: the license's max_borrow_duration is 0.
	// ErrLicenseFileLocked: in locked mode licenses and feature grants
	// come only from the license file (docs/concepts/license-files.md).
	ErrLicenseFileLocked = Errorf(EPRECONDITION, ReasonLicenseFileLocked, "licenses and feature grants come from the license file (locked mode): they change only with a new file from the vendor")
	// ErrLicenseFileNotConfigured: a license-file call on a seatd that
	// serves none.
	ErrLicenseFileNotConfigured = Errorf(EPRECONDITION, ReasonLicenseFileNotConfigured, "seatd runs without a license file (--license-file)")

	ErrBorrowNotAllowed = Errorf(EPRECONDITION, ReasonBorrowNotAllowed, "license does not allow borrowing (max_borrow_duration is 0)")
	// ErrLeaseBorrowed refuses a heartbeat of a borrowed lease: it keeps
	// the deadline it was borrowed until.
	ErrLeaseBorrowed = Errorf(EPRECONDITION, ReasonLeaseBorrowed, "lease is borrowed: it needs no heartbeats and keeps its deadline")
)

// BorrowPastExpiry refuses a borrow whose deadline would be after the
// expiry of the pool it borrows from (License.CheckBorrow).
func BorrowPastExpiry(expiresAt time.Time) *Error {
	return Invalid("borrow_duration", "must end by %s (the license's or the grant's expiry)", expiresAt.UTC().Format(time.RFC3339))
}

// BorrowLimit is the error for a license whose borrowed seats are all out.
func BorrowLimit(borrowed, limit int) *Error {
	return &Error{
		Code: EEXHAUSTED, Reason: ReasonBorrowLimit,
		Message:  fmt.Sprintf("no seat may be borrowed: %d of %d borrowed", borrowed, limit),
		Metadata: map[string]string{"borrowed_seats": fmt.Sprint(borrowed), "max_borrowed_seats": fmt.Sprint(limit)},
	}
}

// BorrowedNotRevocable refuses to revoke a borrowed lease: its holder may
// be offline with a certificate valid until expiresAt, so the seat stays
// taken until then (or until the holder returns it).
func BorrowedNotRevocable(expiresAt string) *Error {
	return &Error{
		Code: EPRECONDITION, Reason: ReasonLeaseBorrowed,
		Message:  "a borrowed lease cannot be revoked: its certificate stays valid offline until " + expiresAt + "; it holds its seat until then or until it is returned",
		Metadata: map[string]string{"expires_at": expiresAt},
	}
}

// BorrowedNotReturnable refuses to return a borrowed lease before its
// deadline when its license does not allow early return
// (License.AllowEarlyReturn): its certificate stays valid offline until
// then whatever seatd records, so a return would free a seat that may
// still be in use.
func BorrowedNotReturnable(expiresAt time.Time) *Error {
	at := expiresAt.UTC().Format(time.RFC3339)
	return &Error{
		Code: EPRECONDITION, Reason: ReasonLeaseBorrowed,
		Message:  "a borrowed lease cannot be returned early (the license does not allow_early_return): its certificate stays valid offline until " + at + ", and it holds its seat until then",
		Metadata: map[string]string{"expires_at": at},
	}
}

// LeaseAlreadyEnded refuses to revoke a lease that has ended already
// (released, expired or revoked): nothing changed, and no revocation was
// audited or sent. The reason is the one a heartbeat of that lease gets
// (LEASE_RELEASED, LEASE_EXPIRED, LEASE_REVOKED); the metadata says how
// and when it ended.
func LeaseAlreadyEnded(l Lease) *Error {
	reason := ReasonLeaseRevoked
	switch l.State {
	case LeaseReleased:
		reason = ReasonLeaseReleased
	case LeaseExpired:
		reason = ReasonLeaseExpired
	}
	at := l.EndedAt.UTC().Format(time.RFC3339)
	return &Error{
		Code: EPRECONDITION, Reason: reason,
		Message:  fmt.Sprintf("lease already %s at %s; nothing changed", l.State, at),
		Metadata: map[string]string{"state": string(l.State), "ended_at": at},
	}
}

// SeatsExhausted is the error for a full license.
func SeatsExhausted(inUse, limit int) *Error {
	return &Error{
		Code: EEXHAUSTED, Reason: ReasonSeatsExhausted,
		Message:  fmt.Sprintf("no seat free: %d of %d in use", inUse, limit),
		Metadata: map[string]string{"seats_in_use": fmt.Sprint(inUse), "seat_limit": fmt.Sprint(limit)},
	}
}

// AlreadyExists is the error for an id or key that is taken.
func AlreadyExists(field, what string) *Error {
	return &Error{Code: ECONFLICT, Reason: ReasonAlreadyExists, Field: field, Message: what + " already exists"}
}
