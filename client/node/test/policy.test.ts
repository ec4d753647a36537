// A license's site policy as the client meets it, against a fake seatd: its
// refusals as typed errors (NoSeatError for those that pass as leases end,
// NotAllowedError for the others), and waitForSeat polling through the
// first.
import { afterEach, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import {
  Client, ExcludedError, GroupLimitError, HostLimitError, NoSeatError, NotAllowedError, NotIncludedError, SeatsExhaustedError,
  SeatsReservedError, UserLimitError,
} from "../src/index.js";
import { FakeSeatd, Signer } from "./fake.js";

const fast = { clockCheckMs: 20, backoffBaseMs: 10, backoffMaxMs: 100, reconnectJitterMs: 20, minIntervalMs: 20, lastChanceMs: 1000, callTimeoutMs: 5000 };
const EXHAUSTED = grpc.status.RESOURCE_EXHAUSTED;
const DENIED = grpc.status.PERMISSION_DENIED;
const cap = { in_use: "1", limit: "1", rule: "1", subject_kind: "user", subject_name: "bob" };

describe("site policy (fake seatd)", () => {
  let fake: FakeSeatd;
  let client: Client;
  beforeEach(async () => {
    fake = await new FakeSeatd(new Signer("k1")).start();
    client = new Client(fake.address, { timing: fast });
  });
  afterEach(async () => {
    await client.close();
    fake.stop();
  });

  test("each refusal is typed: the caps and SEATS_RESERVED are NoSeatError, EXCLUDED and NOT_INCLUDED NotAllowedError", async () => {
    for (const [reason, code, Cls, noSeat] of [
      ["USER_LIMIT", EXHAUSTED, UserLimitError, true],
      ["HOST_LIMIT", EXHAUSTED, HostLimitError, true],
      ["GROUP_LIMIT", EXHAUSTED, GroupLimitError, true],
      ["SEATS_RESERVED", EXHAUSTED, SeatsReservedError, true],
      ["EXCLUDED", DENIED, ExcludedError, false],
      ["NOT_INCLUDED", DENIED, NotIncludedError, false],
    ] as const) {
      fake.refusals = [[code, reason, { ...cap, feature: "render" }]];
      const err = await client.lease({ licenseKey: "key", fingerprint: "fp", user: "bob", feature: "render" }).then(
        () => assert.fail(`${reason}: granted`), (e: unknown) => e);
      assert.ok(err instanceof Cls, `${reason}: ${String(err)}`);
      assert.equal(err.reason, reason);
      assert.equal(err.code, code);
      assert.equal(err instanceof NoSeatError, noSeat, reason);
      assert.equal(err instanceof NotAllowedError, !noSeat, reason);
      assert.ok(!(err instanceof SeatsExhaustedError), reason);
      assert.deepEqual([err.rule, err.subjectKind, err.subjectName, err.feature], [1, "user", "bob", "render"], reason);
      if (err instanceof UserLimitError) assert.deepEqual([err.inUse, err.limit], [1, 1]);
    }
    assert.ok(Object.prototype.isPrototypeOf.call(NoSeatError.prototype, SeatsExhaustedError.prototype));
  });

  test("polling (a seatd without the queue), a cap or SEATS_RESERVED is no seat for now: the wait goes on", async () => {
    fake.queue = false;
    fake.refusals = [[EXHAUSTED, "USER_LIMIT", cap], [EXHAUSTED, "SEATS_RESERVED", {}], [EXHAUSTED, "HOST_LIMIT", {}], [EXHAUSTED, "SEATS_EXHAUSTED", {}]];
    const positions: [number, number][] = [];
    const lease = await client.waitForSeat({ licenseKey: "key", fingerprint: "fp", user: "bob" }, { onPosition: (p, n) => positions.push([p, n]) });
    assert.equal(fake.acquires, 5, "four refusals, then the seat");
    assert.deepEqual(positions[0], [0, 0]);
    await lease.release();
  });

  test("polling, EXCLUDED and NOT_INCLUDED end the wait at once", async () => {
    fake.queue = false;
    for (const [reason, Cls] of [["EXCLUDED", ExcludedError], ["NOT_INCLUDED", NotIncludedError]] as const) {
      fake.acquires = 0;
      fake.refusals = [[DENIED, reason, {}]];
      await assert.rejects(client.waitForSeat({ licenseKey: "key", fingerprint: "fp", user: "intern" }), Cls);
      assert.equal(fake.acquires, 1, reason);
    }
  });
});
