// The TypeScript client against a real seatd in locked mode: a license file
// signed here (the vendor's key, Node's crypto) for the site key seatd
// site-id made; every certificate checked from the vendor's key alone.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, WrongSiteKeyError, checkHolder, verifyChainOffline } from "../src/index.js";
import { Vendor, fileTerms, siteSigner } from "./fake.js";
import { Seatd, seatdBin, until } from "./harness.js";

const dir = mkdtempSync(join(tmpdir(), "seatd-node-locked-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("locked mode: certificates chain vendor → file → site key; the lease names the file; a renewal is fetched; a file for another site key refuses the certificate", async () => {
  const dataDir = join(dir, "data"), request = join(dir, "request.txt");
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SEATD_")));
  execFileSync(seatdBin(), ["site-id", "--data-dir", dataDir, "--name", "node plant", "-o", request], { env, stdio: "pipe" });
  const req = readFileSync(request, "utf8");
  const reqToken = req.split("-----BEGIN SEATD SIGNATURE-----")[1]!.split("-----END")[0]!.replace(/\s+/g, "");
  const site = JSON.parse(Buffer.from(reqToken.split(".")[1]!, "base64url").toString("utf8")).site_key as Record<string, string>;

  const vendor = new Vendor();
  const vendorPub = join(dir, "vendor.pub"), siteLic = join(dir, "site.lic");
  writeFileSync(vendorPub, vendor.pem());
  const first = vendor.file(fileTerms(site, 1, 2));
  writeFileSync(siteLic, first);
  const s = await new Seatd(["--data-dir", dataDir, "--license-file", siteLic, "--vendor-key", vendorPub, "--license-file-watch-interval", "1h"]).ready();
  const c = new Client(s.grpcAddr, { vendorKeys: readFileSync(vendorPub), autoHeartbeat: false });
  try {
    const admin = s.admin();
    const key = (await admin.getLicense({ licenseId: "lic_cad" })).license!.key;

    const lease = await c.lease({ licenseKey: key, fingerprint: "fp-1" });
    const signed = first.split("-----BEGIN SEATD SIGNATURE-----")[1]!.split("-----END")[0]!.replace(/\s+/g, "");
    assert.equal(lease.licenseFile, signed, "the file in force's JWS");
    const got = verifyChainOffline(lease.certificate, first, vendor.pem());
    assert.deepEqual([got.fileSerial, got.fileLicenseId, got.licenseId, got.keyId], [1, "cad", "lic_cad", site.kid]);
    checkHolder(got, { licenseKey: key, fingerprint: "fp-1" });
    assert.equal(verifyChainOffline(lease.certificate, lease.licenseFile, vendor.pem()).fileSerial, 1);
    assert.throws(() => verifyChainOffline(lease.certificate, vendor.file(fileTerms(siteSigner().jwk(), 1)), vendor.pem()), WrongSiteKeyError,
      "a certificate signed by a site key the file does not name");
    const rest = await fetch(`http://${s.httpAddr}/v1/license-file.jws`);
    assert.equal(await rest.json(), lease.licenseFile);

    writeFileSync(siteLic, vendor.file(fileTerms(site, 2, 3)));
    s.proc.kill("SIGHUP");
    await until(10_000, "serial 2 in force", async () => (await admin.getLicenseFile({})).licenseFile?.serial === 2n);
    admin.close();
    await lease.heartbeat();
    assert.equal(verifyChainOffline(lease.certificate, lease.licenseFile, vendor.pem()).fileSerial, 2);
    await lease.release();
  } finally {
    await c.close();
    await s.stop();
  }
});
