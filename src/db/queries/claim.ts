import type { Queryable } from "../db.js";
import { jsonRows, recordset } from "../json-rows.js";
import type { RateLimit, StoredBuckets } from "../../policy/token-bucket.js";
import type { DeliverySchedule } from "../../policy/quiet-hours.js";
import type { AdaptiveConfig, PaceState } from "../../policy/adaptive-pace.js";
import { UNLEASED } from "./leases.js";
import { nowPlusSeconds } from "./sql-time.js";

// The claim transaction: four statements inside one transaction that holds the claimed
// destinations' row locks, so limits hold across all worker processes.
// Rule: whoever changes a destination's waiting deliveries holds its row lock first.

export interface ClaimedDestination {
  id: string;
  url: string;
  secrets: { secret: string; expires_at: string | null }[];
  /** Custom headers sent on every request, before Sluice's own (which no custom name can clash with). */
  headers: Record<string, string>;
  timeout_seconds: number;
  max_concurrency: number;
  ordered: boolean;
  retry_schedule_seconds: number[];
  throttle_schedule_seconds: number[];
  throttled_until: Date | null;
  paused_at: Date | null;
  rate_limit: RateLimit | null;
  bucket_state: StoredBuckets | null;
  delivery_schedule: DeliverySchedule | null;
  /** Recovering after a probe: the concurrency it may use now. */
  ramp_limit: number | null;
  adaptive: AdaptiveConfig | null;
  /** Adaptive pace's rate and concurrency (only read when adaptive is on). */
  pace_state: PaceState | null;
  pause_cause: string | null;
  next_probe_at: Date | null;
  probe_interval_seconds: number;
  tenant_id: string;
  idle_recheck: boolean;
  /** The last claim's findings, read under the row lock: a claim that changes one logs the transition. */
  rate_limited: boolean;
  quiet_holding: boolean;
  /** The ready_at this claim found due (a quiet window's end, when the window held deliveries). */
  ready_at: Date | null;
  /** The last pause it came out of (for traces: docs/tracing.md). */
  last_paused_at?: Date | null;
  last_resumed_at?: Date | null;
  now: Date;
  /** Live leases (expired ones were just returned to the queue). */
  inflight: number;
  /** Earliest expiry among live leases. */
  next_lease_expiry: Date | null;
  /** Unordered: earliest next_attempt_at still in the future; ordered: the head's next_attempt_at. */
  next_waiting: Date | null;
  /** Only with a delivery_schedule: anything waiting at all (quiet hours may hold what is due). */
  has_waiting: boolean | null;
  /** Ordered with a delivery_schedule: whether quiet hours hold the head's type. */
  head_quiet_hold: boolean | null;
}

/**
 * Locks up to `limit` destinations whose ready_at has come, oldest ready_at first (round-robin
 * fairness), and returns deliveries whose lease expired (their worker died) to the queue.
 * `shard` = [index, count] restricts to a stable hash slice of destination ids.
 */
export async function lockReadyDestinations(q: Queryable, limit: number, shard: [number, number] | null): Promise<ClaimedDestination[]> {
  const shardSql = shard ? "AND abs(hashtext(d.id)) % $3 = $2" : "";
  const params: unknown[] = shard ? [limit, shard[0], shard[1]] : [limit];
  // Two statements, sent together (one round trip on the server store, see TxQueryable). The
  // first only locks: under READ COMMITTED a statement reads with a snapshot taken BEFORE its FOR
  // UPDATE got each lock, so anything else it read (a lease count, token state) could predate
  // another claim's commit and over-grant. It leaves the locked ids, oldest ready_at first, in a
  // setting local to the transaction, where the second statement (a new snapshot, taken while we
  // hold the locks: it sees every committed lease and token spend) picks them up.
  const lock = q.query<{ locked: number }>(
    `WITH locked AS (
       SELECT d.id, d.ready_at
         FROM destinations d
        WHERE d.ready_at <= now() ${shardSql}
        ORDER BY d.ready_at
        LIMIT $1
        FOR UPDATE SKIP LOCKED
     ), reclaimed AS (
       -- No join: by (destination_id = ANY(array)) the lease key is searched per locked
       -- destination. Joined to "locked" (even LATERAL, which the planner flattens), Postgres
       -- walked a whole lease index by expiry (2.3 ms of this statement at 100k destinations).
       DELETE FROM leases l
        WHERE l.destination_id = ANY(ARRAY(SELECT id FROM locked)) AND l.expires_at <= now()
       RETURNING l.destination_id, l.delivery_id
     ), lapsed AS (
       -- The attempt counts: its request may have been made.
       UPDATE deliveries x
          SET attempts = x.attempts + 1, updated_at = now(),
              last_error = 'lease expired: the worker stopped before recording a result'
         FROM reclaimed r
        WHERE x.destination_id = r.destination_id AND x.id = r.delivery_id
     )
     SELECT (SELECT count(*) FROM locked)::int AS locked,
            set_config('${CLAIMED_SETTING}', ARRAY(SELECT id FROM locked ORDER BY ready_at)::text, true) IS NOT NULL AS handed`,
    params,
  );
  const read = q.query<ClaimedDestination & { pos: number }>(CLAIMED_STATE_SQL);
  const [[locked], rows] = await Promise.all([lock, read]);
  // The handoff is checked, not trusted: a read that found fewer than were locked would leave
  // them locked and unplanned, their ready_at unmoved, and nothing would say so.
  if (rows.length !== locked?.locked) {
    throw new Error(
      `the claim read ${rows.length} of the ${locked?.locked ?? "?"} destinations it locked (${CLAIMED_SETTING} was not handed on)`,
    );
  }
  return rows;
}

/**
 * Where the claim's lock statement leaves the ids it locked, for the statement behind it
 * (transaction-local). On Citus both statements run on the node holding the cell, where the
 * setting is; the coordinator, which plans the read, may look the setting up too and does not
 * have it, so the read asks with missing_ok.
 */
const CLAIMED_SETTING = "sluice.claimed";

/**
 * The claim's second statement: the state of the destinations the lock statement just locked
 * (their ids in CLAIMED_SETTING), in the order it locked them. clock_timestamp(), not now(), so
 * that the time the token buckets see only moves forward from one claim of a destination to the
 * next. Exported for its plan test.
 */
export const CLAIMED_STATE_SQL = `SELECT d.id, d.url, d.secrets, d.headers, d.timeout_seconds, d.max_concurrency, d.ordered,
  d.retry_schedule_seconds, d.throttle_schedule_seconds, d.throttled_until, d.paused_at,
  d.rate_limit, d.bucket_state, d.delivery_schedule, d.ramp_limit, d.adaptive,
  CASE WHEN (d.adaptive->>'enabled')::boolean THEN d.pace_state END AS pace_state, d.pause_cause, d.next_probe_at,
  d.probe_interval_seconds, d.tenant_id, d.idle_recheck, d.rate_limited, d.quiet_holding, d.ready_at, d.last_paused_at, d.last_resumed_at,
  clock_timestamp() AS now, g.pos,
  l.inflight, l.next_lease_expiry,
  CASE WHEN d.ordered THEN
    (SELECT x.next_attempt_at FROM deliveries x
      WHERE x.destination_id = d.id AND x.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("x")}
      ORDER BY x.occurred_at, x.id LIMIT 1)
  ELSE
    (SELECT min(x.next_attempt_at) FROM deliveries x
      WHERE x.destination_id = d.id AND x.status IN ('queued', 'retry_scheduled') AND x.next_attempt_at > now())
  END AS next_waiting,
  CASE WHEN d.delivery_schedule IS NOT NULL THEN
    EXISTS (SELECT 1 FROM deliveries x WHERE x.destination_id = d.id AND x.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("x")})
  END AS has_waiting,
  CASE WHEN d.delivery_schedule IS NOT NULL AND d.ordered THEN
    (SELECT x.quiet_hold FROM deliveries x
      WHERE x.destination_id = d.id AND x.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("x")}
      ORDER BY x.occurred_at, x.id LIMIT 1)
  END AS head_quiet_hold
  FROM unnest(current_setting('${CLAIMED_SETTING}', true)::text[]) WITH ORDINALITY AS g(id, pos) JOIN destinations d ON d.id = g.id
  -- Live leases: their count and the earliest expiry, in one pass over the destination's leases.
  CROSS JOIN LATERAL (
    SELECT count(*)::int AS inflight, min(l.expires_at) AS next_lease_expiry FROM leases l WHERE l.destination_id = d.id
  ) l
  ORDER BY g.pos`;

export interface Grant {
  destinationId: string;
  count: number;
  ordered: boolean;
  leaseSeconds: number;
  /** A quiet window is open: deliveries its quiet hours hold stay (bypass types may go). */
  quiet: boolean;
}

export interface LeasedDelivery {
  id: string;
  destination_id: string;
  event_id: string;
  attempts: number;
  failures: number;
  lease_token: string;
  type: string;
  payload: string;
  /** RFC 3339 UTC with milliseconds, formatted by Postgres (no Date parsing on the hot path). */
  occurred_at: string;
  /** Publish time, epoch milliseconds. */
  created_ms: number;
  /** The trace context stored with the event (docs/tracing.md), null when none was. */
  traceparent: string | null;
  tracestate: string | null;
  /** Read only by a traced lease (leaseSql): what its trace says the delivery waited for. */
  wait?: WaitRow;
}

/** When and why a leased delivery waited (policy/wait-reasons.ts), epoch milliseconds. */
export interface WaitRow {
  /** When its previous attempt's result was written (or it was queued again); null for a first attempt. */
  prev_ms: number | null;
  /** Its next_attempt_at: its deliver_at, or its retry time after a failure. */
  due_ms: number;
  /** Waited for a retry after a failure (retry_scheduled). */
  retrying: boolean;
  quiet_hold: boolean;
  /** The event's deliver_at. */
  deliver_at_ms: number | null;
}

export interface LeaseResult {
  leased: LeasedDelivery[];
  /** Destinations that still have due deliveries beyond their grant (unordered only). */
  moreDue: Set<string>;
}

/**
 * The lease statement: $1–$5 the grants' arrays (destination, count, ordered, lease seconds,
 * quiet), $6 the lease token. `traced` adds the wait's facts (WaitRow) for the attempt's trace;
 * untraced, the claim reads only what a send needs.
 */
export function leaseSql(traced: boolean): string {
  const waitColumns = traced
    ? `json_build_object('prev_ms', CASE WHEN p.attempts > 0 THEN (extract(epoch FROM p.updated_at) * 1000)::float8 END,
                         'due_ms', (extract(epoch FROM p.next_attempt_at) * 1000)::float8,
                         'retrying', p.status = 'retry_scheduled', 'quiet_hold', p.quiet_hold,
                         'deliver_at_ms', (extract(epoch FROM e.deliver_at) * 1000)::float8) AS wait,`
    : "";
  return `WITH g AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::bool[], $4::int[], $5::bool[]) AS g(destination_id, n, ordered, lease_seconds, quiet)
     ), picked AS (
       SELECT p.id, p.destination_id, p.event_id, p.attempts, p.failures, p.rn, g.n, g.lease_seconds${traced ? ", p.next_attempt_at, p.quiet_hold, p.status, p.updated_at" : ""}
         FROM g CROSS JOIN LATERAL (
           SELECT w.*, row_number() OVER (ORDER BY w.occurred_at, w.id) AS rn
             FROM (SELECT dl.id, dl.destination_id, dl.event_id, dl.attempts, dl.failures, dl.next_attempt_at, dl.occurred_at, dl.quiet_hold${traced ? ", dl.status, dl.updated_at" : ""}
                     FROM deliveries dl
                    WHERE dl.destination_id = g.destination_id
                      AND dl.status IN ('queued', 'retry_scheduled')
                      AND (g.ordered OR (dl.next_attempt_at <= now() AND NOT (g.quiet AND dl.quiet_hold)))
                      AND ${UNLEASED("dl")}
                    ORDER BY dl.occurred_at, dl.id
                    LIMIT g.n + 1) w
         ) p
        WHERE p.next_attempt_at <= now() AND NOT (g.quiet AND p.quiet_hold)
     ), leased AS (
       -- A row of its own per lease: the delivery row is not rewritten (migrations/0014_leases.sql).
       -- All or nothing (a second lease of a delivery breaks the key), so what is picked is leased.
       INSERT INTO leases (destination_id, delivery_id, token, expires_at)
       SELECT picked.destination_id, picked.id, $6::uuid, ${nowPlusSeconds("picked.lease_seconds")}
         FROM picked WHERE picked.rn <= picked.n
     )
     SELECT p.id, p.destination_id, p.event_id, p.attempts + 1 AS attempts, p.failures, $6::uuid::text AS lease_token,
            e.type, e.payload::text AS payload,
            to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_at,
            (extract(epoch FROM e.created_at) * 1000)::float8 AS created_ms, e.traceparent, e.tracestate, ${waitColumns} false AS more
       FROM picked p JOIN events e ON e.id = p.event_id
      WHERE p.rn <= p.n
     UNION ALL
     SELECT NULL, picked.destination_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${traced ? "NULL, " : ""}true
       FROM picked WHERE picked.rn > picked.n`;
}

export const LEASE_SQL = leaseSql(false);
const LEASE_SQL_TRACED = leaseSql(true);

/**
 * Leases up to `count` due deliveries per destination in FIFO order (occurred_at, id), looking one
 * further to learn whether due work remains. Every lease of one claim carries the claim's
 * `leaseToken` (chosen by the worker), so a claim whose commit went unconfirmed can be undone. An ordered destination only ever takes its head,
 * and only when the head is due.
 */
export async function leaseDeliveries(q: Queryable, grants: Grant[], leaseToken: string, traced = false): Promise<LeaseResult> {
  if (grants.length === 0) return { leased: [], moreDue: new Set() };
  const rows = await q.query<LeasedDelivery & { more: boolean }>(
    traced ? LEASE_SQL_TRACED : LEASE_SQL,
    // Arrays, not one JSON document: in a custom plan Postgres sizes unnest() by the arrays, while
    // it guesses 100 rows for json_to_recordset — and that guess made it hash-join the whole
    // deliveries table. A generic plan (the claim's) sizes neither: see db.ts BEGIN_GENERIC.
    [
      grants.map((g) => g.destinationId),
      grants.map((g) => g.count),
      grants.map((g) => g.ordered),
      grants.map((g) => g.leaseSeconds),
      grants.map((g) => g.quiet),
      leaseToken,
    ],
  );
  const leased: LeasedDelivery[] = [];
  const moreDue = new Set<string>();
  for (const r of rows) {
    if (r.more) moreDue.add(r.destination_id);
    else leased.push(r);
  }
  return { leased, moreDue };
}

export interface AfterClaimUpdate {
  id: string;
  readyAt: Date | null;
  bucketState: StoredBuckets | null;
  rateLimited: boolean;
  /** An open quiet window holds due deliveries back. */
  quietHolding: boolean;
  /** Set when this claim sent a probe: when the next one is due. Null keeps the column. */
  nextProbeAt: Date | null;
  idleRecheck: boolean;
}

/** Writes each destination's new ready_at (null: idle until new work arrives), token buckets and hold flags. */
export async function setReadyAt(q: Queryable, updates: AfterClaimUpdate[]): Promise<void> {
  if (updates.length === 0) return;
  await q.query(
    `UPDATE destinations d
        SET ready_at = u."readyAt", bucket_state = u."bucketState", rate_limited = u."rateLimited", idle_recheck = u."idleRecheck",
            quiet_holding = u."quietHolding", next_probe_at = coalesce(u."nextProbeAt", d.next_probe_at)
       FROM ${recordset("$1", `id text, "readyAt" timestamptz, "bucketState" jsonb, "rateLimited" bool, "quietHolding" bool, "nextProbeAt" timestamptz, "idleRecheck" bool`, updates.length)} AS u
      WHERE d.id = u.id`,
    [jsonRows(updates)],
  );
}

/** Milliseconds (by the database clock) until the next destination becomes ready, or null. */
export async function nextReadyDelayMs(q: Queryable): Promise<number | null> {
  const rows = await q.query<{ ms: number | null }>(
    "SELECT (extract(epoch FROM (min(ready_at) - now())) * 1000)::float8 AS ms FROM destinations WHERE ready_at IS NOT NULL",
  );
  return rows[0]?.ms ?? null;
}
