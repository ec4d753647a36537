// Lease certificates verified with OpenSSL 3: Ed25519 public keys from the
// JWKS's x (EVP_PKEY_new_raw_public_key), signatures by EVP_DigestVerify;
// JSON read into google.protobuf.Struct by protobuf's own JSON parser.
#include "seatd/certificate.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>
#include <cmath>
#include <ctime>
#include <map>
#include <stdexcept>

#include "internal.hpp"

namespace seatd {

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

Error bad(const std::string& what) { return Error(grpc::StatusCode::UNAUTHENTICATED, kBadCertificate, "lease certificate: " + what); }

std::string hex(const unsigned char* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (size_t i = 0; i < n; i++) s[2 * i] = d[p[i] >> 4], s[2 * i + 1] = d[p[i] & 15];
  return s;
}

// base64url without padding; false when part is not that.
bool b64url(const std::string& part, std::string& out) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int i = 0; i < 64; i++) t[static_cast<unsigned char>(a[i])] = static_cast<int8_t>(i);
    return t;
  }();
  out.clear();
  if (part.size() % 4 == 1) return false;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char ch : part) {
    int v = table[ch];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

std::string b64url_encode(const unsigned char* p, size_t n) {
  const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string s;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    acc = (acc << 8) | p[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      s.push_back(a[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) s.push_back(a[(acc << (6 - bits)) & 63]);
  return s;
}

bool parse_object(const std::string& json, Struct& out) {
  google::protobuf::util::JsonParseOptions o;
  return google::protobuf::util::JsonStringToMessage(json, &out, o).ok();
}

const Value* field(const Struct& s, const char* name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? nullptr : &it->second;
}

std::string str(const Struct& s, const char* name) {
  const Value* v = field(s, name);
  if (v == nullptr || v->kind_case() == Value::kNullValue) return "";
  if (v->kind_case() != Value::kStringValue) throw bad(std::string(name) + " must be a string");
  return v->string_value();
}

int64_t num(const Struct& s, const char* name, bool required) {
  const Value* v = field(s, name);
  if (v == nullptr) {
    if (required) throw bad(std::string("no ") + name);
    return 0;
  }
  if (v->kind_case() != Value::kNumberValue) throw bad(std::string(name) + " must be a number");
  return static_cast<int64_t>(std::floor(v->number_value()));
}

std::string iso(double t) {
  time_t s = static_cast<time_t>(t);
  struct tm tm;
  gmtime_r(&s, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct PKey {
  EVP_PKEY* p;
  explicit PKey(EVP_PKEY* k) : p(k) {}
  ~PKey() { EVP_PKEY_free(p); }
  PKey(const PKey&) = delete;
  PKey& operator=(const PKey&) = delete;
};

}  // namespace

struct SigningKeys::Impl {
  std::map<std::string, std::unique_ptr<PKey>> keys;
};

SigningKeys::SigningKeys(const std::string& jwks) : impl_(std::make_unique<Impl>()) {
  Struct set;
  if (!parse_object(jwks, set)) throw std::invalid_argument("JWKS is not JSON");
  const Value* keys = field(set, "keys");
  if (keys == nullptr || keys->kind_case() != Value::kListValue)
    throw std::invalid_argument("JWKS must be {\"keys\": [...]}");
  for (const Value& k : keys->list_value().values()) {
    if (k.kind_case() != Value::kStructValue) continue;
    const Struct& jwk = k.struct_value();
    auto s = [&](const char* n) {
      const Value* v = field(jwk, n);
      return v != nullptr && v->kind_case() == Value::kStringValue ? v->string_value() : std::string();
    };
    if (s("kty") != "OKP" || s("crv") != "Ed25519") continue;
    std::string kid = s("kid");
    if (field(jwk, "d") != nullptr)
      throw std::invalid_argument("JWKS key '" + kid + "' holds a private key; publish only public keys");
    std::string alg = s("alg"), use = s("use");
    if (kid.empty() || !(alg.empty() || alg == "EdDSA") || !(use.empty() || use == "sig")) continue;
    std::string raw;
    if (!b64url(s("x"), raw) || raw.size() != 32)
      throw std::invalid_argument("JWKS key '" + kid + "': x is not an Ed25519 public key");
    EVP_PKEY* p = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                              reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
    if (p == nullptr) throw std::invalid_argument("JWKS key '" + kid + "': x is not an Ed25519 public key");
    if (impl_->keys.count(kid)) {
      EVP_PKEY_free(p);
      throw std::invalid_argument("JWKS kid '" + kid + "' appears twice");
    }
    impl_->keys.emplace(kid, std::make_unique<PKey>(p));
  }
  if (impl_->keys.empty())
    throw std::invalid_argument("JWKS holds no Ed25519 signing key (kty OKP, crv Ed25519, with a kid)");
}

SigningKeys::~SigningKeys() = default;
SigningKeys::SigningKeys(SigningKeys&&) noexcept = default;
SigningKeys& SigningKeys::operator=(SigningKeys&&) noexcept = default;

Claims SigningKeys::verified(const std::string& cert) const {
  const Impl& impl = *impl_;
  if (cert.empty()) throw bad("none in seatd's answer");
  auto d1 = cert.find('.');
  auto d2 = d1 == std::string::npos ? d1 : cert.find('.', d1 + 1);
  if (d2 == std::string::npos || cert.find('.', d2 + 1) != std::string::npos)
    throw bad("not a JWS compact token (three base64url parts)");
  std::string h, payload, sig;
  if (!b64url(cert.substr(0, d1), h)) throw bad("header is not base64url");
  Struct header;
  if (!parse_object(h, header)) throw bad("header is not JSON");
  if (str(header, "alg") != "EdDSA") throw bad("alg '" + str(header, "alg") + "', want EdDSA");
  if (field(header, "crit") != nullptr) throw bad("critical header parameters are not understood");
  std::string kid = str(header, "kid");
  if (kid.empty()) throw bad("no kid in its header");
  auto it = impl.keys.find(kid);
  if (it == impl.keys.end())
    throw bad("signed by key '" + kid +
              "', which the JWKS does not hold (another tenant's key, or a key newer than the JWKS)");
  if (!b64url(cert.substr(d2 + 1), sig)) throw bad("signature is not base64url");
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, it->second->p) == 1 &&
            EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(cert.data()), d2) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) throw bad("signature does not verify with key '" + kid + "'");
  if (!b64url(cert.substr(d1 + 1, d2 - d1 - 1), payload)) throw bad("claims are not base64url");
  Struct raw;
  if (!parse_object(payload, raw)) throw bad("claims are not a JSON object");
  Claims c;
  c.issuer = str(raw, "iss");
  if (c.issuer != "seatd") throw bad("issuer '" + c.issuer + "', want seatd");
  c.lease_id = str(raw, "lease_id");
  if (c.lease_id.empty() || str(raw, "sub") != c.lease_id) throw bad("sub and lease_id must name the same lease");
  c.expiry = num(raw, "exp", true);
  c.issued_at = num(raw, "iat", false);
  c.grant_expires_at = num(raw, "grant_expires_at", false);
  c.file_serial = num(raw, "file_serial", false);
  c.tenant_id = str(raw, "tenant_id");
  c.license_id = str(raw, "license_id");
  c.fingerprint = str(raw, "fingerprint");
  c.user = str(raw, "user");
  c.hostname = str(raw, "hostname");
  c.bound_to = str(raw, "bound_to");
  c.license_key_sha256 = str(raw, "license_key_sha256");
  const Value* b = field(raw, "borrowed");
  c.borrowed = b != nullptr && b->kind_case() == Value::kBoolValue && b->bool_value();
  c.nonce = str(raw, "nonce");
  c.key_id = kid;
  c.feature = str(raw, "feature");
  c.version = str(raw, "version");
  c.grant_id = str(raw, "grant_id");
  c.grant_version = str(raw, "grant_version");
  c.file_license_id = str(raw, "file_license_id");
  return c;
}

Claims SigningKeys::verify(const std::string& certificate, int64_t now_unix) const {
  Claims c = verified(certificate);
  double now = now_unix != 0 ? static_cast<double>(now_unix) : detail::now();
  if (now >= static_cast<double>(c.expiry))
    throw Error(grpc::StatusCode::UNAUTHENTICATED, kBadCertificate,
                "lease certificate: expired at " + iso(c.expiry) + " (now " + iso(now) + ")");
  return c;
}

void Claims::check_holder(const std::string& license_key, const std::string& fp, const std::string& u,
                          const std::string& host, const std::string& feat, const std::string& ver) const {
  if (license_key_sha256.empty() || bound_to.empty())
    throw bad("it names no license key or holder (signed by a seatd that does not bind certificates: upgrade seatd)");
  if (license_key_sha256 != license_key_hash(license_key))
    throw bad("for another license key than the one this client uses");
  std::string theirs, ours;
  if (bound_to == "fingerprint") {
    theirs = fingerprint, ours = fp;
  } else if (bound_to == "user") {
    theirs = user, ours = u;
  } else if (bound_to == "hostname") {
    theirs = hostname, ours = host;
  } else {
    throw bad("bound to '" + bound_to + "', which this client does not know");
  }
  if (ours.empty() || theirs != ours) throw bad("for " + bound_to + " '" + theirs + "', not this client's '" + ours + "'");
  if (feature != feat) throw bad("for feature '" + feature + "', not the '" + feat + "' this client asked for");
  if (!ver.empty() && !grant_version.empty() && compare_versions(ver, grant_version) > 0)
    throw bad("for a grant covering version " + grant_version + ", not the " + ver + " this client asked for");
}

Claims SigningKeys::check(const std::string& certificate, const Expect& e) const {
  Claims c = verified(certificate);
  double now = e.now_unix != 0 ? e.now_unix : detail::now();
  c.check_holder(e.license_key, e.fingerprint, e.user, e.hostname, e.feature, e.version);
  if (!e.grant_id.empty() && c.grant_id != e.grant_id) throw bad("for grant '" + c.grant_id + "', not '" + e.grant_id + "'");
  if (e.nonce.empty() || c.nonce != e.nonce) throw bad("nonce is not the one sent (a recorded answer replayed?)");
  if (c.lease_id != e.lease_id) throw bad("for lease '" + c.lease_id + "', not '" + e.lease_id + "'");
  if (!e.license_id.empty() && c.license_id != e.license_id) throw bad("for license '" + c.license_id + "', not '" + e.license_id + "'");
  if (c.borrowed != e.borrowed) throw bad(std::string("borrowed is ") + (c.borrowed ? "true" : "false"));
  if (e.deadline_unix == 0 || std::fabs(e.deadline_unix - static_cast<double>(c.expiry)) >= 1)
    throw bad("exp " + iso(c.expiry) + " is not the deadline seatd told");
  if (now >= static_cast<double>(c.expiry) + 1)
    throw bad("expired at " + iso(c.expiry) + " (now " + iso(now) + "; is this machine's clock right?)");
  return c;
}

std::string license_key_hash(const std::string& license_key) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(license_key.data()), license_key.size(), d);
  return hex(d, sizeof d);
}

int compare_versions(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    for (;;) {
      size_t j = s.find('.', i);
      out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
      if (j == std::string::npos) return out;
      i = j + 1;
    }
  };
  auto x = split(a), y = split(b);
  for (size_t i = 0; i < std::max(x.size(), y.size()); i++) {
    std::string p = i < x.size() ? x[i] : "0", q = i < y.size() ? y[i] : "0";
    p.erase(0, p.find_first_not_of('0') == std::string::npos ? p.size() : p.find_first_not_of('0'));
    q.erase(0, q.find_first_not_of('0') == std::string::npos ? q.size() : q.find_first_not_of('0'));
    if (p.size() != q.size()) return p.size() < q.size() ? -1 : 1;
    if (p != q) return p < q ? -1 : 1;
  }
  return 0;
}

Claims verify_offline(const std::string& certificate, const std::string& jwks, int64_t now_unix) {
  return SigningKeys(jwks).verify(certificate, now_unix);
}

namespace detail {

static std::string random_b64(size_t n) {
  unsigned char b[32];
  if (RAND_bytes(b, static_cast<int>(n)) != 1) throw std::runtime_error("seatd: no random bytes (RAND_bytes)");
  return b64url_encode(b, n);
}

std::string new_nonce() { return random_b64(16); }

std::string new_idempotency_key() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("seatd: no random bytes (RAND_bytes)");
  return "acq_" + hex(b, sizeof b);
}

}  // namespace detail
}  // namespace seatd
