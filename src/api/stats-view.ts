import { addMinutes, emptyMinute, type MinuteStats } from "../db/queries/rollups.js";
import type { HeldGroup } from "../db/queries/stats.js";
import { percentile } from "../policy/latency-histogram.js";
import { bucketsFor, grantBuckets, refill, type StoredBuckets, type RateLimit } from "../policy/token-bucket.js";

// Shapes the stats endpoints' answers (routes/stats.ts) from per-destination minute rows, held
// groups and stored token buckets. No I/O.

const MINUTE_MS = 60_000;
const LAST_HOUR_MINUTES = 60;

/** `rows` summed over destinations: one per minute from `sinceMs`, `count` of them, zero-filled. */
export function minuteSeries(rows: readonly MinuteStats[], sinceMs: number, count: number): MinuteStats[] {
  const out = Array.from({ length: count }, (_, i) => emptyMinute("", "", new Date(sinceMs + i * MINUTE_MS)));
  for (const r of rows) {
    const i = Math.floor((r.minute.getTime() - sinceMs) / MINUTE_MS);
    if (i >= 0 && i < count) out[i] = { ...addMinutes(out[i]!, r), minute: out[i]!.minute };
  }
  return out;
}

/** Latency percentiles of a minute, rounded to 0.1 ms. */
export function latencyPercentiles(m: MinuteStats): {
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
  latency_p99_ms: number | null;
} {
  const at = (p: number) => {
    const v = percentile(m.latency_hist, p);
    return v === null ? null : Math.round(v * 10) / 10;
  };
  return { latency_p50_ms: at(0.5), latency_p95_ms: at(0.95), latency_p99_ms: at(0.99) };
}

/** Delivered and failed per destination over the 60 minutes up to `nowMs` (the current minute included). */
export function lastHourByDestination(rows: readonly MinuteStats[], nowMs: number): Map<string, { delivered: number; failed: number }> {
  const from = (Math.floor(nowMs / MINUTE_MS) - (LAST_HOUR_MINUTES - 1)) * MINUTE_MS;
  const out = new Map<string, { delivered: number; failed: number }>();
  for (const r of rows) {
    if (r.minute.getTime() < from) continue;
    const sum = out.get(r.destination_id) ?? { delivered: 0, failed: 0 };
    sum.delivered += r.delivered;
    sum.failed += r.failed;
    out.set(r.destination_id, sum);
  }
  return out;
}

/** Publish time of each destination's oldest waiting delivery, held or not. */
export function oldestWaitingByDestination(groups: readonly HeldGroup[]): Map<string, Date> {
  const out = new Map<string, Date>();
  for (const g of groups) {
    const seen = out.get(g.destination_id);
    if (!seen || g.oldest_at < seen) out.set(g.destination_id, g.oldest_at);
  }
  return out;
}

/** Counts per second from `sinceMs`, `count` seconds, zero-filled. */
export function secondSeries(rows: readonly { at: Date; n: number }[], sinceMs: number, count: number): { at: Date; n: number }[] {
  const out = Array.from({ length: count }, (_, i) => ({ at: new Date(sinceMs + i * 1000), n: 0 }));
  for (const r of rows) {
    const i = Math.floor((r.at.getTime() - sinceMs) / 1000);
    if (i >= 0 && i < count) out[i]!.n += r.n;
  }
  return out;
}

export interface BucketView {
  capacity: number;
  grant_capacity: number;
  tokens: number;
  refill_per_second: number;
}

/**
 * The token buckets now, refilled by policy/token-bucket.ts exactly as the next claim would:
 * against the claim's buckets (the burst less the send-jitter headroom), so `tokens` is what a
 * claim could spend; `capacity` is the configured burst.
 */
export function bucketsNow(
  limit: RateLimit | null,
  stored: StoredBuckets | null,
  nowMs: number,
  sendJitterMs: number,
): { second: BucketView | null; minute: BucketView | null } {
  const out: { second: BucketView | null; minute: BucketView | null } = { second: null, minute: null };
  const grant = grantBuckets(limit, sendJitterMs);
  for (const b of bucketsFor(limit)) {
    const g = grant.find((x) => x.window === b.window) ?? b;
    const s = refill(g, stored?.[b.window], nowMs);
    out[b.window] = {
      capacity: b.capacity,
      grant_capacity: round(g.capacity),
      tokens: round(s.tokens),
      refill_per_second: round(b.ratePerMs * 1000),
    };
  }
  return out;
}

/** The limits as configured, with the burst in force (the finest window's capacity). */
export function limitView(limit: RateLimit | null, maxConcurrency: number) {
  return {
    max_per_second: limit?.max_per_second ?? null,
    max_per_minute: limit?.max_per_minute ?? null,
    burst_capacity: bucketsFor(limit)[0]?.capacity ?? null,
    max_concurrency: maxConcurrency,
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;
