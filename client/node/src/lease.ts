// A held seat and the keeper that heartbeats it in the background: the
// HeartbeatStream, unary heartbeats when streams keep failing or the server
// has none, reconnects with backoff, and the lost signal. It follows
// client/keeper.go, client/stream.go and client/unary.go.
import { timestampMs, durationMs, type Timestamp, type Duration } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ClientDuplexStream } from "@grpc/grpc-js";
import { Code, LeaseLostError, SeatdError, StreamClosed, codeOf, localError, retryable, seatdError } from "./errors.js";
import { BadCertificateError, REASON_BAD_CERTIFICATE } from "./certificate.js";
import type { AcquireSeatResponse } from "./gen/seatd/v1/seat_service_pb.js";
import { SeatService } from "./gen/seatd/v1/seat_service_pb.js";
import { HeartbeatService, HeartbeatSignal, HeartbeatStreamRequestSchema, type HeartbeatStreamResponse } from "./gen/seatd/v1/heartbeat_service_pb.js";
import type { Lease as LeaseMessage } from "./gen/seatd/v1/resources_pb.js";
import { backoff, sleep } from "./timing.js";
import type { Client, AcquireOptions, Log } from "./client.js";

/** What the server told us about the lease. */
interface LeaseState {
  id: string;
  token: string;
  licenseId: string;
  intervalMs: number;
  ttlMs: number; // 0 if unknown
  expiresAtMs: number; // the deadline by the server's clock
  deadlineMs: number; // the deadline by our clock: sent + TTL
  seatsInUse: number;
  seatLimit: number;
  certificate: string; // the latest; "" from a server that sends none
  licenseFile: string; // the license file (JWS) it chained to, with vendorKeys
  fingerprint: string; // the lease's, which its certificates name
  borrowed: boolean;
  feature: string; // asked for; "" for the base pool
  version: string;
  grantId: string; // the grant the seat was taken from
  grantExpiresAtMs: number; // its expiry, as the answer that granted the seat told it; 0 if none
}

const ms = (d?: Duration) => (d ? durationMs(d) : 0);
const at = (t?: Timestamp) => (t ? timestampMs(t) : 0);

function ttlOf(l?: LeaseMessage): number {
  if (!l?.expiresAt) return 0;
  const from = l.lastHeartbeatAt ?? l.acquiredAt;
  return from ? Math.max(timestampMs(l.expiresAt) - timestampMs(from), 0) : 0;
}

/** stateOf reads a granted seat; fingerprint is the one we sent (the lease's
 * own when seatd says so: a license that shares leases between them). */
export function stateOf(resp: AcquireSeatResponse, sentMs: number, fingerprint = "", borrowed = false): LeaseState {
  const ttlMs = ttlOf(resp.lease);
  const expiresAtMs = at(resp.lease?.expiresAt);
  return {
    id: resp.lease?.id ?? "", token: resp.leaseToken, licenseId: resp.lease?.licenseId ?? "",
    intervalMs: ms(resp.heartbeatInterval), ttlMs, expiresAtMs,
    deadlineMs: ttlMs > 0 ? sentMs + ttlMs : expiresAtMs,
    seatsInUse: resp.seatsInUse, seatLimit: resp.seatLimit,
    certificate: resp.leaseCertificate, licenseFile: "", fingerprint: resp.lease?.fingerprint || fingerprint, borrowed,
    feature: resp.lease?.feature ?? "", version: resp.lease?.version ?? "", grantId: resp.lease?.grantId ?? "",
    grantExpiresAtMs: at(resp.grant?.expiresAt),
  };
}

const LOST_REASONS = new Set(["LEASE_EXPIRED", "LEASE_REVOKED", "LEASE_RELEASED", "LEASE_NOT_FOUND", "LEASE_TOKEN_INVALID", REASON_BAD_CERTIFICATE]);
const isLost = (err: unknown): err is LeaseLostError => err instanceof SeatdError && LOST_REASONS.has(err.reason);
const expired = (err: unknown) => err instanceof SeatdError && (err.reason === "LEASE_EXPIRED" || err.reason === "LEASE_NOT_FOUND");

/** A seat held by this process. Use it with `await using`, or call release(). */
export class Lease implements AsyncDisposable {
  #st: LeaseState;
  readonly #client: Client;
  readonly #opts: AcquireOptions; // with its idempotency key, to acquire again
  readonly #lost = new AbortController();
  #released = false;
  #releasing?: Promise<void>;
  /** @internal */ keeper?: Keeper;

  /** @internal */
  constructor(client: Client, opts: AcquireOptions, st: LeaseState) {
    this.#client = client;
    this.#opts = opts;
    this.#st = st;
  }

  /** The lease id. It changes when reacquireOnExpiry acquires again. */
  get id(): string { return this.#st.id; }
  /** The secret that heartbeats and releases the lease. */
  get token(): string { return this.#st.token; }
  get licenseId(): string { return this.#st.licenseId; }
  /** How often the server wants a heartbeat, in ms. */
  get heartbeatIntervalMs(): number { return this.#st.intervalMs; }
  /** Live leases on the license when this one was granted, this one included. */
  get seatsInUse(): number { return this.#st.seatsInUse; }
  /** The license's seat limit (seats + overdraft). */
  get seatLimit(): number { return this.#st.seatLimit; }
  /** The current deadline, by the server's clock. */
  get expiresAt(): Date { return new Date(this.#st.expiresAtMs); }
  /** The latest lease certificate seatd sent (JWS compact), verified when
   * the client has signingKeys; "" from a server that sends none, and
   * without signingKeys (the client then asks for none) but for a borrowed
   * lease. For a borrowed lease it is what to store: verifyOffline checks it
   * later. */
  get certificate(): string { return this.#st.certificate; }
  /** With vendorKeys, the license file (its JWS) that certificate was
   * verified through: store it with a borrowed lease's certificate, for
   * verifyChainOffline. "" without vendorKeys. */
  get licenseFile(): string { return this.#st.licenseFile; }
  /** Whether the lease was borrowed (client.borrow). */
  get borrowed(): boolean { return this.#st.borrowed; }
  /** The feature the lease holds a seat of (AcquireOptions.feature); "" for
   * a seat of the license's base pool. */
  get feature(): string { return this.#st.feature; }
  /** The version asked for (AcquireOptions.version), as given. */
  get version(): string { return this.#st.version; }
  /** The feature grant the seat was taken from; "" for a base seat.
   * seatsInUse and seatLimit are then the grant's. */
  get grantId(): string { return this.#st.grantId; }
  /** The grant's expiry, as the answer that granted the seat told it;
   * undefined when it has none, and for a base seat. */
  get grantExpiresAt(): Date | undefined { return this.#st.grantExpiresAtMs ? new Date(this.#st.grantExpiresAtMs) : undefined; }
  /** Aborts once the lease is gone for good (expired, revoked, released or
   * taken over elsewhere); its reason is the LeaseLostError. Our own
   * release() does not abort it. */
  get signal(): AbortSignal { return this.#lost.signal; }
  /** Whether the lease was lost. */
  get lost(): boolean { return this.#lost.signal.aborted; }
  /** Why the lease was lost (a LeaseLostError), or undefined. */
  get error(): LeaseLostError | undefined { return this.#lost.signal.aborted ? (this.#lost.signal.reason as LeaseLostError) : undefined; }
  /** The ErrorInfo reason of the loss, e.g. LEASE_REVOKED, or undefined. */
  get reason(): string | undefined { return this.error?.reason; }

  /** Moves the deadline ahead now. With autoHeartbeat there is no need to call it. */
  async heartbeat(o: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
    try {
      await this.beatOnce(o);
    } catch (err) {
      if (isLost(err) && !this.keeper) this.markLost(err); // nobody else will find out
      throw err;
    }
  }

  /** @internal one unary heartbeat that records the new deadline. */
  async beatOnce(o: { signal?: AbortSignal; timeoutMs?: number }): Promise<void> {
    const st = this.#st;
    const sent = this.#client.timing.now();
    const nonce = this.#client.nonce();
    const resp = await this.#client.conn.unary(HeartbeatService.method.heartbeat, { leaseId: st.id, leaseToken: st.token, nonce }, { timeoutMs: this.#client.timing.callTimeoutMs, ...o });
    await this.#client.ready(resp.leaseCertificate);
    const file = this.checkCertificate(st, nonce, resp.leaseCertificate, at(resp.expiresAt));
    this.extend(st.id, sent, at(resp.expiresAt), ms(resp.heartbeatInterval), ttlOf(resp.lease), resp.leaseCertificate, file);
  }

  /** @internal with signing keys or vendor keys, verifies the certificate
   * of an answer that extended lease st to expiresAtMs (client.ready
   * first) and returns the license file it chained to (vendor keys; else
   * ""); throws BadCertificateError. */
  checkCertificate(st: LeaseState, nonce: string, cert: string, expiresAtMs: number): string {
    if (!this.#client.signingKeys && !this.#client.chain) return "";
    return this.#client.checkCertificate(cert, {
      nonce, leaseId: st.id, licenseId: st.licenseId, holder: this.#opts, deadlineMs: expiresAtMs, borrowed: st.borrowed, grantId: st.grantId,
    });
  }

  /** Stops the background heartbeats and gives the seat back. Idempotent; a
   * lease already lost needs no release. */
  release(o: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
    this.#releasing ??= (async () => {
      await this.keeper?.stop();
      if (this.#released || this.lost) return;
      const st = this.#st;
      try {
        await this.#client.conn.unary(SeatService.method.releaseSeat, { leaseId: st.id, leaseToken: st.token }, { timeoutMs: this.#client.timing.callTimeoutMs, ...o });
      } catch (err) {
        if (!isLost(err)) throw err;
      }
      this.#released = true;
    })().catch((err) => {
      this.#releasing = undefined; // let a later call try again
      throw err;
    });
    return this.#releasing;
  }

  [Symbol.asyncDispose](): Promise<void> { return this.release(); }

  /** @internal */ get state(): LeaseState { return this.#st; }
  /** @internal */ get opts(): AcquireOptions { return this.#opts; }

  /** @internal records a successful heartbeat of lease id sent at sentMs. */
  extend(id: string, sentMs: number, expiresAtMs: number, intervalMs: number, ttlMs: number, cert = "", file = ""): void {
    const st = this.#st;
    if (id !== st.id) return;
    if (cert) [st.certificate, st.licenseFile] = [cert, file];
    if (ttlMs > 0) st.ttlMs = ttlMs;
    if (intervalMs > 0) st.intervalMs = intervalMs;
    st.expiresAtMs = Math.max(st.expiresAtMs, expiresAtMs);
    const d = st.ttlMs > 0 ? sentMs + st.ttlMs : expiresAtMs;
    st.deadlineMs = Math.max(st.deadlineMs, d);
  }

  /** @internal takes over a lease acquired again after this one expired. */
  swap(resp: AcquireSeatResponse, sentMs: number, file = ""): void { this.#st = { ...stateOf(resp, sentMs, this.#opts.fingerprint ?? ""), licenseFile: file }; }

  /** @internal reports the loss, once, unless we released the lease. */
  markLost(err: LeaseLostError): void {
    if (!this.lost && !this.#released) this.#lost.abort(err);
  }

  /** @internal the wall clock is past our deadline. */
  pastDeadline(): boolean { return this.#st.deadlineMs > 0 && this.#client.timing.now() >= this.#st.deadlineMs; }

  /** @internal the wait between heartbeats: the server's suggestion, kept
   * positive and at most half the TTL so that one lost beat is not fatal. */
  pingEvery(): number {
    const st = this.#st;
    let d = st.intervalMs;
    if (st.ttlMs > 0 && d <= 0) d = st.ttlMs / 6;
    else if (st.ttlMs > 0 && d > st.ttlMs / 2) d = st.ttlMs / 2;
    else if (d <= 0) d = 10_000;
    return Math.max(d, this.#client.timing.minIntervalMs);
  }
}

// How a session ended, besides a server error.
class Reconnect extends Error { override name = "Reconnect"; }
class NoAnswer extends Error { override name = "NoAnswer"; }
class DeadlinePassed extends Error { override name = "DeadlinePassed"; }
class TryStream extends Error { override name = "TryStream"; }
class Stopped extends Error { override name = "Stopped"; }

type Mode = "stream" | "unary" | "onlyUnary";

/** Keeper heartbeats one lease until stopped or the lease is lost. */
export class Keeper {
  readonly #stop = new AbortController();
  readonly done: Promise<void>;
  readonly #l: Lease;
  readonly #c: Client;
  readonly #log: Log;

  constructor(c: Client, l: Lease) {
    this.#c = c;
    this.#l = l;
    this.#log = c.log;
    this.done = this.#run().catch((err) => this.#log("warn", "lease keeper failed", { leaseId: l.id, err }));
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.done;
  }

  get #stopped() { return this.#stop.signal.aborted; }

  async #run(): Promise<void> {
    const t = this.#c.timing;
    let m: Mode = "stream";
    let failures = 0;
    let delay = this.#l.pingEvery(); // just acquired: no beat needed yet
    for (;;) {
      let answered = false;
      let err: unknown = await this.#wait(delay);
      if (err === undefined) {
        [answered, err] = await this.#session(m);
        if (answered) failures = 0;
      }
      if (err instanceof DeadlinePassed) err = await this.#lastChance();
      if (this.#stopped) return;
      if (err === undefined) {
        delay = this.#l.pingEvery();
      } else if (isLost(err)) {
        if (!(await this.#recover(err))) return;
        failures = 0;
        delay = this.#l.pingEvery();
      } else if (err instanceof Reconnect && answered) {
        // A rolling restart: move on at once, spread out.
        this.#log("debug", "seatd asked to reconnect", { leaseId: this.#l.id });
        delay = Math.random() * t.reconnectJitterMs;
      } else if (err instanceof TryStream) {
        m = "stream";
        delay = 0;
      } else if (m === "stream" && codeOf(err) === Code.UNIMPLEMENTED) {
        this.#log("info", "seatd has no heartbeat stream; using unary heartbeats", { leaseId: this.#l.id });
        m = "onlyUnary";
        delay = 0;
      } else {
        failures++;
        if (m === "stream" && failures >= t.streamFailures) {
          this.#log("warn", "heartbeat stream keeps failing; using unary heartbeats for a while", { leaseId: this.#l.id, err });
          m = "unary";
        } else {
          this.#log("debug", "heartbeat failed; retrying", { leaseId: this.#l.id, err, failures });
        }
        // Never wait longer than a normal beat: the deadline is what counts.
        delay = Math.max(backoff(t, failures, Math.min(t.backoffMaxMs, this.#l.pingEvery())), (err as SeatdError).retryDelayMs ?? 0);
      }
    }
  }

  #session(m: Mode): Promise<[boolean, unknown]> {
    if (m === "stream") return this.#stream();
    return this.#unary(m === "unary" ? this.#c.timing.unaryBeforeStream : 0);
  }

  /** #wait sleeps ms, but ends with DeadlinePassed as soon as the wall clock
   * passes the deadline (after a sleep of the machine, timers run late). */
  async #wait(ms: number): Promise<unknown> {
    const t = this.#c.timing;
    const until = performance.now() + ms;
    for (;;) {
      if (this.#l.pastDeadline()) return new DeadlinePassed();
      const left = until - performance.now();
      if (left <= 0) return undefined;
      if (!(await sleep(Math.min(left, t.clockCheckMs), this.#stop.signal))) return new Stopped();
    }
  }

  /** #lastChance tries one heartbeat once the deadline passed: the server
   * decides (clock skew, its revival window). Unreachable means expired. */
  async #lastChance(): Promise<unknown> {
    try {
      await this.#l.beatOnce({ timeoutMs: this.#c.timing.lastChanceMs, signal: this.#stop.signal });
      return undefined;
    } catch (err) {
      if (isLost(err) || this.#stopped) return err;
      return localError(Code.FAILED_PRECONDITION, "LEASE_EXPIRED", "lease deadline passed without a successful heartbeat (did the machine sleep?)", err);
    }
  }

  /** #recover acquires again when allowed and the lease expired, else reports
   * the loss. It tells whether the keeper goes on. */
  async #recover(cause: LeaseLostError): Promise<boolean> {
    const l = this.#l;
    if (!this.#c.options.reacquireOnExpiry || !expired(cause)) {
      this.#log("warn", "lease lost", { leaseId: l.id, reason: cause.reason });
      l.markLost(cause);
      // We stop heartbeating a lease we do not trust; if seatd is real (a key
      // newer than our JWKS, say), free the seat now.
      if (cause instanceof BadCertificateError) await this.#c.giveBack(l.id, l.token);
      return false;
    }
    this.#log("info", "lease expired; acquiring a seat again", { leaseId: l.id });
    const t = this.#c.timing;
    // Keep trying through an outage for up to one TTL: after a laptop wakes
    // up, its network often takes a while to come back.
    const giveUp = t.now() + Math.max(l.state.ttlMs, t.callTimeoutMs);
    const req = this.#c.acquireRequest(l.opts, this.#c.nonce()); // one acquisition (one key), however many tries
    for (let n = 1; ; n++) {
      const sent = t.now();
      try {
        const resp = await this.#c.conn.unary(SeatService.method.acquireSeat, req, { timeoutMs: t.callTimeoutMs, signal: this.#stop.signal });
        let file: string;
        try {
          await this.#c.ready(resp.leaseCertificate);
          file = this.#c.checkGrant(resp, req.nonce, l.opts, false);
        } catch (err) {
          await this.#c.giveBack(resp.lease?.id ?? "", resp.leaseToken);
          l.markLost(err as BadCertificateError);
          return false;
        }
        const old = l.id;
        l.swap(resp, sent, file);
        this.#log("info", "seat acquired again", { leaseId: l.id, expiredLeaseId: old });
        return true;
      } catch (err) {
        if (this.#stopped) return false;
        if (!retryable(err) || t.now() > giveUp) {
          this.#log("warn", "lease lost; acquiring again failed", { leaseId: l.id, err });
          l.markLost(localError(cause.code, cause.reason, `${cause.message}; acquiring again failed: ${(err as Error).message}`, err) as LeaseLostError);
          return false;
        }
        if (!(await sleep(Math.max(backoff(t, n, t.backoffMaxMs), (err as SeatdError).retryDelayMs ?? 0), this.#stop.signal))) return false;
      }
    }
  }

  /** #unary heartbeats with unary calls, at once and then every interval.
   * With beats > 0 it ends with TryStream after that many successes. */
  async #unary(beats: number): Promise<[boolean, unknown]> {
    let answered = false;
    for (let n = 0; ; n++) {
      if (n > 0) {
        const err = await this.#wait(this.#l.pingEvery());
        if (err) return [answered, err];
      }
      if (beats > 0 && n === beats) return [answered, new TryStream()];
      const left = this.#l.state.deadlineMs - this.#c.timing.now();
      if (left <= 0) return [answered, new DeadlinePassed()];
      try {
        await this.#l.beatOnce({ timeoutMs: Math.min(left, this.#l.pingEvery()), signal: this.#stop.signal });
      } catch (err) {
        return [answered, err];
      }
      answered = true;
    }
  }

  /** #stream keeps the lease alive over one HeartbeatStream until it ends: a
   * ping at once (naming the lease), then one every interval after each
   * answer. It tells whether the server answered at all. */
  #stream(): Promise<[boolean, unknown]> {
    const l = this.#l;
    const t = this.#c.timing;
    const st = l.state;
    return new Promise((resolve) => {
      let answered = false;
      let waiting = true; // for the answer to the ping sent at `sent`
      let signal = HeartbeatSignal.UNSPECIFIED;
      let sent = t.now();
      let nonce = this.#c.nonce(); // of the ping sent at `sent`
      let ended = false;
      const call: ClientDuplexStream<MessageInitShape<typeof HeartbeatStreamRequestSchema>, HeartbeatStreamResponse> = this.#c.conn.bidi(HeartbeatService.method.heartbeatStream);
      const end = (err: unknown) => {
        if (ended) return;
        ended = true;
        clearTimeout(timer);
        clearInterval(tick);
        this.#stop.signal.removeEventListener("abort", onStop);
        call.cancel();
        resolve([answered, err]);
      };
      const onStop = () => end(new Stopped());
      const send = (req: MessageInitShape<typeof HeartbeatStreamRequestSchema>) => {
        try {
          call.write(req);
        } catch (err) {
          end(seatdError(err));
        }
      };
      const ping = () => {
        if (waiting) return end(new NoAnswer());
        sent = t.now();
        nonce = this.#c.nonce();
        waiting = true;
        send({ nonce });
        timer = setTimeout(ping, l.pingEvery()); // now the answer timeout
      };
      call.on("data", (r: HeartbeatStreamResponse) => {
        switch (r.signal) {
          case HeartbeatSignal.RECONNECT:
            return end(new Reconnect());
          case HeartbeatSignal.REVOKED:
          case HeartbeatSignal.EXPIRED:
            signal = r.signal; // the status that ends the stream follows
            return;
        }
        const accept = () => {
          if (ended) return;
          let file: string;
          try {
            // One ping at a time: an answer to none repeats no nonce of ours.
            file = l.checkCertificate(st, waiting ? nonce : "", r.leaseCertificate, at(r.expiresAt));
          } catch (err) {
            return end(err);
          }
          l.extend(st.id, sent, at(r.expiresAt), ms(r.heartbeatInterval), 0, r.leaseCertificate, file);
          answered = true;
          waiting = false;
          clearTimeout(timer);
          timer = setTimeout(ping, l.pingEvery());
        };
        // With vendorKeys, a certificate of another serial (a renewal)
        // waits for the license file it names.
        const ready = this.#c.ready(r.leaseCertificate);
        if (!ready) return accept();
        void ready.then(accept, (err) => end(err));
      });
      call.on("error", (err) => end(streamEnd(seatdError(err), signal)));
      call.on("status", (s) => {
        if (s.code === Code.OK) end(streamEnd(new StreamClosed("stream closed by seatd"), signal));
      });
      this.#stop.signal.addEventListener("abort", onStop, { once: true });
      let timer = setTimeout(ping, l.pingEvery());
      const tick = setInterval(() => {
        if (l.pastDeadline()) end(new DeadlinePassed());
      }, t.clockCheckMs);
      send({ leaseId: st.id, leaseToken: st.token, nonce });
    });
  }
}

/** streamEnd is the error a stream ended with: its status, or the signal sent
 * before it when the status says less (a proxy may rewrite it). */
function streamEnd(err: unknown, signal: HeartbeatSignal): unknown {
  if (isLost(err)) return err;
  if (signal === HeartbeatSignal.REVOKED) return localError(Code.FAILED_PRECONDITION, "LEASE_REVOKED", "lease was revoked");
  if (signal === HeartbeatSignal.EXPIRED) return localError(Code.FAILED_PRECONDITION, "LEASE_EXPIRED", "lease expired; acquire a new seat");
  return err;
}

