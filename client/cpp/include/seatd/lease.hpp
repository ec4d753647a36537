// seatd::Lease: one seat held by this process. RAII: the destructor stops
// its heartbeats and gives the seat back.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "seatd/error.hpp"

namespace seatd { class Client; }

namespace seatd {

namespace detail {
struct LeaseState;
}

// Called once, on the lease's own keeper thread, when the lease is lost
// for good (expired, revoked, taken over elsewhere, a certificate that does
// not verify, or not acquired again): the Error says why (reason()). Our
// own release never calls it. Do not destroy the Lease from inside it.
using LostCallback = std::function<void(const Error&)>;

class Lease {
 public:
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  // release(), errors swallowed (a destructor does not throw).
  ~Lease();

  std::string id() const;
  std::string token() const;
  std::string license_id() const;
  std::string fingerprint() const;
  // What the acquisition asked for ("" for a base seat) and the grant it holds.
  std::string feature() const;
  std::string version() const;
  std::string grant_id() const;
  // The grant's expiry; nullopt for a base seat or a grant without one.
  std::optional<std::chrono::system_clock::time_point> grant_expires_at() const;
  // The deadline seatd last told.
  std::chrono::system_clock::time_point expires_at() const;
  std::chrono::milliseconds heartbeat_interval() const;
  std::chrono::milliseconds ttl() const;
  int seats_in_use() const;
  int seat_limit() const;
  bool borrowed() const;
  // The latest lease certificate (with signing keys; or a borrow's), else "".
  std::string certificate() const;

  // Whether the lease was lost, and why.
  bool lost() const;
  std::optional<Error> error() const;
  std::string reason() const;
  // Waits until the lease is lost or timeout passes; true when lost.
  bool wait_lost(std::chrono::milliseconds timeout) const;

  // One unary heartbeat now. Throws Error (lease_lost() when it is gone).
  void heartbeat();
  // Stops the heartbeats and gives the seat back. Idempotent; a lease
  // already lost needs no release. Throws Error if seatd cannot be told
  // (the seat then lapses at its deadline).
  void release();

  // Internal: made by Client.
  explicit Lease(std::shared_ptr<detail::LeaseState> s);

 private:
  friend class Client;
  std::shared_ptr<detail::LeaseState> s_;
};

}  // namespace seatd
