#include "seatd/error.hpp"

#include <grpcpp/grpcpp.h>

#include <random>

#include "internal.hpp"
#include "seatd_rpc.pb.h"

namespace seatd {

Error::Error(int code, std::string reason, std::string message, std::map<std::string, std::string> metadata,
             std::chrono::milliseconds retry_delay, std::vector<std::pair<std::string, std::string>> field_violations)
    : std::runtime_error("seatd: " + message),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)),
      metadata_(std::move(metadata)),
      retry_delay_(retry_delay),
      field_violations_(std::move(field_violations)) {}

std::string Error::meta(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? "" : it->second;
}

bool Error::no_seat() const {
  return reason_ == "SEATS_EXHAUSTED" || reason_ == "SEATS_RESERVED" || reason_ == "USER_LIMIT" ||
         reason_ == "HOST_LIMIT" || reason_ == "GROUP_LIMIT";
}

bool Error::not_allowed() const { return reason_ == "EXCLUDED" || reason_ == "NOT_INCLUDED"; }

bool Error::lease_lost() const {
  return reason_ == kLeaseExpired || reason_ == kLeaseRevoked || reason_ == kLeaseReleased ||
         reason_ == kLeaseNotFound || reason_ == kLeaseTokenInvalid || reason_ == kBadCertificate;
}

bool Error::retryable() const {
  switch (code_) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::ABORTED:
      return true;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return reason_ == "RATE_LIMITED" || reason_ == "TOO_MANY_STREAMS";
    default:
      return false;
  }
}

namespace detail {

static bool is_type(const google::protobuf::Any& a, const char* name) {
  const std::string& u = a.type_url();
  auto slash = u.rfind('/');
  return u.compare(slash == std::string::npos ? 0 : slash + 1, std::string::npos, name) == 0;
}

Error from_status(const grpc::Status& st) {
  std::string reason;
  std::map<std::string, std::string> md;
  std::chrono::milliseconds retry{0};
  std::vector<std::pair<std::string, std::string>> violations;
  internal::rpc::Status s;
  if (!st.error_details().empty() && s.ParseFromString(st.error_details())) {
    for (const auto& any : s.details()) {
      if (is_type(any, "google.rpc.ErrorInfo")) {
        internal::rpc::ErrorInfo info;
        if (info.ParseFromString(any.value())) {
          reason = info.reason();
          md.insert(info.metadata().begin(), info.metadata().end());
        }
      } else if (is_type(any, "google.rpc.RetryInfo")) {
        internal::rpc::RetryInfo r;
        if (r.ParseFromString(any.value()))
          retry = std::chrono::milliseconds(r.retry_delay().seconds() * 1000 + r.retry_delay().nanos() / 1000000);
      } else if (is_type(any, "google.rpc.BadRequest")) {
        internal::rpc::BadRequest b;
        if (b.ParseFromString(any.value()))
          for (const auto& v : b.field_violations()) violations.emplace_back(v.field(), v.description());
      }
    }
  }
  return Error(st.error_code(), reason, st.error_message(), md, retry, violations);
}

Error local_error(int code, const std::string& reason, const std::string& message) {
  return Error(code, reason, message);
}

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
double seconds(std::chrono::milliseconds d) { return d.count() / 1000.0; }
std::chrono::milliseconds millis(double s) { return std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); }
double seconds_of(const google::protobuf::Duration& d) { return d.seconds() + d.nanos() / 1e9; }
double unix_of(const google::protobuf::Timestamp& t) { return t.seconds() + t.nanos() / 1e9; }

static std::mt19937_64& rng() {
  thread_local std::mt19937_64 g{std::random_device{}()};
  return g;
}

double backoff(const Timing& t, int n, double limit) {
  double d = seconds(t.backoff_base);
  for (int i = 1; i < n && d < limit; i++) d *= 2;
  if (d > limit) d = limit;
  return d / 2 + std::uniform_real_distribution<double>(0, d / 2)(rng());
}

}  // namespace detail
}  // namespace seatd
