// Client: take a seat, keep it alive, give it back, queue for one; as
// client/client.go and client/wait.go.
import { randomBytes } from "node:crypto";
import { hostname, userInfo } from "node:os";
import { Code, SeatsExhaustedError, StreamClosed, codeOf, retryable, seatdError, type SeatdError } from "./errors.js";
import { SeatService, type AcquireSeatRequest, type AcquireSeatResponse, type WaitForSeatResponse } from "./gen/seatd/v1/seat_service_pb.js";
import { Keeper, Lease, stateOf } from "./lease.js";
import { Conn, type CallOptions, type ConnectionOptions } from "./rpc.js";
import { backoff, defaultTiming, sleep, type Timing } from "./timing.js";

/** Log receives reconnects, fallbacks and losses. */
export type Log = (level: "debug" | "info" | "warn", message: string, fields: Record<string, unknown>) => void;

export interface ClientOptions extends ConnectionOptions {
  /** Keep every lease alive in the background until released or lost. Default true. */
  autoHeartbeat?: boolean;
  /** Acquire again, with the same options, a lease that expired (e.g. the
   * machine slept past its deadline) instead of reporting it lost. Default false. */
  reacquireOnExpiry?: boolean;
  /** Receives reconnects, fallbacks and losses. Default: discarded. */
  log?: Log;
  /** @internal shrunk delays and a movable clock, for tests. */
  timing?: Partial<Timing>;
}

/** Who asks for a seat. */
export interface AcquireOptions {
  licenseKey: string;
  /** Identifies the client; default hostname/user/pid. */
  fingerprint?: string;
  user?: string;
  hostname?: string;
  metadata?: Record<string, string>;
  /** Retrying with the same key returns the same lease. Default: a new key
   * per acquisition, reused by every retry of it. */
  idempotencyKey?: string;
}

export interface WaitOptions {
  /** Hears the queue position (1 is next) and length on joining and on every change. */
  onPosition?: (position: number, queueLength: number) => void;
  /** Stop waiting. */
  signal?: AbortSignal;
}

function defaultFingerprint(): string {
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (some containers)
  }
  return `${hostname()}/${user}/${process.pid}`;
}

/** Client talks to one seatd (or a set of them behind one name). */
export class Client implements AsyncDisposable {
  /** @internal */ readonly conn: Conn;
  /** @internal */ readonly timing: Timing;
  /** @internal */ readonly log: Log;
  /** @internal */ readonly options: ClientOptions;
  readonly #leases = new Set<Lease>();
  #closed = false;

  /** address is host:port (or any grpc-js target, e.g. `ipv4:a:1,b:2`). */
  constructor(address: string, options: ClientOptions = {}) {
    this.options = options;
    this.conn = new Conn(address, options);
    this.timing = { ...defaultTiming, ...options.timing };
    this.log = options.log ?? (() => {});
  }

  /** Takes a seat. Throws SeatsExhaustedError when none is free. With
   * autoHeartbeat the lease keeps itself alive until released, the client
   * closed, or lost (lease.signal). */
  async lease(o: AcquireOptions, call: CallOptions = {}): Promise<Lease> {
    o = this.named(o);
    const sent = this.timing.now();
    const resp = await this.conn.unary(SeatService.method.acquireSeat, this.acquireRequest(o), { timeoutMs: this.timing.callTimeoutMs, ...call });
    return this.hold(o, resp, sent);
  }

  /** acquire is lease under the Go client's name. */
  acquire(o: AcquireOptions, call?: CallOptions): Promise<Lease> { return this.lease(o, call); }

  /** Queues for a seat (FIFO per license) and returns it once granted, kept
   * alive like lease()'s. When the stream breaks (the server restarts) it
   * joins again with its queue ticket and keeps its place while the server
   * holds it. Against a server without the queue it polls with backoff. */
  async waitForSeat(o: AcquireOptions, w: WaitOptions = {}): Promise<Lease> {
    o = this.named(o); // every stream of this wait is one acquisition
    const report = w.onPosition ?? (() => {});
    let ticket = "";
    for (let failures = 0; ;) {
      const [lease, heard, err] = await this.#waitOnce(o, ticket, (t) => (ticket = t), report, w.signal);
      if (lease) {
        // The server holds a waiter's grant only until its first heartbeat
        // (--wait-hold): confirm it now.
        try {
          await lease.beatOnce({ signal: w.signal });
          return lease;
        } catch (e) {
          if (!(e instanceof SeatsExhaustedError) && (e as SeatdError).reason?.startsWith("LEASE_")) {
            await lease.release().catch(() => {});
            ticket = ""; // the grant used up the place: queue again
            continue;
          }
          return lease; // the keeper goes on trying
        }
      }
      if (w.signal?.aborted) throw w.signal.reason;
      if (codeOf(err) === Code.UNIMPLEMENTED) return this.#pollForSeat(o, report, w.signal);
      if (!retryable(err)) throw err;
      if (heard) failures = 0;
      failures++;
      if (!(await sleep(backoff(this.timing, failures, this.timing.backoffMaxMs), w.signal))) throw w.signal?.reason;
    }
  }

  /** One WaitForSeat stream, resuming ticket's place. */
  #waitOnce(o: AcquireOptions, ticket: string, setTicket: (t: string) => void, report: (p: number, n: number) => void, signal?: AbortSignal): Promise<[Lease | undefined, boolean, unknown]> {
    return new Promise((resolve) => {
      let heard = false;
      let ended = false;
      const call = this.conn.serverStream(SeatService.method.waitForSeat, { ...this.acquireRequest(o), queueTicket: ticket });
      const end = (r: [Lease | undefined, boolean, unknown]) => {
        if (ended) return;
        ended = true;
        signal?.removeEventListener("abort", onAbort);
        call.cancel();
        resolve(r);
      };
      const onAbort = () => end([undefined, heard, signal?.reason]);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (signal?.aborted) onAbort();
      call.on("data", (r: WaitForSeatResponse) => {
        heard = true;
        if (r.event.case === "granted") {
          // The grant was made a one-way trip ago: against a TTL, nothing.
          end([this.hold(o, r.event.value, this.timing.now()), true, undefined]);
        } else if (r.event.case === "position") {
          setTicket(r.event.value.ticket);
          report(r.event.value.position, r.event.value.queueLength);
        }
      });
      call.on("error", (err) => end([undefined, heard, seatdError(err)]));
      call.on("status", (s) => {
        if (s.code === Code.OK) end([undefined, heard, new StreamClosed("stream closed by seatd")]);
      });
    });
  }

  /** Stands in for the queue: acquire, back off while no seat is free. */
  async #pollForSeat(o: AcquireOptions, report: (p: number, n: number) => void, signal?: AbortSignal): Promise<Lease> {
    for (let n = 1; ; n++) {
      try {
        return await this.lease(o, { signal });
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if (err instanceof SeatsExhaustedError) report(0, 0);
        else if (!retryable(err)) throw err;
        if (!(await sleep(Math.max(backoff(this.timing, n, this.timing.backoffMaxMs), (err as SeatdError).retryDelayMs ?? 0), signal))) throw signal?.reason;
      }
    }
  }

  /** Stops the background heartbeats of every lease and closes the
   * connection. It does not release the seats: release them first (await
   * using does), or they stay taken until their deadline. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#leases].map((l) => l.keeper?.stop()));
    this.conn.close();
  }

  [Symbol.asyncDispose](): Promise<void> { return this.close(); }

  /** named gives o an idempotency key naming this one acquisition, which
   * every retry of it sends: a retry after a lost reply gets the seat the
   * first try took, never a second one. */
  private named(o: AcquireOptions): AcquireOptions {
    return { ...o, metadata: { ...o.metadata }, fingerprint: o.fingerprint || defaultFingerprint(), idempotencyKey: o.idempotencyKey || `acq_${randomBytes(16).toString("base64url")}` };
  }

  /** @internal */
  acquireRequest(o: AcquireOptions): Omit<AcquireSeatRequest, "$typeName" | "$unknown"> {
    return { licenseKey: o.licenseKey, fingerprint: o.fingerprint ?? "", user: o.user ?? "", hostname: o.hostname ?? "", metadata: o.metadata ?? {}, idempotencyKey: o.idempotencyKey ?? "" };
  }

  /** hold wraps a granted seat in a Lease and starts keeping it alive. */
  private hold(o: AcquireOptions, resp: AcquireSeatResponse, sent: number): Lease {
    const l = new Lease(this, o, stateOf(resp, sent));
    if ((this.options.autoHeartbeat ?? true) && !this.#closed) {
      l.keeper = new Keeper(this, l);
      this.#leases.add(l);
      void l.keeper.done.then(() => this.#leases.delete(l));
    }
    return l;
  }
}
