// The C API over the C++ one: no exception crosses it; each call returns a
// result code and leaves the message and reason for seatd_errmsg and
// seatd_errreason on the calling thread.
#include "seatd/seatd.h"

#include <cstring>
#include <mutex>
#include <new>

#include "seatd/seatd.hpp"

struct seatd_client {
  std::unique_ptr<seatd::Client> c;
};

struct seatd_lease {
  seatd::Lease l;
  // The strings the accessors hand out, fixed at the grant.
  std::string id, license_id, feature, grant_id;
};

namespace {

thread_local std::string last_message, last_reason;

int ok() {
  last_message.clear();
  last_reason.clear();
  return SEATD_OK;
}

int fail(int code, const std::string& message, const std::string& reason = "") {
  last_message = message;
  last_reason = reason;
  return code;
}

int code_of(const seatd::Error& e) {
  const std::string& r = e.reason();
  if (r == seatd::kBadCertificate) return SEATD_BAD_CERTIFICATE;
  if (r == seatd::kWaitTimeout) return SEATD_TIMEOUT;
  if (e.no_seat()) return SEATD_NO_SEAT;
  if (e.not_allowed()) return SEATD_NOT_ALLOWED;
  if (e.lease_lost()) return SEATD_LEASE_LOST;
  if (r == "LICENSE_NOT_FOUND") return SEATD_NOT_FOUND;
  if (r == "FEATURE_NOT_LICENSED" || r == "VERSION_NOT_LICENSED" || r == "GRANT_NOT_STARTED") return SEATD_NOT_LICENSED;
  switch (e.code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return SEATD_INVALID_ARGUMENT;
    case grpc::StatusCode::UNAVAILABLE:
      return SEATD_UNAVAILABLE;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return SEATD_TIMEOUT;
    default:
      return SEATD_ERROR;
  }
}

// Runs f, turning every exception into a result code.
template <typename F>
int guard(F&& f) {
  try {
    return f();
  } catch (const seatd::Error& e) {
    return fail(code_of(e), e.message(), e.reason());
  } catch (const std::invalid_argument& e) {
    return fail(SEATD_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(SEATD_ERROR, "out of memory");
  } catch (const std::exception& e) {
    return fail(SEATD_ERROR, e.what());
  } catch (...) {
    return fail(SEATD_ERROR, "unknown error");
  }
}

std::string s(const char* p) { return p == nullptr ? std::string() : std::string(p); }

// Fields a caller's struct of an older (smaller) layout does not have read as unset.
#define HAS(o, field) ((o)->size >= offsetof(std::remove_pointer_t<decltype(o)>, field) + sizeof((o)->field))

seatd::AcquireOptions acquire_options(const seatd_acquire_options* o) {
  seatd::AcquireOptions a;
  a.license_key = s(o->license_key);
  a.fingerprint = s(o->fingerprint);
  a.user = s(o->user);
  a.hostname = s(o->hostname);
  a.feature = s(o->feature);
  a.version = s(o->version);
  a.idempotency_key = s(o->idempotency_key);
  a.timeout = std::chrono::milliseconds(o->timeout_ms);
  if (HAS(o, user_data) && o->on_lost != nullptr) {
    seatd_lost_fn fn = o->on_lost;
    void* user = o->user_data;
    a.on_lost = [fn, user](const seatd::Error& e) {
      fn(user, code_of(e), e.reason().c_str(), e.message().c_str());
    };
  }
  return a;
}

int hand_out(seatd::Lease l, seatd_lease** out) {
  auto* h = new seatd_lease{std::move(l), "", "", "", ""};
  h->id = h->l.id();
  h->license_id = h->l.license_id();
  h->feature = h->l.feature();
  h->grant_id = h->l.grant_id();
  *out = h;
  return ok();
}

size_t copy_out(const std::string& v, char* buf, size_t n) {
  if (buf != nullptr && n > 0) {
    size_t k = std::min(v.size(), n - 1);
    std::memcpy(buf, v.data(), k);
    buf[k] = '\0';
  }
  return v.size();
}

}  // namespace

extern "C" {

const char* seatd_errmsg(void) { return last_message.c_str(); }
const char* seatd_errreason(void) { return last_reason.c_str(); }
const char* seatd_version(void) { return "0.1.0"; }

int seatd_client_open(const char* address, const seatd_client_options* o, seatd_client** out) {
  if (out == nullptr) return fail(SEATD_MISUSE, "seatd_client_open: out is NULL");
  *out = nullptr;
  if (address == nullptr || *address == '\0') return fail(SEATD_INVALID_ARGUMENT, "seatd_client_open: address is empty");
  return guard([&] {
    seatd::ClientOptions co;
    co.address = address;
    if (o != nullptr) {
      if (o->signing_keys != nullptr) co.signing_keys = o->signing_keys;
      if (o->tls_ca_pem != nullptr) {
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = o->tls_ca_pem;
        co.credentials = grpc::SslCredentials(ssl);
      }
      co.reacquire_on_expiry = o->reacquire_on_expiry != 0;
      co.heartbeat_stream = o->heartbeat_stream != 0;
      auto ms = [](int64_t v, std::chrono::milliseconds& f) {
        if (v > 0) f = std::chrono::milliseconds(v);
      };
      ms(o->call_timeout_ms, co.timing.call_timeout);
      ms(o->min_interval_ms, co.timing.min_interval);
      ms(o->clock_check_ms, co.timing.clock_check);
      ms(o->backoff_base_ms, co.timing.backoff_base);
      ms(o->backoff_max_ms, co.timing.backoff_max);
    }
    *out = new seatd_client{std::make_unique<seatd::Client>(std::move(co))};
    return ok();
  });
}

void seatd_client_close(seatd_client* client) { delete client; }

int seatd_acquire(seatd_client* client, const seatd_acquire_options* o, seatd_lease** out) {
  if (client == nullptr || o == nullptr || out == nullptr) return fail(SEATD_MISUSE, "seatd_acquire: a NULL argument");
  *out = nullptr;
  return guard([&] { return hand_out(client->c->acquire(acquire_options(o)), out); });
}

int seatd_wait_for_seat(seatd_client* client, const seatd_acquire_options* o, seatd_position_fn on_position,
                        void* position_user_data, int64_t timeout_ms, seatd_lease** out) {
  if (client == nullptr || o == nullptr || out == nullptr)
    return fail(SEATD_MISUSE, "seatd_wait_for_seat: a NULL argument");
  *out = nullptr;
  return guard([&] {
    seatd::PositionCallback cb;
    if (on_position != nullptr)
      cb = [on_position, position_user_data](int p, int n) { on_position(position_user_data, p, n); };
    return hand_out(client->c->wait_for_seat(acquire_options(o), cb, std::chrono::milliseconds(timeout_ms)), out);
  });
}

int seatd_borrow(seatd_client* client, const seatd_acquire_options* o, int64_t duration_s, seatd_lease** out) {
  if (client == nullptr || o == nullptr || out == nullptr) return fail(SEATD_MISUSE, "seatd_borrow: a NULL argument");
  *out = nullptr;
  return guard([&] { return hand_out(client->c->borrow(acquire_options(o), std::chrono::seconds(duration_s)), out); });
}

int seatd_release(seatd_lease* lease) {
  if (lease == nullptr) return fail(SEATD_MISUSE, "seatd_release: lease is NULL");
  int rc = guard([&] {
    lease->l.release();
    return ok();
  });
  delete lease;  // the destructor tries nothing more: released, lost, or told to seatd already
  return rc;
}

int seatd_heartbeat(seatd_lease* lease) {
  if (lease == nullptr) return fail(SEATD_MISUSE, "seatd_heartbeat: lease is NULL");
  return guard([&] {
    lease->l.heartbeat();
    return ok();
  });
}

const char* seatd_lease_id(const seatd_lease* l) { return l ? l->id.c_str() : ""; }
const char* seatd_lease_license_id(const seatd_lease* l) { return l ? l->license_id.c_str() : ""; }
const char* seatd_lease_feature(const seatd_lease* l) { return l ? l->feature.c_str() : ""; }
const char* seatd_lease_grant_id(const seatd_lease* l) { return l ? l->grant_id.c_str() : ""; }

int64_t seatd_lease_expires_at_ms(const seatd_lease* l) {
  if (l == nullptr) return 0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(l->l.expires_at().time_since_epoch()).count();
}
int seatd_lease_seats_in_use(const seatd_lease* l) { return l ? l->l.seats_in_use() : 0; }
int seatd_lease_seat_limit(const seatd_lease* l) { return l ? l->l.seat_limit() : 0; }
int seatd_lease_lost(const seatd_lease* l) { return l != nullptr && l->l.lost() ? 1 : 0; }
size_t seatd_lease_certificate(const seatd_lease* l, char* buf, size_t n) {
  return copy_out(l ? l->l.certificate() : "", buf, n);
}
size_t seatd_lease_reason(const seatd_lease* l, char* buf, size_t n) { return copy_out(l ? l->l.reason() : "", buf, n); }

int seatd_verify_offline(const char* certificate, const char* jwks, int64_t now_unix) {
  if (certificate == nullptr || jwks == nullptr) return fail(SEATD_MISUSE, "seatd_verify_offline: a NULL argument");
  return guard([&] {
    seatd::verify_offline(certificate, jwks, now_unix);
    return ok();
  });
}

int seatd_fingerprint_of(const char* machine_id, const char* app, char out[65]) {
  if (machine_id == nullptr || app == nullptr || out == nullptr)
    return fail(SEATD_MISUSE, "seatd_fingerprint_of: a NULL argument");
  return guard([&] {
    copy_out(seatd::fingerprint_of(machine_id, app), out, 65);
    return ok();
  });
}

int seatd_machine_fingerprint(const char* app, char out[65]) {
  if (app == nullptr || out == nullptr) return fail(SEATD_MISUSE, "seatd_machine_fingerprint: a NULL argument");
  return guard([&] {
    copy_out(seatd::machine_fingerprint(app), out, 65);
    return ok();
  });
}

}  // extern "C"
