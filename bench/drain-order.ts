// Order figures of a drain (bench/quiet.ts): how far the arrivals at the receiver, and the leases
// that sent them, are from occurred_at order. Pure: arrivals and the lease log in, figures out.
//   rank   = a delivery's place in occurred_at order (0 = oldest), carried in its payload;
//   grant  = the deliveries one claim transaction leased (from the drain database's lease log).

export interface OrderFigures {
  /** Requests that carried a rank, distinct ranks among them, ranks never received, repeats. */
  arrivals: number;
  distinct: number;
  missing: number;
  repeats: number;
  /** Arrivals (in arrival-time order) whose rank is lower than a rank that arrived before them. */
  exactInversions: number;
  /** Over those: the largest (highest rank before − rank), and the largest time since the first higher-ranked arrival. */
  maxRankDisplacement: number;
  maxLatenessMs: number;
  /** Arrivals whose rank is lower than the highest rank of an earlier 100 ms bucket (buckets from the first arrival). */
  bucketMs: number;
  bucketInversions: number;
  /** From the lease log: one grant = the deliveries one claim transaction leased. */
  grants: null | {
    count: number;
    first: number;
    sizeMin: number;
    sizeMedian: number;
    sizeMax: number;
    /** Deliveries leased with a lower rank than one an earlier grant leased (FIFO lease: 0). */
    leasedOutOfOrder: number;
    /** Deliveries leased more than once (a retry or an expired lease). */
    leasedAgain: number;
    /** Arrivals that came after an arrival of a LATER grant: requests of one grant overtaken by the next. */
    crossGrantInversions: number;
    /** Exact inversions between requests of the same grant only. */
    withinGrantInversions: number;
    /** The grants whose requests were overtaken (1 = the first), most first, with their size. */
    overtakenGrants: { grant: number; size: number; overtaken: number }[];
    /** When the first and the last overtaken request arrived, ms after the first arrival. */
    overtakenAtMs: [number, number] | null;
  };
}

export function analyseOrder(
  times: number[],
  ranks: number[],
  n: number,
  leases: { rank: number; xid: string }[] | null,
  bucketMs = 100,
): OrderFigures {
  const idx = times
    .map((_, i) => i)
    .filter((i) => ranks[i]! >= 0)
    .sort((a, b) => times[a]! - times[b]! || a - b);
  const seen = new Uint32Array(n);
  for (const i of idx) if (ranks[i]! < n) seen[ranks[i]!]!++;
  let distinct = 0,
    repeats = 0;
  for (let r = 0; r < n; r++) {
    if (seen[r]! > 0) distinct++;
    if (seen[r]! > 1) repeats += seen[r]! - 1;
  }
  // Exact order: record highs (rank rising with time) answer "the first earlier arrival ranked above r".
  const recRank: number[] = [];
  const recTime: number[] = [];
  let inversions = 0,
    maxDisp = 0,
    maxLate = 0;
  const inverted = new Uint8Array(idx.length);
  idx.forEach((i, k) => {
    const r = ranks[i]!,
      t = times[i]!;
    const top = recRank.length ? recRank[recRank.length - 1]! : -1;
    if (r > top) {
      recRank.push(r);
      recTime.push(t);
      return;
    }
    inversions++;
    inverted[k] = 1;
    maxDisp = Math.max(maxDisp, top - r);
    let lo = 0,
      hi = recRank.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (recRank[mid]! > r) hi = mid;
      else lo = mid + 1;
    }
    maxLate = Math.max(maxLate, t - recTime[lo]!);
  });
  // Coarse order: ranks of each 100 ms bucket all below those of later buckets.
  let bucketInv = 0;
  if (idx.length) {
    const t0 = times[idx[0]!]!;
    let cur = 0,
      curMax = -1,
      before = -1;
    for (const i of idx) {
      const b = Math.floor((times[i]! - t0) / bucketMs);
      if (b !== cur) {
        before = Math.max(before, curMax);
        curMax = -1;
        cur = b;
      }
      if (ranks[i]! < before) bucketInv++;
      curMax = Math.max(curMax, ranks[i]!);
    }
  }
  let grants: OrderFigures["grants"] = null;
  if (leases && leases.length) {
    const grantOfXid = new Map<string, number>();
    const sizes: number[] = [];
    const grantOf = new Map<number, number>();
    const leasedCount = new Map<number, number>();
    let maxBefore = -1,
      curGrant = -1,
      curMax = -1,
      outOfOrder = 0;
    for (const l of leases) {
      let g = grantOfXid.get(l.xid);
      if (g === undefined) {
        g = sizes.length;
        grantOfXid.set(l.xid, g);
        sizes.push(0);
      }
      if (g !== curGrant) {
        maxBefore = Math.max(maxBefore, curMax);
        curMax = -1;
        curGrant = g;
      }
      sizes[g]!++;
      if (l.rank < maxBefore) outOfOrder++;
      curMax = Math.max(curMax, l.rank);
      grantOf.set(l.rank, g);
      leasedCount.set(l.rank, (leasedCount.get(l.rank) ?? 0) + 1);
    }
    let cross = 0,
      within = 0,
      maxG = -1;
    const overtaken = new Map<number, number>();
    let firstAt: number | null = null,
      lastAt: number | null = null;
    const t0 = idx.length ? times[idx[0]!]! : 0;
    idx.forEach((i, k) => {
      const g = grantOf.get(ranks[i]!) ?? -1;
      const crossed = g < maxG;
      if (crossed) {
        cross++;
        overtaken.set(g, (overtaken.get(g) ?? 0) + 1);
        firstAt ??= times[i]! - t0;
        lastAt = times[i]! - t0;
      } else if (inverted[k]) within++;
      maxG = Math.max(maxG, g);
    });
    const sorted = [...sizes].sort((a, b) => a - b);
    grants = {
      count: sizes.length,
      first: sizes[0] ?? 0,
      sizeMin: sorted[0] ?? 0,
      sizeMedian: sorted[Math.floor(sorted.length / 2)] ?? 0,
      sizeMax: sorted[sorted.length - 1] ?? 0,
      leasedOutOfOrder: outOfOrder,
      leasedAgain: [...leasedCount.values()].reduce((a, c) => a + c - 1, 0),
      crossGrantInversions: cross,
      withinGrantInversions: within,
      overtakenGrants: [...overtaken]
        .sort((x, y) => y[1] - x[1])
        .slice(0, 5)
        .map(([g, c]) => ({ grant: g + 1, size: sizes[g] ?? 0, overtaken: c })),
      overtakenAtMs: firstAt === null || lastAt === null ? null : [Math.round(firstAt), Math.round(lastAt)],
    };
  }
  return {
    arrivals: idx.length,
    distinct,
    missing: n - distinct,
    repeats,
    exactInversions: inversions,
    maxRankDisplacement: maxDisp,
    maxLatenessMs: Math.round(maxLate * 10) / 10,
    bucketMs,
    bucketInversions: bucketInv,
    grants,
  };
}
