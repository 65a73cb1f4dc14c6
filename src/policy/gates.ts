// How much a claimed destination may send now, and when to look at it next. Pure: every input,
// including the time, is passed in; the claim transaction applies the answer.

export interface GateInput {
  nowMs: number;
  maxConcurrency: number;
  ordered: boolean;
  /** Live leases now (after expired ones were returned to the queue). */
  inflight: number;
  throttledUntilMs: number | null;
  paused: boolean;
}

/** Deliveries this destination may be granted now (before looking at what is due). */
export function slotsFree(g: GateInput): number {
  if (g.paused) return 0;
  if (g.throttledUntilMs !== null && g.throttledUntilMs > g.nowMs) return 0;
  const cap = g.ordered ? 1 : g.maxConcurrency;
  return Math.max(0, cap - g.inflight);
}

export interface AfterClaim extends GateInput {
  /** Earliest next_attempt_at among waiting deliveries after the grant, or null when none wait. */
  nextWaitingMs: number | null;
  /** Earliest lease expiry of in-flight deliveries, or null when none are in flight. */
  nextLeaseExpiryMs: number | null;
  /** When the rate limit next allows a send (≤ nowMs: now); null or absent when unlimited. */
  nextTokenMs?: number | null;
}

/**
 * The destination's new ready_at (ms), or null when nothing can happen until new work arrives.
 * A finished request also makes the destination ready again (see write-back), so a destination
 * whose slots are full only needs waking at its earliest lease expiry — the crash case.
 */
export function nextReadyAt(s: AfterClaim): number | null {
  if (s.paused) return null;
  const candidates: number[] = [];
  if (s.nextLeaseExpiryMs !== null) candidates.push(s.nextLeaseExpiryMs);
  if (s.nextWaitingMs !== null) {
    // Due work goes when it is due and a token exists.
    const due = Math.max(s.nextWaitingMs, s.nowMs, s.nextTokenMs ?? s.nowMs);
    // Due work with a free slot: ready now; due work without one: the lease expiry (or a write-back)
    // wakes it. A throttle hold closes every slot but ends on its own: due work waits for its end
    // (below), or with nothing in flight nothing else would wake it when the hold lifts.
    const held = s.throttledUntilMs !== null && s.throttledUntilMs > s.nowMs;
    if (due > s.nowMs || slotsFree(s) > 0 || held) candidates.push(due);
  }
  if (candidates.length === 0) return null;
  let at = Math.min(...candidates);
  if (s.throttledUntilMs !== null && s.throttledUntilMs > at) at = s.throttledUntilMs;
  return at;
}
