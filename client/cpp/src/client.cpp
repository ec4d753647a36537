#include "seatd/client.hpp"

#include <cmath>
#include <limits>
#include <thread>

#include <google/protobuf/util/json_util.h>

#include "internal.hpp"

namespace seatd {

using namespace detail;

// Retries UNAVAILABLE on the calls that are safe to repeat: the same text as
// client/service_config.json of the Go client (a test keeps them equal).
static const char* kServiceConfig = R"({
  "methodConfig": [{
    "name": [
      {"service": "seatd.v1.SeatService", "method": "AcquireSeat"},
      {"service": "seatd.v1.SeatService", "method": "ReleaseSeat"},
      {"service": "seatd.v1.HeartbeatService", "method": "Heartbeat"}
    ],
    "retryPolicy": {
      "maxAttempts": 5,
      "initialBackoff": "0.1s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": ["UNAVAILABLE"]
    }
  }]
})";

const char* Client::service_config() { return kServiceConfig; }

static void sleep_seconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

static std::chrono::system_clock::time_point after(double s) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(s));
}

Client::Client(ClientOptions o) : c_(std::make_shared<Conn>()) {
  if (o.channel) {
    c_->channel = o.channel;
  } else {
    if (o.address.empty()) throw Error(grpc::StatusCode::INVALID_ARGUMENT, "", "ClientOptions.address is empty");
    grpc::ChannelArguments args;
    args.SetServiceConfigJSON(kServiceConfig);
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
    if (o.address.rfind("ipv4:", 0) == 0 || o.address.rfind("ipv6:", 0) == 0)
      args.SetLoadBalancingPolicyName("round_robin");
    auto creds = o.credentials ? o.credentials : grpc::InsecureChannelCredentials();
    c_->channel = grpc::CreateCustomChannel(o.address, creds, args);
  }
  c_->seats = v1::SeatService::NewStub(c_->channel);
  c_->hb = v1::HeartbeatService::NewStub(c_->channel);
  if (!o.signing_keys.empty()) c_->keys.emplace(o.signing_keys);
  c_->opts = std::move(o);
}

Client::~Client() = default;

std::shared_ptr<grpc::Channel> Client::channel() const { return c_->channel; }

static v1::AcquireSeatRequest request_of(const AcquireOptions& o) {
  if (o.license_key.empty()) throw Error(grpc::StatusCode::INVALID_ARGUMENT, "", "license_key is empty");
  if (o.fingerprint.empty()) throw Error(grpc::StatusCode::INVALID_ARGUMENT, "", "fingerprint is empty");
  v1::AcquireSeatRequest r;
  r.set_license_key(o.license_key);
  r.set_fingerprint(o.fingerprint);
  r.set_user(o.user);
  r.set_hostname(o.hostname);
  r.mutable_metadata()->insert(o.metadata.begin(), o.metadata.end());
  r.set_feature(o.feature);
  r.set_version(o.version);
  r.set_idempotency_key(o.idempotency_key.empty() ? new_idempotency_key() : o.idempotency_key);
  return r;
}

v1::AcquireSeatResponse Conn::acquire(const v1::AcquireSeatRequest& req, double timeout, double end) const {
  const Timing& t = opts.timing;
  double stop = timeout > 0 ? now() + timeout : end;
  for (int n = 1;; n++) {
    double left = stop > 0 ? std::max(stop - now(), 0.001) : seconds(t.call_timeout) * 3;
    grpc::ClientContext ctx;
    ctx.set_deadline(after(left));
    v1::AcquireSeatResponse resp;
    grpc::Status st = seats->AcquireSeat(&ctx, req, &resp);
    if (st.ok()) return resp;
    Error e = from_status(st);
    if (!e.retryable() || n >= t.acquire_attempts) throw e;
    double wait = std::max(backoff(t, n, seconds(t.backoff_max)), seconds(e.retry_delay()));
    if (stop > 0 && now() + wait > stop) throw e;
    sleep_seconds(wait);  // and again with the same idempotency key
  }
}

static Error bad_cert(const std::string& what) {
  return Error(grpc::StatusCode::UNAUTHENTICATED, kBadCertificate, "lease certificate: " + what);
}

void Conn::check(const v1::AcquireSeatResponse& resp, const v1::AcquireSeatRequest& req, bool borrowed) const {
  const auto& pl = resp.lease();
  if (!req.feature().empty() && pl.feature() != req.feature())
    // A seatd from before features ignores the field and grants a base
    // seat, which must not unlock the feature.
    throw Error(grpc::StatusCode::UNIMPLEMENTED, "",
                "seatd granted a seat of '" + pl.feature() + "', not of feature '" + req.feature() +
                    "' (a seatd without features? upgrade it)");
  if (borrowed && !pl.borrowed()) throw bad_cert("seatd granted a lease that is not borrowed");
  if (borrowed && resp.lease_certificate().empty()) throw bad_cert("none in seatd's answer to a borrow");
  if (!verifies()) return;
  SigningKeys::Expect e;
  e.nonce = req.nonce();
  e.lease_id = pl.id();
  e.license_id = pl.license_id();
  e.grant_id = pl.grant_id();
  e.license_key = req.license_key();
  e.fingerprint = req.fingerprint();
  e.user = req.user();
  e.hostname = req.hostname();
  e.feature = req.feature();
  e.version = req.version();
  e.borrowed = borrowed;
  e.deadline_unix = pl.has_expires_at() ? unix_of(pl.expires_at()) : 0;
  e.now_unix = now();
  keys->check(resp.lease_certificate(), e);
}

void Conn::give_back(const std::string& id, const std::string& token) const {
  grpc::ClientContext ctx;
  ctx.set_deadline(after(seconds(opts.timing.call_timeout)));
  v1::ReleaseSeatRequest r;
  r.set_lease_id(id);
  r.set_lease_token(token);
  v1::ReleaseSeatResponse resp;
  (void)seats->ReleaseSeat(&ctx, r, &resp);  // best effort: it lapses at its deadline otherwise
}

static Lease hold(const std::shared_ptr<Conn>& c, const v1::AcquireSeatRequest& req,
                  const v1::AcquireSeatResponse& resp, double sent, bool borrowed, const LostCallback& on_lost) {
  try {
    c->check(resp, req, borrowed);
  } catch (const Error&) {  // not the seat asked for, or not seatd's
    c->give_back(resp.lease().id(), resp.lease_token());
    throw;
  }
  auto s = std::make_shared<LeaseState>();
  s->c = c;
  s->opts = req;
  s->opts.clear_idempotency_key();
  s->opts.clear_nonce();
  s->opts.clear_borrow_duration();
  s->borrowed_ = borrowed;
  s->on_lost = on_lost;
  s->take(resp, sent);
  if (c->opts.auto_heartbeat && !borrowed) s->start_keeper();
  return Lease(s);
}

Lease Client::acquire(const AcquireOptions& o) {
  v1::AcquireSeatRequest req = request_of(o);
  req.set_nonce(c_->nonce());
  double sent = now();
  auto resp = c_->acquire(req, o.timeout.count() > 0 ? seconds(o.timeout) : 0, 0);
  return hold(c_, req, resp, sent, false, o.on_lost);
}

Lease Client::borrow(const AcquireOptions& o, std::chrono::seconds duration) {
  if (duration.count() <= 0) throw Error(grpc::StatusCode::INVALID_ARGUMENT, "", "borrow duration must be positive");
  v1::AcquireSeatRequest req = request_of(o);
  req.set_nonce(c_->nonce(true));
  req.mutable_borrow_duration()->set_seconds(duration.count());
  double sent = now();
  auto resp = c_->acquire(req, o.timeout.count() > 0 ? seconds(o.timeout) : 0, 0);
  return hold(c_, req, resp, sent, true, o.on_lost);
}

static Error wait_timeout() {
  return Error(grpc::StatusCode::DEADLINE_EXCEEDED, kWaitTimeout, "no seat within the wait's timeout");
}

Lease Client::wait_for_seat(const AcquireOptions& o, PositionCallback on_position, std::chrono::milliseconds timeout) {
  v1::AcquireSeatRequest areq = request_of(o);  // one acquisition, however many streams
  areq.set_nonce(c_->nonce());
  const Timing& t = c_->opts.timing;
  double end = timeout.count() > 0 ? now() + seconds(timeout) : 0;
  std::string ticket;
  int failures = 0;
  for (;;) {
    if (end > 0 && end - now() <= 0) throw wait_timeout();
    v1::WaitForSeatRequest w;
    w.set_license_key(areq.license_key());
    w.set_fingerprint(areq.fingerprint());
    w.set_user(areq.user());
    w.set_hostname(areq.hostname());
    *w.mutable_metadata() = areq.metadata();
    w.set_idempotency_key(areq.idempotency_key());
    w.set_queue_ticket(ticket);
    w.set_nonce(areq.nonce());
    w.set_feature(areq.feature());
    w.set_version(areq.version());
    grpc::ClientContext ctx;
    if (end > 0) ctx.set_deadline(after(end - now()));
    auto reader = c_->seats->WaitForSeat(&ctx, w);
    v1::WaitForSeatResponse r;
    bool heard = false, granted = false;
    double sent = 0;
    v1::AcquireSeatResponse grant;
    while (reader->Read(&r)) {
      heard = true;
      if (r.has_granted()) {
        grant = r.granted();
        sent = now();
        granted = true;
        break;
      }
      ticket = r.position().ticket();
      if (on_position) on_position(r.position().position(), r.position().queue_length());
    }
    if (granted) ctx.TryCancel();
    grpc::Status st = reader->Finish();
    if (granted) {
      Lease lease = hold(c_, areq, grant, sent, false, o.on_lost);
      try {
        // seatd holds a waiter's grant only until its first heartbeat
        // (--wait-hold): confirm it now.
        lease.heartbeat();
        return lease;
      } catch (const Error& e) {
        if (e.reason() == kBadCertificate) {
          // We stop heartbeating a lease we do not trust; if seatd is
          // real (a key newer than our JWKS, say), it frees the seat now.
          auto& st = *lease.s_;
          st.stop_keeper();
          c_->give_back(lease.id(), lease.token());
          std::lock_guard<std::mutex> lk(st.mu);
          st.released = true;
          throw;  // not seatd's answer: no use waiting again
        }
        if (!e.lease_lost()) {
          if (e.retryable()) return lease;  // its keeper heartbeats it
          throw;
        }
        ticket.clear();  // the grant used up the place: queue again
        continue;
      }
    }
    Error err = st.ok() ? Error(grpc::StatusCode::UNAVAILABLE, "", "wait stream closed by seatd") : from_status(st);
    if (err.code() == grpc::StatusCode::DEADLINE_EXCEEDED && end > 0 && now() >= end) throw wait_timeout();
    if (err.code() == grpc::StatusCode::UNIMPLEMENTED) {
      // A seatd without the queue: poll while no seat is free for us.
      for (int n = 1;; n++) {
        v1::AcquireSeatRequest p = areq;
        p.set_idempotency_key(new_idempotency_key());
        p.set_nonce(c_->nonce());
        try {
          double s = now();
          return hold(c_, p, c_->acquire(p, 0, end), s, false, o.on_lost);
        } catch (const Error& e) {
          if (!e.no_seat()) throw;
          if (on_position) on_position(0, 0);
        }
        double wait = backoff(t, n, seconds(t.backoff_max));
        if (end > 0 && now() + wait > end) throw wait_timeout();
        sleep_seconds(wait);
      }
    }
    if (!err.retryable()) throw err;
    failures = heard ? 1 : failures + 1;
    sleep_seconds(backoff(t, failures, seconds(t.backoff_max)));
  }
}

void Client::release_seat(const std::string& lease_id, const std::string& lease_token) {
  grpc::ClientContext ctx;
  ctx.set_deadline(after(seconds(c_->opts.timing.call_timeout)));
  v1::ReleaseSeatRequest r;
  r.set_lease_id(lease_id);
  r.set_lease_token(lease_token);
  v1::ReleaseSeatResponse resp;
  grpc::Status st = c_->seats->ReleaseSeat(&ctx, r, &resp);
  if (!st.ok()) throw from_status(st);
}

std::string Client::fetch_signing_keys(const std::string& tenant_id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(after(seconds(c_->opts.timing.call_timeout)));
  v1::GetSigningKeysRequest r;
  r.set_tenant_id(tenant_id);
  v1::GetSigningKeysResponse resp;
  grpc::Status st = c_->seats->GetSigningKeys(&ctx, r, &resp);
  if (!st.ok()) throw from_status(st);
  std::string out = "{\"keys\": [";
  for (int i = 0; i < resp.keys_size(); i++) {
    std::string k;
    google::protobuf::util::JsonPrintOptions po;
    po.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(resp.keys(i), &k, po);
    out += (i ? ", " : "") + k;
  }
  return out + "]}";
}

}  // namespace seatd
