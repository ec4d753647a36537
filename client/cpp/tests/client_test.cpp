// The C++ client against real seatd binaries, embedded and distributed:
// the rows of the behaviour table (docs/clients/index.md).
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_interceptor.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <sys/wait.h>
#include <thread>

#include "harness.hpp"
#include "seatd/v1/heartbeat_service.pb.h"
#include "seatd/v1/seat_service.pb.h"
#include "seatd/seatd.hpp"

using namespace std::chrono_literals;
using seatd::test::Admin;
using seatd::test::Backend;
using seatd::test::eventually;
using seatd::test::scaled;
using seatd::test::Seatd;
namespace v1 = seatd::v1;

namespace {

// A test's hand on the wire: counts calls, records AcquireSeat's
// idempotency keys, loses AcquireSeat replies, tampers with certificates.
struct Wire {
  std::mutex mu;
  std::map<std::string, int> calls;
  std::vector<std::string> acquire_keys;
  std::atomic<int> drop_acquire_replies{0};
  std::atomic<bool> tamper{false};

  int count(const std::string& m) {
    std::lock_guard<std::mutex> lk(mu);
    return calls[m];
  }
};

class WireInterceptor : public grpc::experimental::Interceptor {
 public:
  WireInterceptor(grpc::experimental::ClientRpcInfo* info, Wire* w) : w_(w) {
    std::string m = info->method();
    method_ = m.substr(m.rfind('/') + 1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* m) override {
    using H = grpc::experimental::InterceptionHookPoints;
    if (m->QueryInterceptionHookPoint(H::PRE_SEND_INITIAL_METADATA)) {
      std::lock_guard<std::mutex> lk(w_->mu);
      w_->calls[method_]++;
    }
    if (m->QueryInterceptionHookPoint(H::PRE_SEND_MESSAGE) && method_ == "AcquireSeat") {
      auto* req = static_cast<const v1::AcquireSeatRequest*>(m->GetSendMessage());
      std::lock_guard<std::mutex> lk(w_->mu);
      if (req != nullptr) w_->acquire_keys.push_back(req->idempotency_key());
    }
    if (m->QueryInterceptionHookPoint(H::POST_RECV_MESSAGE) && w_->tamper) {
      std::string* cert = nullptr;
      if (method_ == "HeartbeatStream")
        cert = static_cast<v1::HeartbeatStreamResponse*>(m->GetRecvMessage())->mutable_lease_certificate();
      else if (method_ == "Heartbeat")
        cert = static_cast<v1::HeartbeatResponse*>(m->GetRecvMessage())->mutable_lease_certificate();
      if (cert != nullptr && !cert->empty() && w_->tamper.exchange(false)) {
        char& c = (*cert)[cert->rfind('.') + 10];  // a byte of the signature
        c = c == 'A' ? 'B' : 'A';
      }
    }
    if (m->QueryInterceptionHookPoint(H::POST_RECV_STATUS) && method_ == "AcquireSeat" &&
        m->GetRecvStatus()->ok() && w_->drop_acquire_replies.load() > 0) {
      w_->drop_acquire_replies--;  // seatd granted it; we never hear
      *m->GetRecvStatus() = grpc::Status(grpc::StatusCode::UNAVAILABLE, "reply lost (test)");
    }
    m->Proceed();
  }

 private:
  Wire* w_;
  std::string method_;
};

class WireFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit WireFactory(Wire* w) : w_(w) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo* info) override {
    return new WireInterceptor(info, w_);
  }

 private:
  Wire* w_;
};

// The lost callback's call, waited for on a condition.
struct Lost {
  std::mutex m;
  std::condition_variable cv;
  std::optional<seatd::Error> err;
  int calls = 0;

  seatd::LostCallback fn() {
    return [this](const seatd::Error& e) {
      std::lock_guard<std::mutex> lk(m);
      err = e;
      calls++;
      cv.notify_all();
    };
  }
  bool wait(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lk(m);
    return cv.wait_for(lk, d, [&] { return err.has_value(); });
  }
};

seatd::Timing fast() {
  seatd::Timing t;
  t.clock_check = 100ms;
  t.backoff_base = 50ms;
  t.backoff_max = 500ms;
  t.reconnect_jitter = 200ms;
  t.min_interval = 200ms;
  t.last_chance = 1000ms;
  t.call_timeout = 5000ms;
  return t;
}

class Modes : public ::testing::TestWithParam<bool> {
 protected:
  bool distributed() const { return GetParam(); }

  void SetUp() override {
    if (distributed()) backend = std::make_unique<Backend>();
    server = start("a");
    admin = std::make_unique<Admin>(server->address);
  }

  std::unique_ptr<Seatd> start(const std::string& name, const std::string& addr = "127.0.0.1:0",
                               const std::string& dir = "") {
    std::vector<std::string> args;
    if (backend) args = backend->args(name);
    return std::make_unique<Seatd>(args, dir, addr);
  }

  seatd::ClientOptions options(const std::string& address = "", Wire* wire = nullptr) {
    seatd::ClientOptions o;
    o.address = address.empty() ? server->address : address;
    o.timing = fast();
    if (wire != nullptr) {
      grpc::ChannelArguments args;
      args.SetServiceConfigJSON(seatd::Client::service_config());
      std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> f;
      f.push_back(std::make_unique<WireFactory>(wire));
      o.channel = grpc::experimental::CreateCustomChannelWithInterceptors(
          o.address, grpc::InsecureChannelCredentials(), args, std::move(f));
    }
    return o;
  }

  seatd::AcquireOptions ask(const v1::License& lic, const std::string& fp) {
    seatd::AcquireOptions a;
    a.license_key = lic.key();
    a.fingerprint = fp;
    return a;
  }

  // Waits for a heartbeat answer: the deadline moves past the one held.
  static bool heartbeated(const seatd::Lease& l, std::chrono::milliseconds within) {
    auto first = l.expires_at();
    return eventually([&] { return l.expires_at() > first; }, within);
  }

  std::unique_ptr<Backend> backend;  // outlives the servers
  std::unique_ptr<Seatd> server;
  std::unique_ptr<Admin> admin;
};

// acquire, heartbeat, release (RAII).
TEST_P(Modes, AcquireHeartbeatRelease) {
  auto lic = admin->create_license(1, 30);
  seatd::Client c(options());
  std::string id;
  {
    seatd::Lease lease = c.acquire(ask(lic, "fp-1"));
    id = lease.id();
    EXPECT_EQ(0u, id.rfind("lse_", 0));
    EXPECT_FALSE(lease.token().empty());
    EXPECT_EQ(1, lease.seats_in_use());
    EXPECT_EQ(1, lease.seat_limit());
    EXPECT_EQ(5000ms, lease.heartbeat_interval());  // TTL/6
    auto before = lease.expires_at();
    EXPECT_NEAR(30, std::chrono::duration<double>(before - std::chrono::system_clock::now()).count(), 10);
    std::this_thread::sleep_for(10ms);  // a heartbeat in a later millisecond moves the deadline
    lease.heartbeat();
    EXPECT_GT(lease.expires_at(), before);
    EXPECT_EQ(std::vector<std::string>{id}, admin->active(lic.id()));
    EXPECT_FALSE(lease.lost());
  }
  EXPECT_TRUE(admin->active(lic.id()).empty()) << "the destructor released the seat";
  seatd::Lease again = c.acquire(ask(lic, "fp-2"));  // the seat is free again
  again.release();
  again.release();  // idempotent
  EXPECT_FALSE(again.lost()) << "our own release is not a loss";
}

// auto-heartbeat over HeartbeatStream for 3 x TTL.
TEST_P(Modes, KeepsItselfAliveAcrossSeveralTTLs) {
  auto lic = admin->create_license(1, 2);
  Wire wire;
  seatd::Client c(options("", &wire));
  seatd::Lease lease = c.acquire(ask(lic, "fp-1"));
  EXPECT_FALSE(lease.wait_lost(6500ms)) << lease.reason();
  EXPECT_EQ(std::vector<std::string>{lease.id()}, admin->active(lic.id()));
  EXPECT_GE(wire.count("HeartbeatStream"), 1);
  EXPECT_EQ(0, wire.count("Heartbeat")) << "the stream did the beating";
}

// unary heartbeats: a client told to use no stream (a proxy without them).
TEST_P(Modes, UnaryHeartbeatsWithoutAStream) {
  auto lic = admin->create_license(1, 2);
  Wire wire;
  auto o = options("", &wire);
  o.heartbeat_stream = false;
  seatd::Client c(o);
  seatd::Lease lease = c.acquire(ask(lic, "fp-1"));
  EXPECT_FALSE(lease.wait_lost(6500ms)) << lease.reason();
  EXPECT_EQ(std::vector<std::string>{lease.id()}, admin->active(lic.id()));
  EXPECT_GE(wire.count("Heartbeat"), 6);
  EXPECT_EQ(0, wire.count("HeartbeatStream"));
}

// lost callback: a revoke is pushed on the stream; the callback runs
// within a second, with LEASE_REVOKED.
TEST_P(Modes, RevokePushesTheLostCallbackWithinASecond) {
  auto lic = admin->create_license(1, 6);  // a heartbeat a second
  seatd::Client c(options());
  Lost lost;
  auto a = ask(lic, "fp-1");
  a.on_lost = lost.fn();
  seatd::Lease lease = c.acquire(a);
  ASSERT_TRUE(heartbeated(lease, scaled(5s))) << "the stream is open and answered";
  admin->revoke(lease.id());
  ASSERT_TRUE(lost.wait(scaled(1s))) << "no lost callback within a second of the revoke";
  EXPECT_EQ(seatd::kLeaseRevoked, lost.err->reason());
  EXPECT_TRUE(lease.lost());
  EXPECT_EQ(seatd::kLeaseRevoked, lease.reason());
  lease.release();  // a lost lease needs no release, and it is no error
  EXPECT_EQ(1, lost.calls);
}

// kill -9 while a lease is held: seatd keeps what it acknowledged
// (embedded: the restart on the same data; distributed: the other
// instance, then the restarted one), and the lease survives.
TEST_P(Modes, Kill9AndRestartTheLeaseSurvives) {
  std::unique_ptr<Seatd> other;
  std::string target = server->address;
  if (distributed()) {
    other = start("b");
    target = "ipv4:" + server->address + "," + other->address;
  }
  auto lic = admin->create_license(1, 6);
  seatd::Client c(options(target));
  Lost lost;
  auto a = ask(lic, "fp-1");
  a.on_lost = lost.fn();
  seatd::Lease lease = c.acquire(a);
  ASSERT_TRUE(heartbeated(lease, scaled(5s)));
  std::string addr = server->address, dir = server->data_dir;
  server->kill9();
  if (!distributed()) server = start("a", addr, dir);  // the same port: the client's channel finds it again
  Admin after(distributed() ? other->address : server->address);
  ASSERT_TRUE(heartbeated(lease, scaled(10s))) << "heartbeats go on after the kill";
  EXPECT_FALSE(lease.wait_lost(6000ms)) << lease.reason();
  EXPECT_EQ(std::vector<std::string>{lease.id()}, after.active(lic.id()));
  if (distributed()) {
    server = start("a", addr);  // back in the pool
    EXPECT_FALSE(lease.wait_lost(2000ms)) << lease.reason();
  }
  EXPECT_EQ(0, lost.calls);
}

// kill -9 and no seatd until past the deadline: one last heartbeat fails,
// and the lost callback says LEASE_EXPIRED.
TEST_P(Modes, Kill9PastTheDeadlineIsALostLease) {
  auto lic = admin->create_license(1, 2);
  seatd::Client c(options());
  Lost lost;
  auto a = ask(lic, "fp-1");
  a.on_lost = lost.fn();
  seatd::Lease lease = c.acquire(a);
  server->kill9();
  ASSERT_TRUE(lost.wait(scaled(10s))) << "no lost callback after the deadline passed";
  EXPECT_EQ(seatd::kLeaseExpired, lost.err->reason());
  EXPECT_EQ(seatd::kLeaseExpired, lease.reason());
}

// SEATS_EXHAUSTED, then wait for a seat (position 1 of 1) that the holder frees.
TEST_P(Modes, SeatsExhaustedAndWaitForSeat) {
  auto lic = admin->create_license(1, 30);
  seatd::Client c(options());
  auto holder = std::make_unique<seatd::Lease>(c.acquire(ask(lic, "holder")));
  try {
    c.acquire(ask(lic, "fp-2"));
    FAIL() << "a second seat of a one-seat license";
  } catch (const seatd::Error& e) {
    EXPECT_EQ(seatd::kSeatsExhausted, e.reason());
    EXPECT_TRUE(e.no_seat());
    EXPECT_EQ(grpc::StatusCode::RESOURCE_EXHAUSTED, e.code());
    EXPECT_EQ("1", e.meta("seats_in_use"));
    EXPECT_EQ("1", e.meta("seat_limit"));
  }
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::pair<int, int>> positions;
  std::optional<seatd::Lease> got;
  std::string failed;
  std::thread waiter([&] {
    try {
      seatd::Lease l = c.wait_for_seat(ask(lic, "waiter"), [&](int p, int n) {
        std::lock_guard<std::mutex> lk(m);
        positions.emplace_back(p, n);
        cv.notify_all();
      }, scaled(30s));
      std::lock_guard<std::mutex> lk(m);
      got.emplace(std::move(l));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lk(m);
      failed = e.what();
    }
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lk(m);
    ASSERT_TRUE(cv.wait_for(lk, scaled(10s), [&] { return !positions.empty() || !failed.empty(); }));
    EXPECT_EQ(std::make_pair(1, 1), positions.at(0));
    EXPECT_FALSE(got.has_value());
  }
  holder.reset();  // released: the waiter's turn
  waiter.join();
  ASSERT_TRUE(got.has_value()) << failed;
  EXPECT_EQ(std::vector<std::string>{got->id()}, admin->active(lic.id()));
  EXPECT_FALSE(got->lost());
  // A wait that no release ends stops at its timeout.
  try {
    c.wait_for_seat(ask(lic, "late"), {}, 1000ms);
    FAIL() << "a wait for a seat nobody frees ended";
  } catch (const seatd::Error& e) {
    EXPECT_EQ(seatd::kWaitTimeout, e.reason());
  }
}

// retries: the reply to AcquireSeat is lost; the retry sends the same
// idempotency key and gets the same lease; a new acquisition a new key.
TEST_P(Modes, RetryReusesTheIdempotencyKey) {
  auto lic = admin->create_license(3, 30, v1::LEASING_STRATEGY_PER_ACQUISITION);
  Wire wire;
  wire.drop_acquire_replies = 1;
  seatd::Client c(options("", &wire));
  seatd::Lease lease = c.acquire(ask(lic, "fp-1"));
  {
    std::lock_guard<std::mutex> lk(wire.mu);
    ASSERT_EQ(2u, wire.acquire_keys.size());
    EXPECT_EQ(wire.acquire_keys[0], wire.acquire_keys[1]);
  }
  EXPECT_EQ(std::vector<std::string>{lease.id()}, admin->active(lic.id()));
  seatd::Lease second = c.acquire(ask(lic, "fp-1"));
  EXPECT_NE(lease.id(), second.id()) << "each logical acquisition has a key of its own";
}

// certificates: with the tenant's JWKS every answer is verified; another
// tenant's JWKS refuses seatd's answer and the seat is given back.
TEST_P(Modes, CertificatesVerifiedAgainstTheJWKS) {
  auto lic = admin->create_license(2, 2);
  std::string jwks = seatd::Client(options()).fetch_signing_keys();
  auto o = options();
  o.signing_keys = jwks;
  seatd::Client c(o);
  {
    seatd::Lease lease = c.acquire(ask(lic, "fp-1"));
    seatd::Claims got = seatd::verify_offline(lease.certificate(), jwks);
    EXPECT_EQ(lease.id(), got.lease_id);
    EXPECT_EQ(lic.id(), got.license_id);
    EXPECT_EQ("fp-1", got.fingerprint);
    EXPECT_EQ("default", got.tenant_id);
    EXPECT_FALSE(got.borrowed);
    got.check_holder(lic.key(), "fp-1");
    EXPECT_THROW(got.check_holder(lic.key(), "fp-other"), seatd::Error);
    std::string first = lease.certificate();
    ASSERT_TRUE(eventually([&] { return lease.certificate() != first; }, scaled(5s))) << "a heartbeat's certificate";
    EXPECT_FALSE(lease.lost()) << lease.reason();
  }
  admin->create_tenant("cpp-other");
  auto wrong = options();
  wrong.signing_keys = seatd::Client(options()).fetch_signing_keys("cpp-other");
  seatd::Client w(wrong);
  try {
    w.acquire(ask(lic, "fp-2"));
    FAIL() << "a certificate of another tenant's key was taken";
  } catch (const seatd::Error& e) {
    EXPECT_EQ(seatd::kBadCertificate, e.reason());
  }
  EXPECT_TRUE(admin->active(lic.id()).empty()) << "the refused seat was given back";
}

// A tampered certificate on the heartbeat stream is a lost lease
// (LEASE_CERTIFICATE_INVALID), and the seat is given back.
TEST_P(Modes, TamperedCertificateIsALostLease) {
  auto lic = admin->create_license(1, 2);
  std::string jwks = seatd::Client(options()).fetch_signing_keys();
  Wire wire;
  auto o = options("", &wire);
  o.signing_keys = jwks;
  seatd::Client c(o);
  Lost lost;
  auto a = ask(lic, "fp-1");
  a.on_lost = lost.fn();
  seatd::Lease lease = c.acquire(a);
  ASSERT_TRUE(heartbeated(lease, scaled(5s)));
  wire.tamper = true;
  ASSERT_TRUE(lost.wait(scaled(5s)));
  EXPECT_EQ(seatd::kBadCertificate, lost.err->reason());
  EXPECT_FALSE(wire.tamper) << "the tampered answer was the one that lost the lease";
  EXPECT_TRUE(eventually([&] { return admin->active(lic.id()).empty(); }, scaled(5s))) << "the seat was given back";
}

// features: a seat of a grant at a version; the certificate names them;
// a feature or version not licensed is a typed error.
TEST_P(Modes, FeaturesAndVersions) {
  auto lic = admin->create_license(1, 30);
  auto render = admin->create_grant(lic.id(), "render", "2025");
  std::string jwks = seatd::Client(options()).fetch_signing_keys();
  auto o = options();
  o.signing_keys = jwks;
  seatd::Client c(o);
  auto a = ask(lic, "fp-1");
  a.feature = "render";
  a.version = "2024.3";
  {
    seatd::Lease lease = c.acquire(a);
    EXPECT_EQ("render", lease.feature());
    EXPECT_EQ("2024.3", lease.version());
    EXPECT_EQ(render.id(), lease.grant_id());
    seatd::Claims got = seatd::verify_offline(lease.certificate(), jwks);
    EXPECT_EQ(render.id(), got.grant_id);
    EXPECT_EQ("render", got.feature);
    got.check_holder(lic.key(), "fp-1", "", "", "render", "2024.3");
    EXPECT_THROW(got.check_holder(lic.key(), "fp-1"), seatd::Error) << "no base seat";
    seatd::Lease base = c.acquire(ask(lic, "fp-1"));
    EXPECT_NE(base.id(), lease.id()) << "a machine's base and feature seats are two leases";
  }
  a.version = "2026";
  try {
    c.acquire(a);
    FAIL();
  } catch (const seatd::Error& e) {
    EXPECT_EQ("VERSION_NOT_LICENSED", e.reason());
    EXPECT_EQ("2025", e.meta("highest_version"));
  }
  a.feature = "cad-export";
  a.version = "";
  try {
    c.acquire(a);
    FAIL();
  } catch (const seatd::Error& e) {
    EXPECT_EQ("FEATURE_NOT_LICENSED", e.reason());
  }
  EXPECT_TRUE(admin->active(lic.id()).empty());
}

// borrowing: a borrowed seat's certificate verifies offline until its deadline.
TEST_P(Modes, Borrow) {
  auto lic = admin->create_license(2, 30, v1::LEASING_STRATEGY_UNSPECIFIED, 3600);
  std::string jwks = seatd::Client(options()).fetch_signing_keys();
  auto o = options();
  o.signing_keys = jwks;
  seatd::Client c(o);
  seatd::Lease lease = c.borrow(ask(lic, "travel-laptop"), std::chrono::seconds(1800));
  EXPECT_TRUE(lease.borrowed());
  auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  seatd::Claims got = seatd::verify_offline(lease.certificate(), jwks, now.count() + 1700);
  EXPECT_TRUE(got.borrowed);
  got.check_holder(lic.key(), "travel-laptop");
  EXPECT_THROW(seatd::verify_offline(lease.certificate(), jwks, got.expiry), seatd::Error);
  try {
    lease.release();  // no early return: the certificate stays valid offline
    FAIL();
  } catch (const seatd::Error& e) {
    EXPECT_EQ("LEASE_BORROWED", e.reason());
  }
  EXPECT_EQ(std::vector<std::string>{lease.id()}, admin->active(lic.id()));
}

// Destruction while a heartbeat is in flight (stream and unary): the
// destructor cancels it, joins the keeper and releases the seat (the
// sanitizer builds check there is no race or leak).
TEST_P(Modes, DestroyedWhileAHeartbeatIsInFlight) {
  auto lic = admin->create_license(20, 1.2);  // a heartbeat every 200 ms
  for (bool stream : {true, false}) {
    auto o = options();
    o.heartbeat_stream = stream;
    seatd::Client c(o);
    for (int i = 0; i < 8; i++) {
      seatd::Lease lease = c.acquire(ask(lic, "fp-" + std::to_string(i)));
      std::this_thread::sleep_for(std::chrono::milliseconds(150 + 23 * i));  // across the beats, not a wait for one
    }
  }
  EXPECT_TRUE(admin->active(lic.id()).empty());
}

// The C API from a C program (tests/c_api_test.c): acquire, a full
// license, a heartbeat, the lost callback of a revoke, release.
TEST_P(Modes, CApiFromC) {
  auto lic = admin->create_license(1, 6);
  std::string cmd = std::string(SEATD_C_API_TEST) + " " + server->address + " " + lic.key();
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(nullptr, p);
  char line[256] = {0};
  ASSERT_NE(nullptr, fgets(line, sizeof line, p)) << "the C program acquired nothing";
  std::string id(line);
  ASSERT_EQ(0u, id.rfind("acquired ", 0)) << id;
  id = id.substr(9);
  id.erase(id.find_last_not_of("\r\n") + 1);
  admin->revoke(id);
  int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the C program failed (its output is above)";
}

INSTANTIATE_TEST_SUITE_P(Seatd, Modes, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Distributed" : "Embedded"; });

}  // namespace
