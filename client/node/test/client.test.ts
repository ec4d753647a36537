// The TypeScript client against a real seatd, embedded and distributed
// (each mode its own backend; the tests of a mode share one instance unless
// they need their own). Every row of the behaviour table in docs/clients/index.md names the
// test that covers it here.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { Backend, modes, newGrant, newLicense, operatorKey, sleep, until, type Seatd } from "./harness.js";
import { durationFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { AdminClient, BadCertificateError, CertificateExpiredError, Client, ExcludedError, FeatureNotLicensedError, LeaseExpiredError, NoSeatError, NotAllowedError, SeatsReservedError, UserLimitError, LeaseReleasedError, LeaseRevokedError, LicenseNotFoundError, SeatsExhaustedError, SigningKeys, VersionNotLicensedError, checkHolder, seatdv1, serviceConfig, verifyOffline, type Log, type SeatdError } from "../src/index.js";

/** A log that keeps what it hears, to assert on reconnects and fallbacks. */
function recorder(): Log & { messages: string[] } {
  const messages: string[] = [];
  return Object.assign<Log, { messages: string[] }>((_level, message, fields) => {
    messages.push(message);
    if (process.env.SEATD_TEST_VERBOSE) console.log(message, fields);
  }, { messages });
}

async function activeLeases(s: Seatd, licenseId: string): Promise<string[]> {
  const admin = s.admin();
  try {
    return (await admin.listLeases({ licenseId, state: seatdv1.LeaseState.ACTIVE })).leases.map((l) => l.id).sort();
  } finally {
    admin.close();
  }
}

async function leaseState(s: Seatd, licenseId: string, leaseId: string): Promise<seatdv1.LeaseState | undefined> {
  const admin = s.admin();
  try {
    const resp = await admin.listLeases({ licenseId });
    return resp.leases.find((l) => l.id === leaseId)?.state;
  } finally {
    admin.close();
  }
}

test("serviceConfig is client/service_config.json", () => {
  const goCfg = readFileSync(resolve(import.meta.dirname, "../../../service_config.json"), "utf8");
  assert.deepEqual(JSON.parse(serviceConfig), JSON.parse(goCfg));
});

for (const mode of modes) {
  describe(mode, () => {
    const backend = new Backend(mode);
    let s: Seatd;
    let client: Client;
    const clients: Client[] = [];
    /** mk makes a client that is closed when the mode's tests end, even after a failure. */
    const mk = (...a: ConstructorParameters<typeof Client>) => {
      const c = new Client(...a);
      clients.push(c);
      return c;
    };
    before(async () => {
      s = await backend.start();
      client = mk(s.grpcAddr);
    });
    after(async () => {
      await Promise.all(clients.map((c) => c.close()));
      await backend.close();
    });

    test("acquire, heartbeat, release (await using)", async () => {
      const lic = await newLicense(s, 2, 60_000);
      let id: string;
      {
        await using lease = await client.lease({ licenseKey: lic.key, fingerprint: "fp-1" });
        id = lease.id;
        assert.match(lease.id, /^lse_/);
        assert.equal(lease.licenseId, lic.id);
        assert.equal(lease.seatsInUse, 1);
        assert.equal(lease.seatLimit, 2);
        assert.ok(lease.heartbeatIntervalMs > 0);
        const before = lease.expiresAt.getTime();
        await sleep(20);
        await lease.heartbeat();
        assert.ok(lease.expiresAt.getTime() > before, "a heartbeat moves the deadline");
        assert.equal(await leaseState(s, lic.id, id), seatdv1.LeaseState.ACTIVE);
      }
      assert.equal(await leaseState(s, lic.id, id), seatdv1.LeaseState.RELEASED, "leaving the block released the seat");
    });

    test("the lease survives 3×TTL of background heartbeats", async () => {
      const ttl = 2000;
      const lic = await newLicense(s, 1, ttl);
      await using lease = await client.lease({ licenseKey: lic.key });
      const first = lease.expiresAt.getTime();
      await sleep(3 * ttl + 500);
      assert.equal(lease.lost, false);
      assert.ok(lease.expiresAt.getTime() > first + 2 * ttl, "the deadline kept moving");
      assert.equal(await leaseState(s, lic.id, lease.id), seatdv1.LeaseState.ACTIVE);
    });

    test("a revoke fires lease.signal within one interval", async () => {
      const lic = await newLicense(s, 1, 6000);
      await using lease = await client.lease({ licenseKey: lic.key });
      const first = lease.expiresAt.getTime();
      await until(5000, "a first heartbeat (the stream is open)", () => lease.expiresAt.getTime() > first);
      const admin = s.admin();
      const revoked = Date.now();
      await admin.revokeLease({ leaseId: lease.id, reason: "test" });
      admin.close();
      await until(lease.heartbeatIntervalMs, "the lost signal", () => lease.signal.aborted);
      const took = Date.now() - revoked;
      assert.ok(lease.error instanceof LeaseRevokedError, String(lease.error));
      assert.equal(lease.reason, "LEASE_REVOKED");
      assert.ok(took <= lease.heartbeatIntervalMs, `lost after ${took} ms`);
    });

    test("a full license: SeatsExhaustedError with in-use and limit; unknown key: LicenseNotFoundError; a released lease: LeaseReleasedError", async () => {
      const lic = await newLicense(s, 1, 60_000);
      await using held = await client.lease({ licenseKey: lic.key, fingerprint: "first" });
      await assert.rejects(client.lease({ licenseKey: lic.key, fingerprint: "second" }), (err) => {
        assert.ok(err instanceof SeatsExhaustedError);
        assert.equal(err.reason, "SEATS_EXHAUSTED");
        assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED);
        assert.equal(err.seatsInUse, 1);
        assert.equal(err.seatLimit, 1);
        return true;
      });
      await assert.rejects(client.lease({ licenseKey: "slk_unknown" }), LicenseNotFoundError);
      const manual = mk(s.grpcAddr, { autoHeartbeat: false });
      const other = await newLicense(s, 1, 60_000);
      const l = await manual.lease({ licenseKey: other.key });
      await l.release();
      await assert.rejects(l.heartbeat(), LeaseReleasedError);
      await manual.close();
      assert.equal(held.lost, false);
    });

    test("one idempotency key per acquisition: a retry gets the same lease", async () => {
      const lic = await newLicense(s, 5, 60_000, { leasingStrategy: seatdv1.LeasingStrategy.PER_ACQUISITION });
      const manual = mk(s.grpcAddr, { autoHeartbeat: false });
      const a = await manual.lease({ licenseKey: lic.key, idempotencyKey: "retry-1" });
      const b = await manual.lease({ licenseKey: lic.key, idempotencyKey: "retry-1" });
      const c = await manual.lease({ licenseKey: lic.key });
      assert.equal(b.id, a.id, "same key, same lease");
      assert.notEqual(c.id, a.id, "a new acquisition, a new key and a new seat");
      await b.release();
      await c.release();
      await manual.close();
    });

    test("waitForSeat gets the seat when another client releases", async () => {
      const lic = await newLicense(s, 1, 60_000);
      const holder = await client.lease({ licenseKey: lic.key, fingerprint: "holder" });
      const waiter = mk(s.grpcAddr);
      const positions: number[] = [];
      const waiting = waiter.waitForSeat({ licenseKey: lic.key, fingerprint: "waiter" }, { onPosition: (p) => positions.push(p) });
      await until(10_000, "a queue position", () => positions.length > 0);
      assert.equal(positions[0], 1);
      await holder.release();
      const lease = await waiting;
      assert.equal(lease.lost, false);
      assert.equal(await leaseState(s, lic.id, lease.id), seatdv1.LeaseState.ACTIVE);
      await lease.release();
      await waiter.close();
    });

    test("waitForSeat stops when its signal aborts", async () => {
      const lic = await newLicense(s, 1, 60_000);
      await using holder = await client.lease({ licenseKey: lic.key, fingerprint: "holder" });
      const started = Date.now();
      await assert.rejects(client.waitForSeat({ licenseKey: lic.key, fingerprint: "impatient" }, { signal: AbortSignal.timeout(500) }), { name: "TimeoutError" });
      assert.ok(Date.now() - started < 5000);
      assert.equal(holder.lost, false);
    });

    test("without a heartbeat stream (UNIMPLEMENTED) the keeper falls back to unary heartbeats", async () => {
      // An interceptor answers HeartbeatStream with UNIMPLEMENTED, as a
      // server without the stream would, and passes every other call on.
      const noStream: grpc.Interceptor = (options, next) => {
        if (!options.method_definition.path.endsWith("/HeartbeatStream")) return new grpc.InterceptingCall(next(options));
        const nowhere = { start() {}, sendMessage() {}, sendMessageWithContext() {}, startRead() {}, halfClose() {}, cancelWithStatus() {}, getPeer: () => "", getAuthContext: () => null };
        return new grpc.InterceptingCall(nowhere as never, {
          start: (_md, listener) => setImmediate(() => listener.onReceiveStatus({ code: grpc.status.UNIMPLEMENTED, details: "unknown method HeartbeatStream", metadata: new grpc.Metadata() })),
        });
      };
      const ttl = 2000;
      const log = recorder();
      const c = mk(s.grpcAddr, { log, channelOptions: { interceptors: [noStream] } as grpc.ChannelOptions });
      const lic = await newLicense(s, 1, ttl);
      const lease = await c.lease({ licenseKey: lic.key });
      const first = lease.expiresAt.getTime();
      await sleep(2 * ttl);
      assert.equal(lease.lost, false, String(lease.error) + log.messages.join("\n"));
      assert.ok(lease.expiresAt.getTime() > first + ttl / 2, "unary heartbeats moved the deadline");
      assert.ok(log.messages.includes("seatd has no heartbeat stream; using unary heartbeats"), log.messages.join("\n"));
      await lease.release();
      await c.close();
    });

    test("after a sleep past the deadline: lost (LeaseExpiredError), or acquired again with reacquireOnExpiry", async () => {
      const ttl = 1500;
      const lic = await newLicense(s, 2, ttl);
      const plain = mk(s.grpcAddr);
      const again = mk(s.grpcAddr, { reacquireOnExpiry: true });
      const lost = await plain.lease({ licenseKey: lic.key, fingerprint: "plain" });
      const kept = await again.lease({ licenseKey: lic.key, fingerprint: "again" });
      const oldId = kept.id;
      // Freeze this process (timers, sockets) past the deadline, as a laptop lid would.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2 * ttl);
      await until(10_000, "the loss to be noticed", () => lost.lost);
      assert.ok(lost.error instanceof LeaseExpiredError, String(lost.error));
      await until(10_000, "a new lease", () => kept.id !== oldId);
      assert.equal(kept.lost, false);
      assert.equal(await leaseState(s, lic.id, kept.id), seatdv1.LeaseState.ACTIVE);
      await kept.release();
      await plain.close();
      await again.close();
    });

    test("TLS: lease and admin calls over a TLS port", async () => {
      const dir = mkdtempSync(join(tmpdir(), "seatd-tls-"));
      execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=seatd-test",
        "-addext", "subjectAltName=DNS:seatd.test,IP:127.0.0.1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
      const t = await backend.start("--tls-cert-file", join(dir, "cert.pem"), "--tls-key-file", join(dir, "key.pem"));
      const tls = { ca: readFileSync(join(dir, "cert.pem")) };
      const admin = new AdminClient(t.grpcAddr, { key: operatorKey, tls });
      const lic = (await admin.createLicense({ license: { name: "tls", seats: 1 } })).license!;
      const c = mk(t.grpcAddr, { tls });
      const lease = await c.lease({ licenseKey: lic.key });
      await lease.heartbeat();
      await lease.release();
      await c.close();
      const plain = mk(t.grpcAddr);
      await assert.rejects(plain.lease({ licenseKey: lic.key }), (err: { code: number }) => err.code === grpc.status.UNAVAILABLE);
      await plain.close();
      admin.close();
      await t.stop();
    });

    test("certificates: verified with the JWKS from /v1/tenants/default/jwks.json; another tenant's JWKS refuses them", async () => {
      const jwks = await (await fetch(`http://${s.httpAddr}/v1/tenants/default/jwks.json`)).text();
      assert.deepEqual(new SigningKeys(await client.fetchSigningKeys()).keyIds, new SigningKeys(jwks).keyIds);
      const lic = await newLicense(s, 2, 2000);
      const c = mk(s.grpcAddr, { signingKeys: jwks });
      const lease = await c.lease({ licenseKey: lic.key, fingerprint: "fp-1" });
      const got = verifyOffline(lease.certificate, jwks);
      assert.deepEqual([got.leaseId, got.licenseId, got.fingerprint, got.tenantId, got.borrowed], [lease.id, lic.id, "fp-1", "default", false]);
      const first = lease.certificate;
      await until(5000, "a verified heartbeat's certificate", () => lease.certificate !== first);
      const holder = await c.lease({ licenseKey: lic.key, fingerprint: "holder" });
      const waiting = c.waitForSeat({ licenseKey: lic.key, fingerprint: "waiter" });
      await holder.release();
      const waited = await waiting;
      verifyOffline(waited.certificate, jwks);
      await waited.release();
      assert.equal(lease.lost, false, String(lease.error));
      await lease.release();

      const admin = s.admin();
      const tenantId = `node-${mode.slice(0, 4)}`;
      await admin.createTenant({ tenant: { id: tenantId, name: "other" } });
      admin.close();
      const otherJwks = await (await fetch(`http://${s.httpAddr}/v1/tenants/${tenantId}/jwks.json`)).text();
      const wrong = mk(s.grpcAddr, { signingKeys: otherJwks });
      await assert.rejects(wrong.lease({ licenseKey: lic.key, fingerprint: "fp-2" }), (err) => err instanceof BadCertificateError && err.reason === "LEASE_CERTIFICATE_INVALID");
      const listing = s.admin();
      const active = await listing.listLeases({ licenseId: lic.id, state: seatdv1.LeaseState.ACTIVE });
      listing.close();
      assert.equal(active.leases.length, 0, "the refused seat was given back");
    });

    test("borrow: verifyOffline until the deadline, neither revocable nor returned early", async () => {
      const jwks = await (await fetch(`http://${s.httpAddr}/v1/tenants/default/jwks.json`)).text();
      const admin = s.admin();
      const lic = (await admin.createLicense({ license: { name: "borrowable", seats: 2, maxBorrowDuration: durationFromMs(3600_000), maxBorrowedSeats: 1 } })).license!;
      const c = mk(s.grpcAddr, { signingKeys: jwks });
      const lease = await c.borrow({ licenseKey: lic.key, fingerprint: "travel-laptop" }, 1800_000);
      assert.ok(lease.borrowed);
      const got = verifyOffline(lease.certificate, jwks, Date.now() + 1700_000);
      assert.ok(got.borrowed);
      checkHolder(got, { licenseKey: lic.key, fingerprint: "travel-laptop" }); // bound to this machine and license key
      assert.throws(() => checkHolder(got, { licenseKey: lic.key, fingerprint: "another-laptop" }), BadCertificateError, "copied to another machine");
      assert.deepEqual([got.fingerprint, got.licenseId], ["travel-laptop", lic.id]);
      assert.throws(() => verifyOffline(lease.certificate, jwks, got.expiry), CertificateExpiredError);
      await assert.rejects(c.borrow({ licenseKey: lic.key, fingerprint: "second" }, 60_000), (err: SeatdError) => err.reason === "BORROW_LIMIT_REACHED");
      await assert.rejects(admin.revokeLease({ leaseId: lease.id, reason: "test" }), (err: SeatdError) => err.reason === "LEASE_BORROWED");
      assert.equal((await admin.listLeases({ licenseId: lic.id, state: seatdv1.LeaseState.ACTIVE })).leases.length, 1, "the borrowed lease keeps its seat");
      // No early return: the certificate stays valid offline until its deadline.
      await assert.rejects(c.releaseSeat(lease.id, lease.token), (err: SeatdError) => err.reason === "LEASE_BORROWED");
      assert.equal((await admin.listLeases({ licenseId: lic.id, state: seatdv1.LeaseState.ACTIVE })).leases.length, 1, "held until its deadline");
      const plain = await newLicense(s, 1, 60_000);
      await assert.rejects(c.borrow({ licenseKey: plain.key }, 60_000), (err: SeatdError) => err.reason === "BORROW_NOT_ALLOWED");
      admin.close();
    });

    test("features: a request both render grants cover takes the one expiring first, a 2025 request the newer; dedupe per feature; SeatsExhaustedError names the feature", async () => {
      const lic = await newLicense(s, 1, 60_000);
      const r2024 = await newGrant(s, lic.id, "render", "2024", 1, 86400_000);
      const r2025 = await newGrant(s, lic.id, "render", "2025", 1, 365 * 86400_000);
      const c = mk(s.grpcAddr, { autoHeartbeat: false });
      const base = await c.lease({ licenseKey: lic.key, fingerprint: "fp-1" });
      assert.deepEqual([base.feature, base.version, base.grantId, base.grantExpiresAt], ["", "", "", undefined]);
      const old = await c.lease({ licenseKey: lic.key, fingerprint: "fp-1", feature: "render", version: "2023.4" });
      assert.notEqual(old.id, base.id, "base and render seats of one machine are two leases");
      assert.deepEqual([old.feature, old.version, old.grantId, old.licenseId], ["render", "2023.4", r2024.id, lic.id]);
      assert.equal(old.grantExpiresAt?.getTime(), timestampMs(r2024.expiresAt!));
      assert.deepEqual([old.seatsInUse, old.seatLimit], [1, 1], "the grant's");
      const recent = await c.lease({ licenseKey: lic.key, fingerprint: "fp-2", feature: "render", version: "2025" });
      assert.deepEqual([recent.grantId, recent.version], [r2025.id, "2025"]);
      assert.equal(recent.grantExpiresAt?.getTime(), timestampMs(r2025.expiresAt!));
      const again = await c.lease({ licenseKey: lic.key, fingerprint: "fp-1", feature: "render", version: "2023.4" });
      assert.equal(again.id, old.id, "dedupe is per feature");
      await assert.rejects(c.lease({ licenseKey: lic.key, fingerprint: "fp-3", feature: "render", version: "2024" }), (err) => {
        assert.ok(err instanceof SeatsExhaustedError, String(err));
        assert.deepEqual([err.reason, err.feature, err.seatsInUse, err.seatLimit], ["SEATS_EXHAUSTED", "render", 2, 2]);
        return true;
      });
      assert.deepEqual(await activeLeases(s, lic.id), [base.id, old.id, recent.id].sort());
      for (const l of [base, again, recent]) await l.release();
    });

    test("features: VERSION_NOT_LICENSED and FEATURE_NOT_LICENSED are VersionNotLicensedError and FeatureNotLicensedError with the reason; waitForSeat throws at once", async () => {
      const lic = await newLicense(s, 1, 60_000);
      await newGrant(s, lic.id, "render", "2024", 1, 86400_000);
      await newGrant(s, lic.id, "render", "2025");
      await newGrant(s, lic.id, "sim");
      await assert.rejects(client.lease({ licenseKey: lic.key, fingerprint: "fp-1", feature: "render", version: "2026" }), (err) => {
        assert.ok(err instanceof VersionNotLicensedError, String(err));
        assert.deepEqual([err.reason, err.code, err.feature, err.version, err.highestVersion], ["VERSION_NOT_LICENSED", grpc.status.FAILED_PRECONDITION, "render", "2026", "2025"]);
        assert.match(err.message, /render/);
        return true;
      });
      const notLicensed = (err: unknown) => {
        assert.ok(err instanceof FeatureNotLicensedError, String(err));
        assert.ok(!(err instanceof VersionNotLicensedError));
        assert.deepEqual([err.reason, err.code, err.feature], ["FEATURE_NOT_LICENSED", grpc.status.FAILED_PRECONDITION, "cad-export"]);
        return true;
      };
      await assert.rejects(client.lease({ licenseKey: lic.key, fingerprint: "fp-1", feature: "cad-export" }), notLicensed);
      await assert.rejects(client.waitForSeat({ licenseKey: lic.key, fingerprint: "fp-1", feature: "cad-export" }, { signal: AbortSignal.timeout(30_000) }), notLicensed);
      {
        await using sim = await client.lease({ licenseKey: lic.key, fingerprint: "fp-1", feature: "sim", version: "7.3" }); // any version of sim
        assert.deepEqual([sim.feature, sim.version], ["sim", "7.3"]);
      }
      assert.deepEqual(await activeLeases(s, lic.id), []);
    });

    test("features: waitForSeat of a feature queues for its grant (not the free base seat)", async () => {
      const lic = await newLicense(s, 1, 60_000);
      const render = await newGrant(s, lic.id, "render", "2025");
      const holder = await client.lease({ licenseKey: lic.key, fingerprint: "holder", feature: "render", version: "2025" });
      const positions: number[] = [];
      const waiting = client.waitForSeat({ licenseKey: lic.key, fingerprint: "waiter", feature: "render", version: "2024.2" }, { onPosition: (p) => positions.push(p) });
      await until(10_000, "a queue position", () => positions.length > 0);
      assert.equal(positions[0], 1);
      await holder.release();
      const lease = await waiting;
      assert.deepEqual([lease.feature, lease.version, lease.grantId], ["render", "2024.2", render.id]);
      assert.deepEqual(await activeLeases(s, lic.id), [lease.id]);
      await lease.release();
    });

    test("features: the certificate carries feature, version, grantId and grantExpiresAt, verified at acquire and every heartbeat; a base lease's none", async () => {
      const jwks = await (await fetch(`http://${s.httpAddr}/v1/tenants/default/jwks.json`)).text();
      const lic = await newLicense(s, 1, 2000);
      const render = await newGrant(s, lic.id, "render", "2025", 1, 86400_000);
      const c = mk(s.grpcAddr, { signingKeys: jwks });
      const lease = await c.lease({ licenseKey: lic.key, fingerprint: "fp-1", feature: "render", version: "2024.3" });
      const got = verifyOffline(lease.certificate, jwks);
      assert.deepEqual([got.feature, got.version, got.grantId, got.grantExpiresAt?.getTime()], ["render", "2024.3", render.id, timestampMs(render.expiresAt!)]);
      assert.deepEqual([got.leaseId, got.licenseId], [lease.id, lic.id]);
      checkHolder(got, { licenseKey: lic.key, fingerprint: "fp-1", feature: "render", version: "2024.3" });
      assert.throws(() => checkHolder(got, { licenseKey: lic.key, fingerprint: "fp-1" }), BadCertificateError, "no base seat");
      const first = lease.certificate;
      await until(5000, "a verified heartbeat's certificate", () => lease.certificate !== first);
      assert.equal(verifyOffline(lease.certificate, jwks).grantId, render.id);
      await sleep(1000);
      assert.equal(lease.lost, false, String(lease.error));
      await lease.release();
      const base = await c.lease({ licenseKey: lic.key, fingerprint: "fp-1" });
      const b = verifyOffline(base.certificate, jwks);
      assert.deepEqual([b.feature, b.version, b.grantId, b.grantExpiresAt], ["", "", "", undefined]);
      await base.release();
    });

    if (mode === "embedded") { // distributed mode keeps no site policy yet
      test("site policy: USER_LIMIT and SEATS_RESERVED are NoSeatErrors with the rule, EXCLUDED a NotAllowedError", async () => {
        const lic = await newLicense(s, 3, 60_000);
        const admin = s.admin();
        try {
          await admin.putGroup({ group: { name: "night", kind: seatdv1.IdentityGroup_Kind.USERS, members: ["alice"] } });
          const rule = seatdv1.PolicyRule_Kind;
          const subject = seatdv1.PolicySubject_Kind;
          await admin.setLicensePolicy({ licenseId: lic.id, policy: { rules: [
            { kind: rule.RESERVE, count: 1, subject: { kind: subject.GROUP, name: "night" } },
            { kind: rule.MAX, count: 1, subject: { kind: subject.USER, name: "bob" } },
            { kind: rule.EXCLUDE, subject: { kind: subject.USER, name: "intern" } },
          ] } });
        } finally {
          admin.close();
        }
        await using bob = await client.lease({ licenseKey: lic.key, fingerprint: "b1", user: "bob" });
        await using dave = await client.lease({ licenseKey: lic.key, fingerprint: "d1", user: "dave" });
        assert.ok(bob.id && dave.id);
        const refusal = (user: string) => client.lease({ licenseKey: lic.key, fingerprint: user + "2", user }).then(() => assert.fail(user + ": granted"), (e: unknown) => e);
        const capped = await refusal("bob");
        assert.ok(capped instanceof UserLimitError && capped instanceof NoSeatError, String(capped));
        assert.deepEqual([capped.rule, capped.subjectName, capped.inUse, capped.limit], [1, "bob", 1, 1]);
        const reserved = await refusal("erin");
        assert.ok(reserved instanceof SeatsReservedError, String(reserved));
        assert.equal(reserved.subjectName, "night");
        const excluded = await refusal("intern");
        assert.ok(excluded instanceof ExcludedError && excluded instanceof NotAllowedError && !(excluded instanceof NoSeatError), String(excluded));
        assert.equal(excluded.rule, 2);
      });
    }

    if (mode === "distributed") {
      test("SIGTERM of one of two instances: the stream reconnects to the other and the lease lives on", async () => {
        const a = await backend.start();
        const b = await backend.start();
        const log = recorder();
        const c = mk(`ipv4:${a.grpcAddr},${b.grpcAddr}`, { log }); // pick_first: everything on a
        const lic = await newLicense(a, 1, 3000);
        const lease = await c.lease({ licenseKey: lic.key });
        const first = lease.expiresAt.getTime();
        await until(5000, "a first heartbeat (the stream is open, on a)", () => lease.expiresAt.getTime() > first);
        await a.stop();
        const afterStop = lease.expiresAt.getTime();
        await sleep(3000); // one TTL on b alone
        assert.equal(lease.lost, false, String(lease.error));
        assert.ok(lease.expiresAt.getTime() > afterStop, "heartbeats went on through b");
        assert.ok(log.messages.includes("seatd asked to reconnect"), log.messages.join("\n"));
        assert.equal(await leaseState(b, lic.id, lease.id), seatdv1.LeaseState.ACTIVE);
        await lease.release();
        await c.close();
        await b.stop();
      });
    }
  });
}
