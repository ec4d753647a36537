// Lease certificates: seatd's signed proof that it granted a lease, a JWS
// compact token (alg EdDSA) signed by the tenant's Ed25519 key its kid
// names. Verified with OpenSSL 3's EVP interface (EVP_DigestVerify on an
// EVP_PKEY_ED25519 key); JSON read with protobuf's JSON parser.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace seatd {

// What a lease certificate says (times in Unix seconds).
struct Claims {
  std::string issuer, lease_id, tenant_id, license_id, fingerprint, user, hostname;
  std::string bound_to;            // "fingerprint", "user" or "hostname"
  std::string license_key_sha256;  // hex SHA-256 of the license key
  int64_t issued_at = 0, expiry = 0;
  bool borrowed = false;
  std::string nonce, key_id;
  std::string feature, version, grant_id, grant_version;
  int64_t grant_expires_at = 0;
  int64_t file_serial = 0;
  std::string file_license_id;

  // Throws Error kBadCertificate unless the certificate is for the client
  // asking with these values (its own: never what an answer says).
  void check_holder(const std::string& license_key, const std::string& fingerprint,
                    const std::string& user = "", const std::string& hostname = "",
                    const std::string& feature = "", const std::string& version = "") const;
};

// A tenant's public keys: a JWKS ({"keys": [...]}), Ed25519 keys with a kid.
class SigningKeys {
 public:
  // Throws std::invalid_argument when the JWKS is not JSON, holds no
  // Ed25519 key, a private key, or a kid twice.
  explicit SigningKeys(const std::string& jwks);
  ~SigningKeys();
  SigningKeys(SigningKeys&&) noexcept;
  SigningKeys& operator=(SigningKeys&&) noexcept;

  // Checks a stored certificate offline: signed by the key its kid names,
  // issued by seatd, not expired at now_unix (default: now). Throws Error
  // kBadCertificate (reason) with what is wrong.
  Claims verify(const std::string& certificate, int64_t now_unix = 0) const;

  // The checks of an answer's certificate (internal to the client; public
  // for tests): verify, and it repeats nonce, names lease_id, license_id,
  // grant_id (when not empty), the holder, borrowed, exp = deadline.
  struct Expect {
    std::string nonce, lease_id, license_id, grant_id;
    std::string license_key, fingerprint, user, hostname, feature, version;
    bool borrowed = false;
    double deadline_unix = 0;  // 0: none told
    double now_unix = 0;
  };
  Claims check(const std::string& certificate, const Expect& expect) const;

 private:
  struct Impl;
  Claims verified(const std::string& certificate) const;
  std::unique_ptr<Impl> impl_;
};

// SHA-256 of a license key, lowercase hex (the license_key_sha256 claim).
std::string license_key_hash(const std::string& license_key);
// Dotted versions compared as seatd does (1.9 < 1.10, 3 == 3.0): -1, 0, 1.
int compare_versions(const std::string& a, const std::string& b);
// SigningKeys(jwks).verify(certificate, now_unix).
Claims verify_offline(const std::string& certificate, const std::string& jwks, int64_t now_unix = 0);

}  // namespace seatd
