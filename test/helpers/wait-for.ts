// Poll a condition instead of sleeping: tests stay fast when things are quick and only fail when
// they are truly stuck.

export interface WaitForOptions {
  /** Give up after this long. Default 15000. */
  timeoutMs?: number;
  /** Pause between checks. Default 20. */
  intervalMs?: number;
  /** Error message on timeout; a function is evaluated then, so it can describe the final state. */
  message?: string | (() => string);
}

/**
 * Resolves once `cond` returns true; rejects with `message` after `timeoutMs`.
 * An exception thrown by `cond` is not retried: it rejects at once.
 */
export async function waitFor(cond: () => boolean | Promise<boolean>, opts: WaitForOptions = {}): Promise<void> {
  const { timeoutMs = 15_000, intervalMs = 20, message } = opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, Math.max(0, deadline - Date.now()))));
  }
  // One last look: a slow cond may have become true while the deadline passed.
  if (await cond()) return;
  const text = typeof message === "function" ? message() : message;
  throw new Error(text ?? `waitFor: condition not met within ${timeoutMs} ms`);
}

/** A plain pause, for the few tests that must let time pass (a hold to run out, traffic to stay away). */
export { sleep } from "../../src/sleep.js";
