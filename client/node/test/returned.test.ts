// The signed list of returned certificates: a listed certificate is refused
// offline; the list is taken only as seatd signed it, for this tenant.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { BadCertificateError, CertificateReturnedError, SigningKeys, newerReturned, verifyOffline } from "../src/index.js";
import { Signer, certificate, claims, jwks } from "./fake.js";

function returnedList(signer: Signer, leaseIds: string[], over: Record<string, unknown> = {}, typ = "seatd-returned+jwt"): string {
  const body: Record<string, unknown> = {
    iss: "seatd", tenant_id: "default", iat: Math.trunc(Date.now() / 1000),
    returned: leaseIds.map((sub) => ({ sub, exp: Math.trunc(Date.now() / 1000) + 3600 })), ...over,
  };
  for (const [k, v] of Object.entries(over)) if (v === undefined) delete body[k];
  return signer.sign(body, { alg: "EdDSA", kid: signer.kid, typ });
}

describe("returned certificates", () => {
  const signer = new Signer("k1");
  const keys = new SigningKeys(jwks(signer));
  const cert = certificate(signer, claims("lease-1", "fp", Date.now() + 3600_000, "n", true));

  test("a listed certificate is refused offline", () => {
    assert.throws(() => verifyOffline(cert, jwks(signer), Date.now(), returnedList(signer, ["lease-1", "lease-9"])),
      (e: unknown) => e instanceof CertificateReturnedError && e instanceof BadCertificateError && e.returned);
    verifyOffline(cert, jwks(signer), Date.now(), returnedList(signer, ["lease-2"]));
    verifyOffline(cert, jwks(signer), Date.now(), returnedList(signer, []));
    verifyOffline(cert, jwks(signer), Date.now());
  });

  test("tampering, another tenant, a replay are refused", () => {
    const good = returnedList(signer, ["lease-1"]);
    const got = keys.verifyReturned(good, "default", 60_000);
    assert.ok(got.returned.has("lease-1"));
    assert.equal(got.token, good);
    const [h, p, s] = good.split(".") as [string, string, string];
    const forged = Buffer.from(Buffer.from(p, "base64url").toString("utf8").replace("lease-1", "lease-X")).toString("base64url");
    const now = Math.trunc(Date.now() / 1000);
    const bad: Record<string, string> = {
      "one byte changed": `${h}.${forged}.${s}`,
      "other key": signer.sign(JSON.parse(Buffer.from(p, "base64url").toString("utf8")), { alg: "EdDSA", kid: "k1", typ: "seatd-returned+jwt" }, new Signer("k1")),
      "unknown kid": returnedList(new Signer("k9"), ["lease-1"]),
      "typ of a certificate": returnedList(signer, ["lease-1"], {}, "JWT"),
      "other issuer": returnedList(signer, ["lease-1"], { iss: "evil" }),
      "other tenant": returnedList(signer, ["lease-1"], { tenant_id: "acme" }),
      "no iat": returnedList(signer, ["lease-1"], { iat: undefined }),
      "replayed": returnedList(signer, ["lease-1"], { iat: now - 7200 }),
      "from later": returnedList(signer, ["lease-1"], { iat: now + 3600 }),
      "not a JWS": "a.b.c",
    };
    for (const [what, token] of Object.entries(bad)) {
      assert.throws(() => keys.verifyReturned(token, "default", 60_000), BadCertificateError, what);
    }
    keys.verifyReturned(bad["replayed"]!, "default"); // offline: the newest kept
    assert.throws(() => keys.verify(good), BadCertificateError, "a list is never a lease certificate");
  });

  test("newerReturned keeps the latest", () => {
    const older = keys.verifyReturned(returnedList(signer, [], { iat: Math.trunc(Date.now() / 1000) - 3600 }), "default");
    const newer = keys.verifyReturned(returnedList(signer, ["lease-1"]), "default");
    assert.equal(newerReturned(undefined, newer), newer);
    assert.equal(newerReturned(older, newer), newer);
    assert.equal(newerReturned(newer, older), newer);
    assert.equal(newerReturned(older, undefined), older);
  });
});
