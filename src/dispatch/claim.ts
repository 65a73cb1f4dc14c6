import type { Db } from "../db/db.js";
import { withRetry, lastStatement } from "../db/db.js";
import { lockReadyDestinations, leaseDeliveries, setReadyAt, type ClaimedDestination, type LeasedDelivery } from "../db/queries/claim.js";
import { planGrants, planAfterClaim, leasedPerDestination, type HoldTransition, type PlanOptions } from "./claim-plan.js";
import { setAside, type Fault } from "./set-aside.js";
import type { SetAsideRow } from "../db/queries/set-aside.js";

export { IDLE_RECHECK_MS, type HoldTransition } from "./claim-plan.js";

// One claim transaction: lock ready destinations, decide grants with pure policy, lease due
// deliveries, set each destination's next ready_at. Nothing is claimed and put back. The
// decisions are claim-plan.ts's; this only reads and applies them.

export interface ClaimResult {
  destinations: Map<string, ClaimedDestination>;
  deliveries: LeasedDelivery[];
  /** Paused destinations (transient cause) whose probe is due: send each one probe. */
  probes: ClaimedDestination[];
  /** Destinations locked in this claim (whether or not they got work). */
  claimedCount: number;
  /**
   * Look again at once: the claim took as many destinations as it could (more may be ready), or
   * left one ready now (due work beyond its grant). Otherwise every destination ready when it
   * began was claimed — by it, or by a claim that held the row — and settled.
   */
  again: boolean;
  /** Destinations that were at their concurrency cap with due work waiting. */
  slotDenied: number;
  /** Hold flags this claim changed (committed with it): each is logged once, by this worker. */
  transitions: HoldTransition[];
  /** Destinations this claim set aside (paused, committed with it), and the rows it paused. */
  setAside: { faults: Fault[]; rows: SetAsideRow[] };
}

export interface ClaimOptions extends PlanOptions {
  batchSize: number;
  shard: [number, number] | null;
  /** Carried by every lease this claim takes (see abandonClaims). */
  leaseToken: string;
  /** Read what each delivery waited for, for its attempt's trace (docs/tracing.md). */
  traced?: boolean;
}

export async function claim(db: Db, opts: ClaimOptions): Promise<ClaimResult> {
  return withRetry(
    db,
    async (q) => {
      const limit = Math.max(1, Math.min(opts.batchSize, opts.capacity));
      const locked = await lockReadyDestinations(q, limit, opts.shard);
      const result: ClaimResult = {
        destinations: new Map(locked.map((d) => [d.id, d])),
        deliveries: [],
        probes: [],
        claimedCount: locked.length,
        again: locked.length >= limit,
        slotDenied: 0,
        transitions: [],
        setAside: { faults: [], rows: [] },
      };
      if (locked.length === 0) return result;

      const plan = planGrants(locked, opts);
      result.probes = plan.probes;
      const { leased, moreDue } = await leaseDeliveries(q, plan.grants, opts.leaseToken, opts.traced ?? false);
      result.deliveries = leased;

      const asideBefore = new Set(plan.setAside.map((a) => a.destination.id));
      const planned = asideBefore.size ? locked.filter((d) => !asideBefore.has(d.id)) : locked;
      const after = planAfterClaim(planned, leasedPerDestination(leased), moreDue, plan, opts);
      result.slotDenied = after.slotDenied;
      result.transitions = after.transitions;
      result.again ||= after.readyAgain;
      const faults: Fault[] = [...plan.setAside, ...after.setAside].map((a) => ({
        id: a.destination.id,
        code: a.code,
        detail: a.detail,
        error: a.error,
      }));
      if (faults.length > 0) {
        // Rare: a destination this claim cannot plan is paused, and leases it took are handed back.
        const aside = new Set(faults.map((f) => f.id));
        result.deliveries = leased.filter((l) => !aside.has(l.destination_id));
        result.setAside = { faults, rows: await setAside(q, faults, [opts.leaseToken]) };
      }
      // Its commit goes out with it (one round trip): nothing is left to do in the transaction.
      await setReadyAt(lastStatement(q), after.updates);
      return result;
    },
    // The claim's statements plan in ~0.4–1 ms and run in well under 0.1 ms (db.ts TxOptions).
    { genericPlans: true },
  );
}
