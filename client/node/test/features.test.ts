// Features and versions against a fake seatd: what the client sends, what a
// lease and its certificate say, refusals as typed errors, and the answers
// it must not trust. The real seatd's are in client.test.ts ("features: …").
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { BadCertificateError, Client, FeatureNotLicensedError, GrantNotStartedError, SeatdError, SigningKeys, VersionNotLicensedError, checkHolder, compareVersions, verifyOffline, type ClientOptions } from "../src/index.js";
import { FakeSeatd, GRANT_EXPIRES_AT, GRANT_ID, GRANT_VERSION, Signer, certificate, claims, featureForgeries, jwks } from "./fake.js";
import { until } from "./harness.js";

const fast = { clockCheckMs: 20, backoffBaseMs: 10, backoffMaxMs: 100, reconnectJitterMs: 20, minIntervalMs: 20, lastChanceMs: 1000, callTimeoutMs: 5000 };

describe("features (fake seatd)", () => {
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

  for (const verify of [true, false]) {
    test(`a lease of a feature says its feature, version, grant and the grant's expiry (${verify ? "verified" : "unverified"})`, async () => {
      const lease = await mk({ verify }).lease({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2025.1" });
      assert.deepEqual([lease.feature, lease.version, lease.grantId], ["render", "2025.1", GRANT_ID]);
      assert.equal(lease.grantExpiresAt?.getTime(), GRANT_EXPIRES_AT * 1000);
      const beats = fake.beats;
      await until(5000, "stream heartbeats", () => fake.beats >= beats + 3);
      assert.equal(lease.lost, false, String(lease.error));
      await lease.release();
    });
  }

  test("a base lease has no feature", async () => {
    const lease = await mk().lease({ licenseKey: "key", fingerprint: "fp" });
    assert.deepEqual([lease.feature, lease.version, lease.grantId, lease.grantExpiresAt], ["", "", "", undefined]);
    const c = verifyOffline(lease.certificate, jwks(signer));
    assert.deepEqual([c.feature, c.version, c.grantId, c.grantExpiresAt], ["", "", "", undefined]);
    await lease.release();
  });

  test("compareVersions compares numbers component by component, as seatd", () => {
    for (const [a, b, want] of [["1.9", "1.10", -1], ["3", "3.0", 0], ["03", "3", 0], ["3.0.1", "3", 1], ["2024.2", "2024.10", -1]] as const) {
      assert.equal(compareVersions(a, b), want, `${a} ${b}`);
      assert.equal(compareVersions(b, a), want === 0 ? 0 : -want, `${b} ${a}`);
    }
  });

  test("verifyOffline exposes feature, version, grantId, grantExpiresAt and grantVersion", async () => {
    const lease = await mk().lease({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2025.1" });
    const c = verifyOffline(lease.certificate, jwks(signer));
    assert.deepEqual([c.feature, c.version, c.grantId, c.grantExpiresAt?.getTime(), c.grantVersion], ["render", "2025.1", GRANT_ID, GRANT_EXPIRES_AT * 1000, GRANT_VERSION]);
    // The seat covers any version up to the grant's: a lease handed back to
    // a request for another version it covers is still this client's.
    for (const covered of ["2025.1", "2024", "2030", "2030.0", ""]) {
      checkHolder(c, { licenseKey: "key", fingerprint: "fp", feature: "render", version: covered });
    }
    for (const other of [{}, { feature: "sim", version: "2025.1" }, { feature: "render", version: "2030.1" }]) {
      // a seat of another module, or past the grant, unlocks nothing
      assert.throws(() => checkHolder(c, { licenseKey: "key", fingerprint: "fp", ...other }), BadCertificateError, JSON.stringify(other));
    }
    await lease.release();
  });

  test("lease, waitForSeat and borrow send feature and version; reacquireOnExpiry asks for the same feature again", async () => {
    const c = mk({ verify: false, reacquireOnExpiry: true });
    for (const lease of [
      await c.lease({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2024" }),
      await c.waitForSeat({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2024" }),
      await c.borrow({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2024" }, 60_000),
    ]) {
      assert.deepEqual([lease.feature, lease.version], ["render", "2024"]);
      await lease.release();
    }
    assert.deepEqual(fake.requests.map((r) => [r.feature, r.version]), [["render", "2024"], ["render", "2024"], ["render", "2024"]]);
    const lease = await c.lease({ licenseKey: "key", fingerprint: "fp", feature: "sim" });
    const old = lease.id;
    Object.assign(fake.leases.get(old)!, { live: false, expired: true });
    await until(5000, "acquired again", () => lease.id !== old);
    assert.deepEqual([lease.feature, lease.grantId, fake.leases.get(lease.id)?.feature], ["sim", GRANT_ID, "sim"]);
    await lease.release();
  });

  test("FEATURE_NOT_LICENSED, VERSION_NOT_LICENSED and GRANT_NOT_STARTED are typed errors with the reason; waitForSeat throws them at once", async () => {
    const c = mk({ verify: false });
    fake.refuse = ["FEATURE_NOT_LICENSED", { feature: "sim" }];
    await assert.rejects(c.lease({ licenseKey: "key", fingerprint: "fp", feature: "sim" }), (err) => {
      assert.ok(err instanceof FeatureNotLicensedError, String(err));
      assert.ok(!(err instanceof VersionNotLicensedError));
      assert.deepEqual([err.reason, err.code, err.feature], ["FEATURE_NOT_LICENSED", grpc.status.FAILED_PRECONDITION, "sim"]);
      return true;
    });
    await assert.rejects(c.waitForSeat({ licenseKey: "key", fingerprint: "fp", feature: "sim" }, { signal: AbortSignal.timeout(5000) }), FeatureNotLicensedError);

    fake.refuse = ["VERSION_NOT_LICENSED", { feature: "render", version: "2026", highest_version: "2025" }];
    await assert.rejects(c.lease({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2026" }), (err) => {
      assert.ok(err instanceof VersionNotLicensedError, String(err));
      assert.ok(err instanceof FeatureNotLicensedError, "not licensed at that version is not licensed");
      assert.deepEqual([err.reason, err.feature, err.version, err.highestVersion], ["VERSION_NOT_LICENSED", "render", "2026", "2025"]);
      return true;
    });

    fake.refuse = ["GRANT_NOT_STARTED", { feature: "render", starts_at: "2030-01-01T00:00:00Z" }];
    await assert.rejects(c.lease({ licenseKey: "key", fingerprint: "fp", feature: "render" }), (err) => {
      assert.ok(err instanceof GrantNotStartedError, String(err));
      assert.deepEqual([err.reason, err.feature, err.startsAt?.getTime()], ["GRANT_NOT_STARTED", "render", GRANT_EXPIRES_AT * 1000]);
      return true;
    });
    assert.equal(fake.live(), 0);
  });

  for (const verify of [true, false]) {
    test(`a seatd without features (a base seat for a feature) is refused and the seat given back (${verify ? "verified" : "unverified"})`, async () => {
      fake.features = false;
      await assert.rejects(mk({ verify }).lease({ licenseKey: "key", fingerprint: "fp", feature: "render" }), (err) => {
        assert.ok(err instanceof SeatdError, String(err));
        assert.equal(err.code, grpc.status.UNIMPLEMENTED);
        assert.match(err.message, /render/);
        return true;
      });
      await assert.rejects(mk({ verify }).waitForSeat({ licenseKey: "key", fingerprint: "fp", feature: "render" }), (err: SeatdError) => err.code === grpc.status.UNIMPLEMENTED);
      assert.equal(fake.live(), 0);
      assert.equal(fake.leases.size, 2, "a refused grant is not polled for again");
      const base = await mk({ verify }).lease({ licenseKey: "key", fingerprint: "fp" }); // the base pool is fine
      await base.release();
    });
  }

  for (const forge of featureForgeries) {
    test(`a certificate must name the feature, version and grant: ${forge}`, async () => {
      fake.forge = forge;
      await assert.rejects(mk().lease({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2025" }), BadCertificateError);
      assert.equal(fake.live(), 0, "the refused seat is given back");
      fake.forge = undefined;
      const lease = await mk().lease({ licenseKey: "key", fingerprint: "fp", feature: "render", version: "2025" });
      fake.forge = forge;
      await until(5000, "lease lost", () => lease.lost);
      assert.ok(lease.error instanceof BadCertificateError, String(lease.error));
      await until(5000, "the seat given back", () => fake.live() === 0);
    });
  }

  test("the claims of a grant must be well formed", () => {
    const keys = new SigningKeys(jwks(signer));
    const c = claims("lease-1", "fp", Date.now() + 60_000, "n", false, "render", "1");
    assert.throws(() => keys.verify(certificate(signer, { ...c, grant_expires_at: "2030-01-01" })), BadCertificateError);
    assert.throws(() => keys.verify(certificate(signer, { ...c, feature: 7 })), BadCertificateError);
  });
});
