// Latency histograms with fixed, roughly logarithmic buckets: what the stats rollups store per
// destination and minute (stats_minutes.latency_hist), so percentiles over any span of minutes
// and destinations come from adding small arrays, never from re-reading attempts. Pure.
//
// Bucket i holds latencies in [BOUNDS_MS[i-1], BOUNDS_MS[i]) — the first from 0, the last from
// the last bound up, without end. That is what Postgres's width_bucket(ms, BOUNDS_MS) numbers,
// so SQL and bucketOf() agree on every value (test/integration/stats.test.ts checks it).
// Changing the bounds changes what stored arrays mean: it needs a migration that clears them.

/** Lower bounds of buckets 1.. in milliseconds; publish→delivery can wait hours behind a hold, hence the tail. */
export const BOUNDS_MS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
] as const;

/** Number of buckets: one below the first bound, one per bound. */
export const BUCKETS = BOUNDS_MS.length + 1;

/** Counts per bucket, index = bucket number. Shorter arrays read as zeros beyond their end. */
export type Histogram = number[];

export function emptyHistogram(): Histogram {
  return new Array<number>(BUCKETS).fill(0);
}

/** The bucket of a latency: the number of bounds at or below it (negative and NaN: bucket 0). */
export function bucketOf(ms: number): number {
  let i = 0;
  while (i < BOUNDS_MS.length && ms >= BOUNDS_MS[i]!) i++;
  return i;
}

/** Adds one latency (a fresh array; the input is left as it was). */
export function record(h: Histogram, ms: number, count = 1): Histogram {
  const out = merge(h, emptyHistogram());
  out[bucketOf(ms)]! += count;
  return out;
}

/** Bucket-wise sum: commutative and associative, and it keeps the totals (total(a) + total(b)). */
export function merge(a: readonly number[], b: readonly number[]): Histogram {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = (a[i] ?? 0) + (b[i] ?? 0);
  return out;
}

export function total(h: readonly number[]): number {
  let n = 0;
  for (const c of h) n += c;
  return n;
}

/**
 * The `p` quantile (0 ≤ p ≤ 1, e.g. 0.95) in milliseconds, or null for an empty histogram.
 * Interpolated linearly inside the bucket that holds it, as Prometheus's histogram_quantile
 * does: the answer lies in the bucket of the true quantile, so it is off by at most that bucket's
 * width. The last bucket has no upper end: a quantile there is reported as its lower bound
 * (a floor, "at least an hour").
 */
export function percentile(h: readonly number[], p: number): number | null {
  const n = total(h);
  if (n === 0) return null;
  const rank = Math.min(1, Math.max(0, p)) * n;
  let before = 0;
  for (let i = 0; i < h.length; i++) {
    const count = h[i] ?? 0;
    if (count > 0 && before + count >= rank) {
      const lo = i === 0 ? 0 : BOUNDS_MS[Math.min(i, BOUNDS_MS.length) - 1]!;
      const hi = BOUNDS_MS[i];
      if (hi === undefined) return lo;
      return lo + ((hi - lo) * Math.max(0, rank - before)) / count;
    }
    before += count;
  }
  return null; // unreachable: rank ≤ n
}
