"""Typed exceptions from the google.rpc.ErrorInfo reason seatd attaches.

Every failed call raises a SeatdError subclass chosen by the reason (for
example SeatsExhausted for SEATS_EXHAUSTED); an error without an ErrorInfo is
a plain SeatdError with reason "".
"""

import datetime

import grpc

from seatd._rpc.google.rpc import error_details_pb2, status_pb2

_DETAILS_KEY = "grpc-status-details-bin"


class SeatdError(Exception):
    """A failed seatd call: gRPC code, ErrorInfo reason and metadata."""

    def __init__(self, code, message, reason="", metadata=None, retry_delay=None, field_violations=()):
        super().__init__("seatd: %s (%s%s)" % (message, code.name if code else "?", ", " + reason if reason else ""))
        self.code = code                     # grpc.StatusCode
        self.message = message
        self.reason = reason                 # e.g. "SEATS_EXHAUSTED"
        self.metadata = dict(metadata or {})
        self.retry_delay = retry_delay       # seconds (RetryInfo), or None
        self.field_violations = list(field_violations)  # [(field, description)]


class NoSeat(SeatdError):
    """No seat for this client now (RESOURCE_EXHAUSTED): none is free
    (SeatsExhausted), or the license's site policy keeps the free ones from
    it: a cap on its user, host or group (UserLimit, HostLimit, GroupLimit)
    or seats reserved for others (SeatsReserved). It passes as leases end:
    retry later (not at once), or wait_for_seat."""


class SeatsExhausted(NoSeat):
    """No seat free (RESOURCE_EXHAUSTED SEATS_EXHAUSTED)."""

    @property
    def in_use(self):
        return int(self.metadata.get("seats_in_use", 0))

    @property
    def limit(self):
        return int(self.metadata.get("seat_limit", 0))

    @property
    def feature(self):
        """The feature asked for; in_use and limit are then summed over its
        current grants that cover the version. "" for the base pool."""
        return self.metadata.get("feature", "")


class _PolicyRule:
    """What a site policy's refusal says of the rule that refused: .rule
    (its index, or None), .subject_kind and .subject_name, and .feature
    ("" for the base pool)."""

    @property
    def rule(self):
        r = self.metadata.get("rule")
        return int(r) if r is not None else None

    @property
    def subject_kind(self):
        return self.metadata.get("subject_kind", "")

    @property
    def subject_name(self):
        return self.metadata.get("subject_name", "")

    @property
    def feature(self):
        return self.metadata.get("feature", "")


class PolicyLimit(_PolicyRule, NoSeat):
    """The license's site policy keeps the free seats from this client now
    (RESOURCE_EXHAUSTED): a cap, or seats reserved for others. .in_use and
    .limit are the cap's figures (the pool's, for SEATS_RESERVED)."""

    @property
    def in_use(self):
        return int(self.metadata.get("in_use", 0))

    @property
    def limit(self):
        return int(self.metadata.get("limit", 0))


class SeatsReserved(PolicyLimit):
    """Every seat left is reserved for subjects this client is not one of
    (SEATS_RESERVED)."""


class UserLimit(PolicyLimit):
    """The client's user (or each member of its group) holds as many seats as
    a max rule allows (USER_LIMIT)."""


class HostLimit(PolicyLimit):
    """The client's host (or each member of its host group) holds as many
    seats as a max rule allows (HOST_LIMIT)."""


class GroupLimit(PolicyLimit):
    """The client's group or host group as a whole holds as many seats as a
    max rule allows (GROUP_LIMIT)."""


class NotAllowed(_PolicyRule, SeatdError):
    """The license's site policy refuses this client the license or feature
    (PERMISSION_DENIED): no retry helps until an administrator changes it."""


class Excluded(NotAllowed):
    """An exclude rule names the client (EXCLUDED)."""


class NotIncluded(NotAllowed):
    """The license or feature has include rules, and none names the client
    (NOT_INCLUDED)."""


class LeaseLost(SeatdError):
    """The seat is no longer ours, whatever we retry."""


class LeaseExpired(LeaseLost):
    pass


class LeaseRevoked(LeaseLost):
    pass


class LeaseReleased(LeaseLost):
    pass


class LeaseNotFound(LeaseLost):
    pass


class LeaseTokenInvalid(LeaseLost):
    """Another acquisition (same fingerprint) took the lease over."""


class BadCertificate(LeaseLost):
    """A lease certificate failed verification (Client(signing_keys=...),
    verify_offline): missing, signed by a key not in the JWKS, another
    nonce, another lease or deadline. The client concludes it (reason
    LEASE_CERTIFICATE_INVALID, never sent by seatd); in a kept lease it is a
    loss like an expiry. .problem says what failed."""

    expired = False
    returned = False

    def __init__(self, problem):
        super().__init__(grpc.StatusCode.UNAUTHENTICATED, "lease certificate not valid: " + problem,
                         "LEASE_CERTIFICATE_INVALID")
        self.problem = problem


class CertificateExpired(BadCertificate):
    """The certificate's exp has passed."""

    expired = True


class CertificateReturned(BadCertificate):
    """The signed list of returned certificates names the certificate: it
    was returned before its expiry (verify_offline(..., returned=...))."""

    returned = True


class LicenseFileInvalid(BadCertificate):
    """A link of the chain from the vendor's key (Client(vendor_keys=...),
    verify_chain_offline): the license file is not one the vendor's keys
    verify (not a license file, signed by another key, a bad signature,
    terms that do not decode), or seatd would not give it."""


class LicenseFileExpired(BadCertificate):
    """The license file is at or past its not_after (now, or when the
    certificate was signed)."""


class WrongSiteKey(BadCertificate):
    """The certificate is not signed by the site key the license file
    names (another seatd's key, or forged)."""


class WrongLicenseFile(BadCertificate):
    """The certificate names another license file (serial) than the one
    it is checked against, or none (a seatd not in locked mode)."""


class LicenseNotInFile(BadCertificate):
    """The certificate's license, or its feature, is not one the license
    file grants."""


class LicenseNotFound(SeatdError):
    pass


class LicenseInactive(SeatdError):
    pass


class LicenseExpired(SeatdError):
    pass


class FeatureNotLicensed(SeatdError):
    """The license holds no grant of the feature asked for
    (FAILED_PRECONDITION FEATURE_NOT_LICENSED). VersionNotLicensed, a
    subclass, when it holds grants of it but none covers the version."""

    @property
    def feature(self):
        return self.metadata.get("feature", "")

    @property
    def version(self):
        """The version asked for; "" for FEATURE_NOT_LICENSED."""
        return self.metadata.get("version", "")


class VersionNotLicensed(FeatureNotLicensed):
    """No grant of the feature covers the version asked for
    (FAILED_PRECONDITION VERSION_NOT_LICENSED)."""

    @property
    def highest_version(self):
        """The highest version the license's grants of the feature cover."""
        return self.metadata.get("highest_version", "")


class GrantNotStarted(SeatdError):
    """No grant of the feature that covers the version has started yet
    (FAILED_PRECONDITION GRANT_NOT_STARTED)."""

    @property
    def feature(self):
        return self.metadata.get("feature", "")

    @property
    def starts_at(self):
        """When the first of them starts: an aware datetime in UTC, or None."""
        at = self.metadata.get("starts_at", "")
        try:
            return datetime.datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(datetime.timezone.utc)
        except ValueError:
            return None


class GrantNotFound(SeatdError):
    """No such feature grant on the license (NOT_FOUND GRANT_NOT_FOUND)."""


class InvalidArgument(SeatdError):
    pass


class Unauthenticated(SeatdError):
    pass


class PermissionDenied(SeatdError):
    pass


class QueueFull(SeatdError):
    pass


class RateLimited(SeatdError):
    pass


class Unavailable(SeatdError):
    """The server or its storage cannot be reached now (retry)."""


REASONS = {
    "SEATS_EXHAUSTED": SeatsExhausted,
    "SEATS_RESERVED": SeatsReserved,
    "USER_LIMIT": UserLimit,
    "HOST_LIMIT": HostLimit,
    "GROUP_LIMIT": GroupLimit,
    "EXCLUDED": Excluded,
    "NOT_INCLUDED": NotIncluded,
    "LEASE_EXPIRED": LeaseExpired,
    "LEASE_REVOKED": LeaseRevoked,
    "LEASE_RELEASED": LeaseReleased,
    "LEASE_NOT_FOUND": LeaseNotFound,
    "LEASE_TOKEN_INVALID": LeaseTokenInvalid,
    "LICENSE_NOT_FOUND": LicenseNotFound,
    "LICENSE_INACTIVE": LicenseInactive,
    "LICENSE_EXPIRED": LicenseExpired,
    "FEATURE_NOT_LICENSED": FeatureNotLicensed,
    "VERSION_NOT_LICENSED": VersionNotLicensed,
    "GRANT_NOT_STARTED": GrantNotStarted,
    "GRANT_NOT_FOUND": GrantNotFound,
    "INVALID_ARGUMENT": InvalidArgument,
    "MALFORMED_REQUEST": InvalidArgument,
    "UNAUTHENTICATED": Unauthenticated,
    "PERMISSION_DENIED": PermissionDenied,
    "QUEUE_FULL": QueueFull,
    "RATE_LIMITED": RateLimited,
    "TOO_MANY_STREAMS": RateLimited,
    "BACKEND_UNAVAILABLE": Unavailable,
    "SERVER_SHUTTING_DOWN": Unavailable,
}


def local_error(cls, reason, message, code=grpc.StatusCode.FAILED_PRECONDITION):
    """An error the client concludes itself, shaped like the server's."""
    return cls(code, message, reason)


def from_rpc_error(err):
    """Turns a grpc.RpcError into the SeatdError subclass its reason names."""
    if isinstance(err, SeatdError) or not isinstance(err, grpc.RpcError):
        return err
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    message = err.details() if hasattr(err, "details") else str(err)
    reason, metadata, retry_delay, violations = "", {}, None, []
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key != _DETAILS_KEY:
            continue
        st = status_pb2.Status.FromString(value)
        for any_ in st.details:
            info = error_details_pb2.ErrorInfo()
            retry = error_details_pb2.RetryInfo()
            bad = error_details_pb2.BadRequest()
            if any_.Unpack(info):
                reason, metadata = info.reason, dict(info.metadata)
            elif any_.Unpack(retry):
                retry_delay = retry.retry_delay.ToTimedelta().total_seconds()
            elif any_.Unpack(bad):
                violations = [(v.field, v.description) for v in bad.field_violations]
    cls = REASONS.get(reason, Unavailable if code == grpc.StatusCode.UNAVAILABLE else SeatdError)
    return cls(code, message, reason, metadata, retry_delay, violations)


def retryable(err):
    """Whether a failed call may succeed if simply repeated (as the Go client)."""
    code = getattr(err, "code", None)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED):
        return True
    return code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.reason in ("RATE_LIMITED", "TOO_MANY_STREAMS")
