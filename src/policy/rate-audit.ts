import type { Bucket } from "./token-bucket.js";

// Checks recorded send times against token buckets: is there any window [t_i, t_j] holding more
// than capacity + rate × (t_j − t_i) sends? With f(k) = k − rate·t_k, the window ending at j is
// worst when it starts at the i ≤ j minimising f(i), so one pass finds every offending end.

export interface WindowFinding {
  fromMs: number;
  toMs: number;
  count: number;
  allowed: number;
}

export interface BucketAudit {
  window: Bucket["window"];
  capacity: number;
  perSecond: number;
  /** Sends (by index into the sorted times) that ended a window over the limit. */
  offending: number[];
  worst: WindowFinding | null;
}

/**
 * `jitterMs` widens every window by that much: a send starts a little after its token was granted
 * (the claim commits, then the request goes out), so two sends can start closer together than
 * their tokens were. Zero checks the times exactly.
 */
export function auditBucket(timesMs: readonly number[], b: Bucket, jitterMs = 0): BucketAudit {
  const t = [...timesMs].sort((x, y) => x - y);
  const offending: number[] = [];
  let worst: WindowFinding | null = null;
  let worstExcess = 0;
  let minF = Infinity;
  let minI = 0;
  for (let j = 0; j < t.length; j++) {
    const f = j - b.ratePerMs * t[j]!;
    if (f < minF) {
      minF = f;
      minI = j;
    }
    const count = j - minI + 1;
    const allowed = b.capacity + b.ratePerMs * (t[j]! - t[minI]! + jitterMs);
    const excess = count - allowed;
    if (excess > 1e-9) {
      offending.push(j);
      if (excess > worstExcess) {
        worstExcess = excess;
        worst = { fromMs: t[minI]!, toMs: t[j]!, count, allowed };
      }
    }
  }
  return { window: b.window, capacity: b.capacity, perSecond: b.ratePerMs * 1000, offending, worst };
}

/** Sends per whole second (UTC), for the report. */
export function perSecond(timesMs: readonly number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const ms of timesMs) {
    const s = Math.floor(ms / 1000);
    out.set(s, (out.get(s) ?? 0) + 1);
  }
  return out;
}
