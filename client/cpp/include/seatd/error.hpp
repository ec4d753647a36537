// seatd::Error: every failure the C++ API reports, with the gRPC status
// code and seatd's machine-readable reason (google.rpc.ErrorInfo).
#pragma once

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace seatd {

// Reasons the client acts on (see docs/concepts/errors.md for every one).
inline constexpr const char* kSeatsExhausted = "SEATS_EXHAUSTED";
inline constexpr const char* kLeaseExpired = "LEASE_EXPIRED";
inline constexpr const char* kLeaseRevoked = "LEASE_REVOKED";
inline constexpr const char* kLeaseReleased = "LEASE_RELEASED";
inline constexpr const char* kLeaseNotFound = "LEASE_NOT_FOUND";
inline constexpr const char* kLeaseTokenInvalid = "LEASE_TOKEN_INVALID";
// Concluded by the client, never sent by seatd: an answer's lease
// certificate did not verify against the JWKS (ClientOptions::signing_keys).
inline constexpr const char* kBadCertificate = "LEASE_CERTIFICATE_INVALID";
// Concluded by the client: wait_for_seat's timeout passed first.
inline constexpr const char* kWaitTimeout = "WAIT_TIMEOUT";

class Error : public std::runtime_error {
 public:
  // code: a grpc::StatusCode value (0 OK is never thrown).
  Error(int code, std::string reason, std::string message,
        std::map<std::string, std::string> metadata = {},
        std::chrono::milliseconds retry_delay = std::chrono::milliseconds(0),
        std::vector<std::pair<std::string, std::string>> field_violations = {});

  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  // ErrorInfo's metadata: seats_in_use, seat_limit, feature, rule, ...
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::string meta(const std::string& key) const;
  std::chrono::milliseconds retry_delay() const { return retry_delay_; }
  // BadRequest's (field, description) pairs of an INVALID_ARGUMENT.
  const std::vector<std::pair<std::string, std::string>>& field_violations() const {
    return field_violations_;
  }

  // No seat for this client now (none free, or a site policy's cap or
  // reserved seats): retry later, or wait_for_seat.
  bool no_seat() const;
  // The site policy refuses this client (EXCLUDED, NOT_INCLUDED).
  bool not_allowed() const;
  // The lease is gone for good (expired, revoked, released, taken over, bad certificate).
  bool lease_lost() const;
  // A repeat of the same call may succeed (UNAVAILABLE, DEADLINE_EXCEEDED,
  // ABORTED, RESOURCE_EXHAUSTED of a rate or stream limit).
  bool retryable() const;

 private:
  int code_;
  std::string reason_, message_;
  std::map<std::string, std::string> metadata_;
  std::chrono::milliseconds retry_delay_;
  std::vector<std::pair<std::string, std::string>> field_violations_;
};

}  // namespace seatd
