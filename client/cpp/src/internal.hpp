// What the client's parts share; not installed.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "seatd/certificate.hpp"
#include "seatd/client.hpp"
#include "seatd/error.hpp"
#include "seatd/lease.hpp"
#include "seatd/v1/heartbeat_service.grpc.pb.h"
#include "seatd/v1/seat_service.grpc.pb.h"

namespace seatd::detail {

// Wall clock in Unix seconds: keeps running while the machine sleeps.
double now();
double seconds(std::chrono::milliseconds d);
std::chrono::milliseconds millis(double seconds);
double seconds_of(const google::protobuf::Duration& d);
double unix_of(const google::protobuf::Timestamp& t);

// The Error of a failed call, from its status and google.rpc details.
Error from_status(const grpc::Status& st);
Error local_error(int code, const std::string& reason, const std::string& message);
// Exponential up to limit with equal jitter, for retry number n (1, 2, ...).
double backoff(const Timing& t, int n, double limit);
std::string new_idempotency_key();
std::string new_nonce();

// The connection every lease of a client shares (leases outlive the Client).
struct Conn {
  ClientOptions opts;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::SeatService::Stub> seats;
  std::unique_ptr<v1::HeartbeatService::Stub> hb;
  std::optional<SigningKeys> keys;

  bool verifies() const { return keys.has_value(); }
  std::string nonce(bool borrow = false) const { return verifies() || borrow ? new_nonce() : ""; }
  // Throws unless resp grants what req asked for with a certificate that
  // verifies (with signing keys; always present for a borrow).
  void check(const v1::AcquireSeatResponse& resp, const v1::AcquireSeatRequest& req, bool borrowed) const;
  // Releases a seat we refuse, as far as seatd is real and reachable.
  void give_back(const std::string& id, const std::string& token) const;
  v1::AcquireSeatResponse acquire(const v1::AcquireSeatRequest& req, double timeout, double end) const;
};

struct LeaseState {
  std::shared_ptr<Conn> c;
  v1::AcquireSeatRequest opts;  // what every (re)acquisition asks
  bool borrowed_ = false;
  LostCallback on_lost;

  mutable std::mutex mu;
  std::string id, token, license_id, fingerprint, feature, version, grant_id, certificate;
  double grant_expires_at = 0;
  double expires_at = 0, interval = 0, ttl = 0, deadline = 0;  // deadline: local, 0 = none
  int seats_in_use = 0, seat_limit = 0;
  std::optional<Error> error;
  bool released = false;
  mutable std::condition_variable lost_cv;

  std::mutex release_mu;  // one release at a time

  // The keeper: a thread of the lease's own, heartbeating until stopped.
  std::thread keeper;
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  grpc::ClientContext* call = nullptr;  // the stream in flight, cancelled on stop (under stop_mu)

  void take(const v1::AcquireSeatResponse& resp, double sent);
  void extend(const std::string& lease_id, double sent, const google::protobuf::Timestamp& expires,
              double interval, double ttl, const std::string& cert);
  void mark_lost(const Error& e);
  double until_deadline() const;
  double ping_every() const;
  // Throws Error kBadCertificate if an answer extending the lease to
  // expires does not carry a certificate that verifies (with signing keys).
  void check_cert(const std::string& nonce, const std::string& cert, const google::protobuf::Timestamp& expires) const;
  void heartbeat_once(double timeout, bool keeper_call);

  void start_keeper();
  void stop_keeper();
  ~LeaseState();
};

}  // namespace seatd::detail
