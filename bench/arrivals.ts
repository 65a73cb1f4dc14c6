// Figures from arrival times at the receiver, pure: how a destination's arrivals keep and use its
// rate limit (bench:flow, the quiet drain), and how far a drain's arrivals and leases are from
// occurred_at order. rank = a delivery's place in occurred_at order (0 = oldest), carried in its
// payload; grant = the deliveries one claim transaction leased (the drain database's lease log).
import { auditBucket } from "../src/policy/rate-audit.js";
import { bucketsFor } from "../src/policy/token-bucket.js";

/** Sorted arrival times (ms) of one destination with max_per_second `rate` and `burst_capacity` `burst`. */
export function rateFigures(t: number[], rate: number, burst: number) {
  const bucket = bucketsFor({ max_per_second: rate, burst_capacity: burst })[0]!;
  const strict = auditBucket(t, bucket, 0);
  let maxIn1s = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j]! - t[i]! >= 1000) i++;
    maxIn1s = Math.max(maxIn1s, j - i + 1);
  }
  // The backlogged phase after the burst, over its middle 80 %, so that tokens banked while the
  // first claim after the burst was on its way (and the ragged end) do not flatter or spoil the rate.
  const after = t.slice(burst);
  const [a, z] = [Math.floor(after.length * 0.1), Math.floor(after.length * 0.9)];
  return {
    overLimit: { strict: strict.offending.length, jitter20ms: auditBucket(t, bucket, 20).offending.length, worst: strict.worst },
    maxIn1s,
    utilisation: z - a > 1 ? (z - a) / ((after[z]! - after[a]!) / 1000) / rate : null,
  };
}

/** Items whose value is below the highest value of an earlier group (a group: a run of items with the same key). */
function belowEarlierGroups<T>(items: T[], key: (x: T) => unknown, value: (x: T) => number): number {
  let count = 0;
  let before = -1;
  let groupMax = -1;
  let group: unknown = undefined;
  for (const x of items) {
    if (key(x) !== group) {
      before = Math.max(before, groupMax);
      groupMax = -1;
      group = key(x);
    }
    if (value(x) < before) count++;
    groupMax = Math.max(groupMax, value(x));
  }
  return count;
}

export type OrderFigures = ReturnType<typeof analyseOrder>;

/**
 * exactInversions: arrivals (in arrival-time order) ranked below an earlier arrival, the worst by
 * rank and by ms since the first higher-ranked arrival; bucketInversions: arrivals ranked below
 * any arrival of an earlier `bucketMs` bucket; grants: leases out of order, and arrivals that came
 * after an arrival of a later grant (one grant's requests overtaken by the next).
 */
export function analyseOrder(times: number[], ranks: number[], n: number, leases: { rank: number; xid: string }[], bucketMs = 100) {
  const idx = times
    .map((_, i) => i)
    .filter((i) => ranks[i]! >= 0)
    .sort((a, b) => times[a]! - times[b]! || a - b);
  const seen = new Uint32Array(n);
  for (const i of idx) if (ranks[i]! < n) seen[ranks[i]!]!++;
  const distinct = seen.filter((s) => s > 0).length;
  const t0 = idx.length ? times[idx[0]!]! : 0;

  // Record highs (rank rising with time) answer "the first earlier arrival ranked above r".
  const recRank: number[] = [];
  const recTime: number[] = [];
  const inverted = new Uint8Array(idx.length);
  let maxDisp = 0;
  let maxLate = 0;
  idx.forEach((i, k) => {
    const r = ranks[i]!;
    const t = times[i]!;
    const top = recRank.at(-1) ?? -1;
    if (r > top) {
      recRank.push(r);
      recTime.push(t);
      return;
    }
    inverted[k] = 1;
    maxDisp = Math.max(maxDisp, top - r);
    let [lo, hi] = [0, recRank.length - 1];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (recRank[mid]! > r) hi = mid;
      else lo = mid + 1;
    }
    maxLate = Math.max(maxLate, t - recTime[lo]!);
  });

  let grants = null;
  if (leases.length) {
    const grantOfXid = new Map<string, number>();
    const grantOfRank = new Map<number, number>();
    const sizes: number[] = [];
    for (const l of leases) {
      if (!grantOfXid.has(l.xid)) {
        grantOfXid.set(l.xid, sizes.length);
        sizes.push(0);
      }
      const g = grantOfXid.get(l.xid)!;
      sizes[g]!++;
      grantOfRank.set(l.rank, g);
    }
    let cross = 0;
    let within = 0;
    let maxG = -1;
    const overtaken = new Map<number, number>();
    const overtakenAt: number[] = [];
    idx.forEach((i, k) => {
      const g = grantOfRank.get(ranks[i]!) ?? -1;
      if (g < maxG) {
        cross++;
        overtaken.set(g, (overtaken.get(g) ?? 0) + 1);
        overtakenAt.push(Math.round(times[i]! - t0));
      } else if (inverted[k]) within++;
      maxG = Math.max(maxG, g);
    });
    const sorted = [...sizes].sort((a, b) => a - b);
    grants = {
      count: sizes.length,
      first: sizes[0]!,
      sizeMin: sorted[0]!,
      sizeMedian: sorted[Math.floor(sorted.length / 2)]!,
      sizeMax: sorted.at(-1)!,
      leasedOutOfOrder: belowEarlierGroups(
        leases,
        (l) => l.xid,
        (l) => l.rank,
      ),
      leasedAgain: leases.length - grantOfRank.size,
      crossGrantInversions: cross,
      withinGrantInversions: within,
      overtakenGrants: [...overtaken]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 5)
        .map(([g, c]) => ({ grant: g + 1, size: sizes[g] ?? 0, overtaken: c })),
      overtakenAtMs: overtakenAt.length ? [overtakenAt[0]!, overtakenAt.at(-1)!] : null,
    };
  }
  return {
    arrivals: idx.length,
    distinct,
    missing: n - distinct,
    repeats: idx.filter((i) => ranks[i]! < n).length - distinct,
    exactInversions: inverted.reduce((a, b) => a + b, 0),
    maxRankDisplacement: maxDisp,
    maxLatenessMs: Math.round(maxLate * 10) / 10,
    bucketMs,
    bucketInversions: belowEarlierGroups(
      idx,
      (i) => Math.floor((times[i]! - t0) / bucketMs),
      (i) => ranks[i]!,
    ),
    grants,
  };
}
