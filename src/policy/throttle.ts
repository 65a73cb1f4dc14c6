import { BOUNDS } from "./bounds.js";
import { isHttpDate, retryAfterWaitSeconds } from "./retry-after.js";

// How long a destination waits after a 429, and the reason shown for it.

export const DEFAULT_THROTTLE_SCHEDULE_SECONDS: readonly number[] = [60, 300, 900, 3600, 21600];

/**
 * The longest hold, whatever a Retry-After asks: the longest a throttle schedule may set. A
 * receiver's "Retry-After: 9007199254740991" (or a date in year 9999) would otherwise put
 * throttled_until past what an interval or a timestamp can hold, and fail the whole write-back.
 */
export const MAX_THROTTLE_HOLD_SECONDS = BOUNDS.throttle_hold_seconds.max;

/**
 * Seconds the whole destination holds after its `consecutive`-th 429 in a row (1-based):
 * `Retry-After` when given (0 = "retry now": the floor, whatever the count; at most
 * MAX_THROTTLE_HOLD_SECONDS), else the schedule by count, its last entry repeating.
 */
export function throttleHoldSeconds(schedule: readonly number[], consecutive: number, retryAfterSeconds: number | null): number {
  if (retryAfterSeconds !== null) {
    if (Number.isNaN(retryAfterSeconds)) throw new RangeError(`throttle hold: Retry-After of ${retryAfterSeconds} seconds`);
    return Math.min(retryAfterWaitSeconds(retryAfterSeconds), MAX_THROTTLE_HOLD_SECONDS);
  }
  const i = Math.min(Math.max(consecutive, 1), schedule.length) - 1;
  return schedule[i] ?? DEFAULT_THROTTLE_SCHEDULE_SECONDS[0]!;
}

// A header is quoted in a reason the customer reads: long garbage that still parsed is cut.
const MAX_QUOTED_HEADER = 64;

/**
 * The destination's throttle_reason for a 429 held `holdSeconds`. `retryAfterHeader` is the raw
 * header, when known, so that a "retry now" can say whether it was a 0 or a date in the past.
 */
export function throttleReason(args: {
  holdSeconds: number;
  consecutive: number;
  retryAfterSeconds: number | null;
  retryAfterHeader?: string | null;
}): string {
  const { holdSeconds, consecutive, retryAfterSeconds } = args;
  const header = args.retryAfterHeader?.trim() ?? null;
  if (retryAfterSeconds === null) {
    return `429 Too Many Requests (${ordinal(consecutive)} in a row, no Retry-After): holding ${holdSeconds} s`;
  }
  if (retryAfterSeconds > 0) {
    const date = header !== null && isHttpDate(header) ? ` (date ${quote(header)})` : "";
    const capped = holdSeconds < retryAfterSeconds ? `: holding ${holdSeconds} s, the longest hold` : "";
    return `429 Too Many Requests with Retry-After: ${retryAfterSeconds} s${date}${capped}`;
  }
  if (header !== null && isHttpDate(header)) {
    return `429 Too Many Requests with Retry-After date ${quote(header)}, which is not in the future (retry now): holding ${holdSeconds} s`;
  }
  if (header !== null) return `429 Too Many Requests with Retry-After: ${quote(header)} (retry now): holding ${holdSeconds} s`;
  return `429 Too Many Requests with Retry-After: 0 or a date not in the future (retry now): holding ${holdSeconds} s`;
}

function quote(header: string): string {
  return header.length > MAX_QUOTED_HEADER ? `${header.slice(0, MAX_QUOTED_HEADER)}…` : header;
}

function ordinal(n: number): string {
  const s = ["th", "st", "nd", "rd"];
  const v = n % 100;
  return n + (s[(v - 20) % 10] ?? s[v] ?? s[0]!);
}
