// Lease certificates: seatd's signed proof that it granted a lease, as
// client/certificate.go. A certificate is a JWS compact token (three
// base64url parts, header.claims.signature), alg EdDSA, signed with the
// tenant's Ed25519 key that its kid names; the tenant's public keys are a
// JWKS (GetSigningKeys, GET /v1/tenants/{tenant_id}/jwks.json). Verified
// with Node's own crypto: no JWT library.
import { createHash, createPublicKey, randomBytes, verify, type JsonWebKey, type KeyObject } from "node:crypto";
import { Code, LeaseLostError } from "./errors.js";

/** The reason of a lease given up because a certificate failed
 * verification; the client concludes it, seatd never sends it. */
export const REASON_BAD_CERTIFICATE = "LEASE_CERTIFICATE_INVALID";

/** A lease certificate failed verification: missing, signed by a key not in
 * the JWKS, another nonce, lease, license key, holder or deadline. In a kept lease
 * it is a loss like an expiry (a LeaseLostError). */
export class BadCertificateError extends LeaseLostError {
  override name = "BadCertificateError";
  /** What failed, e.g. "signature does not verify with key \"k1\"". */
  readonly problem: string;
  /** The certificate's exp has passed (CertificateExpiredError). */
  readonly expired: boolean = false;

  constructor(problem: string) {
    super(Code.UNAUTHENTICATED, `lease certificate not valid: ${problem}`, REASON_BAD_CERTIFICATE);
    this.problem = problem;
  }
}

/** The certificate's exp has passed. */
export class CertificateExpiredError extends BadCertificateError {
  override name = "CertificateExpiredError";
  override readonly expired = true;
}

/** The certificate is on the tenant's signed list of returned certificates:
 * it was returned before its expiry (verifyOffline with a list). */
export class CertificateReturnedError extends BadCertificateError {
  override name = "CertificateReturnedError";
  readonly returned = true;
}

/** The typ header of a signed list of returned certificates. */
export const RETURNED_TYPE = "seatd-returned+jwt";

/** A verified signed list of returned certificates (GetReturnedCertificates,
 * GET /v1/tenants/{tenant_id}/returned.jwt): the borrowed leases returned
 * before their expiry. token is the list as received, to store. */
export interface ReturnedList {
  tenantId: string;
  /** When seatd signed it: a newer list names every return an older one does. */
  issuedAt: Date;
  keyId: string;
  token: string;
  /** The lease ids (certificate subs) it names. */
  returned: ReadonlySet<string>;
}

/** Throws CertificateReturnedError if the list names the certificate. */
export function checkReturned(list: ReturnedList, c: Claims): void {
  if (list.returned.has(c.leaseId)) {
    throw new CertificateReturnedError(`lease "${c.leaseId}" was returned early (listed as returned at ${list.issuedAt.toISOString()})`);
  }
}

/** Whichever verified list was signed later (kept may be undefined): a
 * product never replaces its list by an older one, which a replay could use
 * to unlist a returned certificate. */
export function newerReturned(kept: ReturnedList | undefined, fetched: ReturnedList | undefined): ReturnedList | undefined {
  if (kept === undefined || (fetched !== undefined && fetched.issuedAt.getTime() >= kept.issuedAt.getTime())) return fetched;
  return kept;
}

/** What a lease certificate says. */
export interface Claims {
  /** Always "seatd". */
  issuer: string;
  /** The sub and lease_id claims. */
  leaseId: string;
  /** The tenant whose key signed it. */
  tenantId: string;
  licenseId: string;
  /** The machine the lease was granted to (the first one, for a shared lease). */
  fingerprint: string;
  /** The user it was granted to, "" if none was sent. */
  user: string;
  /** The hostname it was granted to, "" if none was sent. */
  hostname: string;
  /** Whom the lease is for: "fingerprint", or "user"/"hostname" when the
   * license shares one lease per user or hostname; "" from a seatd that did
   * not bind its certificates (checkHolder refuses those). */
  boundTo: string;
  /** licenseKeyHash of the license key; "" from a seatd that did not bind
   * its certificates. */
  licenseKeySha256: string;
  /** iat. */
  issuedAt: Date;
  /** exp: the lease's deadline, rounded down to whole seconds. */
  expiry: Date;
  /** A seat borrowed for offline use. */
  borrowed: boolean;
  /** The nonce of the request it answers. */
  nonce: string;
  /** The kid of the key that signed it. */
  keyId: string;
  /** For a lease of a feature grant (AcquireOptions.feature): the feature,
   * the version asked for ("" if none was) and the grant; "" for a lease of
   * the license's base pool. */
  feature: string;
  version: string;
  grantId: string;
  /** The grant's expiry; undefined when it has none, and for a base lease. */
  grantExpiresAt?: Date;
  /** The highest version the grant covers ("" every version): what the
   * seat covers, where `version` is what was first asked. */
  grantVersion: string;
  /** For a certificate of a seatd in locked mode, signed by its site key
   * (LicenseFile.verify): the serial of the license file in force and the
   * file's id of the license (licenseId is "lic_" and it); undefined
   * otherwise. */
  fileSerial?: number;
  fileLicenseId?: string;
}

/** What a client knows of itself (AcquireOptions fit), which a
 * certificate of its lease must name. */
export interface Holder {
  licenseKey: string;
  fingerprint?: string;
  user?: string;
  hostname?: string;
  /** The feature and version it asks for (undefined: a base seat). */
  feature?: string;
  version?: string;
}

/** The license_key_sha256 claim of a license key: its SHA-256, lowercase hex. */
export function licenseKeyHash(licenseKey: string): string {
  return createHash("sha256").update(licenseKey, "utf8").digest("hex");
}

/** Throws BadCertificateError unless the certificate is for the client that
 * asks as h, with its own values: the hash of its license key, the identity
 * boundTo names (its fingerprint, or its user or hostname for a lease the
 * license shares per user or hostname), and the feature and version it asks
 * for (none for a base seat: a seat of another module, or of another
 * version, unlocks nothing). Never compare with what an answer says: a relay
 * holding one lease would pass. A certificate of a seatd that did not bind
 * certificates is refused. */
export function checkHolder(c: Claims, h: Holder): void {
  if (!c.licenseKeySha256 || !c.boundTo) {
    throw new BadCertificateError("it names no license key or holder (signed by a seatd that does not bind certificates to their client: upgrade seatd)");
  }
  if (c.licenseKeySha256 !== licenseKeyHash(h.licenseKey)) throw new BadCertificateError("for another license key than the one this client uses");
  const pairs: Record<string, [string, string]> = {
    fingerprint: [c.fingerprint, h.fingerprint ?? ""], user: [c.user, h.user ?? ""], hostname: [c.hostname, h.hostname ?? ""],
  };
  const pair = Object.hasOwn(pairs, c.boundTo) ? pairs[c.boundTo] : undefined;
  if (!pair) throw new BadCertificateError(`bound to "${c.boundTo}", which this client does not know`);
  const [theirs, ours] = pair;
  if (!ours || theirs !== ours) throw new BadCertificateError(`for ${c.boundTo} "${theirs}", not this client's "${ours}"`);
  const [feature, version] = [h.feature ?? "", h.version ?? ""];
  if (c.feature !== feature) throw new BadCertificateError(`for feature "${c.feature}", not the "${feature}" this client asked for`);
  if (version && c.grantVersion && compareVersions(version, c.grantVersion) > 0) {
    throw new BadCertificateError(`for a grant covering version ${c.grantVersion}, not the ${version} this client asked for`);
  }
}

/** Compares two dotted versions component by component as numbers of any
 * length (1.9 < 1.10; a missing component is 0, so 3 == 3.0): -1, 0 or 1,
 * as seatd does. */
export function compareVersions(a: string, b: string): number {
  const x = a.split("."), y = b.split(".");
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const p = (x[i] ?? "0").replace(/^0+/, ""), q = (y[i] ?? "0").replace(/^0+/, "");
    if (p.length !== q.length) return p.length < q.length ? -1 : 1;
    if (p !== q) return p < q ? -1 : 1;
  }
  return 0;
}

/** A JWKS as text, bytes or parsed. */
export type Jwks = string | Uint8Array | { keys: JsonWebKey[] };

/** What a certificate in an answer must say. @internal */
export interface Expectation {
  nonce: string;
  leaseId: string;
  licenseId?: string;
  /** This client's own license key, identity, feature and version, never an answer's. */
  holder: Holder;
  /** The deadline the same answer told, in ms. */
  deadlineMs: number;
  borrowed: boolean;
  /** The grant the answer names, if any. */
  grantId?: string;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/** @internal */
export function b64url(part: string, what: string): Buffer {
  if (!B64URL.test(part) || part.length % 4 === 1) throw new BadCertificateError(`${what} is not base64url`);
  return Buffer.from(part, "base64url");
}

/** @internal */
export function json(b: Buffer, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(b.toString("utf8"));
  } catch {
    throw new BadCertificateError(`${what} is not JSON`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new BadCertificateError(`${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const str = (v: unknown): string => (typeof v === "string" ? v : "");
const iso = (ms: number) => new Date(ms).toISOString();
const msOf = (t: Date | number) => (t instanceof Date ? t.getTime() : t);

/** A tenant's public keys, to verify lease certificates with. Only Ed25519
 * keys (kty OKP, crv Ed25519) with a kid are kept; keys of other types are
 * skipped. Throws when no key is left, a kid appears twice, or the set holds
 * a private key. */
export class SigningKeys {
  readonly #byKid = new Map<string, KeyObject>();

  constructor(jwks: Jwks) {
    let set: unknown = jwks;
    if (typeof jwks === "string" || jwks instanceof Uint8Array) {
      try {
        set = JSON.parse(typeof jwks === "string" ? jwks : Buffer.from(jwks).toString("utf8"));
      } catch (e) {
        throw new Error(`JWKS is not JSON: ${(e as Error).message}`);
      }
    }
    const keys = (set as { keys?: unknown })?.keys;
    if (!Array.isArray(keys)) throw new Error('JWKS must be {"keys": [...]}');
    for (const k of keys as JsonWebKey[]) {
      if (typeof k !== "object" || k === null || k.kty !== "OKP" || k.crv !== "Ed25519") continue;
      const kid = str(k.kid);
      if ("d" in k) throw new Error(`JWKS key "${kid}" holds a private key; publish only public keys`);
      if (!kid || ![undefined, "", "EdDSA"].includes(k.alg as string) || ![undefined, "", "sig"].includes(k.use as string)) continue;
      if (this.#byKid.has(kid)) throw new Error(`JWKS kid "${kid}" appears twice`);
      let key: KeyObject;
      try {
        if (typeof k.x !== "string" || b64url(k.x, "x").length !== 32) throw new Error("x");
        key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: k.x }, format: "jwk" });
      } catch {
        throw new Error(`JWKS key "${kid}": x is not an Ed25519 public key`);
      }
      this.#byKid.set(kid, key);
    }
    if (this.#byKid.size === 0) throw new Error("JWKS holds no Ed25519 signing key (kty OKP, crv Ed25519, with a kid)");
  }

  /** The kids of the keys, sorted. */
  get keyIds(): string[] { return [...this.#byKid.keys()].sort(); }

  /** Checks a stored certificate without a network: signed (EdDSA) by the
   * key its kid names, issued by seatd, not expired at now (now before exp).
   * Returns its claims; the caller checks what they must say (checkHolder:
   * its own license key and identity; borrowed). Throws BadCertificateError
   * (CertificateExpiredError when only the time is wrong). */
  verify(cert: string, now: Date | number = Date.now()): Claims {
    const c = this.#verify(cert);
    const t = msOf(now);
    if (t >= c.expiry.getTime()) throw new CertificateExpiredError(`expired at ${iso(c.expiry.getTime())} (now ${iso(t)})`);
    return c;
  }

  /** @internal verifies the certificate of an answer: as verify, and it is
   * for this client (checkHolder: its license key, identity, feature and
   * version), repeats our nonce, names this lease, license and grant, and
   * its exp is the deadline the answer told rounded down (less than a second
   * apart), not passed. */
  check(cert: string, want: Expectation, now: number): Claims {
    const c = this.#verify(cert);
    expect(c, want, now);
    return c;
  }

  /** Checks a signed list of returned certificates: a JWS signed (EdDSA) by
   * the key its kid names, typ "seatd-returned+jwt" (never a lease
   * certificate), iss seatd, for tenantId, with an iat. maxAgeMs > 0 also
   * refuses a list signed more than maxAgeMs before now or more than a
   * minute after it: what a product that has just fetched the list asks, so
   * that a replayed old list is not taken for the current one; offline,
   * check the kept list with 0. Throws BadCertificateError. */
  verifyReturned(token: string, tenantId: string, maxAgeMs = 0, now: Date | number = Date.now()): ReturnedList {
    const { raw, kid } = this.#signed(token, RETURNED_TYPE);
    if (raw.iss !== "seatd") throw new BadCertificateError(`returned list: issuer ${JSON.stringify(raw.iss)}, want "seatd"`);
    if (raw.tenant_id !== tenantId) throw new BadCertificateError(`returned list: of tenant ${JSON.stringify(raw.tenant_id)}, not "${tenantId}"`);
    if (!num(raw.iat)) throw new BadCertificateError("returned list: no iat");
    const entries = raw.returned ?? [];
    if (!Array.isArray(entries) || !entries.every((e) => typeof e === "object" && e !== null && typeof (e as { sub?: unknown }).sub === "string")) {
      throw new BadCertificateError("returned list: returned must be a list of {sub, exp}");
    }
    const iat = Math.trunc(raw.iat) * 1000, t = msOf(now);
    if (maxAgeMs > 0 && (t - iat > maxAgeMs || iat - t > 60_000)) {
      throw new BadCertificateError(`returned list: signed at ${iso(iat)}, not within ${maxAgeMs} ms of now (${iso(t)}): an old list replayed, or a wrong clock`);
    }
    return { tenantId, issuedAt: new Date(iat), keyId: kid, token, returned: new Set(entries.map((e) => (e as { sub: string }).sub)) };
  }

  #verify(cert: string): Claims {
    const { raw, kid } = this.#signed(cert);
    return claimsOf(raw, kid);
  }

  /** @internal the claims (raw) and kid of a JWS signed by one of the keys. */
  signed(cert: string): { raw: Record<string, unknown>; kid: string } { return this.#signed(cert); }

  /** The claims and kid of a JWS signed by one of the keys; typ, when given,
   * is the header's typ it must have. */
  #signed(cert: string, typ?: string): { raw: Record<string, unknown>; kid: string } {
    if (!cert) throw new BadCertificateError("none in seatd's answer");
    const parts = typeof cert === "string" ? cert.split(".") : [];
    if (parts.length !== 3) throw new BadCertificateError("not a JWS compact token (three base64url parts)");
    const [h, p, s] = parts as [string, string, string];
    const header = json(b64url(h, "header"), "header");
    if (header.alg !== "EdDSA") throw new BadCertificateError(`alg ${JSON.stringify(header.alg)}, want EdDSA`);
    if (typ !== undefined && header.typ !== typ) throw new BadCertificateError(`typ ${JSON.stringify(header.typ)}, want "${typ}"`);
    if ("crit" in header) throw new BadCertificateError(`critical header parameters ${JSON.stringify(header.crit)} are not understood`);
    const kid = str(header.kid);
    if (!kid) throw new BadCertificateError("no kid in its header");
    const key = this.#byKid.get(kid);
    if (!key) throw new BadCertificateError(`signed by key "${kid}", which the JWKS does not hold (another tenant's key, or a key newer than the JWKS: fetch it again after a rotation)`);
    if (!verify(null, Buffer.from(`${h}.${p}`, "ascii"), key, b64url(s, "signature"))) throw new BadCertificateError(`signature does not verify with key "${kid}"`);
    return { raw: json(b64url(p, "claims"), "claims"), kid };
  }
}

/** @internal throws BadCertificateError unless c, verified, says what the
 * certificate of an answer must (SigningKeys.check). */
export function expect(c: Claims, want: Expectation, now: number): void {
  const exp = c.expiry.getTime();
  checkHolder(c, want.holder);
  if (want.grantId && c.grantId !== want.grantId) throw new BadCertificateError(`for grant "${c.grantId}", not "${want.grantId}"`);
  if (!want.nonce || c.nonce !== want.nonce) throw new BadCertificateError(`nonce "${c.nonce}" is not the one sent (a recorded answer replayed?)`);
  if (c.leaseId !== want.leaseId) throw new BadCertificateError(`for lease "${c.leaseId}", not "${want.leaseId}"`);
  if (want.licenseId && c.licenseId !== want.licenseId) throw new BadCertificateError(`for license "${c.licenseId}", not "${want.licenseId}"`);
  if (c.borrowed !== want.borrowed) throw new BadCertificateError(`borrowed is ${c.borrowed}, want ${want.borrowed}`);
  if (!(Math.abs(want.deadlineMs - exp) < 1000)) throw new BadCertificateError(`exp ${iso(exp)} is not the deadline seatd told (${want.deadlineMs ? iso(want.deadlineMs) : "none"})`);
  if (now >= exp + 1000) throw new CertificateExpiredError(`expired at ${iso(exp)} (now ${iso(now)}; is this machine's clock right?)`);
}

/** @internal the Claims of a certificate's verified payload raw, signed by kid. */
export function claimsOf(raw: Record<string, unknown>, kid: string): Claims {
  if (raw.iss !== "seatd") throw new BadCertificateError(`issuer ${JSON.stringify(raw.iss)}, want "seatd"`);
  if (!raw.sub || raw.sub !== raw.lease_id) throw new BadCertificateError(`sub ${JSON.stringify(raw.sub)} and lease_id ${JSON.stringify(raw.lease_id)} must name the same lease`);
  if (!num(raw.exp) || (raw.iat !== undefined && !num(raw.iat))) throw new BadCertificateError("exp and iat must be numbers");
  if (raw.grant_expires_at !== undefined && !num(raw.grant_expires_at)) throw new BadCertificateError("grant_expires_at must be a number");
  if (raw.file_serial !== undefined && !num(raw.file_serial)) throw new BadCertificateError("file_serial must be a number");
  for (const k of ["feature", "version", "grant_id", "grant_version", "file_license_id"]) {
    if (raw[k] !== undefined && typeof raw[k] !== "string") throw new BadCertificateError(`${k} must be a string`);
  }
  return {
    issuer: "seatd", leaseId: str(raw.lease_id), tenantId: str(raw.tenant_id), licenseId: str(raw.license_id),
    fingerprint: str(raw.fingerprint), user: str(raw.user), hostname: str(raw.hostname), boundTo: str(raw.bound_to),
    licenseKeySha256: str(raw.license_key_sha256), issuedAt: new Date(Math.trunc(num(raw.iat) ? raw.iat : 0) * 1000),
    expiry: new Date(Math.trunc(raw.exp) * 1000), borrowed: raw.borrowed === true, nonce: str(raw.nonce), keyId: kid,
    feature: str(raw.feature), version: str(raw.version), grantId: str(raw.grant_id), grantVersion: str(raw.grant_version),
    ...(num(raw.grant_expires_at) && raw.grant_expires_at > 0 ? { grantExpiresAt: new Date(Math.trunc(raw.grant_expires_at) * 1000) } : {}),
    ...(num(raw.file_serial) && raw.file_serial > 0 ? { fileSerial: Math.trunc(raw.file_serial), fileLicenseId: str(raw.file_license_id) } : {}),
  };
}

/** new SigningKeys(jwks).verify(cert, now): the product's start-up check of a
 * stored certificate (a borrowed seat, say) with the JWKS it embeds. */
export function verifyOffline(cert: string, jwks: Jwks | SigningKeys, now: Date | number = Date.now(), returned?: string): Claims {
  const keys = jwks instanceof SigningKeys ? jwks : new SigningKeys(jwks);
  const c = keys.verify(cert, now);
  // returned: the signed list of returned certificates the product kept
  // (undefined or "" when it has none yet); a certificate it names is refused.
  if (returned) checkReturned(keys.verifyReturned(returned, c.tenantId, 0, now), c);
  return c;
}

/** 16 random bytes, base64url: sent with every request of a client that
 * verifies certificates, and with every borrow; repeated by the certificate
 * of its answer, so that a recorded answer cannot be replayed. */
export function newNonce(): string { return randomBytes(16).toString("base64url"); }
