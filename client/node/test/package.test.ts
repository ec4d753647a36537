// The package as a user gets it: a copy of client/node without dist/ or
// node_modules (a fresh clone) builds on `npm ci` (the prepare script), `npm
// pack` makes a tarball of the built client, and an empty project that
// installs that tarball (its dependencies from the npm registry or cache)
// imports it as ESM and holds a seat of a real seatd.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { once } from "node:events";
import { Backend, newLicense } from "./harness.js";
import { seatdv1 } from "../src/index.js";

const pkgDir = resolve(import.meta.dirname, "../.."); // client/node (this file is dist/test/)
const npmFlags = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

function npm(cwd: string, ...args: string[]): string {
  return execFileSync("npm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
}

// The program of the empty project: acquires a seat, prints the lease's id,
// holds it until its stdin ends, then releases it.
const app = `import { Client } from "@seatd/client";
const [address, licenseKey] = process.argv.slice(2);
const client = new Client(address);
const lease = await client.lease({ licenseKey, fingerprint: "packed-client" });
console.log(JSON.stringify({ id: lease.id, seatsInUse: lease.seatsInUse, expiresAt: lease.expiresAt.toISOString() }));
process.stdin.resume();
await new Promise((r) => process.stdin.on("end", r));
await lease.release();
await client.close();
`;

test("npm pack: the tarball installs into an empty project, imports as ESM and holds a seat", async (t) => {
  const work = mkdtempSync(join(tmpdir(), "seatd-npm-pack-"));
  t.after(() => rmSync(work, { recursive: true, force: true }));

  // A fresh clone's client/node: sources, manifest and lockfile only.
  const src = join(work, "node");
  for (const f of ["package.json", "package-lock.json", "tsconfig.json", "README.md", "src"]) {
    cpSync(join(pkgDir, f), join(src, f), { recursive: true });
  }
  npm(src, "ci", ...npmFlags);
  assert.ok(existsSync(join(src, "dist/src/index.js")), "npm ci ran prepare: dist/src/index.js was built");

  const [packed] = JSON.parse(npm(src, "pack", "--json", "--pack-destination", work, "--loglevel=error")) as
    { filename: string; files: { path: string }[] }[];
  const files = packed!.files.map((f) => f.path);
  for (const f of ["package.json", "README.md", "dist/src/index.js", "dist/src/index.d.ts", "dist/src/gen/seatd/v1/seat_service_pb.js", "src/index.ts"]) {
    assert.ok(files.includes(f), `the tarball has ${f}: ${files.join(" ")}`);
  }
  assert.ok(!files.some((f) => f.startsWith("dist/test/") || f.startsWith("node_modules/")), `no tests or node_modules in the tarball: ${files.join(" ")}`);
  const manifest = JSON.parse(readFileSync(join(src, "package.json"), "utf8"));
  assert.equal(manifest.private, undefined, "a private package cannot be published");
  assert.equal(manifest.license, "Apache-2.0");

  // An empty project installs the tarball; grpc-js and protobuf come from the registry (or its cache).
  const user = join(work, "user");
  cpSync(join(work, packed!.filename), join(user, "seatd-client.tgz"));
  writeFileSync(join(user, "package.json"), JSON.stringify({ name: "seatd-user", private: true, type: "module" }));
  npm(user, "install", ...npmFlags, "./seatd-client.tgz");
  assert.ok(existsSync(join(user, "node_modules/@grpc/grpc-js")), "the client's dependencies were installed");
  writeFileSync(join(user, "main.js"), app);

  const backend = new Backend("embedded");
  t.after(() => backend.close());
  const s = await backend.start();
  const lic = await newLicense(s, 1, 60_000);

  const proc = spawn(process.execPath, ["main.js", s.grpcAddr, lic.key], { cwd: user, stdio: ["pipe", "pipe", "pipe"] });
  let out = "", errOut = "";
  const exited = once(proc, "exit");
  t.after(() => { if (proc.exitCode === null) proc.kill(); });
  proc.stderr.on("data", (b) => (errOut += b));
  // The first line, or the program's early end (no deadline: a slow machine only waits longer).
  const printed = await Promise.race([
    new Promise<boolean>((r) => proc.stdout.on("data", (b) => { out += b; if (out.includes("\n")) r(true); })),
    exited.then(() => false),
  ]);
  assert.ok(printed, `the program exited before holding a seat (code ${proc.exitCode}): ${errOut}`);
  const held = JSON.parse(out.split("\n")[0]!) as { id: string; seatsInUse: number; expiresAt: string };
  assert.match(held.id, /^lse_/);
  assert.equal(held.seatsInUse, 1);

  const admin = s.admin();
  t.after(() => admin.close());
  const state = async () => (await admin.listLeases({ licenseId: lic.id })).leases.find((l) => l.id === held.id)?.state;
  assert.equal(await state(), seatdv1.LeaseState.ACTIVE, "seatd holds the packed client's seat");

  proc.stdin.end();
  const [code] = await exited;
  assert.equal(code, 0, `the program's exit: ${errOut}`);
  assert.equal(await state(), seatdv1.LeaseState.RELEASED, "the packed client released its seat");
});
