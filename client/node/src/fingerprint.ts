// A fingerprint of this machine for one application, the same in every
// seatd client (Go's client.MachineFingerprint, Python's
// seatd.machine_fingerprint). Only Node's own modules.
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";

/** Set to a non-blank value, the machine id instead of the OS's: for
 * containers, whose own id is new with each container, and CI. */
export const MACHINE_ID_ENV = "SEATD_MACHINE_ID";

/** Read in this order on Linux (and other Unix); the first non-blank one is the id. */
export const LINUX_MACHINE_ID_FILES: readonly string[] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/** No machine id: SEATD_MACHINE_ID is not set (or blank) and the OS has
 * none this process can read. */
export class NoMachineIdError extends Error { override name = "NoMachineIdError"; }

/**
 * The fingerprint of this machine for app (the application's own name, e.g.
 * "com.example.cad"), to pass as AcquireOptions.fingerprint:
 *
 * ```ts
 * const lease = await client.lease({ licenseKey, fingerprint: machineFingerprint("com.example.cad") });
 * ```
 *
 * The lowercase hex of HMAC-SHA256 keyed by the machine id (surrounding ASCII
 * whitespace trimmed) over app, so one vendor's fingerprint of a machine
 * cannot be matched with another's. The machine id is SEATD_MACHINE_ID when
 * set and not blank, else the OS's: /etc/machine-id, then
 * /var/lib/dbus/machine-id (Linux and other Unix), IOPlatformUUID (macOS,
 * from ioreg), MachineGuid (Windows, the registry). Throws a TypeError for an
 * empty app, NoMachineIdError when there is no machine id.
 */
export function machineFingerprint(app: string): string {
  if (typeof app !== "string" || app === "") throw new TypeError("machineFingerprint: app (the application's name) is empty");
  return fingerprintOf(machineId(), app);
}

/** @internal the fingerprint of app on the machine of id. */
export function fingerprintOf(id: string, app: string): string {
  return createHmac("sha256", trimSpace(id)).update(app).digest("hex");
}

// ASCII whitespace, as every client trims (C's isspace): they agree on any id.
function trimSpace(s: string): string { return s.replace(/^[ \t\n\r\v\f]+|[ \t\n\r\v\f]+$/g, ""); }

/** @internal where a machine id is looked for; tests replace them. */
export interface MachineIdSources {
  env: Record<string, string | undefined>;
  platform: string;
  files: readonly string[];
  ioreg: () => string;
  registry: () => string;
}

const osSources = (): MachineIdSources => ({ env: process.env, platform: process.platform, files: LINUX_MACHINE_ID_FILES, ioreg: runIoreg, registry: windowsMachineGuid });

/** @internal the machine id, trimmed and not blank. */
export function machineId(s: MachineIdSources = osSources()): string {
  const override = trimSpace(s.env[MACHINE_ID_ENV] ?? "");
  if (override !== "") return override;
  let id = "";
  let where = "the OS";
  let error: unknown;
  try {
    if (s.platform === "darwin") {
      where = "IOPlatformUUID";
      id = ioregPlatformUuid(s.ioreg());
    } else if (s.platform === "win32") {
      where = "MachineGuid (HKLM\\SOFTWARE\\Microsoft\\Cryptography)";
      id = s.registry();
    } else {
      where = s.files.join(" or ");
      for (const f of s.files) {
        try {
          id = trimSpace(readSmall(f));
        } catch (e) {
          error = e;
          continue;
        }
        if (id !== "") break;
      }
    }
  } catch (e) {
    error = e;
  }
  id = trimSpace(id);
  if (id !== "") return id;
  const cause = error instanceof Error ? ` (${error.message})` : "";
  throw new NoMachineIdError(`no machine id: ${MACHINE_ID_ENV} is not set and ${where} ${error ? "has none" : "is blank"}${cause}`, { cause: error });
}

// An id is 33 bytes: at most 4 KiB is read.
function readSmall(path: string): string {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, null);
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** @internal `"IOPlatformUUID" = "…"` of ioreg's output; "" if none. */
export function ioregPlatformUuid(out: string): string {
  return /"IOPlatformUUID"\s*=\s*"([^"]*)"/.exec(out)?.[1] ?? "";
}

function runIoreg(): string {
  return execFileSync("/usr/sbin/ioreg", ["-rd1", "-c", "IOPlatformExpertDevice"], { encoding: "utf8", timeout: 30_000, stdio: ["ignore", "pipe", "pipe"] });
}

// reg.exe's 64-bit view (/reg:64), the same for a 32-bit Node on 64-bit Windows.
function windowsMachineGuid(): string {
  const reg = `${process.env.SystemRoot ?? "C:\\Windows"}\\System32\\reg.exe`;
  const out = execFileSync(reg, ["query", "HKLM\\SOFTWARE\\Microsoft\\Cryptography", "/v", "MachineGuid", "/reg:64"], { encoding: "utf8", timeout: 30_000, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
  return regValue(out, "MachineGuid");
}

/** @internal the REG_SZ value of name in reg query's output; "" if none. */
export function regValue(out: string, name: string): string {
  for (const line of out.split(/\r?\n/)) {
    const m = /^\s*(\S+)\s+REG_SZ\s+(.*)$/.exec(line);
    if (m && m[1] === name) return m[2]!;
  }
  return "";
}
