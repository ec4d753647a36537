// Typed errors from the google.rpc.ErrorInfo reasons seatd puts in its
// statuses (grpc-status-details-bin), like client/errors.go.
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack, durationMs } from "@bufbuild/protobuf/wkt";
import { Metadata, status as Code, type ServiceError } from "@grpc/grpc-js";
import { ErrorInfoSchema, RetryInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "./gen/google/rpc/status_pb.js";

export { Code };

/** A failed seatd call: its gRPC code, ErrorInfo reason and metadata. */
export class SeatdError extends Error {
  override name = "SeatdError";
  /** The gRPC status code (grpc-js `status` enum). */
  readonly code: Code;
  /** The ErrorInfo reason, e.g. SEATS_EXHAUSTED; "" when the server sent none. */
  readonly reason: string;
  /** The ErrorInfo metadata, e.g. seats_in_use and seat_limit. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The wait the server asked for (RetryInfo), in ms; 0 if none. */
  readonly retryDelayMs: number;

  constructor(code: Code, message: string, reason = "", metadata: Record<string, string> = {}, retryDelayMs = 0, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.reason = reason;
    this.metadata = metadata;
    this.retryDelayMs = retryDelayMs;
  }
}

/** No seat for this client now (RESOURCE_EXHAUSTED): none is free
 * (SeatsExhaustedError), or the license's site policy keeps the free ones
 * from it: a cap on its user, host or group (UserLimitError,
 * HostLimitError, GroupLimitError) or seats reserved for others
 * (SeatsReservedError). It passes as leases end: retry later (not at once),
 * or waitForSeat. */
export class NoSeatError extends SeatdError { override name = "NoSeatError"; }

/** No seat is free (RESOURCE_EXHAUSTED, SEATS_EXHAUSTED). */
export class SeatsExhaustedError extends NoSeatError {
  override name = "SeatsExhaustedError";
  /** Live leases on the license when the server refused. */
  get seatsInUse(): number { return Number(this.metadata["seats_in_use"] ?? NaN); }
  /** The license's limit (seats + overdraft). */
  get seatLimit(): number { return Number(this.metadata["seat_limit"] ?? NaN); }
  /** The feature asked for ("" for the base pool): seatsInUse and seatLimit
   * are then summed over its current grants that cover the version. */
  get feature(): string { return this.metadata["feature"] ?? ""; }
}

/** The license's site policy keeps the free seats from this client now
 * (RESOURCE_EXHAUSTED): a cap, or seats reserved for others. */
export class PolicyLimitError extends NoSeatError {
  override name = "PolicyLimitError";
  /** The cap's live leases (the pool's, for SEATS_RESERVED). */
  get inUse(): number { return Number(this.metadata["in_use"] ?? NaN); }
  /** The cap's count (the pool's limit, for SEATS_RESERVED). */
  get limit(): number { return Number(this.metadata["limit"] ?? NaN); }
  /** The index of the rule that refused in the policy; undefined if none. */
  get rule(): number | undefined { return policyRule(this.metadata); }
  get subjectKind(): string { return this.metadata["subject_kind"] ?? ""; }
  get subjectName(): string { return this.metadata["subject_name"] ?? ""; }
  /** The feature asked for; "" for the base pool. */
  get feature(): string { return this.metadata["feature"] ?? ""; }
}
/** Every seat left is reserved for subjects this client is not one of (SEATS_RESERVED). */
export class SeatsReservedError extends PolicyLimitError { override name = "SeatsReservedError"; }
/** The user (or each member of its group) holds as many seats as a max rule allows (USER_LIMIT). */
export class UserLimitError extends PolicyLimitError { override name = "UserLimitError"; }
/** The host (or each member of its host group) holds as many seats as a max rule allows (HOST_LIMIT). */
export class HostLimitError extends PolicyLimitError { override name = "HostLimitError"; }
/** The group or host group as a whole holds as many seats as a max rule allows (GROUP_LIMIT). */
export class GroupLimitError extends PolicyLimitError { override name = "GroupLimitError"; }

/** The license's site policy refuses this client the license or feature
 * (PERMISSION_DENIED): no retry helps until an administrator changes it. */
export class NotAllowedError extends SeatdError {
  override name = "NotAllowedError";
  /** The index of the exclude rule that refused; undefined for NOT_INCLUDED. */
  get rule(): number | undefined { return policyRule(this.metadata); }
  get subjectKind(): string { return this.metadata["subject_kind"] ?? ""; }
  get subjectName(): string { return this.metadata["subject_name"] ?? ""; }
  /** The feature asked for; "" for the base pool. */
  get feature(): string { return this.metadata["feature"] ?? ""; }
}
/** An exclude rule names the client (EXCLUDED). */
export class ExcludedError extends NotAllowedError { override name = "ExcludedError"; }
/** The license or feature has include rules, and none names the client (NOT_INCLUDED). */
export class NotIncludedError extends NotAllowedError { override name = "NotIncludedError"; }

function policyRule(md: Readonly<Record<string, string>>): number | undefined {
  const r = md["rule"];
  return r === undefined ? undefined : Number(r);
}

/** The license holds no grant of the feature asked for (FAILED_PRECONDITION
 * FEATURE_NOT_LICENSED); VersionNotLicensedError, a subclass, when it holds
 * grants of it but none covers the version. */
export class FeatureNotLicensedError extends SeatdError {
  override name = "FeatureNotLicensedError";
  get feature(): string { return this.metadata["feature"] ?? ""; }
  /** The version asked for; "" for FEATURE_NOT_LICENSED. */
  get version(): string { return this.metadata["version"] ?? ""; }
}
/** No grant of the feature covers the version asked for (VERSION_NOT_LICENSED). */
export class VersionNotLicensedError extends FeatureNotLicensedError {
  override name = "VersionNotLicensedError";
  /** The highest version the license's grants of the feature cover. */
  get highestVersion(): string { return this.metadata["highest_version"] ?? ""; }
}
/** No grant of the feature that covers the version has started yet (GRANT_NOT_STARTED). */
export class GrantNotStartedError extends SeatdError {
  override name = "GrantNotStartedError";
  get feature(): string { return this.metadata["feature"] ?? ""; }
  /** When the first of them starts; undefined if the server did not say. */
  get startsAt(): Date | undefined {
    const t = Date.parse(this.metadata["starts_at"] ?? "");
    return Number.isNaN(t) ? undefined : new Date(t);
  }
}
/** No such feature grant on the license (NOT_FOUND GRANT_NOT_FOUND). */
export class GrantNotFoundError extends SeatdError { override name = "GrantNotFoundError"; }

/** The seat is no longer ours, whatever we retry: acquire a new one. */
export class LeaseLostError extends SeatdError { override name = "LeaseLostError"; }
/** The lease's deadline passed without a heartbeat (LEASE_EXPIRED). */
export class LeaseExpiredError extends LeaseLostError { override name = "LeaseExpiredError"; }
/** An administrator revoked the lease (LEASE_REVOKED). */
export class LeaseRevokedError extends LeaseLostError { override name = "LeaseRevokedError"; }
/** The lease was released (LEASE_RELEASED). */
export class LeaseReleasedError extends LeaseLostError { override name = "LeaseReleasedError"; }
/** The server does not know the lease (LEASE_NOT_FOUND). */
export class LeaseNotFoundError extends LeaseLostError { override name = "LeaseNotFoundError"; }
/** Another acquisition took the lease over (LEASE_TOKEN_INVALID). */
export class LeaseTokenInvalidError extends LeaseLostError { override name = "LeaseTokenInvalidError"; }
/** Unknown license key (LICENSE_NOT_FOUND). */
export class LicenseNotFoundError extends SeatdError { override name = "LicenseNotFoundError"; }
/** The license refuses new seats (LICENSE_INACTIVE, LICENSE_EXPIRED). */
export class LicenseUnavailableError extends SeatdError { override name = "LicenseUnavailableError"; }
/** The WaitForSeat queue is full (QUEUE_FULL). */
export class QueueFullError extends SeatdError { override name = "QueueFullError"; }
/** A limit that passes: RATE_LIMITED or TOO_MANY_STREAMS; see retryDelayMs. */
export class RateLimitedError extends SeatdError { override name = "RateLimitedError"; }
/** Missing, unknown or insufficient admin key (UNAUTHENTICATED, PERMISSION_DENIED). */
export class AuthError extends SeatdError { override name = "AuthError"; }
/** Bad input; the message names the field (INVALID_ARGUMENT). */
export class InvalidArgumentError extends SeatdError { override name = "InvalidArgumentError"; }
/** The server cannot be reached or is going away (UNAVAILABLE); retry. */
export class UnavailableError extends SeatdError { override name = "UnavailableError"; }

type ErrorClass = new (...a: ConstructorParameters<typeof SeatdError>) => SeatdError;

const byReason: Record<string, ErrorClass> = {
  SEATS_EXHAUSTED: SeatsExhaustedError,
  SEATS_RESERVED: SeatsReservedError,
  USER_LIMIT: UserLimitError,
  HOST_LIMIT: HostLimitError,
  GROUP_LIMIT: GroupLimitError,
  EXCLUDED: ExcludedError,
  NOT_INCLUDED: NotIncludedError,
  LEASE_EXPIRED: LeaseExpiredError,
  LEASE_REVOKED: LeaseRevokedError,
  LEASE_RELEASED: LeaseReleasedError,
  LEASE_NOT_FOUND: LeaseNotFoundError,
  LEASE_TOKEN_INVALID: LeaseTokenInvalidError,
  LICENSE_NOT_FOUND: LicenseNotFoundError,
  LICENSE_INACTIVE: LicenseUnavailableError,
  LICENSE_EXPIRED: LicenseUnavailableError,
  FEATURE_NOT_LICENSED: FeatureNotLicensedError,
  VERSION_NOT_LICENSED: VersionNotLicensedError,
  GRANT_NOT_STARTED: GrantNotStartedError,
  GRANT_NOT_FOUND: GrantNotFoundError,
  QUEUE_FULL: QueueFullError,
  RATE_LIMITED: RateLimitedError,
  TOO_MANY_STREAMS: RateLimitedError,
};

const byCode: Partial<Record<Code, ErrorClass>> = {
  [Code.UNAUTHENTICATED]: AuthError,
  [Code.PERMISSION_DENIED]: AuthError,
  [Code.INVALID_ARGUMENT]: InvalidArgumentError,
  [Code.UNAVAILABLE]: UnavailableError,
};

/** seatdError makes a typed error of a grpc-js error; others pass through. */
export function seatdError(err: unknown): unknown {
  if (err instanceof SeatdError || !isServiceError(err)) return err;
  let reason = "";
  let metadata: Record<string, string> = {};
  let retryDelayMs = 0;
  const raw = err.metadata?.get("grpc-status-details-bin")[0];
  if (raw instanceof Uint8Array) {
    try {
      for (const d of fromBinary(StatusSchema, raw).details) {
        const info = anyUnpack(d, ErrorInfoSchema);
        if (info) {
          reason = info.reason;
          metadata = { ...info.metadata };
        }
        const retry = anyUnpack(d, RetryInfoSchema);
        if (retry?.retryDelay) retryDelayMs = durationMs(retry.retryDelay);
      }
    } catch {
      // Undecodable details: the code and message still tell what happened.
    }
  }
  const Cls = byReason[reason] ?? byCode[err.code] ?? SeatdError;
  return new Cls(err.code, err.details || err.message, reason, metadata, retryDelayMs, { cause: err });
}

/** localError is a failure the client concludes itself, shaped like the server's. */
export function localError(code: Code, reason: string, message: string, cause?: unknown): SeatdError {
  const Cls = byReason[reason] ?? SeatdError;
  return new Cls(code, message, reason, {}, 0, cause === undefined ? undefined : { cause });
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as ServiceError).code === "number" && (err as ServiceError).metadata instanceof Metadata;
}

/** codeOf is the gRPC code of err, or undefined. */
export function codeOf(err: unknown): Code | undefined {
  return err instanceof SeatdError ? err.code : isServiceError(err) ? err.code : undefined;
}

/** retryable: a call that failed so may succeed if simply repeated. */
export function retryable(err: unknown): boolean {
  if (err instanceof StreamClosed) return true;
  switch (codeOf(err)) {
    case Code.UNAVAILABLE:
    case Code.DEADLINE_EXCEEDED:
    case Code.ABORTED:
      return true;
    case Code.RESOURCE_EXHAUSTED:
      return err instanceof RateLimitedError;
  }
  return false;
}

/** The server ended a stream cleanly without a reason. */
export class StreamClosed extends Error { override name = "StreamClosed"; }
