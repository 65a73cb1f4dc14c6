// Token buckets for burst shaping. Pure: state and time in, state and decision out.
//
// A destination's `rate_limit` makes up to two buckets that a send must both draw from:
//   per-second: refills max_per_second tokens/s; capacity burst_capacity (default max_per_second)
//   per-minute: refills max_per_minute tokens/min; capacity max_per_minute — or burst_capacity
//               when it is the only window set (the finest window set takes the burst size).
// Over any interval of length L a bucket lets through at most capacity + rate × L sends.

import type { RateLimit } from "../schemas/destinations.js";

export type { RateLimit };

export interface Bucket {
  /** Which window: state is stored per window, so adding or removing one keeps the other's tokens. */
  window: "second" | "minute";
  /** Tokens added per millisecond. */
  ratePerMs: number;
  capacity: number;
}

export interface BucketState {
  tokens: number;
  /** When `tokens` was last brought up to date. */
  atMs: number;
}

export function bucketsFor(limit: RateLimit | null | undefined): Bucket[] {
  return grantBuckets(limit, 0);
}

/**
 * The buckets the claim spends from. A grant is exact at claim time, but the requests reach the
 * receiver a little later and not equally late (event loop, connection pool, network), so two
 * grants 300 ms apart can land 100 ms apart. Holding back `sendJitterMs` worth of tokens from the
 * burst makes the limit hold at the receiver: grants inside any window of length L + J are at
 * most (capacity − rate × J) + rate × (L + J) = capacity + rate × L. The headroom never takes
 * more than half the burst (and never the last token), so a small burst keeps its throughput; the
 * rate itself is untouched, so a backlogged destination still gets its full configured rate.
 */
export function grantBuckets(limit: RateLimit | null | undefined, sendJitterMs: number): Bucket[] {
  if (!limit) return [];
  const out: Bucket[] = [];
  // A send takes one whole token, so a bucket holds at least one: a rate below one per window
  // (0.5 per second) is one send per two seconds, not none.
  if (limit.max_per_second !== undefined) {
    out.push({
      window: "second",
      ratePerMs: limit.max_per_second / 1000,
      capacity: Math.max(1, limit.burst_capacity ?? limit.max_per_second),
    });
  }
  if (limit.max_per_minute !== undefined) {
    const finest = limit.max_per_second === undefined;
    out.push({
      window: "minute",
      ratePerMs: limit.max_per_minute / 60_000,
      capacity: Math.max(1, finest ? (limit.burst_capacity ?? limit.max_per_minute) : limit.max_per_minute),
    });
  }
  if (sendJitterMs <= 0) return out;
  return out.map((b) => ({ ...b, capacity: Math.max(1, Math.ceil(b.capacity / 2), b.capacity - b.ratePerMs * sendJitterMs) }));
}

/**
 * A stamp further ahead of the clock than this is not a clock that stepped back (the bucket then
 * waits for it to catch up) but a state that cannot be right: it would freeze the bucket for
 * years. It starts afresh instead.
 */
const MAX_STAMP_AHEAD_MS = 86_400_000;

/** A bucket never seen before (or after a config change it cannot carry over) starts full. */
export function refill(b: Bucket, s: BucketState | undefined, nowMs: number): BucketState {
  if (!s || !Number.isFinite(s.tokens) || !Number.isFinite(s.atMs) || s.atMs > nowMs + MAX_STAMP_AHEAD_MS) {
    return { tokens: b.capacity, atMs: nowMs };
  }
  const elapsed = Math.max(0, nowMs - s.atMs); // a clock step backwards never mints tokens
  return { tokens: Math.min(b.capacity, s.tokens + elapsed * b.ratePerMs), atMs: Math.max(nowMs, s.atMs) };
}

/** Whole tokens every bucket can give now, at most `wanted` — without spending them. */
export function available(buckets: Bucket[], states: (BucketState | undefined)[], nowMs: number, wanted: number): number {
  let n = wanted;
  buckets.forEach((b, i) => {
    n = Math.min(n, Math.floor(refill(b, states[i], nowMs).tokens + 1e-9));
  });
  return Math.max(0, n);
}

/** Spends `count` tokens from every bucket (count must not exceed `available`). */
export function spend(buckets: Bucket[], states: (BucketState | undefined)[], nowMs: number, count: number): BucketState[] {
  return buckets.map((b, i) => {
    const s = refill(b, states[i], nowMs);
    return { tokens: Math.max(0, s.tokens - count), atMs: s.atMs };
  });
}

/** When every bucket will hold at least one whole token again (nowMs if they already do). */
export function nextTokenAtMs(buckets: Bucket[], states: BucketState[], nowMs: number): number {
  let at = nowMs;
  buckets.forEach((b, i) => {
    const s = refill(b, states[i], nowMs);
    // From the bucket's own stamp: after a clock step back it is ahead of now, and so is the token.
    if (s.tokens + 1e-9 < 1) at = Math.max(at, s.atMs + msUntilWholeToken(s.tokens, b.ratePerMs));
  });
  return at;
}

/**
 * Whole milliseconds until `tokens` (below 1) reaches 1 at `ratePerMs`. The ceiling of the exact
 * quotient can land one millisecond late by float rounding, never more: one step back corrects
 * it. A fixed number of steps, not a walk until the sum converges — a rate near zero (refused at
 * the API since, see bounds.ts) once made that walk run forever.
 */
export function msUntilWholeToken(tokens: number, ratePerMs: number): number {
  const wait = Math.ceil((1 - tokens) / ratePerMs);
  if (!Number.isFinite(wait) || !(ratePerMs > 0)) {
    throw new RangeError(`token bucket: refill rate ${ratePerMs}/ms from ${tokens} tokens gives no finite wait`);
  }
  for (let step = 0; step < 2 && wait - step > 1; step++) {
    if (tokens + (wait - step - 1) * ratePerMs + 1e-9 < 1) return wait - step;
  }
  return Math.max(1, wait - 2);
}

/** Stored form: one state per window name. */
export type StoredBuckets = Partial<Record<Bucket["window"], BucketState>>;

export function statesOf(buckets: Bucket[], stored: StoredBuckets | null | undefined): (BucketState | undefined)[] {
  return buckets.map((b) => stored?.[b.window]);
}

export function storeStates(buckets: Bucket[], states: BucketState[]): StoredBuckets | null {
  if (buckets.length === 0) return null;
  const out: StoredBuckets = {};
  buckets.forEach((b, i) => (out[b.window] = states[i]));
  return out;
}
