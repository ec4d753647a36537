// The keeper: one thread per lease that heartbeats it until stopped or the
// lease is lost. It heartbeats over HeartbeatStream at the server's
// interval, falls back to unary heartbeats when streams keep failing (or
// the server has none), reconnects with backoff (at once, with jitter,
// after a RECONNECT signal), notices a deadline passed while the machine
// slept (one last heartbeat, then the lost callback), and acquires again
// after an expiry when asked to. The Python client's _Keeper, in C++.
#include <deque>
#include <random>

#include "internal.hpp"

namespace seatd::detail {

namespace {

using steady = std::chrono::steady_clock;

enum class Kind { Ok, Lost, Deadline, Reconnect, TryStream, Stopped, Fail };

struct Outcome {
  Kind kind;
  bool answered;
  std::optional<Error> err;
  Outcome(Kind k, bool a = false, std::optional<Error> e = std::nullopt) : kind(k), answered(a), err(std::move(e)) {}
};

enum class Mode { Stream, Unary, OnlyUnary };

steady::duration dur(double s) {
  return std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(std::max(s, 0.0)));
}

double jitter(double limit) {
  thread_local std::mt19937_64 g{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, limit)(g);
}

class Keeper {
 public:
  explicit Keeper(LeaseState& l) : l_(l), t_(l.c->opts.timing) {}

  void run() {
    Mode mode = l_.c->opts.heartbeat_stream ? Mode::Stream : Mode::OnlyUnary;
    int failures = 0;
    double delay = l_.ping_every();  // just acquired: no beat needed yet
    for (;;) {
      Outcome o{Kind::Ok};
      switch (wait(delay)) {
        case Waited::Stopped:
          return;
        case Waited::Deadline:
          o = Outcome{Kind::Deadline};
          break;
        case Waited::Done:
          o = session(mode);
      }
      if (o.kind == Kind::Deadline) o = last_chance();
      if (stopped() || o.kind == Kind::Stopped) return;
      switch (o.kind) {
        case Kind::Ok:
          delay = l_.ping_every();
          break;
        case Kind::Lost:
          if (!recover(*o.err)) return;
          failures = 0;
          delay = l_.ping_every();
          break;
        case Kind::TryStream:
          mode = Mode::Stream, delay = 0;
          break;
        default:
          if (o.kind == Kind::Reconnect && o.answered) {  // seatd is going away: move on
            delay = jitter(seconds(t_.reconnect_jitter));
            break;
          }
          if (mode == Mode::Stream && o.err && o.err->code() == grpc::StatusCode::UNIMPLEMENTED) {
            mode = Mode::OnlyUnary, delay = 0;  // a seatd (or proxy) without heartbeat streams
            break;
          }
          failures = o.answered ? 1 : failures + 1;
          if (mode == Mode::Stream && failures >= t_.stream_failures) mode = Mode::Unary;
          delay = backoff(t_, failures, std::min(seconds(t_.backoff_max), l_.ping_every()));
      }
    }
  }

 private:
  LeaseState& l_;
  const Timing& t_;

  enum class Waited { Done, Stopped, Deadline };

  bool stopped() {
    std::lock_guard<std::mutex> lk(l_.stop_mu);
    return l_.stopping;
  }

  // Sleeps d seconds, but returns Deadline as soon as the wall clock passes
  // the deadline (after the machine slept, timers run late).
  Waited wait(double d) {
    auto end = steady::now() + dur(d);
    for (;;) {
      if (l_.until_deadline() <= 0) return Waited::Deadline;
      auto left = end - steady::now();
      if (left <= steady::duration::zero()) return Waited::Done;
      std::unique_lock<std::mutex> lk(l_.stop_mu);
      if (l_.stop_cv.wait_for(lk, std::min<steady::duration>(left, t_.clock_check), [&] { return l_.stopping; }))
        return Waited::Stopped;
    }
  }

  Outcome session(Mode mode) {
    if (mode == Mode::Stream) return stream();
    return unary(mode == Mode::Unary ? t_.unary_before_stream : 0);
  }

  // One heartbeat once the deadline passed: seatd decides.
  Outcome last_chance() {
    try {
      l_.heartbeat_once(seconds(t_.last_chance), true);
      return Outcome{Kind::Ok};
    } catch (const Error& e) {
      if (e.lease_lost()) return Outcome{Kind::Lost, false, e};
      return Outcome{Kind::Lost, false,
                     Error(grpc::StatusCode::FAILED_PRECONDITION, kLeaseExpired,
                           "lease deadline passed without a successful heartbeat (did the machine sleep?); "
                           "last heartbeat: " + e.message())};
    }
  }

  // Acquires again after an expiry if allowed; else reports the loss.
  bool recover(const Error& cause) {
    if (!l_.c->opts.reacquire_on_expiry || (cause.reason() != kLeaseExpired && cause.reason() != kLeaseNotFound)) {
      l_.mark_lost(cause);
      if (cause.reason() == kBadCertificate) {
        // We stop heartbeating a lease we do not trust; if seatd is real
        // (a key newer than our JWKS, say), free the seat now.
        std::string id, token;
        {
          std::lock_guard<std::mutex> lk(l_.mu);
          id = l_.id, token = l_.token;
        }
        l_.c->give_back(id, token);
      }
      return false;
    }
    double give_up = now() + std::max(l_.ttl, seconds(t_.call_timeout));
    v1::AcquireSeatRequest req = l_.opts;
    req.set_idempotency_key(new_idempotency_key());
    req.set_nonce(l_.c->nonce());
    for (int n = 1;; n++) {
      double sent = now();
      grpc::ClientContext ctx;
      {
        std::lock_guard<std::mutex> lk(l_.stop_mu);
        if (l_.stopping) return false;
        l_.call = &ctx;
      }
      ctx.set_deadline(std::chrono::system_clock::now() + t_.call_timeout);
      v1::AcquireSeatResponse resp;
      grpc::Status st = l_.c->seats->AcquireSeat(&ctx, req, &resp);
      {
        std::lock_guard<std::mutex> lk(l_.stop_mu);
        l_.call = nullptr;
      }
      if (stopped()) {
        if (st.ok()) l_.c->give_back(resp.lease().id(), resp.lease_token());
        return false;
      }
      if (!st.ok()) {
        Error e = from_status(st);
        if (!e.retryable() || now() > give_up) {
          l_.mark_lost(e);
          return false;
        }
        if (wait(std::max(backoff(t_, n, seconds(t_.backoff_max)), seconds(e.retry_delay()))) == Waited::Stopped)
          return false;
        continue;
      }
      try {
        l_.c->check(resp, req, false);
      } catch (const Error& e) {  // not the seat asked for, or not seatd's
        l_.c->give_back(resp.lease().id(), resp.lease_token());
        l_.mark_lost(e);
        return false;
      }
      std::lock_guard<std::mutex> lk(l_.mu);
      l_.take(resp, sent);
      return true;
    }
  }

  Outcome unary(int beats) {
    bool answered = false;
    for (int n = 0;; n++) {
      if (n > 0) {
        Waited w = wait(l_.ping_every());
        if (w == Waited::Stopped) return Outcome{Kind::Stopped, answered};
        if (w == Waited::Deadline) return Outcome{Kind::Deadline, answered};
      }
      if (beats > 0 && n == beats) return Outcome{Kind::TryStream, answered};
      double left = l_.until_deadline();
      if (left <= 0) return Outcome{Kind::Deadline, answered};
      try {
        l_.heartbeat_once(std::min(left, l_.ping_every()), true);
      } catch (const Error& e) {
        return Outcome{e.lease_lost() ? Kind::Lost : Kind::Fail, answered, e};
      }
      answered = true;
    }
  }

  // One HeartbeatStream until it ends: ping at once (naming the lease),
  // then every interval after each answer. A reader thread hands the
  // answers over; this thread writes.
  Outcome stream() {
    std::string lease_id, token;
    {
      std::lock_guard<std::mutex> lk(l_.mu);
      lease_id = l_.id, token = l_.token;
    }
    grpc::ClientContext ctx;
    {
      std::lock_guard<std::mutex> lk(l_.stop_mu);
      if (l_.stopping) return Outcome{Kind::Stopped};
      l_.call = &ctx;  // stop_keeper cancels it
    }
    auto rw = l_.c->hb->HeartbeatStream(&ctx);
    std::mutex m;
    std::condition_variable cv;
    std::deque<v1::HeartbeatStreamResponse> inbox;
    bool ended = false;
    std::thread reader([&] {
      v1::HeartbeatStreamResponse r;
      while (rw->Read(&r)) {
        std::lock_guard<std::mutex> lk(m);
        inbox.push_back(r);
        cv.notify_all();
      }
      std::lock_guard<std::mutex> lk(m);
      ended = true;
      cv.notify_all();
    });

    std::string nonce = l_.c->nonce();
    v1::HeartbeatStreamRequest first;
    first.set_lease_id(lease_id);
    first.set_lease_token(token);
    first.set_nonce(nonce);
    rw->Write(first);  // a failed write shows as the stream's end
    bool answered = false, waiting = true;
    auto signal = v1::HEARTBEAT_SIGNAL_UNSPECIFIED;
    double sent = now();
    auto due = steady::now() + dur(l_.ping_every());
    std::optional<Outcome> out;
    bool stream_ended = false;
    while (!out) {
      if (stopped()) {
        out = Outcome{Kind::Stopped, answered};
        break;
      }
      if (l_.until_deadline() <= 0) {
        out = Outcome{Kind::Deadline, answered};
        break;
      }
      std::optional<v1::HeartbeatStreamResponse> resp;
      {
        std::unique_lock<std::mutex> lk(m);
        cv.wait_for(lk, std::max<steady::duration>(std::min<steady::duration>(due - steady::now(), t_.clock_check),
                                                   steady::duration::zero()),
                    [&] { return !inbox.empty() || ended; });
        if (!inbox.empty()) {
          resp = std::move(inbox.front());
          inbox.pop_front();
        } else if (ended) {
          stream_ended = true;
          break;
        }
      }
      if (!resp) {
        if (steady::now() < due) continue;
        if (waiting) {
          out = Outcome{Kind::Fail, answered,
                        Error(grpc::StatusCode::DEADLINE_EXCEEDED, "", "heartbeat stream: no answer in time")};
          break;
        }
        sent = now(), waiting = true, nonce = l_.c->nonce();
        v1::HeartbeatStreamRequest ping;
        ping.set_nonce(nonce);
        rw->Write(ping);
        due = steady::now() + dur(l_.ping_every());  // now the answer's timeout
        continue;
      }
      if (resp->signal() == v1::HEARTBEAT_SIGNAL_RECONNECT) {
        out = Outcome{Kind::Reconnect, answered};
        break;
      }
      if (resp->signal() == v1::HEARTBEAT_SIGNAL_REVOKED || resp->signal() == v1::HEARTBEAT_SIGNAL_EXPIRED) {
        signal = resp->signal();  // the status that ends the stream follows
        continue;
      }
      try {
        // One ping at a time: an answer to none repeats no nonce of ours.
        l_.check_cert(waiting ? nonce : "", resp->lease_certificate(), resp->expires_at());
      } catch (const Error& e) {
        out = Outcome{Kind::Lost, answered, e};
        break;
      }
      l_.extend(lease_id, sent, resp->expires_at(), seconds_of(resp->heartbeat_interval()), 0,
                resp->lease_certificate());
      answered = true, waiting = false;
      due = steady::now() + dur(l_.ping_every());
    }
    if (!stream_ended) ctx.TryCancel();
    reader.join();
    grpc::Status st = rw->Finish();
    {
      std::lock_guard<std::mutex> lk(l_.stop_mu);
      l_.call = nullptr;
    }
    if (out) return *out;
    Error err = st.ok() ? Error(grpc::StatusCode::UNAVAILABLE, "", "stream closed by seatd") : from_status(st);
    // The status the stream ended with, or the signal sent before it when
    // the status says less (a proxy may rewrite it).
    if (err.lease_lost()) return Outcome{Kind::Lost, answered, err};
    if (signal == v1::HEARTBEAT_SIGNAL_REVOKED)
      return Outcome{Kind::Lost, answered, Error(grpc::StatusCode::FAILED_PRECONDITION, kLeaseRevoked, "lease was revoked")};
    if (signal == v1::HEARTBEAT_SIGNAL_EXPIRED)
      return Outcome{Kind::Lost, answered,
                     Error(grpc::StatusCode::FAILED_PRECONDITION, kLeaseExpired, "lease expired; acquire a new seat")};
    return Outcome{Kind::Fail, answered, err};
  }
};

}  // namespace

void LeaseState::start_keeper() {
  keeper = std::thread([this] {
    try {
      Keeper(*this).run();
    } catch (const std::exception&) {
      // Never die silently: the lease would expire unnoticed.
      mark_lost(Error(grpc::StatusCode::INTERNAL, "", "seatd keeper crashed"));
    }
  });
}

void LeaseState::stop_keeper() {
  {
    std::lock_guard<std::mutex> lk(stop_mu);
    stopping = true;
    if (call != nullptr) call->TryCancel();
  }
  stop_cv.notify_all();
  if (!keeper.joinable()) return;
  if (keeper.get_id() == std::this_thread::get_id())
    keeper.detach();  // released from its own lost callback
  else
    keeper.join();
}

}  // namespace seatd::detail
