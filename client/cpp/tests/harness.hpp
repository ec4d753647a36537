// Starts real seatd binaries for the tests, as client/python/tests/harness.py
// does. SEATD_BIN names the binary (make test/cpp passes it). Distributed
// mode uses the shared PostgreSQL and Redis (SEATD_TEST_POSTGRES_URL,
// SEATD_TEST_REDIS_URL; by default those scripts/services.sh starts), in a
// fresh schema and key prefix per test, removed afterwards.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "seatd/v1/admin_service.grpc.pb.h"

namespace seatd::test {

inline constexpr const char* kOperatorKey = "cpp-operator-key-0123456789";

// A deadline scaled by SEATD_TEST_SLOWDOWN (the sanitizer builds set it):
// what a test allows for work, never a guess of how long it takes.
std::chrono::milliseconds scaled(std::chrono::milliseconds d);

// Polls cond every 20 ms until it holds or timeout passes; false then.
bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout);

// One seatd process serving on free ports (or the grpc address given).
class Seatd {
 public:
  explicit Seatd(std::vector<std::string> args, std::string data_dir = "", std::string grpc_addr = "127.0.0.1:0");
  ~Seatd();
  Seatd(const Seatd&) = delete;
  Seatd& operator=(const Seatd&) = delete;

  void kill9();
  int stop();  // SIGTERM, then the exit status
  std::string output() const;

  std::string address, http, data_dir;
  std::vector<std::string> args;

 private:
  pid_t pid_ = -1;
  std::string log_;
  bool own_dir_ = false;
};

// A fresh PostgreSQL schema and Redis key prefix for a group of instances.
class Backend {
 public:
  Backend();
  ~Backend();
  std::vector<std::string> args(const std::string& instance) const;
  std::string name, pg_url, prefix;
};

// The AdminService with the operator key.
class Admin {
 public:
  explicit Admin(const std::string& address);
  v1::License create_license(int seats, double ttl_seconds,
                             v1::LeasingStrategy strategy = v1::LEASING_STRATEGY_UNSPECIFIED,
                             int64_t max_borrow_seconds = 0);
  v1::FeatureGrant create_grant(const std::string& license_id, const std::string& feature, const std::string& version,
                                int seats = 1);
  std::vector<std::string> active(const std::string& license_id);
  void revoke(const std::string& lease_id);
  void create_tenant(const std::string& id);

 private:
  std::unique_ptr<v1::AdminService::Stub> stub_;
};

}  // namespace seatd::test
