// Lease certificates against a fake seatd with keys of the test's own; the
// real seatd's certificates are checked in client.test.ts.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { BadCertificateError, CertificateExpiredError, Client, LeaseLostError, SigningKeys, checkHolder, licenseKeyHash, verifyOffline, type ClientOptions } from "../src/index.js";
import { FakeSeatd, Signer, certificate, claims, forgeries, jwks, type Forgery } from "./fake.js";
import { until } from "./harness.js";

const fast = { clockCheckMs: 20, backoffBaseMs: 10, backoffMaxMs: 100, reconnectJitterMs: 20, minIntervalMs: 20, lastChanceMs: 1000, callTimeoutMs: 5000 };

function assertBad(err: unknown): void {
  assert.ok(err instanceof BadCertificateError, `want BadCertificateError, got ${String(err)}`);
  assert.ok(err instanceof LeaseLostError, "a bad certificate is a lost lease");
  assert.equal(err.reason, "LEASE_CERTIFICATE_INVALID");
  assert.ok(err.problem);
}

describe("lease certificates (fake seatd)", () => {
  let signer: Signer;
  let fake: FakeSeatd;
  const clients: Client[] = [];
  const mk = (o: ClientOptions & { verify?: boolean } = {}) => {
    const { verify = true, ...rest } = o;
    const c = new Client(fake.address, { timing: fast, ...(verify ? { signingKeys: jwks(signer) } : {}), ...rest });
    clients.push(c);
    return c;
  };
  beforeEach(async () => {
    signer = new Signer("k1");
    fake = await new FakeSeatd(signer).start();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    fake.stop();
  });

  for (const unary of [false, true]) {
    test(`a verified lease is kept (${unary ? "unary" : "stream"})`, async () => {
      const c = mk({ autoHeartbeat: !unary });
      const lease = await c.lease({ licenseKey: "key", fingerprint: "fp" });
      const first = lease.certificate;
      assert.ok(first);
      if (unary) {
        for (let i = 0; i < 3; i++) await lease.heartbeat();
      } else {
        const beats = fake.beats;
        await until(5000, "stream heartbeats", () => fake.beats >= beats + 3);
      }
      await until(5000, "each answer's certificate is kept", () => lease.certificate !== first);
      assert.equal(lease.lost, false, String(lease.error));
      const got = verifyOffline(lease.certificate, jwks(signer));
      assert.deepEqual([got.leaseId, got.fingerprint, got.licenseId, got.keyId, got.borrowed], [lease.id, "fp", "lic-1", "k1", false]);
      assert.equal(got.nonce.length, 22, "16 random bytes, base64url");
      await lease.release();
    });
  }

  for (const forge of forgeries) {
    test(`acquire refuses a certificate: ${forge}`, async () => {
      fake.forge = forge;
      await assert.rejects(mk().lease({ licenseKey: "key", fingerprint: "fp" }), (err) => (assertBad(err), true));
      assert.equal(fake.live(), 0, "the refused seat is given back");
    });
  }

  test("a server without certificates", async () => {
    fake.signer = undefined;
    await assert.rejects(mk().lease({ licenseKey: "key", fingerprint: "fp" }), BadCertificateError);
    const lease = await mk({ verify: false }).lease({ licenseKey: "key", fingerprint: "fp" });
    assert.equal(lease.certificate, "");
    await lease.release();
  });

  for (const forge of ["missing", "other key", "other nonce", "later exp", "one byte changed"] as const) {
    test(`a bad certificate on the stream loses the lease: ${forge}`, async () => {
      const lease = await mk().lease({ licenseKey: "key", fingerprint: "fp" });
      const beats = fake.beats;
      await until(5000, "heartbeats", () => fake.beats >= beats + 2);
      fake.forge = forge;
      await until(5000, "lease lost", () => lease.lost);
      assertBad(lease.error);
      assert.equal(lease.signal.reason, lease.error);
      await until(5000, "the seat given back", () => fake.live() === 0);
      await lease.release(); // nothing left to release
    });
  }

  test("a heartbeat by hand checks the certificate", async () => {
    const lease = await mk({ autoHeartbeat: false }).lease({ licenseKey: "key", fingerprint: "fp" });
    await lease.heartbeat();
    fake.forge = "other nonce";
    await assert.rejects(lease.heartbeat(), BadCertificateError);
    assert.ok(lease.lost);
  });

  test("a bad certificate is not acquired again", async () => {
    const lease = await mk({ reacquireOnExpiry: true }).lease({ licenseKey: "key", fingerprint: "fp" });
    fake.forge = "other key";
    await until(5000, "lease lost", () => lease.lost);
    assertBad(lease.error);
    assert.equal(fake.leases.size, 1, "an untrusted server gets no second acquisition");
  });

  test("waitForSeat checks the grant", async () => {
    const lease = await mk().waitForSeat({ licenseKey: "key", fingerprint: "fp" });
    assert.ok(lease.certificate);
    await lease.release();
    fake.forge = "unknown kid";
    await assert.rejects(mk().waitForSeat({ licenseKey: "key", fingerprint: "fp" }), BadCertificateError);
    assert.equal(fake.live(), 0);
  });

  test("borrow, verifyOffline, return early", async () => {
    const c = mk();
    const lease = await c.borrow({ licenseKey: "key", fingerprint: "laptop" }, 72 * 3600_000);
    assert.ok(lease.borrowed);
    assert.equal(lease.keeper, undefined, "a borrowed lease needs no heartbeats");
    const got = verifyOffline(lease.certificate, jwks(signer), Date.now() + 71 * 3600_000);
    assert.ok(got.borrowed);
    assert.deepEqual([got.fingerprint, got.licenseId, got.leaseId], ["laptop", "lic-1", lease.id]);
    assert.throws(() => verifyOffline(lease.certificate, jwks(signer), got.expiry), CertificateExpiredError);
    await c.releaseSeat(lease.id, lease.token); // after a restart: by id and token
    assert.equal(fake.live(), 0);
    await assert.rejects(c.borrow({ licenseKey: "key" }, 0), RangeError);
  });

  test("borrow refuses what it could not store", async () => {
    fake.lend = false;
    await assert.rejects(mk({ verify: false }).borrow({ licenseKey: "key", fingerprint: "laptop" }, 3600_000), BadCertificateError);
    assert.equal(fake.live(), 0);
    fake.lend = true;
    fake.signer = undefined;
    await assert.rejects(mk({ verify: false }).borrow({ licenseKey: "key", fingerprint: "laptop" }, 3600_000), BadCertificateError);
    assert.equal(fake.live(), 0);
  });

  // With signingKeys every request carries a fresh nonce (acquire, every
  // heartbeat on the stream and unary, the wait), so every answer brings a
  // certificate to check. Without, requests carry none, and the fake (signing
  // as seatd does) signs nothing for them; but a borrow always gets a
  // certificate, and its request carries a nonce for the certificate to repeat.
  for (const verify of [false, true]) {
    test(`a nonce only when verifying (${verify ? "verifying" : "unchecked"}), and with a borrow`, async () => {
      const c = mk({ verify });
      const lease = await c.lease({ licenseKey: "key", fingerprint: "fp" });
      const beats = fake.beats;
      await until(5000, "stream heartbeats", () => fake.beats >= beats + 2);
      await lease.heartbeat(); // unary
      const waited = await c.waitForSeat({ licenseKey: "key", fingerprint: "fp-2" });
      assert.equal(lease.lost, false, String(lease.error));
      assert.equal(Boolean(lease.certificate), verify, "no nonce, no certificate");
      assert.equal(Boolean(waited.certificate), verify, "no nonce, no certificate");
      await waited.release();
      await lease.release();

      const sent = new Set<string>();
      for (const rpc of ["acquire", "stream", "heartbeat", "wait"]) {
        const seen = fake.nonces[rpc] ?? [];
        assert.ok(seen.length > 0, `no ${rpc} request seen`);
        for (const n of seen) {
          if (!verify) {
            assert.equal(n, "", `a ${rpc} request without signingKeys carries no nonce`);
            continue;
          }
          assert.equal(n.length, 22, `${rpc}: 16 random bytes, base64url`);
          assert.ok(!sent.has(n), `${rpc}: nonce ${n} sent twice`);
          sent.add(n);
        }
      }

      // A borrow sends a nonce, checked or not, and its certificate repeats it.
      const borrowed = await c.borrow({ licenseKey: "key", fingerprint: "laptop" }, 3600_000);
      const nonce = fake.nonces.acquire!.at(-1)!;
      assert.equal(nonce.length, 22);
      assert.ok(!sent.has(nonce), "a fresh nonce");
      assert.equal(verifyOffline(borrowed.certificate, jwks(signer)).nonce, nonce);
      await c.releaseSeat(borrowed.id, borrowed.token);
    });
  }

  test("fetchSigningKeys", async () => {
    const got = JSON.parse(await mk({ verify: false }).fetchSigningKeys());
    assert.deepEqual(got, { keys: [signer.jwk()] });
    assert.deepEqual(new SigningKeys(got).keyIds, ["k1"]);
  });
});

describe("verifyOffline", () => {
  test("checks signature, kid, alg and time", () => {
    const signer = new Signer("k1");
    const other = new Signer("k2");
    const deadline = Date.now() + 3600_000;
    const good = certificate(signer, claims("lease-1", "fp", deadline, "n", true));
    const got = verifyOffline(good, jwks(signer));
    assert.deepEqual(got, {
      issuer: "seatd", leaseId: "lease-1", tenantId: "default", licenseId: "lic-1", fingerprint: "fp",
      user: "", hostname: "", boundTo: "fingerprint", licenseKeySha256: licenseKeyHash("key"),
      issuedAt: got.issuedAt, expiry: new Date(Math.floor(deadline / 1000) * 1000), borrowed: true, nonce: "n", keyId: "k1",
      feature: "", version: "", grantId: "", grantVersion: "", // a lease of the base pool
    });
    checkHolder(got, { licenseKey: "key", fingerprint: "fp" });
    verifyOffline(good, jwks(signer, other)); // after a rotation, more keys
    assert.throws(() => verifyOffline(good, jwks(other)), BadCertificateError, "another tenant's keys");
    for (const forge of ["other key", "unknown kid", "one byte changed", "alg none", "missing"] as const) {
      assert.throws(() => verifyOffline(certificate(signer, claims("lease-1", "fp", deadline, "n"), forge), jwks(signer)), BadCertificateError, forge);
    }
    for (const junk of ["x", "a.b.c", good + "x", good.slice(0, -2), good.replace(".", ".=")]) {
      assert.throws(() => verifyOffline(junk, jwks(signer)), BadCertificateError, junk);
    }
    const exp = Math.floor(deadline / 1000) * 1000;
    assert.throws(() => verifyOffline(good, jwks(signer), exp), CertificateExpiredError);
    verifyOffline(good, jwks(signer), new Date(exp - 1));
  });

  test("checkHolder: this client's license key and identity only", () => {
    // A certificate is this client's only when it names the hash of the
    // license key it uses and its own identity, the one its lease is bound
    // to; an older seatd's (neither claim) still verifies offline.
    const signer = new Signer("k1");
    const deadline = Date.now() + 3600_000;
    const claimsOf = (forge?: Forgery) => verifyOffline(certificate(signer, claims("lease-1", "fp", deadline, "n"), forge), jwks(signer));
    const me = { licenseKey: "key", fingerprint: "fp", user: "ann", hostname: "box" };
    checkHolder(claimsOf(), me);
    for (const forge of ["relayed", "other fingerprint", "other license key", "unbound", "other user"] as const) {
      assert.throws(() => checkHolder(claimsOf(forge), me), BadCertificateError, forge);
    }
    assert.throws(() => checkHolder(claimsOf(), { ...me, licenseKey: "another-key" }), BadCertificateError);
    const shared = claimsOf("other user"); // bound to user bob, fingerprint fp
    checkHolder(shared, { licenseKey: "key", fingerprint: "bobs-laptop", user: "bob" });
    assert.throws(() => checkHolder(shared, { licenseKey: "key", fingerprint: "fp" }), BadCertificateError, "no user sent");
    const byHost = { ...shared, boundTo: "hostname", hostname: "box" };
    checkHolder(byHost, me);
    assert.throws(() => checkHolder(byHost, { licenseKey: "key", fingerprint: "fp", user: "bob", hostname: "other-box" }), BadCertificateError);
    assert.throws(() => checkHolder({ ...shared, boundTo: "group" }, me), BadCertificateError, "an unknown binding");
    assert.throws(() => checkHolder({ ...shared, boundTo: "toString" }, me), BadCertificateError, "not a property of any object");
  });

  test("SigningKeys refuses what cannot verify", () => {
    const signer = new Signer("k1");
    assert.deepEqual(new SigningKeys(jwks(signer)).keyIds, ["k1"]);
    const jwk = signer.jwk();
    for (const bad of ["{", '{"keys": []}', JSON.stringify({ keys: [{ kty: "RSA", kid: "r" }] }),
      JSON.stringify({ keys: [{ ...jwk, d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" }] }),
      JSON.stringify({ keys: [jwk, jwk] }), JSON.stringify({ keys: [{ ...jwk, x: "short" }] })]) {
      assert.throws(() => new SigningKeys(bad), Error, bad);
    }
    assert.deepEqual(new SigningKeys({ keys: [{ kty: "RSA", kid: "r", n: "AQAB", e: "AQAB" }, jwk] }).keyIds, ["k1"]);
  });
});
