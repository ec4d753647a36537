// Client: take a seat, keep it alive, give it back, queue for one; as
// client/client.go and client/wait.go.
import { randomBytes } from "node:crypto";
import { hostname, userInfo } from "node:os";
import { create, toJson } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { BadCertificateError, SigningKeys, newNonce, type Expectation, type Jwks } from "./certificate.js";
import { FileChain, VendorKeys, type VendorKeyData } from "./licensefile.js";
import { Code, NoSeatError, SeatsExhaustedError, StreamClosed, codeOf, localError, retryable, seatdError, type SeatdError } from "./errors.js";
import { GetSigningKeysResponseSchema, SeatService, type AcquireSeatRequest, type AcquireSeatResponse, type WaitForSeatResponse } from "./gen/seatd/v1/seat_service_pb.js";
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
  /** The tenant's JWKS, embedded in the product. With it every answer that
   * grants or extends a seat must carry a valid lease certificate (signed by
   * a key of the set, our nonce, this lease, our own license key and
   * identity (checkHolder: never what an answer says), exp = the
   * deadline told); one that does not is a lost lease: lease() throws
   * BadCertificateError (and gives the seat back), a kept lease aborts its
   * signal with it. With it every request carries a fresh nonce, which asks
   * seatd for a certificate; without, only a borrow does, so seatd signs
   * nothing else for this client (a signature costs it about a third of its
   * heartbeat rate) and lease.certificate is "" but for a borrowed lease. */
  signingKeys?: Jwks | SigningKeys;
  /** The vendor's public keys (vendor.pub), embedded in a product sold for
   * air-gapped sites. With them every certificate is checked as with
   * signingKeys, but through the chain of a seatd in locked mode, from the
   * vendor's key: the license file in force (fetched from seatd,
   * fetchLicenseFile, when the client has none or a certificate names
   * another serial), signed by the vendor and before its not_after; the
   * certificate signed by the site key the file names, naming its serial
   * and a license (and feature) it grants. A failure is a lost lease as
   * with signingKeys, thrown as the BadCertificateError of its link
   * (WrongSiteKeyError, WrongLicenseFileError, LicenseNotInFileError,
   * LicenseFileInvalidError, LicenseFileExpiredError). lease.licenseFile is
   * the file (its JWS) a lease's certificate chained to. With both set, a
   * certificate must pass both. */
  vendorKeys?: VendorKeyData | VendorKeys;
  /** @internal shrunk delays and a movable clock, for tests. */
  timing?: Partial<Timing>;
}

/** Who asks for a seat. */
export interface AcquireOptions {
  licenseKey: string;
  /** Identifies the client; default hostname/user/pid. A stable one per
   * machine and application, the same in every seatd client:
   * machineFingerprint("com.example.cad"). */
  fingerprint?: string;
  user?: string;
  hostname?: string;
  metadata?: Record<string, string>;
  /** Retrying with the same key returns the same lease. Default: a new key
   * per acquisition, reused by every retry of it. */
  idempotencyKey?: string;
  /** Take the seat from the license's grants of this feature (a module of
   * the product) instead of its base pool. None covers the request:
   * FeatureNotLicensedError, or VersionNotLicensedError (its subclass);
   * none started yet: GrantNotStartedError; all full: SeatsExhaustedError.
   * The lease says which grant it holds (grantId, grantExpiresAt). */
  feature?: string;
  /** The version of the feature this program is (dotted numbers, "2025.1"),
   * which the grant must cover. Only with a feature. */
  version?: string;
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
  /** @internal */ readonly signingKeys?: SigningKeys;
  /** @internal */ readonly chain?: FileChain;
  readonly #leases = new Set<Lease>();
  #closed = false;

  /** address is host:port (or any grpc-js target, e.g. `ipv4:a:1,b:2`). */
  constructor(address: string, options: ClientOptions = {}) {
    this.options = options;
    this.conn = new Conn(address, options);
    this.timing = { ...defaultTiming, ...options.timing };
    this.log = options.log ?? (() => {});
    const keys = options.signingKeys;
    this.signingKeys = keys === undefined || keys instanceof SigningKeys ? keys : new SigningKeys(keys);
    const vendor = options.vendorKeys;
    if (vendor !== undefined) this.chain = new FileChain(vendor instanceof VendorKeys ? vendor : new VendorKeys(vendor), () => this.fetchLicenseFile());
  }

  /** Takes a seat. Throws SeatsExhaustedError when none is free (under the
   * license's site policy, another NoSeatError for a cap or reserved seats,
   * or a NotAllowedError when it refuses the client). With
   * autoHeartbeat the lease keeps itself alive until released, the client
   * closed, or lost (lease.signal). */
  async lease(o: AcquireOptions, call: CallOptions = {}): Promise<Lease> {
    o = this.named(o);
    const req = this.acquireRequest(o, this.nonce());
    const sent = this.timing.now();
    const resp = await this.conn.unary(SeatService.method.acquireSeat, req, { timeoutMs: this.timing.callTimeoutMs, ...call });
    return this.#holdOrGiveBack(o, resp, sent, req.nonce, false);
  }

  /** Borrows a seat for offline use for durationMs (at most the license's
   * max_borrow_duration). The lease needs no heartbeats and is not kept: it
   * holds its seat until expiresAt: seatd refuses an early return
   * (LEASE_BORROWED) unless the license allows_early_return (the returned
   * certificate is then listed: fetchReturnedCertificates). Store lease.certificate with the
   * product: verifyOffline checks it later without a network (and against
   * the list of returned certificates the product kept). The request
   * carries a nonce, with signingKeys or without, so the certificate (seatd
   * signs one for every borrow) repeats it. An answer without a certificate,
   * or not borrowed (a server without borrowing), throws BadCertificateError
   * and the seat is given back; with signingKeys the certificate is verified
   * as for lease(). */
  async borrow(o: AcquireOptions, durationMs: number, call: CallOptions = {}): Promise<Lease> {
    if (!(durationMs > 0)) throw new RangeError("borrow duration must be positive");
    o = this.named(o);
    const req = { ...this.acquireRequest(o, this.nonce(true)), borrowDuration: durationFromMs(durationMs) };
    const sent = this.timing.now();
    const resp = await this.conn.unary(SeatService.method.acquireSeat, req, { timeoutMs: this.timing.callTimeoutMs, ...call });
    return this.#holdOrGiveBack(o, resp, sent, req.nonce, true);
  }

  async #holdOrGiveBack(o: AcquireOptions, resp: AcquireSeatResponse, sent: number, nonce: string, borrowed: boolean): Promise<Lease> {
    try {
      await this.ready(resp.leaseCertificate);
      return this.hold(o, resp, sent, nonce, borrowed);
    } catch (err) {
      await this.giveBack(resp.lease?.id ?? "", resp.leaseToken);
      throw err;
    }
  }

  /** Gives back a seat known by its id and token (a borrowed one returned
   * early after a restart). Releasing again is fine; throws
   * LeaseExpiredError or LeaseRevokedError when the lease ended otherwise. */
  async releaseSeat(leaseId: string, leaseToken: string, call: CallOptions = {}): Promise<void> {
    await this.conn.unary(SeatService.method.releaseSeat, { leaseId, leaseToken }, { timeoutMs: this.timing.callTimeoutMs, ...call });
  }

  /** The tenant's JWKS ("" is the default tenant) as JSON text, from
   * GetSigningKeys: to embed in a product at build time. Fetching it at run
   * time from the server the product checks proves nothing (a fake server
   * answers its own keys). */
  async fetchSigningKeys(tenantId = "", call: CallOptions = {}): Promise<string> {
    const resp = await this.conn.unary(SeatService.method.getSigningKeys, { tenantId }, { timeoutMs: this.timing.callTimeoutMs, ...call });
    return JSON.stringify(toJson(GetSigningKeysResponseSchema, create(GetSigningKeysResponseSchema, resp), { useProtoFieldName: true, alwaysEmitImplicit: true }), null, 2);
  }

  /** The tenant's signed list of returned certificates (a JWS), from
   * GetReturnedCertificates. Verify it (SigningKeys.verifyReturned, with a
   * maxAgeMs) and keep the newer of it and the list kept (newerReturned)
   * before relying on it. */
  async fetchReturnedCertificates(tenantId = "", call: CallOptions = {}): Promise<string> {
    const resp = await this.conn.unary(SeatService.method.getReturnedCertificates, { tenantId }, { timeoutMs: this.timing.callTimeoutMs, ...call });
    return resp.returnedCertificates;
  }

  /** The license file in force (locked mode) as its JWS, from
   * GetSignedLicenseFile: VendorKeys.verifyLicenseFile checks it. Unlike a
   * JWKS it may be fetched from the server it is to check: its trust comes
   * from the vendor's signature, not from who answers. A seatd without a
   * license file throws SeatdError LICENSE_FILE_NOT_CONFIGURED. */
  async fetchLicenseFile(call: CallOptions = {}): Promise<string> {
    const resp = await this.conn.unary(SeatService.method.getSignedLicenseFile, {}, { timeoutMs: this.timing.callTimeoutMs, ...call });
    return resp.licenseFile;
  }

  /** @internal undefined when cert can be checked now; else a promise to
   * await first (vendorKeys: the license file it names is fetched). */
  ready(cert: string): Promise<void> | undefined {
    return this.chain?.ready(cert, this.timing.now());
  }

  /** @internal checks an answer's certificate with signingKeys and through
   * the chain of vendorKeys, those set (ready first); returns the JWS of the
   * license file it chained to ("" without vendorKeys). */
  checkCertificate(cert: string, want: Expectation): string {
    const now = this.timing.now();
    this.signingKeys?.check(cert, want, now);
    return this.chain?.check(cert, want, now).token ?? "";
  }

  /** acquire is lease under the Go client's name. */
  acquire(o: AcquireOptions, call?: CallOptions): Promise<Lease> { return this.lease(o, call); }

  /** Queues for a seat (FIFO per license; with a feature, the feature's:
   * one that is not licensed throws at once) and returns it once granted, kept
   * alive like lease()'s. When the stream breaks (the server restarts) it
   * joins again with its queue ticket and keeps its place while the server
   * holds it. Against a server without the queue it polls with backoff
   * while no seat is free for it (NoSeatError, a site policy's cap and
   * reserved seats included); a refusal no wait ends (NotAllowedError)
   * throws. */
  async waitForSeat(o: AcquireOptions, w: WaitOptions = {}): Promise<Lease> {
    o = this.named(o); // every stream of this wait is one acquisition
    const nonce = this.nonce(); // and its grant answers each of them
    const report = w.onPosition ?? (() => {});
    let ticket = "";
    for (let failures = 0; ;) {
      const [lease, heard, err, refused] = await this.#waitOnce(o, nonce, ticket, (t) => (ticket = t), report, w.signal);
      if (refused) throw err; // a grant we do not trust, given back: no use waiting again
      if (lease) {
        // The server holds a waiter's grant only until its first heartbeat
        // (--wait-hold): confirm it now.
        try {
          await lease.beatOnce({ signal: w.signal });
          return lease;
        } catch (e) {
          if (e instanceof BadCertificateError) {
            await lease.keeper?.stop();
            await this.giveBack(lease.id, lease.token);
            throw e; // not seatd's answer: no use waiting again
          }
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
  #waitOnce(o: AcquireOptions, nonce: string, ticket: string, setTicket: (t: string) => void, report: (p: number, n: number) => void, signal?: AbortSignal): Promise<[Lease | undefined, boolean, unknown, boolean?]> {
    return new Promise((resolve) => {
      let heard = false;
      let ended = false;
      const call = this.conn.serverStream(SeatService.method.waitForSeat, { ...this.acquireRequest(o, nonce), queueTicket: ticket });
      const end = (r: [Lease | undefined, boolean, unknown, boolean?], after?: Promise<void>) => {
        if (ended) return;
        ended = true;
        signal?.removeEventListener("abort", onAbort);
        call.cancel();
        if (after) void after.then(() => resolve(r));
        else resolve(r);
      };
      const onAbort = () => end([undefined, heard, signal?.reason]);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (signal?.aborted) onAbort();
      call.on("data", (r: WaitForSeatResponse) => {
        heard = true;
        if (r.event.case === "granted") {
          // The grant was made a one-way trip ago: against a TTL, nothing.
          const g = r.event.value;
          const grant = () => {
            let lease: Lease;
            try {
              lease = this.hold(o, g, this.timing.now(), nonce, false);
            } catch (err) {
              return end([undefined, true, err, true], this.giveBack(g.lease?.id ?? "", g.leaseToken));
            }
            end([lease, true, undefined]);
          };
          const ready = this.ready(g.leaseCertificate);
          if (!ready) return grant();
          void ready.then(
            () => (ended ? void this.giveBack(g.lease?.id ?? "", g.leaseToken) : grant()),
            (err) => end([undefined, true, err, true], this.giveBack(g.lease?.id ?? "", g.leaseToken)),
          );
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

  /** Stands in for the queue: acquire, back off while no seat is free for
   * this client (NoSeatError: a site policy's cap and reserved seats pass
   * as leases end, as a full license does). */
  async #pollForSeat(o: AcquireOptions, report: (p: number, n: number) => void, signal?: AbortSignal): Promise<Lease> {
    for (let n = 1; ; n++) {
      try {
        return await this.lease(o, { signal });
      } catch (err) {
        if (signal?.aborted) throw signal.reason;
        if (err instanceof NoSeatError) report(0, 0);
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

  /** @internal asks for the seat with nonce (this.nonce()), which every
   * retry of this request repeats: the certificate answers the request. */
  acquireRequest(o: AcquireOptions, nonce: string): Omit<AcquireSeatRequest, "$typeName" | "$unknown" | "borrowDuration"> {
    return {
      licenseKey: o.licenseKey, fingerprint: o.fingerprint ?? "", user: o.user ?? "", hostname: o.hostname ?? "", metadata: o.metadata ?? {},
      idempotencyKey: o.idempotencyKey ?? "", nonce, feature: o.feature ?? "", version: o.version ?? "",
    };
  }

  /** @internal the nonce of a new request: a fresh one when this client
   * checks certificates (signingKeys) or the request borrows (a borrow always
   * gets a certificate, which then repeats it), else "". seatd signs a
   * certificate only for a request with a nonce, or a borrow: a client that
   * does not check them should not cost it the signatures. */
  nonce(borrow = false): string {
    return this.signingKeys || this.chain || borrow ? newNonce() : "";
  }

  /** @internal throws BadCertificateError when a grant's certificate does
   * not verify (or, for a borrow, is missing or not borrowed), SeatdError
   * (UNIMPLEMENTED) when the seat is not of the feature asked for (ready
   * first). Returns the license file it chained to (vendorKeys), or "". */
  checkGrant(resp: AcquireSeatResponse, nonce: string, o: AcquireOptions, borrowed: boolean): string {
    const pl = resp.lease;
    if (o.feature && pl?.feature !== o.feature) {
      // A seatd from before features ignores the field and grants a seat of
      // the base pool, which must not unlock the feature.
      throw localError(Code.UNIMPLEMENTED, "", `seatd granted a seat of "${pl?.feature ?? ""}", not of feature "${o.feature}" (a seatd without features? upgrade it)`);
    }
    if (borrowed && !pl?.borrowed) throw new BadCertificateError("seatd granted a lease that is not borrowed (a server without borrowing?)");
    if (borrowed && !resp.leaseCertificate) throw new BadCertificateError("none in seatd's answer to a borrow");
    const st = stateOf(resp, 0);
    return this.checkCertificate(resp.leaseCertificate, {
      nonce, leaseId: st.id, licenseId: st.licenseId, holder: o, deadlineMs: st.expiresAtMs, borrowed, grantId: st.grantId,
    });
  }

  /** @internal releases a seat we refuse, as far as the server is real and reachable. */
  async giveBack(leaseId: string, leaseToken: string): Promise<void> {
    try {
      await this.releaseSeat(leaseId, leaseToken);
    } catch (err) {
      this.log("debug", "could not give back a refused seat", { leaseId, err });
    }
  }

  /** hold checks a granted seat (throwing BadCertificateError; the caller
   * gives the seat back), wraps it in a Lease and starts keeping it alive (a
   * borrowed one needs no keeping). */
  private hold(o: AcquireOptions, resp: AcquireSeatResponse, sent: number, nonce: string, borrowed: boolean): Lease {
    const file = this.checkGrant(resp, nonce, o, borrowed);
    const l = new Lease(this, o, { ...stateOf(resp, sent, o.fingerprint ?? "", borrowed), licenseFile: file });
    if ((this.options.autoHeartbeat ?? true) && !this.#closed && !borrowed) {
      l.keeper = new Keeper(this, l);
      this.#leases.add(l);
      void l.keeper.done.then(() => this.#leases.delete(l));
    }
    return l;
  }
}
