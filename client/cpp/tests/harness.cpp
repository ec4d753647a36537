#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <grpcpp/grpcpp.h>

extern char** environ;

namespace seatd::test {

namespace fs = std::filesystem;

std::chrono::milliseconds scaled(std::chrono::milliseconds d) {
  const char* s = std::getenv("SEATD_TEST_SLOWDOWN");
  double f = s != nullptr ? std::atof(s) : 1.0;
  return std::chrono::milliseconds(static_cast<int64_t>(d.count() * (f >= 1 ? f : 1)));
}

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

static std::string random_hex(int n) {
  static std::mt19937_64 g{std::random_device{}()};
  std::string s;
  for (int i = 0; i < n; i++) s += "0123456789abcdef"[g() % 16];
  return s;
}

static std::string seatd_bin() {
  const char* b = std::getenv("SEATD_BIN");
  if (b == nullptr || *b == '\0') throw std::runtime_error("SEATD_BIN is not set: run make test/cpp (make build first)");
  return b;
}

Seatd::Seatd(std::vector<std::string> extra, std::string dir, std::string grpc_addr) : data_dir(std::move(dir)) {
  if (data_dir.empty()) {
    data_dir = (fs::temp_directory_path() / ("seatd-cpp-data-" + random_hex(8))).string();
    own_dir_ = true;
  }
  log_ = (fs::temp_directory_path() / ("seatd-cpp-log-" + random_hex(8) + ".txt")).string();
  args = {seatd_bin(), "--grpc-addr", grpc_addr, "--http-addr", "127.0.0.1:0", "--data-dir", data_dir,
          "--drain-delay", "0s", "--cleanup-interval", "1h", "--operator-key", kOperatorKey};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; e++)
    if (std::string(*e).rfind("SEATD_", 0) != 0) env.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
  static const std::regex serving(R"re(msg="seatd serving".*\bgrpc=(\S+).*\bhttp=(\S+))re");
  auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(30));
  for (;;) {
    std::smatch m;
    std::string out = output();
    if (std::regex_search(out, m, serving)) {
      address = m[1];
      http = m[2];
      return;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_ || std::chrono::steady_clock::now() > deadline) {
      pid_ = -1;
      throw std::runtime_error("seatd did not serve:\n" + out);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string Seatd::output() const {
  std::ifstream f(log_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void Seatd::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

int Seatd::stop() {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Seatd::~Seatd() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (std::getenv("SEATD_CPP_VERBOSE") != nullptr) fprintf(stderr, "---- seatd %s\n%s", address.c_str(), output().c_str());
  std::error_code ec;
  fs::remove(log_, ec);
  if (own_dir_) fs::remove_all(data_dir, ec);
}

static std::string env_or(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : def;
}

static std::string pg_base() {
  return env_or("SEATD_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable");
}
static std::string redis_url() { return env_or("SEATD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"); }

static void sh(const std::string& cmd) {
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
}

Backend::Backend() {
  name = "cpp_" + random_hex(12);
  sh("psql '" + pg_base() + "' -qAtc 'CREATE SCHEMA " + name + "' >/dev/null");
  std::string base = pg_base();
  pg_url = base + (base.find('?') == std::string::npos ? "?" : "&") + "search_path=" + name;
  prefix = name + ":";
}

Backend::~Backend() {
  try {
    sh("psql '" + pg_base() + "' -qAtc 'SET client_min_messages = warning; DROP SCHEMA " + name +
       " CASCADE' >/dev/null");
    sh("redis-cli -u '" + redis_url() + "' --scan --pattern '" + prefix + "*' | xargs -r redis-cli -u '" +
       redis_url() + "' del >/dev/null");
  } catch (const std::exception& e) {
    fprintf(stderr, "backend cleanup: %s\n", e.what());
  }
}

std::vector<std::string> Backend::args(const std::string& instance) const {
  // At most 4 PostgreSQL connections per instance: the server is shared.
  return {"--postgres-url", pg_url, "--redis-url", redis_url(), "--redis-key-prefix", prefix,
          "--instance-id", instance, "--connect-timeout", "20s", "--shutdown-timeout", "10s", "--pg-max-conns", "4"};
}

Admin::Admin(const std::string& address)
    : stub_(v1::AdminService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

static void call(const char* what, const std::function<grpc::Status(grpc::ClientContext&)>& f) {
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", std::string("Bearer ") + kOperatorKey);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status st = f(ctx);
  if (!st.ok()) throw std::runtime_error(std::string(what) + ": " + st.error_message());
}

v1::License Admin::create_license(int seats, double ttl, v1::LeasingStrategy strategy, int64_t max_borrow) {
  v1::CreateLicenseRequest req;
  auto* l = req.mutable_license();
  l->set_name("cpp-test");
  l->set_seats(seats);
  l->mutable_lease_ttl()->set_seconds(static_cast<int64_t>(ttl));
  l->mutable_lease_ttl()->set_nanos(static_cast<int32_t>((ttl - static_cast<int64_t>(ttl)) * 1e9));
  l->set_leasing_strategy(strategy);
  if (max_borrow > 0) {
    l->mutable_max_borrow_duration()->set_seconds(max_borrow);
    l->set_max_borrowed_seats(1);
  }
  v1::CreateLicenseResponse resp;
  call("CreateLicense", [&](grpc::ClientContext& c) { return stub_->CreateLicense(&c, req, &resp); });
  return resp.license();
}

v1::FeatureGrant Admin::create_grant(const std::string& license_id, const std::string& feature,
                                     const std::string& version, int seats) {
  v1::CreateFeatureGrantRequest req;
  req.set_license_id(license_id);
  req.mutable_grant()->set_feature(feature);
  req.mutable_grant()->set_version(version);
  req.mutable_grant()->set_seats(seats);
  v1::CreateFeatureGrantResponse resp;
  call("CreateFeatureGrant", [&](grpc::ClientContext& c) { return stub_->CreateFeatureGrant(&c, req, &resp); });
  return resp.grant();
}

std::vector<std::string> Admin::active(const std::string& license_id) {
  v1::ListLeasesRequest req;
  req.set_license_id(license_id);
  req.set_state(v1::LEASE_STATE_ACTIVE);
  v1::ListLeasesResponse resp;
  call("ListLeases", [&](grpc::ClientContext& c) { return stub_->ListLeases(&c, req, &resp); });
  std::vector<std::string> ids;
  for (const auto& l : resp.leases()) ids.push_back(l.id());
  return ids;
}

void Admin::revoke(const std::string& lease_id) {
  v1::RevokeLeaseRequest req;
  req.set_lease_id(lease_id);
  req.set_reason("cpp test");
  v1::RevokeLeaseResponse resp;
  call("RevokeLease", [&](grpc::ClientContext& c) { return stub_->RevokeLease(&c, req, &resp); });
}

void Admin::create_tenant(const std::string& id) {
  v1::CreateTenantRequest req;
  req.mutable_tenant()->set_id(id);
  req.mutable_tenant()->set_name(id);
  v1::CreateTenantResponse resp;
  call("CreateTenant", [&](grpc::ClientContext& c) { return stub_->CreateTenant(&c, req, &resp); });
}

}  // namespace seatd::test
