// The chain vendor → license file → site key → certificate of a seatd in
// locked mode, against a fake seatd and files signed here; the real
// seatd's chain is checked in client.test.ts.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import {
  BadCertificateError, CertificateExpiredError, Client, LeaseLostError, LicenseFileExpiredError, LicenseFileInvalidError, LicenseNotInFileError, VendorKeys,
  WrongLicenseFileError, WrongSiteKeyError, checkHolder, verifyChainOffline,
} from "../src/index.js";
import { FakeSeatd, Signer, Vendor, certificate, claims, fileTerms, siteSigner } from "./fake.js";
import { until } from "./harness.js";

const fast = { clockCheckMs: 20, backoffBaseMs: 10, backoffMaxMs: 100, reconnectJitterMs: 20, minIntervalMs: 20, lastChanceMs: 1000, callTimeoutMs: 5000 };
const named = [LicenseFileInvalidError, LicenseFileExpiredError, WrongSiteKeyError, WrongLicenseFileError, LicenseNotInFileError];

/** A certificate as a locked seatd signs it: the site key's, naming the
 * file's serial and license. */
function chainedCert(site: Signer, serial = 1, license = "cad", edit?: (c: Record<string, unknown>) => void, deadlineMs = Date.now() + 3600_000): string {
  const c = claims("lease-1", "fp", deadlineMs, "n", true);
  Object.assign(c, { license_id: `lic_${license}`, file_serial: serial, file_license_id: license });
  edit?.(c);
  return certificate(site, c);
}

describe("VendorKeys", () => {
  test("reads vendor.pub in every form a vendor hands it out", () => {
    const a = new Vendor(), b = new Vendor();
    const jwk = (v: Vendor) => ({ kty: "OKP", crv: "Ed25519", x: v.signer.jwk().x! });
    for (const [name, data] of Object.entries({
      PEM: a.pem(), "two PEM blocks": a.pem() + b.pem(), JWK: JSON.stringify(jwk(a)), JWKS: { keys: [jwk(a), jwk(b)] },
      "bare base64url": jwk(a).x + "\n", bytes: Buffer.from(a.pem()),
    })) {
      assert.ok(new VendorKeys(data as never).keyIds.includes(a.kid), name);
    }
  });

  test("refuses what is not an Ed25519 public key", () => {
    const a = new Vendor();
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 });
    for (const [name, data] of Object.entries({
      empty: " \n", RSA: rsa.publicKey.export({ format: "pem", type: "spki" }).toString(),
      "a private key": a.signer.key.export({ format: "pem", type: "pkcs8" }).toString(),
      "a private JWK": JSON.stringify({ ...a.signer.key.export({ format: "jwk" }) }),
      "PEM cut short": a.pem().slice(0, 40), neither: "hello", "a 31-byte key": Buffer.alloc(31).toString("base64url"),
      "PEM then other text": a.pem() + "trailing",
    })) {
      assert.throws(() => new VendorKeys(data), Error, name);
    }
  });
});

describe("license files and the chain", () => {
  const vendor = new Vendor(), site = siteSigner();
  const keys = new VendorKeys(vendor.pem());

  test("verifyLicenseFile: site.lic or its JWS", () => {
    const terms = { ...fileTerms(site.jwk(), 7), a_later_field: true }; // a client reads only what it needs
    const token = vendor.token(terms);
    for (const [name, data] of Object.entries({ "its JWS": token, "site.lic": vendor.file(terms), "with CRLF": Buffer.from(vendor.file(terms).replace(/\n/g, "\r\n")) })) {
      const f = keys.verifyLicenseFile(data);
      assert.deepEqual([f.serial, f.customer, f.siteKeyId, f.vendorKeyId, f.token], [7, "Acme", site.kid, vendor.kid, token], name);
      assert.deepEqual(f.licenses, [{ id: "cad", name: "ACME CAD", features: ["render"] }], name);
      assert.ok(f.license("lic_cad"));
      assert.equal(f.license("cad"), undefined);
    }
  });

  test("verifyLicenseFile refuses, naming the link", () => {
    const terms = fileTerms(site.jwk(), 7);
    const [h, , s] = vendor.token(terms).split(".");
    const otherBody = vendor.token(fileTerms(site.jwk(), 8)).split(".")[1];
    const edited = (edit: (t: Record<string, unknown>) => void) => {
      const t = fileTerms(site.jwk(), 7);
      edit(t);
      return vendor.token(t);
    };
    const cases: [string, string, new (...a: never[]) => BadCertificateError][] = [
      ["another vendor's", new Vendor().token(terms), LicenseFileInvalidError],
      ["another payload under its signature", `${h}.${otherBody}.${s}`, LicenseFileInvalidError],
      ["a usage export's typ", vendor.token(terms, "seatd-usage-export-v1"), LicenseFileInvalidError],
      ["a lease certificate", chainedCert(site), LicenseFileInvalidError],
      ["cut short", vendor.token(terms).slice(0, 60), LicenseFileInvalidError],
      ["not a JWS", "hello", LicenseFileInvalidError],
      ["a site key of another kid", edited((t) => ((t.site_key as Record<string, string>).kid = "other")), LicenseFileInvalidError],
      ["an RSA site key", edited((t) => ((t.site_key as Record<string, string>).kty = "RSA")), LicenseFileInvalidError],
      ["no serial", edited((t) => delete t.serial), LicenseFileInvalidError],
      ["past its not_after", vendor.token(fileTerms(site.jwk(), 7, 2, Date.now() - 1000)), LicenseFileExpiredError],
    ];
    for (const [name, data, want] of cases) {
      assert.throws(() => keys.verifyLicenseFile(data), (err) => {
        assert.ok(err instanceof want, `${name}: ${String(err)}`);
        assert.ok(err instanceof BadCertificateError, name);
        assert.deepEqual(named.filter((e) => err instanceof e), [want], `${name}: one link named`);
        return true;
      });
    }
  });

  test("LicenseFile.verify: the certificate's links, a site key the file does not name refused", () => {
    const f = keys.verifyLicenseFile(vendor.token(fileTerms(site.jwk(), 7)));
    const c = f.verify(chainedCert(site, 7));
    assert.deepEqual([c.fileSerial, c.fileLicenseId, c.licenseId, c.keyId], [7, "cad", "lic_cad", site.kid]);
    checkHolder(c, { licenseKey: "key", fingerprint: "fp" });
    f.verify(chainedCert(site, 7, "cad", (c) => (c.feature = "render"))); // a feature it grants

    const forged = new Signer(site.kid);
    const cases: [string, string, new (...a: never[]) => BadCertificateError][] = [
      ["signed by a site key the file does not name", chainedCert(siteSigner(), 7), WrongSiteKeyError],
      ["another key under the site key's kid", chainedCert(forged, 7), WrongSiteKeyError],
      ["another serial", chainedCert(site, 6), WrongLicenseFileError],
      ["no serial (not locked mode)", chainedCert(site, 7, "cad", (c) => delete c.file_serial), WrongLicenseFileError],
      ["a license the file does not grant", chainedCert(site, 7, "viewer"), LicenseNotInFileError],
      ["a file id that is not its license's", chainedCert(site, 7, "cad", (c) => (c.file_license_id = "viewer")), LicenseNotInFileError],
      ["a feature the file does not grant", chainedCert(site, 7, "cad", (c) => (c.feature = "sim")), LicenseNotInFileError],
      ["signed after the file's not_after", chainedCert(site, 7, "cad", (c) => (c.iat = f.notAfter.getTime() / 1000)), LicenseFileExpiredError],
    ];
    for (const [name, cert, want] of cases) assert.throws(() => f.verify(cert), want, name);
    assert.throws(() => f.verify(chainedCert(site, 7), f.notAfter), LicenseFileExpiredError, "checked at the file's not_after");
    const deadline = Date.now() + 60_000;
    assert.throws(() => f.verify(chainedCert(site, 7, "cad", undefined, deadline), deadline + 1000), CertificateExpiredError);

    // The site's returned list verifies with the site key the file names.
    const list = site.sign({ iss: "seatd", tenant_id: "default", iat: Math.floor(Date.now() / 1000), returned: [{ sub: "lease-1", exp: 1 }] },
      { alg: "EdDSA", kid: site.kid, typ: "seatd-returned+jwt" });
    assert.ok(f.signingKeys.verifyReturned(list, "default").returned.has("lease-1"));
  });

  test("verifyChainOffline: from vendor.pub, site.lic (or the lease's JWS) and the certificate alone", () => {
    const terms = fileTerms(site.jwk(), 3);
    const cert = chainedCert(site, 3);
    for (const file of [vendor.token(terms), vendor.file(terms)]) assert.equal(verifyChainOffline(cert, file, vendor.pem()).fileSerial, 3);
    assert.throws(() => verifyChainOffline(cert, vendor.token(terms), new Vendor().pem()), LicenseFileInvalidError);
    assert.throws(() => verifyChainOffline(chainedCert(siteSigner(), 3), vendor.token(terms), vendor.pem()), WrongSiteKeyError);
    assert.throws(() => verifyChainOffline(cert, vendor.token(terms), "not a key"), (e) => !(e instanceof BadCertificateError));
  });
});

describe("vendorKeys (fake seatd in locked mode)", () => {
  let vendor: Vendor;
  let site: Signer;
  let fake: FakeSeatd;
  const clients: Client[] = [];
  const mk = (autoHeartbeat = true) => {
    const c = new Client(fake.address, { timing: fast, vendorKeys: vendor.pem(), autoHeartbeat });
    clients.push(c);
    return c;
  };
  beforeEach(async () => {
    vendor = new Vendor();
    site = siteSigner();
    fake = await new FakeSeatd(site).start();
    fake.locked = { file: vendor.token(fileTerms(site.jwk(), 1)), serial: 1, license: "cad" };
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    fake.stop();
  });

  for (const unary of [false, true]) {
    test(`every answer chains to the file, fetched once per serial (${unary ? "unary" : "stream"})`, async () => {
      const lease = await mk(!unary).lease({ licenseKey: "key", fingerprint: "fp" });
      assert.equal(lease.licenseFile, fake.locked!.file);
      if (unary) {
        for (let i = 0; i < 3; i++) await lease.heartbeat();
      } else {
        const beats = fake.beats;
        await until(5000, "stream heartbeats", () => fake.beats >= beats + 3);
      }
      assert.equal(lease.lost, false, String(lease.error));
      assert.equal(fake.fileFetches, 1, "the file is fetched once");

      const renewal = vendor.token(fileTerms(site.jwk(), 2));
      fake.locked = { file: renewal, serial: 2, license: "cad" };
      if (unary) await lease.heartbeat();
      await until(5000, "the renewal fetched and named", () => lease.licenseFile === renewal);
      assert.equal(lease.lost, false, String(lease.error));
      assert.equal(fake.fileFetches, 2, "once per serial");
      assert.equal(verifyChainOffline(lease.certificate, lease.licenseFile, vendor.pem()).fileSerial, 2);
      await lease.release();
    });
  }

  const refusals: [string, (f: FakeSeatd) => void, new (...a: never[]) => BadCertificateError][] = [
    ["a site key the file does not name", (f) => (f.signer = siteSigner()), WrongSiteKeyError],
    ["a file of another vendor", (f) => (f.locked!.file = new Vendor().token(fileTerms(site.jwk(), 1))), LicenseFileInvalidError],
    ["a file for another site key", (f) => (f.locked!.file = vendor.token(fileTerms(siteSigner().jwk(), 1))), WrongSiteKeyError],
    ["no file (not locked mode)", (f) => (f.locked = undefined), LicenseFileInvalidError],
    ["a file that does not grant the license", (f) => (f.locked!.license = "viewer"), LicenseNotInFileError],
    ["certificates naming no file", (f) => (f.locked!.serial = 0), WrongLicenseFileError],
  ];
  for (const [name, configure, want] of refusals) {
    test(`refused: ${name}`, async () => {
      configure(fake);
      await assert.rejects(mk().lease({ licenseKey: "key", fingerprint: "fp" }), (err) => {
        assert.ok(err instanceof want, String(err));
        assert.ok(err instanceof LeaseLostError);
        assert.equal((err as BadCertificateError).reason, "LEASE_CERTIFICATE_INVALID");
        return true;
      });
      assert.equal(fake.live(), 0, "the refused seat is given back");
    });
  }

  test("a heartbeat signed by another site key loses the lease", async () => {
    const lease = await mk().lease({ licenseKey: "key", fingerprint: "fp" });
    const beats = fake.beats;
    await until(5000, "heartbeats", () => fake.beats >= beats + 2);
    fake.signer = siteSigner();
    await until(5000, "lease lost", () => lease.lost);
    assert.ok(lease.error instanceof WrongSiteKeyError, String(lease.error));
  });

  test("waitForSeat's grant chains too", async () => {
    const lease = await mk().waitForSeat({ licenseKey: "key", fingerprint: "fp" });
    assert.equal(lease.licenseFile, fake.locked!.file);
    await lease.release();
  });
});
