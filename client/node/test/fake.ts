// An in-process fake seatd that signs lease certificates with a key of the
// test's own (Node's crypto), and can spoil them: the server a customer
// might run to get seats for nothing, or a broken one.
import { createHash, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { create, fromBinary, toBinary, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { anyPack, durationFromMs, timestampFromMs, durationMs } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { seatdv1 } from "../src/index.js";
import { ErrorInfoSchema } from "../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../src/gen/google/rpc/status_pb.js";

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** Signer is an Ed25519 key with a kid, signing as seatd does. */
export class Signer {
  readonly key: KeyObject;
  readonly pub: KeyObject;
  constructor(readonly kid: string) {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    this.key = privateKey;
    this.pub = publicKey;
  }

  jwk(): Record<string, string> {
    const { x } = this.pub.export({ format: "jwk" });
    return { kty: "OKP", crv: "Ed25519", x: x!, kid: this.kid, use: "sig", alg: "EdDSA" };
  }

  sign(claims: object, header: object = { alg: "EdDSA", kid: this.kid }, by: Signer = this): string {
    const h = b64url(JSON.stringify(header));
    const p = b64url(JSON.stringify(claims));
    return `${h}.${p}.${b64url(sign(null, Buffer.from(`${h}.${p}`), by.key))}`;
  }
}

export const jwks = (...signers: Signer[]) => JSON.stringify({ keys: signers.map((s) => s.jwk()) });

// "relayed": a relay serving its one lease to other clients (its answer and
// certificate name the relay's machine); "other license key": a lease of
// another license; "unbound": as an older seatd signed (no bound_to, no
// license_key_sha256); "other user": a lease shared per user, another user's.
export type Forgery = "missing" | "other key" | "unknown kid" | "other nonce" | "later exp" | "other lease" | "other fingerprint" | "one byte changed" | "alg none"
  | "relayed" | "other license key" | "unbound" | "other user";
export const forgeries: Forgery[] = ["missing", "other key", "unknown kid", "other nonce", "later exp", "other lease", "other fingerprint", "one byte changed", "alg none",
  "relayed", "other license key", "unbound", "other user"];
export const RELAY_FINGERPRINT = "relay-machine";

export const keyHash = (licenseKey: string) => createHash("sha256").update(licenseKey, "utf8").digest("hex");

// The one feature grant of the fake's license: every feature asked for is
// granted from it (unless FakeSeatd.refuse says otherwise).
export const GRANT_ID = "lic-1.0a1b2c3d";
export const GRANT_EXPIRES_AT = 1893456000; // 2030-01-01T00:00:00Z, Unix seconds
/** The highest version the fake grant covers. */
export const GRANT_VERSION = "2030";

/** seatd's claims for a lease of license key "key" bound to fingerprint;
 * with a feature, of the grant GRANT_ID. */
export function claims(leaseId: string, fingerprint: string, deadlineMs: number, nonce: string, borrowed = false, feature = "", version = ""): Record<string, unknown> {
  return {
    iss: "seatd", sub: leaseId, lease_id: leaseId, tenant_id: "default", license_id: "lic-1", fingerprint, user: "", hostname: "",
    bound_to: "fingerprint", license_key_sha256: keyHash("key"), iat: Math.floor(Date.now() / 1000), exp: Math.floor(deadlineMs / 1000), borrowed, nonce,
    ...(feature ? { feature, version, grant_id: GRANT_ID, grant_expires_at: GRANT_EXPIRES_AT, grant_version: GRANT_VERSION } : {}),
  };
}

// Spoiled certificates of a lease of a feature: "base pool" (a base seat's
// certificate, no feature claims: what a relay of a base seat would serve),
// "other feature", "other version" (a grant of an older version), "other grant".
export type FeatureForgery = "base pool" | "other feature" | "other version" | "other grant";
export const featureForgeries: FeatureForgery[] = ["base pool", "other feature", "other version", "other grant"];

/** certificate signs c with signer, spoiled by forge. */
export function certificate(signer: Signer, c: Record<string, unknown>, forge?: Forgery | FeatureForgery): string {
  switch (forge) {
    case "base pool": delete c.feature; delete c.version; delete c.grant_id; delete c.grant_expires_at; delete c.grant_version; break;
    case "other feature": c.feature = "sim"; break;
    case "other version": c.grant_version = "2023"; break;
    case "other grant": c.grant_id = "lic-1.ffffffff"; break;
    case "missing": return "";
    case "other key": return signer.sign(c, undefined, new Signer(signer.kid));
    case "unknown kid": return new Signer(signer.kid + "-unknown").sign(c);
    case "other nonce": c.nonce = "recorded-earlier"; break;
    case "later exp": c.exp = (c.exp as number) + 3600; break;
    case "other lease": c.sub = c.lease_id = "lease-other"; break;
    case "other fingerprint": c.fingerprint = "another-machine"; break;
    case "relayed": c.fingerprint = RELAY_FINGERPRINT; break;
    case "other license key": c.license_key_sha256 = keyHash("another-key"); break;
    case "unbound": delete c.bound_to; delete c.license_key_sha256; break;
    case "other user": c.bound_to = "user"; c.user = "bob"; break;
    case "alg none": return `${b64url(JSON.stringify({ alg: "none", kid: signer.kid }))}.${b64url(JSON.stringify(c))}.`;
  }
  const token = signer.sign(c);
  if (forge !== "one byte changed") return token;
  const [h, p, s] = token.split(".") as [string, string, string];
  const raw = Buffer.from(p, "base64url");
  const i = raw.indexOf('"fingerprint":"') + '"fingerprint":"'.length;
  raw[i] = raw[i]! ^ 1;
  return `${h}.${b64url(raw)}.${s}`;
}

interface FakeLease { token: string; fingerprint: string; deadlineMs: number; borrowed: boolean; live: boolean; feature: string; version: string; expired?: boolean }

function handler(m: DescMethod): grpc.MethodDefinition<unknown, unknown> {
  const ser = (d: DescMessage) => (v: unknown) => Buffer.from(toBinary(d, create(d, v as never)));
  const de = (d: DescMessage) => (b: Buffer) => fromBinary(d, b);
  return {
    path: `/${m.parent.typeName}/${m.name}`, originalName: m.localName,
    requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
    responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
    requestSerialize: ser(m.input), requestDeserialize: de(m.input),
    responseSerialize: ser(m.output), responseDeserialize: de(m.output),
  };
}

/** refusal fails a call as seatd does: the status with an ErrorInfo in
 * grpc-status-details-bin. */
export function refusal(code: grpc.status, reason: string, metadata: Record<string, string>): grpc.ServiceError {
  const info = create(ErrorInfoSchema, { reason, domain: "seatd", metadata });
  const st = create(StatusSchema, { code, message: `refused (test): ${reason}`, details: [anyPack(ErrorInfoSchema, info)] });
  const md = new grpc.Metadata();
  md.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, st)));
  return Object.assign(new Error(st.message), { code, details: st.message, metadata: md });
}

/** FakeSeatd keeps leases in memory and signs their certificates with
 * signer (none sent when undefined), spoiled by forge. Like seatd it signs
 * only when asked: a request with a nonce, or a borrow. nonces holds the
 * nonce of each request, by RPC ("acquire", "heartbeat", "stream", "wait"),
 * in order. A request's feature is granted from the one grant GRANT_ID,
 * unless features is false (a seatd from before features: the field is
 * ignored, the seat is the base pool's) or refuse is set (every acquisition
 * fails FAILED_PRECONDITION with that reason and metadata). requests holds
 * every AcquireSeat and WaitForSeat request. */
export class FakeSeatd {
  readonly server = new grpc.Server();
  address = "";
  forge?: Forgery | FeatureForgery;
  features = true;
  refuse?: [string, Record<string, string>];
  /** The next AcquireSeat calls fail with these, one each (a site policy's). */
  refusals: [grpc.status, string, Record<string, string>][] = [];
  /** false: WaitForSeat is UNIMPLEMENTED, as a seatd without the queue. */
  queue = true;
  acquires = 0;
  readonly requests: (seatdv1.AcquireSeatRequest | seatdv1.WaitForSeatRequest)[] = [];
  lend = true; // false: ignore borrow_duration, as a server without borrowing
  beats = 0;
  nonces: Record<string, string[]> = {};
  /** Locked mode: the JWS GetSignedLicenseFile answers, and the serial and
   * license every certificate names; undefined: none. */
  locked?: { file: string; serial: number; license: string };
  fileFetches = 0;
  readonly leases = new Map<string, FakeLease>();

  constructor(public signer: Signer | undefined, readonly ttlMs = 5000, readonly intervalMs = 100) {
    const seat = seatdv1.SeatService.method;
    const hb = seatdv1.HeartbeatService.method;
    const def = (methods: DescMethod[]) => Object.fromEntries(methods.map((m) => [m.localName, handler(m)]));
    this.server.addService(def([seat.acquireSeat, seat.releaseSeat, seat.waitForSeat, seat.getSigningKeys, seat.getSignedLicenseFile]), {
      getSignedLicenseFile: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
        this.fileFetches++;
        if (!this.locked) return cb(refusal(grpc.status.FAILED_PRECONDITION, "LICENSE_FILE_NOT_CONFIGURED", {}));
        cb(null, { licenseFile: this.locked.file, serial: BigInt(this.locked.serial) });
      },
      acquireSeat: (call: grpc.ServerUnaryCall<seatdv1.AcquireSeatRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        const r = call.request;
        this.requests.push(r);
        if (this.refuse) return cb(refusal(grpc.status.FAILED_PRECONDITION, ...this.refuse));
        this.acquires++;
        const refused = this.refusals.shift();
        if (refused) return cb(refusal(...refused));
        cb(null, this.#grant(r, this.#noted("acquire", r.nonce), r.borrowDuration ? durationMs(r.borrowDuration) : 0));
      },
      releaseSeat: (call: grpc.ServerUnaryCall<seatdv1.ReleaseSeatRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        const l = this.leases.get(call.request.leaseId);
        if (!l || l.token !== call.request.leaseToken) return cb({ code: grpc.status.NOT_FOUND, details: "no such lease" });
        l.live = false;
        cb(null, {});
      },
      waitForSeat: (call: grpc.ServerWritableStream<seatdv1.WaitForSeatRequest, unknown>) => {
        this.requests.push(call.request);
        if (this.refuse) return void call.emit("error", refusal(grpc.status.FAILED_PRECONDITION, ...this.refuse));
        if (!this.queue) return void call.emit("error", Object.assign(new Error("unknown method WaitForSeat"), { code: grpc.status.UNIMPLEMENTED }));
        this.#noted("wait", call.request.nonce);
        call.write({ event: { case: "position", value: { position: 1, queueLength: 1, ticket: "w1" } } });
        call.write({ event: { case: "granted", value: this.#grant(call.request, call.request.nonce, 0) } });
        call.end();
      },
      getSigningKeys: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { keys: this.signer ? [this.signer.jwk()] : [] }),
    });
    this.server.addService(def([hb.heartbeat, hb.heartbeatStream]), {
      heartbeat: (call: grpc.ServerUnaryCall<seatdv1.HeartbeatRequest, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        if (this.leases.get(call.request.leaseId)?.expired) return cb(refusal(grpc.status.FAILED_PRECONDITION, "LEASE_EXPIRED", {}));
        const r = this.#beat(call.request.leaseId, call.request.leaseToken, this.#noted("heartbeat", call.request.nonce));
        if (!r) return cb({ code: grpc.status.NOT_FOUND, details: "no such lease" });
        cb(null, { expiresAt: timestampFromMs(r[0]), heartbeatInterval: durationFromMs(this.intervalMs), leaseCertificate: r[1] });
      },
      heartbeatStream: (call: grpc.ServerDuplexStream<seatdv1.HeartbeatStreamRequest, unknown>) => {
        let id = "";
        let token = "";
        call.on("data", (req: seatdv1.HeartbeatStreamRequest) => {
          if (!id) [id, token] = [req.leaseId, req.leaseToken];
          if (this.leases.get(id)?.expired) return call.destroy(refusal(grpc.status.FAILED_PRECONDITION, "LEASE_EXPIRED", {}));
          const r = this.#beat(id, token, this.#noted("stream", req.nonce));
          if (!r) return call.destroy(Object.assign(new Error("no such lease"), { code: grpc.status.NOT_FOUND }));
          call.write({ expiresAt: timestampFromMs(r[0]), heartbeatInterval: durationFromMs(this.intervalMs), leaseCertificate: r[1] });
        });
        call.on("end", () => call.end());
        call.on("error", () => {});
      },
    });
  }

  async start(): Promise<this> {
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    this.address = `127.0.0.1:${port}`;
    return this;
  }

  stop(): void { this.server.forceShutdown(); }

  live(): number { return [...this.leases.values()].filter((l) => l.live).length; }

  #noted(rpc: string, nonce: string): string {
    (this.nonces[rpc] ??= []).push(nonce);
    return nonce;
  }

  #cert(id: string, nonce: string): string {
    const l = this.leases.get(id)!;
    if (!this.signer || !(nonce || l.borrowed)) return "";
    const c = claims(id, l.fingerprint, l.deadlineMs, nonce, l.borrowed, l.feature, l.version);
    if (this.locked) Object.assign(c, { license_id: this.#licenseId(), file_serial: this.locked.serial, file_license_id: this.locked.license });
    return certificate(this.signer, c, this.forge);
  }

  #licenseId(): string { return this.locked ? `lic_${this.locked.license}` : "lic-1"; }

  #grant(r: { fingerprint: string; feature: string; version: string }, nonce: string, borrowMs: number) {
    const { fingerprint } = r;
    const [feature, version] = this.features ? [r.feature, r.version] : ["", ""];
    const id = `lease-${this.leases.size + 1}`;
    const borrowed = borrowMs > 0 && this.lend;
    const now = Date.now();
    const deadlineMs = now + (borrowed ? borrowMs : this.ttlMs);
    this.leases.set(id, { token: `token-${id}`, fingerprint, deadlineMs, borrowed, live: true, feature, version });
    return {
      lease: {
        id, licenseId: this.#licenseId(), fingerprint: this.forge === "relayed" ? RELAY_FINGERPRINT : fingerprint, borrowed, acquiredAt: timestampFromMs(now), lastHeartbeatAt: timestampFromMs(now), expiresAt: timestampFromMs(deadlineMs),
        feature, version, grantId: feature ? GRANT_ID : "",
      },
      leaseToken: `token-${id}`, heartbeatInterval: durationFromMs(this.intervalMs), seatsInUse: 1, seatLimit: 10, leaseCertificate: this.#cert(id, nonce),
      grant: feature ? { id: GRANT_ID, licenseId: "lic-1", feature, version: GRANT_VERSION, seats: 10, expiresAt: timestampFromMs(GRANT_EXPIRES_AT * 1000) } : undefined,
    };
  }

  #beat(id: string, token: string, nonce: string): [number, string] | undefined {
    const l = this.leases.get(id);
    if (!l || l.token !== token || !l.live) return undefined;
    l.deadlineMs = Date.now() + this.ttlMs;
    this.beats++;
    return [l.deadlineMs, this.#cert(id, nonce)];
  }
}

/** seatd's kid of a public key: base64url of the first 12 bytes of its SHA-256. */
export const kidOf = (x: string) => createHash("sha256").update(Buffer.from(x, "base64url")).digest().subarray(0, 12).toString("base64url");

/** A Signer whose kid is its key's, as seatd's site key's is. */
export function siteSigner(): Signer {
  const s = new Signer("");
  (s as { kid: string }).kid = kidOf(s.jwk().x!);
  return s;
}

/** A license file's terms for the site key site (a JWK): the license "cad"
 * (a 1-minute TTL) with a grant of feature render, issued an hour ago,
 * until notAfterMs (default a day from now); in the form seatd reads
 * strictly. */
export function fileTerms(site: Record<string, string>, serial: number, seats = 2, notAfterMs = Date.now() + 86_400_000): Record<string, unknown> {
  const iso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
  return {
    serial, customer: "Acme", issued_at: iso(Date.now() - 3600_000), not_after: iso(notAfterMs),
    site_key: { kty: "OKP", crv: "Ed25519", x: site.x, kid: site.kid },
    licenses: [{ id: "cad", name: "ACME CAD", seats, lease_ttl: "1m0s", grants: [{ id: "render", feature: "render", seats: 1 }] }],
  };
}

/** A vendor's key pair, signing license files as seatctl vendor sign does
 * (Node's crypto only). */
export class Vendor {
  readonly signer = new Signer("");
  constructor() { (this.signer as { kid: string }).kid = kidOf(this.signer.jwk().x!); }
  get kid(): string { return this.signer.kid; }
  pem(): string { return this.signer.pub.export({ format: "pem", type: "spki" }).toString(); }
  /** The file's JWS: header exactly alg, kid, typ; the payload compact. */
  token(terms: object, typ = "seatd-license-file-v1"): string {
    return this.signer.sign(terms, { alg: "EdDSA", kid: this.kid, typ });
  }
  /** site.lic: the readable copy (the payload indented), then the JWS wrapped at 64 columns. */
  file(terms: object): string {
    const token = this.token(terms);
    const lines = token.match(/.{1,64}/g) ?? [];
    return `-----BEGIN SEATD LICENSE FILE-----\n${JSON.stringify(terms, null, 2)}\n-----BEGIN SEATD SIGNATURE-----\n${lines.join("\n")}\n-----END SEATD SIGNATURE-----\n`;
  }
}
