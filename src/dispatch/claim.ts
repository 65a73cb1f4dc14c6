import type { Db } from "../db/db.js";
import { withRetry } from "../db/db.js";
import {
  lockReadyDestinations, reclaimAndCountInflight, leaseDeliveries, stateAfterLease, setReadyAt,
  type ClaimedDestination, type Grant, type LeasedDelivery,
} from "../db/queries/claim.js";
import { slotsFree, nextReadyAt } from "../policy/gates.js";

// One claim transaction: lock ready destinations, decide grants with pure policy, lease due
// deliveries, set each destination's next ready_at. Nothing is claimed and put back.

export interface ClaimResult {
  destinations: Map<string, ClaimedDestination>;
  deliveries: LeasedDelivery[];
  /** Destinations locked in this claim (whether or not they got work). */
  claimedCount: number;
  /** Destinations that were at their concurrency cap with due work waiting. */
  slotDenied: number;
}

export interface ClaimOptions {
  /** Most deliveries this claim may lease in total (the worker's free send capacity). */
  capacity: number;
  batchSize: number;
  grantCap: number;
  leaseMarginSeconds: number;
  shard: [number, number] | null;
}

export async function claim(db: Db, opts: ClaimOptions): Promise<ClaimResult> {
  return withRetry(db, async (q) => {
    const locked = await lockReadyDestinations(q, Math.max(1, Math.min(opts.batchSize, opts.capacity)), opts.shard);
    const result: ClaimResult = { destinations: new Map(), deliveries: [], claimedCount: locked.length, slotDenied: 0 };
    if (locked.length === 0) return result;
    const ids = locked.map((d) => d.id);
    const inflight = await reclaimAndCountInflight(q, ids);

    let budget = opts.capacity;
    const grants: Grant[] = [];
    for (const d of locked) {
      result.destinations.set(d.id, d);
      const free = slotsFree(gateInput(d, inflight.get(d.id) ?? 0));
      const n = Math.min(free, opts.grantCap, budget);
      if (n <= 0) continue;
      budget -= n;
      grants.push({ destinationId: d.id, count: n, ordered: d.ordered, leaseSeconds: d.timeout_seconds + opts.leaseMarginSeconds });
    }
    result.deliveries = await leaseDeliveries(q, grants);

    const after = await stateAfterLease(q, locked);
    const updates = after.map((a) => {
      const d = result.destinations.get(a.destination_id)!;
      const input = gateInput(d, a.inflight);
      if (a.next_waiting !== null && a.next_waiting <= d.now && slotsFree(input) === 0 && !d.paused_at) result.slotDenied++;
      const at = nextReadyAt({
        ...input,
        nextWaitingMs: a.next_waiting?.getTime() ?? null,
        nextLeaseExpiryMs: a.next_lease_expiry?.getTime() ?? null,
      });
      return { id: a.destination_id, readyAt: at === null ? null : new Date(at) };
    });
    await setReadyAt(q, updates);
    return result;
  });
}

function gateInput(d: ClaimedDestination, inflight: number) {
  return {
    nowMs: d.now.getTime(),
    maxConcurrency: d.max_concurrency,
    ordered: d.ordered,
    inflight,
    throttledUntilMs: d.throttled_until?.getTime() ?? null,
    paused: d.paused_at !== null,
  };
}
