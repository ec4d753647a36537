// seatd::Client: acquires seats that keep themselves alive.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "seatd/lease.hpp"

namespace seatd {

namespace detail {
struct Conn;
}

// Clock and delays of the background work; tests shrink them.
struct Timing {
  std::chrono::milliseconds clock_check{1000};  // how often a waiting keeper looks at the wall clock
  std::chrono::milliseconds backoff_base{250}, backoff_max{10000};
  std::chrono::milliseconds reconnect_jitter{1000};  // spread of reconnects after RECONNECT
  std::chrono::milliseconds min_interval{1000};
  std::chrono::milliseconds last_chance{5000};  // bound of the one heartbeat past the deadline
  std::chrono::milliseconds call_timeout{10000};
  int stream_failures = 3;       // failed streams in a row before unary heartbeats ...
  int unary_before_stream = 10;  // ... for this many beats
  int acquire_attempts = 5;      // tries of one acquisition (one idempotency key)
};

struct ClientOptions {
  // "host:port", or "ipv4:10.0.0.1:443,10.0.0.2:443" for several instances
  // (balanced round robin, so that a stopping one is skipped).
  std::string address;
  // nullptr: plaintext. grpc::SslCredentials(...) for TLS.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // A channel to use instead of address (its service config is the caller's).
  std::shared_ptr<grpc::Channel> channel;
  // The tenant's JWKS, embedded in the product. With it every answer that
  // grants or extends a seat must carry a valid lease certificate (signed
  // by a key of the set, our nonce, this lease, our own license key and
  // identity, exp = the deadline told); one that does not is a lost lease
  // (kBadCertificate) and the seat is given back.
  std::string signing_keys;
  bool auto_heartbeat = true;
  // Acquire again (a new lease) when the lease expired, e.g. after the
  // machine slept past its deadline; the lost callback fires only if that fails.
  bool reacquire_on_expiry = false;
  // false: unary heartbeats only (a proxy that passes no bidirectional streams).
  bool heartbeat_stream = true;
  Timing timing;
};

struct AcquireOptions {
  std::string license_key;
  std::string fingerprint;  // machine_fingerprint(app) is a stable one
  std::string user, hostname;
  std::map<std::string, std::string> metadata;
  // A seat of a feature grant (a module of the product) at this version
  // (dotted numbers) instead of the license's base pool.
  std::string feature, version;
  // One per logical acquisition, reused by every retry (made when empty).
  std::string idempotency_key;
  std::chrono::milliseconds timeout{0};  // 0: the timing's call timeout x 3
  LostCallback on_lost;
};

// position 1 is next; (0, 0) while polling a seatd without the queue.
using PositionCallback = std::function<void(int position, int queue_length)>;

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Takes a seat, or throws Error (no_seat(): SEATS_EXHAUSTED or a site
  // policy's cap; not_allowed(); FEATURE_NOT_LICENSED, ...). Every try of
  // one acquisition sends the same idempotency key, so a retry after a lost
  // reply gets the seat the first try took, never a second one.
  Lease acquire(const AcquireOptions& options);
  // Borrows a seat for offline use for duration: no heartbeats; keep
  // lease.certificate() with the product, verify_offline checks it.
  Lease borrow(const AcquireOptions& options, std::chrono::seconds duration);
  // Queues for a seat (FIFO) and returns it once granted; a dropped stream
  // joins again with its ticket. timeout 0: no limit; throws Error
  // kWaitTimeout when it passes first.
  Lease wait_for_seat(const AcquireOptions& options, PositionCallback on_position = {},
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Gives back a seat known by its id and token (after a restart).
  void release_seat(const std::string& lease_id, const std::string& lease_token);
  // The tenant's JWKS (JSON) from GetSigningKeys, to embed at build time.
  std::string fetch_signing_keys(const std::string& tenant_id = "");

  std::shared_ptr<grpc::Channel> channel() const;
  // The retry policy (client/service_config.json of the repository).
  static const char* service_config();

 private:
  std::shared_ptr<detail::Conn> c_;
};

}  // namespace seatd
