// The chain of trust of a seatd in locked mode, vendor → license file →
// site key → lease certificate (docs/concepts/license-files.md), as
// client/licensefile.go. A vendor signs a license file (a JWS, EdDSA, typ
// seatd-license-file-v1) naming the site key of the one seatd that may
// serve it; that seatd signs the certificates of the file's licenses with
// the site key and names the file's serial and license in them. A product
// that holds only the vendor's public key checks its seat without the
// vendor online. Node's own crypto, as for the certificates.
import { createHash, createPublicKey, verify, type JsonWebKey, type KeyObject } from "node:crypto";
import { BadCertificateError, CertificateExpiredError, SigningKeys, b64url, claimsOf, expect, json, type Claims, type Expectation } from "./certificate.js";

/** The license file is not one the vendor's keys verify: not a license
 * file, signed by another key, a bad signature, terms that do not decode,
 * or seatd would not give it. */
export class LicenseFileInvalidError extends BadCertificateError { override name = "LicenseFileInvalidError"; }
/** The license file is at or past its not_after (now, or when the
 * certificate was signed). */
export class LicenseFileExpiredError extends BadCertificateError { override name = "LicenseFileExpiredError"; }
/** The certificate is not signed by the site key the license file names
 * (another seatd's key, or forged). */
export class WrongSiteKeyError extends BadCertificateError { override name = "WrongSiteKeyError"; }
/** The certificate names another license file (serial) than the one it is
 * checked against, or none (a seatd not in locked mode). */
export class WrongLicenseFileError extends BadCertificateError { override name = "WrongLicenseFileError"; }
/** The certificate's license, or its feature, is not one the license file grants. */
export class LicenseNotInFileError extends BadCertificateError { override name = "LicenseNotInFileError"; }

/** The JWS typ of a license file. */
export const LICENSE_FILE_TYPE = "seatd-license-file-v1";
const SIG_BEGIN = "-----BEGIN SEATD SIGNATURE-----";
const SIG_END = "-----END SEATD SIGNATURE-----";

/** seatd's kid of a 32-byte Ed25519 public key: base64url of the first 12
 * bytes of its SHA-256. */
export function keyId(raw: Uint8Array): string {
  return createHash("sha256").update(raw).digest().subarray(0, 12).toString("base64url");
}

const rawOf = (k: KeyObject) => Buffer.from(k.export({ format: "jwk" }).x ?? "", "base64url");
const iso = (ms: number) => new Date(ms).toISOString();
const msOf = (t: Date | number) => (t instanceof Date ? t.getTime() : t);

/** vendor.pub in any form a vendor hands it out: text or bytes (PEM
 * "PUBLIC KEY" blocks, a JWK or JWKS, or a base64url 32-byte key), or the
 * parsed JWK or JWKS. */
export type VendorKeyData = string | Uint8Array | JsonWebKey | { keys: JsonWebKey[] };

/** A vendor's public keys, which sign its license files: vendor.pub as
 * seatctl vendor keygen writes it (PEM "PUBLIC KEY" blocks, one or more: a
 * vendor that changes its key ships both), a JWK or a JWKS, or one
 * base64url 32-byte key. Throws for a key that is not Ed25519 or a private
 * key, never skipping it: a product built with the wrong key must say so,
 * not that every file is forged. */
export class VendorKeys {
  readonly #byKid = new Map<string, KeyObject>();

  constructor(data: VendorKeyData) {
    for (const k of parseKeys(data)) this.#byKid.set(keyId(rawOf(k)), k);
    if (this.#byKid.size === 0) throw new Error("vendor keys: none");
  }

  /** The kids of the keys, sorted. */
  get keyIds(): string[] { return [...this.#byKid.keys()].sort(); }

  /** Checks a license file (site.lic's text, or its JWS alone, as
   * GetSignedLicenseFile answers it): signed (EdDSA, typ
   * seatd-license-file-v1) by the vendor key its kid names, naming an
   * Ed25519 site key, and before its not_after at now. The readable copy of
   * a site.lic is not read: the signed payload is what counts. Throws
   * LicenseFileInvalidError or LicenseFileExpiredError. */
  verifyLicenseFile(file: string | Uint8Array, now: Date | number = Date.now()): LicenseFile {
    const token = signatureBlock(typeof file === "string" ? file : Buffer.from(file).toString("utf8"));
    const parts = token.split(".");
    if (parts.length !== 3) throw new LicenseFileInvalidError("not a license file, nor its JWS");
    const [h, p, s] = parts as [string, string, string];
    let header: Record<string, unknown>;
    try {
      header = json(b64url(h, "header"), "header");
    } catch {
      throw new LicenseFileInvalidError("its JWS header is not base64url JSON");
    }
    if (header.alg !== "EdDSA") throw new LicenseFileInvalidError("not signed with EdDSA");
    if (header.typ !== LICENSE_FILE_TYPE) throw new LicenseFileInvalidError(`typ ${JSON.stringify(header.typ)}, not "${LICENSE_FILE_TYPE}"`);
    const kid = typeof header.kid === "string" ? header.kid : "";
    const key = this.#byKid.get(kid);
    if (!key) throw new LicenseFileInvalidError(`signed by key ${JSON.stringify(header.kid)}, none of the vendor's ${JSON.stringify(this.keyIds)}`);
    let terms: Record<string, unknown>;
    try {
      if (!verify(null, Buffer.from(`${h}.${p}`, "ascii"), key, b64url(s, "signature"))) throw new Error("signature");
      terms = json(b64url(p, "payload"), "payload");
    } catch {
      throw new LicenseFileInvalidError(`the signature does not verify with the vendor's key "${kid}"`);
    }
    return LicenseFile.of(terms, kid, token, msOf(now));
  }
}

function parseKeys(data: VendorKeyData): KeyObject[] {
  if (typeof data !== "string" && !(data instanceof Uint8Array)) return jwkKeys(data);
  const text = (typeof data === "string" ? data : Buffer.from(data).toString("utf8")).trim();
  if (!text) throw new Error("vendor keys: empty");
  if (text.startsWith("-----BEGIN")) {
    const keys: KeyObject[] = [];
    const re = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;
    let end = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      if (text.slice(end, m.index).trim()) throw new Error("vendor keys: text between the PEM blocks");
      if (m[1] !== "PUBLIC KEY") throw new Error(`vendor keys: a PEM "${m[1]}" block (want "PUBLIC KEY"; is this a private key?)`);
      let k: KeyObject;
      try {
        k = createPublicKey(m[0]);
      } catch (e) {
        throw new Error(`vendor keys: ${(e as Error).message}`);
      }
      if (k.asymmetricKeyType !== "ed25519") throw new Error(`vendor keys: a ${k.asymmetricKeyType} key, not Ed25519`);
      keys.push(k);
      end = m.index + m[0].length;
    }
    if (keys.length === 0 || text.slice(end).trim()) throw new Error("vendor keys: a PEM block is cut short or followed by other text");
    return keys;
  }
  if (text.startsWith("{")) {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new Error(`vendor keys: not a JWK or JWKS: ${(e as Error).message}`);
    }
    return jwkKeys(doc as JsonWebKey);
  }
  const raw = /^[A-Za-z0-9_-]+=*$/.test(text) ? Buffer.from(text.replace(/=+$/, ""), "base64url") : Buffer.alloc(0);
  if (raw.length !== 32) throw new Error("vendor keys: neither PEM, JSON (JWK, JWKS) nor a base64url 32-byte Ed25519 key");
  return [createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" })];
}

function jwkKeys(doc: JsonWebKey | { keys: JsonWebKey[] }): KeyObject[] {
  const list = Array.isArray((doc as { keys?: unknown }).keys) ? (doc as { keys: JsonWebKey[] }).keys : [doc as JsonWebKey];
  return list.map((k) => {
    if (typeof k !== "object" || k === null || k.kty !== "OKP" || k.crv !== "Ed25519" || "d" in k || typeof k.x !== "string") {
      throw new Error(`vendor keys: JWK ${JSON.stringify((k as JsonWebKey)?.kid)} is not an Ed25519 public key (or holds a private key)`);
    }
    if (!/^[A-Za-z0-9_-]*$/.test(k.x) || Buffer.from(k.x, "base64url").length !== 32) throw new Error("vendor keys: JWK x is not a 32-byte Ed25519 key");
    return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: k.x }, format: "jwk" });
  });
}

/** The JWS of an armoured document (the lines between its signature
 * armour, joined), or text itself, trimmed (a bare JWS). */
function signatureBlock(text: string): string {
  const at = text.indexOf(SIG_BEGIN);
  if (at < 0) return text.trim();
  const block = text.slice(at + SIG_BEGIN.length);
  const end = block.indexOf(SIG_END);
  return (end < 0 ? block : block.slice(0, end)).replace(/\s+/g, "");
}

function rfc3339(v: unknown, what: string): number {
  const t = typeof v === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(t)) throw new LicenseFileInvalidError(`${what} ${JSON.stringify(v)} is not an RFC 3339 time`);
  return t;
}

/** One license a file grants: its id (the vendor's; the seatd license id is
 * "lic_" and it), its name, and the features of its grants. */
export interface FileLicense {
  id: string;
  name: string;
  features: string[];
}

/** A license file the vendor's keys verified (VendorKeys.verifyLicenseFile):
 * what the vendor sold the site, and the site key that signs its
 * certificates. token is the file's JWS, to store with a borrowed lease's
 * certificate (verifyChainOffline). Unlike seatd, which refuses a field it
 * does not know, a client reads only what it needs: seatd judges the terms,
 * a product whence its seat comes, and keeps working against a later seatd. */
export class LicenseFile {
  /** The site key as a key set: it verifies the certificates and the
   * site's signed list of returned certificates (verifyReturned). */
  readonly signingKeys: SigningKeys;

  private constructor(
    readonly serial: number,
    readonly customer: string,
    readonly issuedAt: Date,
    readonly notAfter: Date,
    readonly siteKeyId: string,
    readonly vendorKeyId: string,
    readonly licenses: readonly FileLicense[],
    readonly token: string,
    siteX: string,
  ) {
    this.signingKeys = new SigningKeys({ keys: [{ kty: "OKP", crv: "Ed25519", x: siteX, kid: siteKeyId }] });
  }

  /** @internal */
  static of(terms: Record<string, unknown>, vendorKid: string, token: string, now: number): LicenseFile {
    const serial = terms.serial;
    if (typeof serial !== "number" || !Number.isSafeInteger(serial) || serial < 1) throw new LicenseFileInvalidError(`serial ${JSON.stringify(serial)}`);
    const site = terms.site_key as Record<string, unknown> | undefined;
    const x = typeof site?.x === "string" && /^[A-Za-z0-9_-]*$/.test(site.x) ? Buffer.from(site.x, "base64url") : Buffer.alloc(0);
    if (!site || site.kty !== "OKP" || site.crv !== "Ed25519" || x.length !== 32) throw new LicenseFileInvalidError("its site_key is not an Ed25519 public key");
    if (site.kid !== keyId(x)) throw new LicenseFileInvalidError(`its site_key's kid ${JSON.stringify(site.kid)} is not the kid of its key`);
    const licenses: FileLicense[] = [];
    for (const l of (Array.isArray(terms.licenses) ? terms.licenses : []) as Record<string, unknown>[]) {
      if (typeof l !== "object" || l === null || typeof l.id !== "string") throw new LicenseFileInvalidError("a license without an id");
      const grants = (Array.isArray(l.grants) ? l.grants : []) as Record<string, unknown>[];
      licenses.push({ id: l.id, name: typeof l.name === "string" ? l.name : "", features: grants.map((g) => (typeof g?.feature === "string" ? g.feature : "")) });
    }
    const f = new LicenseFile(serial, typeof terms.customer === "string" ? terms.customer : "", new Date(rfc3339(terms.issued_at, "issued_at")),
      new Date(rfc3339(terms.not_after, "not_after")), site.kid as string, vendorKid, licenses, token, site.x as string);
    if (now >= f.notAfter.getTime()) throw new LicenseFileExpiredError(`serial ${serial} ended at ${iso(f.notAfter.getTime())} (now ${iso(now)})`);
    return f;
  }

  /** The file's license with the seatd id licenseId ("lic_" and the file's id), or undefined. */
  license(licenseId: string): FileLicense | undefined {
    return this.licenses.find((l) => `lic_${l.id}` === licenseId);
  }

  /** Checks a stored certificate against the file, the last links of the
   * chain: signed by the site key the file names (WrongSiteKeyError),
   * naming the file's serial (WrongLicenseFileError), for a license, and a
   * feature, the file grants (LicenseNotInFileError), signed before the
   * file's not_after and checked before it (LicenseFileExpiredError), not
   * expired at now (CertificateExpiredError). Returns its claims; the
   * caller checks what they must say of it (checkHolder). */
  verify(cert: string, now: Date | number = Date.now()): Claims {
    const t = msOf(now);
    const c = this.#verify(cert, t);
    if (t >= c.expiry.getTime()) throw new CertificateExpiredError(`expired at ${iso(c.expiry.getTime())} (now ${iso(t)})`);
    return c;
  }

  /** @internal verifies the certificate of an answer: the chain (verify),
   * and what SigningKeys.check asks of it. */
  check(cert: string, want: Expectation, now: number): Claims {
    const c = this.#verify(cert, now);
    expect(c, want, now);
    return c;
  }

  #verify(cert: string, now: number): Claims {
    if (!cert) throw new BadCertificateError("none in seatd's answer");
    const parts = typeof cert === "string" ? cert.split(".") : [];
    if (parts.length !== 3) throw new BadCertificateError("not a JWS compact token (three base64url parts)");
    const kid = json(b64url(parts[0]!, "header"), "header").kid;
    if (kid !== this.siteKeyId) {
      throw new WrongSiteKeyError(`signed by key ${JSON.stringify(kid)}, the license file (serial ${this.serial}) names site key "${this.siteKeyId}"`);
    }
    let signed: { raw: Record<string, unknown>; kid: string };
    try {
      signed = this.signingKeys.signed(cert);
    } catch (e) {
      throw new WrongSiteKeyError(`not signed by the site key "${this.siteKeyId}": ${(e as BadCertificateError).problem ?? String(e)}`);
    }
    const c = claimsOf(signed.raw, signed.kid);
    const l = this.license(c.licenseId);
    if (!c.fileSerial) throw new WrongLicenseFileError("it names no license file (a seatd not in locked mode)");
    if (c.fileSerial !== this.serial) throw new WrongLicenseFileError(`it names serial ${c.fileSerial}, the file is serial ${this.serial}`);
    if (!l || l.id !== c.fileLicenseId) throw new LicenseNotInFileError(`license "${c.licenseId}" (file id ${JSON.stringify(c.fileLicenseId)}) is not in file serial ${this.serial}`);
    if (c.feature && !l.features.includes(c.feature)) throw new LicenseNotInFileError(`license "${l.id}" of file serial ${this.serial} grants no feature "${c.feature}"`);
    if (c.issuedAt.getTime() >= this.notAfter.getTime() || now >= this.notAfter.getTime()) {
      throw new LicenseFileExpiredError(`file serial ${this.serial} ended at ${iso(this.notAfter.getTime())} (certificate signed ${iso(c.issuedAt.getTime())}, now ${iso(now)})`);
    }
    return c;
  }
}

/** Checks a stored certificate (a borrowed seat, say) from the vendor's
 * public keys alone, without a network: the license file (site.lic, or the
 * JWS lease.licenseFile gave) with new VendorKeys(vendorKeys), then the
 * certificate against it (LicenseFile.verify). Throws the
 * BadCertificateError of the link that failed (LicenseFileInvalidError,
 * LicenseFileExpiredError, WrongSiteKeyError, WrongLicenseFileError,
 * LicenseNotInFileError, CertificateExpiredError); an Error for vendor keys
 * that do not parse. */
export function verifyChainOffline(cert: string, licenseFile: string | Uint8Array, vendorKeys: VendorKeyData | VendorKeys, now: Date | number = Date.now()): Claims {
  const keys = vendorKeys instanceof VendorKeys ? vendorKeys : new VendorKeys(vendorKeys);
  return keys.verifyLicenseFile(licenseFile, now).verify(cert, now);
}

/** @internal checks certificates with ClientOptions.vendorKeys: keeps the
 * license file in force, fetched from seatd when it has none or a
 * certificate names another serial (a renewal), verified before use. */
export class FileChain {
  #file?: LicenseFile;
  #fetching?: Promise<void>;

  constructor(readonly vendor: VendorKeys, private readonly fetch: () => Promise<string>) {}

  /** undefined when the file kept suits cert; else a promise that fetches
   * the file in force (rejecting with the BadCertificateError why not),
   * to await before check. A certificate that names no serial is checked
   * against the file kept (and refused): fetching could not help it. */
  ready(cert: string, now: number): Promise<void> | undefined {
    const f = this.#file;
    const serial = unverifiedSerial(cert);
    if (f && (serial === f.serial || serial === 0) && now < f.notAfter.getTime()) return undefined;
    this.#fetching ??= this.#refresh(now).finally(() => (this.#fetching = undefined));
    return this.#fetching;
  }

  async #refresh(now: number): Promise<void> {
    let token: string;
    try {
      token = await this.fetch();
    } catch (e) {
      throw new LicenseFileInvalidError(`the license file could not be fetched from seatd: ${(e as Error).message}`);
    }
    this.#file = this.vendor.verifyLicenseFile(token, now);
  }

  /** Verifies cert as LicenseFile.check against the file kept (ready
   * first); returns that file. */
  check(cert: string, want: Expectation, now: number): LicenseFile {
    const f = this.#file;
    if (!f) throw new LicenseFileInvalidError("no license file fetched from seatd");
    f.check(cert, want, now);
    return f;
  }
}

/** The file_serial a certificate claims (0 if none), read only to decide
 * whether to fetch the file again. */
function unverifiedSerial(cert: string): number {
  try {
    const v = JSON.parse(Buffer.from(cert.split(".")[1] ?? "", "base64url").toString("utf8")).file_serial;
    return typeof v === "number" ? v : 0;
  } catch {
    return 0;
  }
}
