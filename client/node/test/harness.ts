// Starts real seatd processes for the tests, as e2e/harness_test.go does:
// embedded (a temporary data dir) or distributed (a fresh PostgreSQL schema
// and Redis key prefix, removed afterwards). SEATD_BIN names the binary;
// without it the harness builds one with `go build`.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { AdminClient, seatdv1 } from "../src/index.js";

export const operatorKey = "node-test-operator-key-0123456789";
export type Mode = "embedded" | "distributed";
export const modes: Mode[] = ["embedded", "distributed"];

const repo = resolve(import.meta.dirname, "../../../..");
let built: string | undefined;

export function seatdBin(): string {
  if (process.env.SEATD_BIN) return process.env.SEATD_BIN;
  if (!built) {
    built = join(mkdtempSync(join(tmpdir(), "seatd-node-")), "seatd");
    execFileSync("go", ["build", "-o", built, "./server/cmd/seatd"], { cwd: repo, stdio: "inherit" });
  }
  return built;
}

export class Seatd {
  readonly proc: ChildProcess;
  output = "";
  grpcAddr = "";
  httpAddr = "";
  readonly exited: Promise<number | null>;
  readonly #dir: string;

  constructor(args: string[]) {
    this.#dir = mkdtempSync(join(tmpdir(), "seatd-data-"));
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SEATD_")));
    this.proc = spawn(seatdBin(), ["--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--data-dir", this.#dir, "--drain-delay", "0s", "--cleanup-interval", "1h", "--operator-key", operatorKey, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.proc.stdout!.on("data", (b) => (this.output += b));
    this.proc.stderr!.on("data", (b) => (this.output += b));
    this.exited = new Promise((r) => this.proc.on("exit", (code) => r(code)));
  }

  async ready(): Promise<this> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const m = /seatd serving.*\bgrpc[=":]+([0-9.:]+).*\bhttp[=":]+([0-9.:]+)/.exec(this.output);
      if (m) {
        this.grpcAddr = m[1]!;
        this.httpAddr = m[2]!;
        return this;
      }
      if (this.proc.exitCode !== null || Date.now() > deadline) throw new Error(`seatd did not start:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  admin(): AdminClient { return new AdminClient(this.grpcAddr, { key: operatorKey }); }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill("SIGTERM");
      await this.exited;
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

const pgURL = process.env.SEATD_TEST_POSTGRES_URL || "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable";
const redisURL = process.env.SEATD_TEST_REDIS_URL || "redis://127.0.0.1:6379/0";

/** Backend is where seatd keeps its data in one mode; start() adds instances. */
export class Backend {
  readonly #schema = "node_" + randomBytes(5).toString("hex");
  readonly #procs: Seatd[] = [];
  constructor(readonly mode: Mode) {
    if (mode === "distributed") psql(`CREATE SCHEMA ${this.#schema}`);
  }

  async start(...extra: string[]): Promise<Seatd> {
    const args: string[] = [];
    if (this.mode === "distributed") {
      const u = new URL(pgURL);
      u.searchParams.set("search_path", this.#schema);
      args.push("--postgres-url", u.toString(), "--redis-url", redisURL, "--redis-key-prefix", this.#schema + ":",
        "--instance-id", `${this.#schema}-${this.#procs.length}`, "--shutdown-timeout", "10s", "--pg-max-conns", "4");
    }
    const s = new Seatd([...args, ...extra]);
    this.#procs.push(s);
    return s.ready();
  }

  async close(): Promise<void> {
    await Promise.all(this.#procs.map((p) => p.stop()));
    if (this.mode === "distributed") {
      psql(`SET client_min_messages = warning; DROP SCHEMA ${this.#schema} CASCADE`);
      const keys = execFileSync("redis-cli", ["-u", redisURL, "--scan", "--pattern", this.#schema + ":*"], { encoding: "utf8" }).split("\n").filter(Boolean);
      for (let i = 0; i < keys.length; i += 500) execFileSync("redis-cli", ["-u", redisURL, "del", ...keys.slice(i, i + 500)]);
    }
  }
}

function psql(sql: string): void {
  execFileSync("psql", [pgURL.replace(/\?.*$/, ""), "-q", "-v", "ON_ERROR_STOP=1", "-c", sql], { stdio: ["ignore", "ignore", "inherit"] });
}

/** newLicense creates a license and returns it (its key is `key`). */
export async function newLicense(s: Seatd, seats: number, ttlMs: number, extra: { leasingStrategy?: seatdv1.LeasingStrategy } = {}): Promise<seatdv1.License> {
  using admin = { c: s.admin(), [Symbol.dispose]() { this.c.close(); } };
  const resp = await admin.c.createLicense({ license: { name: "node test", seats, leaseTtl: durationFromMs(ttlMs), ...extra } });
  return resp.license!;
}

/** newGrant adds a feature grant to license licenseId; expiresInMs (from
 * now, whole seconds) sets its expires_at. */
export async function newGrant(s: Seatd, licenseId: string, feature: string, version = "", seats = 1, expiresInMs?: number): Promise<seatdv1.FeatureGrant> {
  using admin = { c: s.admin(), [Symbol.dispose]() { this.c.close(); } };
  const expiresAt = expiresInMs === undefined ? undefined : timestampFromMs(Math.floor((Date.now() + expiresInMs) / 1000) * 1000);
  const resp = await admin.c.createFeatureGrant({ licenseId, grant: { feature, version, seats, expiresAt } });
  return resp.grant!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** until polls cond every 20 ms for up to ms. */
export async function until(ms: number, what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

export const haveServices = () => existsSync("/usr/bin/psql") || !!process.env.SEATD_TEST_POSTGRES_URL;
