// Delays of the background work, as in client/timing.go. Tests shrink them
// and move the wall clock; users get defaultTiming.
export interface Timing {
  /** The wall clock in ms. Sleep detection compares it with the deadline. */
  now: () => number;
  /** How often a waiting keeper looks at the wall clock: Node's timers, like
   * Go's, do not count time the machine spent suspended. */
  clockCheckMs: number;
  /** Bounds of the exponential backoff of retries. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Spreads reconnects after a RECONNECT signal. */
  reconnectJitterMs: number;
  /** Guards against a server suggesting a zero interval. */
  minIntervalMs: number;
  /** Bounds the one heartbeat tried once the deadline passed. */
  lastChanceMs: number;
  /** Bounds AcquireSeat when the keeper acquires again, and each heartbeat call. */
  callTimeoutMs: number;
  /** Streams in a row that may fail unanswered before falling back to unary ... */
  streamFailures: number;
  /** ... for this many beats, after which a stream is tried again. */
  unaryBeforeStream: number;
}

export const defaultTiming: Timing = {
  now: Date.now,
  clockCheckMs: 1000,
  backoffBaseMs: 250,
  backoffMaxMs: 10_000,
  reconnectJitterMs: 1000,
  minIntervalMs: 1000,
  lastChanceMs: 5000,
  callTimeoutMs: 10_000,
  streamFailures: 3,
  unaryBeforeStream: 10,
};

/** backoff is the wait before retry n (1, 2, ...): exponential up to limit,
 * half fixed and half random so that clients that failed together spread out. */
export function backoff(t: Timing, n: number, limit: number): number {
  let d = t.backoffBaseMs;
  for (let i = 1; i < n && d < limit; i++) d *= 2;
  d = Math.min(d, limit);
  return d / 2 + Math.random() * (d / 2);
}

/** sleep waits ms; false when signal aborted first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(ok);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
