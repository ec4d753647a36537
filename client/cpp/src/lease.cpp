#include "seatd/lease.hpp"

#include <cmath>
#include <limits>

#include "internal.hpp"

namespace seatd {

using namespace detail;

namespace detail {

static double ttl_of(const v1::Lease& pl) {
  if (!pl.has_expires_at()) return 0;
  const auto& start = pl.has_last_heartbeat_at() ? pl.last_heartbeat_at() : pl.acquired_at();
  if (start.seconds() == 0 && start.nanos() == 0) return 0;
  return std::max(unix_of(pl.expires_at()) - unix_of(start), 0.0);
}

static double local_deadline(double ttl, double sent, const google::protobuf::Timestamp& expires) {
  // sent + TTL errs early and is immune to a skew between the clocks.
  if (ttl > 0) return sent + ttl;
  return expires.seconds() != 0 || expires.nanos() != 0 ? unix_of(expires) : 0;
}

void LeaseState::take(const v1::AcquireSeatResponse& resp, double sent) {
  const auto& pl = resp.lease();
  id = pl.id();
  token = resp.lease_token();
  license_id = pl.license_id();
  interval = seconds_of(resp.heartbeat_interval());
  seats_in_use = resp.seats_in_use();
  seat_limit = resp.seat_limit();
  expires_at = pl.has_expires_at() ? unix_of(pl.expires_at()) : 0;
  certificate = resp.lease_certificate();
  fingerprint = pl.fingerprint().empty() ? opts.fingerprint() : pl.fingerprint();
  feature = pl.feature();
  version = pl.version();
  grant_id = pl.grant_id();
  grant_expires_at = resp.has_grant() && resp.grant().has_expires_at() ? unix_of(resp.grant().expires_at()) : 0;
  ttl = ttl_of(pl);
  deadline = local_deadline(ttl, sent, pl.expires_at());
}

void LeaseState::extend(const std::string& lease_id, double sent, const google::protobuf::Timestamp& expires,
                        double iv, double t, const std::string& cert) {
  std::lock_guard<std::mutex> lk(mu);
  if (lease_id != id) return;
  if (!cert.empty()) certificate = cert;
  if (t > 0) ttl = t;
  if (iv > 0) interval = iv;
  if (expires.seconds() != 0 || expires.nanos() != 0) expires_at = unix_of(expires);
  double d = local_deadline(ttl, sent, expires);
  if (d != 0 && (deadline == 0 || d > deadline)) deadline = d;
}

void LeaseState::mark_lost(const Error& e) {
  {
    std::lock_guard<std::mutex> lk(mu);
    if (error || released) return;
    error = e;
  }
  lost_cv.notify_all();
  if (on_lost) on_lost(e);
}

double LeaseState::until_deadline() const {
  std::lock_guard<std::mutex> lk(mu);
  return deadline == 0 ? std::numeric_limits<double>::infinity() : deadline - now();
}

double LeaseState::ping_every() const {
  double d, t;
  {
    std::lock_guard<std::mutex> lk(mu);
    d = interval, t = ttl;
  }
  if (t > 0 && d <= 0)
    d = t / 6;
  else if (t > 0 && d > t / 2)
    d = t / 2;
  else if (d <= 0)
    d = 10;
  return std::max(d, seconds(c->opts.timing.min_interval));
}

void LeaseState::check_cert(const std::string& nonce, const std::string& cert,
                            const google::protobuf::Timestamp& expires) const {
  if (!c->verifies()) return;
  SigningKeys::Expect e;
  {
    std::lock_guard<std::mutex> lk(mu);
    e.lease_id = id;
    e.license_id = license_id;
    e.grant_id = grant_id;
  }
  e.nonce = nonce;
  e.license_key = opts.license_key();
  e.fingerprint = opts.fingerprint();
  e.user = opts.user();
  e.hostname = opts.hostname();
  e.feature = opts.feature();
  e.version = opts.version();
  e.borrowed = borrowed_;
  e.deadline_unix = expires.seconds() != 0 || expires.nanos() != 0 ? unix_of(expires) : 0;
  e.now_unix = now();
  c->keys->check(cert, e);
}

void LeaseState::heartbeat_once(double timeout, bool keeper_call) {
  std::string lease_id, tok;
  {
    std::lock_guard<std::mutex> lk(mu);
    lease_id = id, tok = token;
  }
  double sent = now();
  v1::HeartbeatRequest req;
  req.set_lease_id(lease_id);
  req.set_lease_token(tok);
  req.set_nonce(c->nonce());
  grpc::ClientContext ctx;
  double t = timeout > 0 ? timeout : seconds(c->opts.timing.call_timeout);
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(t)));
  v1::HeartbeatResponse resp;
  if (keeper_call) {  // stop_keeper cancels it: a release does not wait for its answer
    std::lock_guard<std::mutex> lk(stop_mu);
    if (stopping) throw Error(grpc::StatusCode::CANCELLED, "", "lease released");
    call = &ctx;
  }
  grpc::Status st = c->hb->Heartbeat(&ctx, req, &resp);
  if (keeper_call) {
    std::lock_guard<std::mutex> lk(stop_mu);
    call = nullptr;
  }
  try {
    if (!st.ok()) throw from_status(st);
    check_cert(req.nonce(), resp.lease_certificate(), resp.expires_at());
  } catch (const Error& e) {
    if (e.lease_lost() && !keeper_call && !keeper.joinable()) mark_lost(e);  // nobody else will find out
    throw;
  }
  extend(lease_id, sent, resp.expires_at(), seconds_of(resp.heartbeat_interval()), ttl_of(resp.lease()),
         resp.lease_certificate());
}

LeaseState::~LeaseState() { stop_keeper(); }

}  // namespace detail

Lease::Lease(std::shared_ptr<LeaseState> s) : s_(std::move(s)) {}
Lease::Lease(Lease&& o) noexcept = default;

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    if (s_) try {
        release();
      } catch (...) {
      }
    s_ = std::move(o.s_);
  }
  return *this;
}

Lease::~Lease() {
  if (!s_) return;
  try {
    release();
  } catch (...) {  // the seat lapses at its deadline
  }
}

#define LOCKED(expr)                         \
  std::lock_guard<std::mutex> lk(s_->mu); \
  return expr

static std::chrono::system_clock::time_point tp(double unix) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(unix)));
}

std::string Lease::id() const { LOCKED(s_->id); }
std::string Lease::token() const { LOCKED(s_->token); }
std::string Lease::license_id() const { LOCKED(s_->license_id); }
std::string Lease::fingerprint() const { LOCKED(s_->fingerprint); }
std::string Lease::feature() const { LOCKED(s_->feature); }
std::string Lease::version() const { LOCKED(s_->version); }
std::string Lease::grant_id() const { LOCKED(s_->grant_id); }
std::optional<std::chrono::system_clock::time_point> Lease::grant_expires_at() const {
  std::lock_guard<std::mutex> lk(s_->mu);
  if (s_->grant_expires_at == 0) return std::nullopt;
  return tp(s_->grant_expires_at);
}
std::chrono::system_clock::time_point Lease::expires_at() const { LOCKED(tp(s_->expires_at)); }
std::chrono::milliseconds Lease::heartbeat_interval() const { LOCKED(millis(s_->interval)); }
std::chrono::milliseconds Lease::ttl() const { LOCKED(millis(s_->ttl)); }
int Lease::seats_in_use() const { LOCKED(s_->seats_in_use); }
int Lease::seat_limit() const { LOCKED(s_->seat_limit); }
bool Lease::borrowed() const { return s_->borrowed_; }
std::string Lease::certificate() const { LOCKED(s_->certificate); }
bool Lease::lost() const { LOCKED(s_->error.has_value()); }
std::optional<Error> Lease::error() const { LOCKED(s_->error); }
std::string Lease::reason() const { LOCKED(s_->error ? s_->error->reason() : std::string()); }

bool Lease::wait_lost(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lk(s_->mu);
  return s_->lost_cv.wait_for(lk, timeout, [&] { return s_->error.has_value(); });
}

void Lease::heartbeat() { s_->heartbeat_once(0, false); }

void Lease::release() {
  s_->stop_keeper();
  std::lock_guard<std::mutex> rl(s_->release_mu);
  std::string id, token;
  {
    std::lock_guard<std::mutex> lk(s_->mu);
    if (s_->released || s_->error) return;
    id = s_->id, token = s_->token;
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + s_->c->opts.timing.call_timeout);
  v1::ReleaseSeatRequest r;
  r.set_lease_id(id);
  r.set_lease_token(token);
  v1::ReleaseSeatResponse resp;
  grpc::Status st = s_->c->seats->ReleaseSeat(&ctx, r, &resp);
  if (!st.ok()) {
    Error e = from_status(st);
    if (!e.lease_lost()) throw e;
  }
  std::lock_guard<std::mutex> lk(s_->mu);
  s_->released = true;
}

}  // namespace seatd
