import type { Db, Queryable, TxQueryable } from "../db.js";
import { currentQuietWindow, type DeliverySchedule } from "../../policy/quiet-hours.js";
import { unlessFaulty } from "../../policy/stored-config.js";
import type { RateLimit, StoredBuckets } from "../../policy/token-bucket.js";
import { holdReason, type HoldFacts } from "../../policy/hold-reason.js";
import { HOLD_REASONS, type HoldReason } from "../../policy/statuses.js";
import type { PacedDestination } from "../../policy/adaptive-pace.js";
import { UNLEASED } from "./leases.js";

// Read-only aggregates for metrics and audits, and the readiness probe.

/** Throws unless the store answers (GET /healthz). */
export async function ping(q: Queryable): Promise<void> {
  await q.query("SELECT 1");
}

/** Live leases, all destinations and workers. */
export async function inflightTotal(q: Queryable): Promise<number> {
  const rows = await q.query<{ n: number }>("SELECT count(*)::int AS n FROM leases");
  return rows[0]?.n ?? 0;
}

/**
 * Waiting deliveries by why they wait, and the age of the oldest in each group: every waiting
 * delivery is reduced to the facts policy/hold-reason.ts decides on (the same facts the API
 * derives for one delivery), grouped by them — a few dozen groups at most, whatever the backlog —
 * and each group is classified by holdReason(). `quietDestinationIds`: those whose quiet window
 * is open now, worked out by the caller. Unheld deliveries are left out.
 */
export async function heldByReason(
  db: Db,
  quietDestinationIds: string[] = [],
): Promise<{ reason: HoldReason; n: number; oldest_age_s: number }[]> {
  return sumByReason(classifyHeld(await db.tx((q) => heldGroupsOn(db.kind, q, quietDestinationIds, null))));
}

/** A group of waiting deliveries of one destination that share their HoldFacts. */
export interface HeldGroup extends HoldFacts {
  destination_id: string;
  tenant_id: string;
  n: number;
  /** The oldest's publish time (deliveries.created_at), and its age now by the store's clock. */
  oldest_at: Date;
  oldest_age_s: number;
}

/**
 * heldGroups as each store plans it best, in `q`'s transaction. On the embedded store, with
 * nested loops off for that one statement: the deliveries in flight are left out by a NOT EXISTS
 * against `leases`, and once `leases` had been analyzed empty (a quiet store, nothing in flight)
 * PGlite planned it as a nested loop that rescanned `leases` once per waiting delivery, where a
 * hash anti-join reads it once. At 1,000,000 waiting, `GET /v1/stats` took 2.3 s of the store's
 * one session, and 0.8 s with nested loops off. On a server the same setting made it slower (0.45
 * → 1.0 s; CHANGELOG.md, API reads), so a server plans as it likes. NOT IN would hash on both,
 * but only while Postgres expects the leases to fit in memory; past that it compares every lease
 * with every delivery.
 */
export async function heldGroupsOn(
  kind: Db["kind"],
  q: TxQueryable,
  quietDestinationIds: string[],
  destinationIds: string[] | null,
): Promise<HeldGroup[]> {
  if (kind === "server") return heldGroups(q, quietDestinationIds, destinationIds);
  await q.exec("SET LOCAL enable_nestloop = off");
  const groups = await heldGroups(q, quietDestinationIds, destinationIds);
  await q.exec("SET LOCAL enable_nestloop TO DEFAULT"); // the rest of the caller's transaction plans as before
  return groups;
}

/**
 * The waiting deliveries of `destinationIds` (null: of every destination) grouped by destination
 * and HoldFacts: a few groups per destination, whatever its backlog. Costs one pass over those
 * destinations' waiting deliveries (the deliveries_waiting_idx partial index). Callers use
 * heldGroupsOn.
 */
export async function heldGroups(q: Queryable, quietDestinationIds: string[], destinationIds: string[] | null): Promise<HeldGroup[]> {
  const only = (col: string) => (destinationIds === null ? "" : `AND ${col} = ANY($2::text[])`);
  // Columns named as HoldFacts' fields: each group row is classified as it comes.
  return q.query<HeldGroup>(
    // Each waiting delivery is read for its own facts and counted into a group; what holds a
    // destination's deliveries alike (a pause, a throttle, leases against its cap: at_cap as in
    // deliveries.ts's SELECT) is joined to the groups afterwards, a few rows per destination
    // whatever its backlog. Joined to every waiting delivery, they took about half the time at a
    // long backlog (200,000 waiting: 330 → 195 ms embedded). In an ordered destination every
    // waiting delivery after the first unfinished one is behind it.
    `WITH first_unfinished AS (
       SELECT d.id AS destination_id, f.occurred_at, f.id
         FROM destinations d
         CROSS JOIN LATERAL (SELECT x.occurred_at, x.id FROM deliveries x
                              WHERE x.destination_id = d.id AND x.status IN ('queued', 'retry_scheduled')
                              ORDER BY x.occurred_at, x.id LIMIT 1) f
        WHERE d.ordered ${only("d.id")}
     ), waiting AS (
       SELECT dl.destination_id, dl.status, dl.attempts > 0 AS attempted, dl.next_attempt_at <= now() AS due, dl.quiet_hold,
              coalesce((f.occurred_at, f.id) < (dl.occurred_at, dl.id), false) AS behind,
              count(*) AS n, min(dl.created_at) AS oldest_at
         FROM deliveries dl
         LEFT JOIN first_unfinished f ON f.destination_id = dl.destination_id
        WHERE dl.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("dl")} ${only("dl.destination_id")}
        GROUP BY 1, 2, 3, 4, 5, 6
     ), inflight AS (
       SELECT destination_id, count(*) AS n FROM leases WHERE true ${only("destination_id")} GROUP BY destination_id
     )
     SELECT w.destination_id, d.tenant_id,
            w.status, w.attempted, w.due,
            d.paused_at IS NOT NULL AS paused, coalesce(d.throttled_until > now(), false) AS throttled,
            (w.quiet_hold AND w.destination_id = ANY($1::text[])) AS quiet, w.behind,
            coalesce(c.n, 0) >= CASE WHEN d.ordered THEN 1
                                     ELSE least(d.max_concurrency, coalesce(d.ramp_limit, d.max_concurrency),
                                                CASE WHEN (d.adaptive->>'enabled')::boolean THEN (d.pace_state->>'concurrency')::int END) END AS "atCap",
            d.rate_limited AS "rateLimited",
            sum(w.n)::int AS n, min(w.oldest_at) AS oldest_at,
            coalesce(extract(epoch FROM now() - min(w.oldest_at)), 0)::float8 AS oldest_age_s
       FROM waiting w
       JOIN destinations d ON d.id = w.destination_id
       LEFT JOIN inflight c ON c.destination_id = w.destination_id
      GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11`,
    destinationIds === null ? [quietDestinationIds] : [quietDestinationIds, destinationIds],
  );
}

export interface HeldCount {
  destination_id: string;
  tenant_id: string;
  reason: HoldReason;
  n: number;
  oldest_age_s: number;
}

/** Held deliveries per destination and hold reason (groups that nothing holds are left out). */
export function classifyHeld(groups: readonly HeldGroup[]): HeldCount[] {
  const out = new Map<string, HeldCount>();
  for (const g of groups) {
    const reason = holdReason(g);
    if (reason === null) continue;
    const key = `${g.destination_id}\u0000${reason}`;
    const sum = out.get(key);
    if (sum) {
      sum.n += g.n;
      sum.oldest_age_s = Math.max(sum.oldest_age_s, g.oldest_age_s);
    } else {
      out.set(key, { destination_id: g.destination_id, tenant_id: g.tenant_id, reason, n: g.n, oldest_age_s: g.oldest_age_s });
    }
  }
  return [...out.values()];
}

/** Per-destination counts summed per reason (oldest: the oldest of all), in HOLD_REASONS order. */
export function sumByReason(counts: readonly { reason: HoldReason; n: number; oldest_age_s: number }[]) {
  const byReason = new Map<HoldReason, { reason: HoldReason; n: number; oldest_age_s: number }>();
  for (const c of counts) {
    const sum = byReason.get(c.reason);
    if (sum) {
      sum.n += c.n;
      sum.oldest_age_s = Math.max(sum.oldest_age_s, c.oldest_age_s);
    } else {
      byReason.set(c.reason, { reason: c.reason, n: c.n, oldest_age_s: c.oldest_age_s });
    }
  }
  return HOLD_REASONS.flatMap((r) => byReason.get(r) ?? []);
}

export interface AttemptTime {
  started_at: Date;
  outcome: string;
}

/** Attempts of one destination since a time, oldest first. */
export async function attemptTimes(q: Queryable, destinationId: string, since: Date): Promise<AttemptTime[]> {
  return q.query<AttemptTime>(
    "SELECT started_at, outcome FROM attempts WHERE destination_id = $1 AND started_at >= $2 ORDER BY started_at",
    [destinationId, since],
  );
}

/** The limits `sluice audit rate` checks a destination's attempts against, or null if there is no such destination. */
export async function destinationLimits(
  q: Queryable,
  destinationId: string,
): Promise<{ rate_limit: RateLimit | null; max_concurrency: number } | null> {
  const rows = await q.query<{ rate_limit: RateLimit | null; max_concurrency: number }>(
    "SELECT rate_limit, max_concurrency FROM destinations WHERE id = $1",
    [destinationId],
  );
  return rows[0] ?? null;
}

/** Live destinations per health status. */
export async function destinationsByHealth(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query("SELECT health_status AS status, count(*)::int AS n FROM destinations WHERE deleted_at IS NULL GROUP BY health_status");
}

/** Live destinations with quiet hours, for working out whose window is open now. */
export async function scheduledDestinations(q: Queryable): Promise<{ id: string; delivery_schedule: DeliverySchedule }[]> {
  return q.query("SELECT id, delivery_schedule FROM destinations WHERE delivery_schedule IS NOT NULL AND deleted_at IS NULL");
}

/** Of `destinationIds` (null: every live destination), those whose quiet window is open at `nowMs`. */
export async function quietNow(q: Queryable, destinationIds: string[] | null, nowMs: number): Promise<string[]> {
  const rows =
    destinationIds === null
      ? await scheduledDestinations(q)
      : await q.query<{ id: string; delivery_schedule: DeliverySchedule }>(
          "SELECT id, delivery_schedule FROM destinations WHERE id = ANY($1::text[]) AND delivery_schedule IS NOT NULL AND deleted_at IS NULL",
          [destinationIds],
        );
  return rows.filter((d) => unlessFaulty(() => currentQuietWindow(d.delivery_schedule, nowMs) !== null, false)).map((d) => d.id);
}

/** Attempts (probes included: what the receiver saw) started per whole second since `since`, oldest first; seconds without any are left out. */
export async function arrivalsPerSecond(q: Queryable, destinationId: string, since: Date): Promise<{ at: Date; n: number }[]> {
  return q.query(
    `SELECT date_trunc('second', started_at) AS at, count(*)::int AS n
       FROM attempts WHERE destination_id = $1 AND started_at >= $2
      GROUP BY 1 ORDER BY 1`,
    [destinationId, since],
  );
}

export interface RateState extends PacedDestination {
  bucket_state: StoredBuckets | null;
  now: Date;
}

/** A tenant's live destination's rate limit, concurrency cap and token buckets as stored, with the store's clock; null if unknown. */
export async function destinationRateState(q: Queryable, tenantId: string, destinationId: string): Promise<RateState | null> {
  const rows = await q.query<RateState>(
    `SELECT rate_limit, max_concurrency, bucket_state, adaptive, pace_state, CASE WHEN paused_at IS NULL THEN ramp_limit END AS ramp_limit,
            now() AS now
       FROM destinations WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`,
    [destinationId, tenantId],
  );
  return rows[0] ?? null;
}

/** The store's lock contention now: its deadlocks so far, and the sessions waiting for a lock. */
export interface StoreLocks {
  /** pg_stat_database.deadlocks of this database: a count since the server's statistics were reset. */
  deadlocks: number;
  /** Sessions waiting for a lock now. */
  waiting: number;
  /** The longest of those waits so far, seconds (0 when none waits). */
  longestWaitS: number;
}

export async function storeLocks(q: Queryable): Promise<StoreLocks> {
  const rows = await q.query<StoreLocks>(
    `SELECT (SELECT coalesce(deadlocks, 0)::float8 FROM pg_stat_database WHERE datname = current_database()) AS deadlocks,
            count(DISTINCT l.pid)::int AS waiting,
            coalesce(extract(epoch FROM max(now() - l.waitstart)), 0)::float8 AS "longestWaitS"
       -- By the waiting session's database: a wait for another transaction (a row lock) names none.
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE NOT l.granted AND a.datname = current_database()`,
  );
  return rows[0] ?? { deadlocks: 0, waiting: 0, longestWaitS: 0 };
}
