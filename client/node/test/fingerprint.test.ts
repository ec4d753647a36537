// The machine fingerprint: the vectors every client agrees on
// (client/testdata/fingerprint_vectors.json; Go's
// TestFingerprintAgreesAcrossLanguages runs this client's helper too), and
// where the machine id comes from.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { MACHINE_ID_ENV, NoMachineIdError, machineFingerprint } from "../src/index.js";
import { fingerprintOf, ioregPlatformUuid, machineId, regValue, type MachineIdSources } from "../src/fingerprint.js";

interface Vector { machine_id: string; app: string; fingerprint: string }
const vectors: Vector[] = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../../testdata/fingerprint_vectors.json"), "utf8")).vectors;

const none = (): string => { throw new Error("not asked"); };
const linux = (files: string[], env: Record<string, string> = {}): MachineIdSources => ({ env, platform: "linux", files, ioreg: none, registry: none });

function withEnv<T>(value: string | undefined, fn: () => T): T {
  const old = process.env[MACHINE_ID_ENV];
  if (value === undefined) delete process.env[MACHINE_ID_ENV];
  else process.env[MACHINE_ID_ENV] = value;
  try {
    return fn();
  } finally {
    if (old === undefined) delete process.env[MACHINE_ID_ENV];
    else process.env[MACHINE_ID_ENV] = old;
  }
}

describe("machine fingerprint", () => {
  test("the shared vectors: from SEATD_MACHINE_ID, and from a machine-id file", () => {
    assert.ok(vectors.length >= 5);
    const dir = mkdtempSync(join(tmpdir(), "seatd-fp-"));
    try {
      for (const v of vectors) {
        assert.equal(withEnv(v.machine_id, () => machineFingerprint(v.app)), v.fingerprint, JSON.stringify(v));
        const file = join(dir, "machine-id");
        writeFileSync(file, v.machine_id);
        assert.equal(fingerprintOf(machineId(linux([file])), v.app), v.fingerprint, JSON.stringify(v));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("an empty app is a TypeError; no machine id a NoMachineIdError naming the override", () => {
    assert.throws(() => withEnv("0123", () => machineFingerprint("")), TypeError);
    assert.throws(() => machineId(linux(["/nonexistent/machine-id"])), (e: unknown) => {
      assert.ok(e instanceof NoMachineIdError);
      assert.match(e.message, /SEATD_MACHINE_ID/);
      assert.match(e.message, /\/nonexistent\/machine-id/);
      return true;
    });
  });

  test("the override wins over the OS's id; a blank one is not set", () => {
    const dir = mkdtempSync(join(tmpdir(), "seatd-fp-"));
    try {
      const file = join(dir, "machine-id");
      writeFileSync(file, "from-the-file\n");
      assert.equal(machineId(linux([file], { [MACHINE_ID_ENV]: " from-the-env\n" })), "from-the-env");
      assert.equal(machineId(linux([file], { [MACHINE_ID_ENV]: " \t\n" })), "from-the-file");
      assert.equal(machineId({ env: { [MACHINE_ID_ENV]: "e" }, platform: "darwin", files: [], ioreg: none, registry: none }), "e");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("Linux: /etc/machine-id first, then dbus's; a blank or missing file is skipped", () => {
    const dir = mkdtempSync(join(tmpdir(), "seatd-fp-"));
    try {
      const [etc, dbus, blank] = ["etc", "dbus", "blank"].map((n) => join(dir, n)) as [string, string, string];
      writeFileSync(etc, "etc-id\n");
      writeFileSync(dbus, "dbus-id\n");
      writeFileSync(blank, "\n");
      assert.equal(machineId(linux([etc, dbus])), "etc-id");
      assert.equal(machineId(linux([blank, dbus])), "dbus-id");
      assert.equal(machineId(linux([join(dir, "missing"), dbus])), "dbus-id");
      assert.throws(() => machineId(linux([blank])), /is blank/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("macOS reads IOPlatformUUID from ioreg, Windows MachineGuid from reg query", () => {
    const ioreg = `+-o J316sAP  <class IOPlatformExpertDevice, id 0x100000112, registered, matched, active, busy 0 (0 ms), retain 37>
    {
      "IOPlatformSerialNumber" = "C02XXXXXXXXX"
      "IOPlatformUUID" = "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F"
    }
`;
    assert.equal(ioregPlatformUuid(ioreg), "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F");
    const mac: MachineIdSources = { env: {}, platform: "darwin", files: [], ioreg: () => ioreg, registry: none };
    assert.equal(machineId(mac), "8F3C0D2E-1A2B-4C5D-9E8F-0A1B2C3D4E5F");
    assert.throws(() => machineId({ ...mac, ioreg: () => "{}\n" }), NoMachineIdError);
    assert.throws(() => machineId({ ...mac, ioreg: () => { throw new Error("spawn ioreg ENOENT"); } }), /ENOENT/);

    const reg = "\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Cryptography\r\n    MachineGuid    REG_SZ    5b3a0e4c-1d2f-4a6b-8c9d-0e1f2a3b4c5d\r\n\r\n";
    assert.equal(regValue(reg, "MachineGuid"), "5b3a0e4c-1d2f-4a6b-8c9d-0e1f2a3b4c5d");
    assert.equal(machineId({ env: {}, platform: "win32", files: [], ioreg: none, registry: () => regValue(reg, "MachineGuid") }), "5b3a0e4c-1d2f-4a6b-8c9d-0e1f2a3b4c5d");
  });
});
