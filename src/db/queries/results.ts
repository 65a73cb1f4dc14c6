import type { Queryable } from "../db.js";
import { jsonRows, recordset } from "../json-rows.js";
import { emptyHealth, type HealthStatus, type HealthTransition, type PauseCause } from "../../policy/health.js";
import { setHealth } from "./health.js";
import { READY_AT_IDLE, READY_AT_NOW, nextProbeAt, noHoldInForce, readyAtOutsideHold, wakeable } from "./ready-at.js";
import { lockedInIdOrder } from "./row-locks.js";
import { WAITING_STATUSES, type AttemptOutcome, type PauseCauseStored, type ResultStatus } from "../../policy/statuses.js";
import type { AdaptiveConfig, PaceChange, PaceState } from "../../policy/adaptive-pace.js";
import type { RateLimit } from "../../policy/token-bucket.js";
import { NOW, nowPlusSeconds } from "./sql-time.js";

// Writing attempt results back, in batches. A result lands only if its lease is still the
// delivery's lease (compare-and-set): a late answer from an expired lease never overwrites
// newer state.

export interface LockedDestinationState {
  id: string;
  tenant_id: string;
  name: string;
  url: string;
  max_concurrency: number;
  probe_interval_seconds: number;
  ramp_limit: number | null;
  rate_limit: RateLimit | null;
  adaptive: AdaptiveConfig | null;
  pace_state: PaceState | null;
  pause_cause: PauseCauseStored | null;
  health_window: string;
  health_status: HealthStatus;
  consecutive_auth_failures: number;
  consecutive_failures: number;
  consecutive_throttles: number;
  throttled_until: Date | null;
  /** Why the hold in force (or the last one) was set. */
  throttle_reason?: string | null;
  paused_at: Date | null;
  deleted_at: Date | null;
  now: Date;
}

/** Locks the destinations (in id order: two write-backs never deadlock) and reads their live state. */
export async function lockDestinationsForResults(q: Queryable, ids: string[]): Promise<LockedDestinationState[]> {
  return q.query<LockedDestinationState>(
    `SELECT id, tenant_id, name, url, max_concurrency, probe_interval_seconds, ramp_limit, rate_limit, adaptive, pace_state,
            pause_cause, health_window, health_status,
            consecutive_auth_failures, consecutive_failures, consecutive_throttles, throttled_until, throttle_reason, paused_at, deleted_at, now() AS now
       FROM destinations WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
    [ids],
  );
}

export interface DeliveryUpdate {
  destinationId: string;
  id: string;
  leaseToken: string;
  status: ResultStatus;
  /** Seconds from now until the next attempt; null keeps next_attempt_at (due now). */
  delaySeconds: number | null;
  failed: boolean;
  error: string | null;
  statusCode: number | null;
}

export interface AttemptRow {
  destinationId: string;
  deliveryId: string;
  attemptNo: number;
  startedAt: Date;
  latencyMs: number;
  /** From the event's publish to this attempt's start (the stats' publish→delivery latency is this + latencyMs). */
  queuedMs: number;
  outcome: AttemptOutcome;
  statusCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  responseBody: string | null;
  /** Health class (success, server_error, timeout, dns, …). */
  healthClass: string;
}

/**
 * The write-back statement for `count` results: $1 the results (DeliveryUpdate JSON), $2 the
 * attempts (AttemptRow JSON), $3 the waiting statuses (WAITING_STATUSES). `citus`: the store is a
 * Citus cell (below). Exported for its plan test (test/integration/claim-query-plans.test.ts).
 *
 * Each result's delivery is looked up by its key. The statuses it must still have come as a
 * parameter, not written out: a generic plan cannot then use the partial indexes of waiting
 * deliveries (`deliveries_next_idx`, `deliveries_waiting_idx`), whose predicate that list would
 * match. The embedded store plans without column statistics, and there the lookup took
 * `deliveries_next_idx` by destination and filtered for the id — a walk over the destination's
 * whole backlog for every result (300 ms for 100 results at a backlog of 20,000, against 6).
 *
 * `leases` is only ever read through a lookup per result (a correlated subquery, by key), never
 * joined: a join's order would follow the statistics of that small, volatile table, and with
 * them wrong it scanned every lease once per result. Nor are the results joined to anything but
 * `deliveries` by key (no hash joins here: two batches joined to each other would be a nested
 * loop over both).
 */
export const finishSql = (count: number, citus = false): string =>
  `WITH u AS (
       SELECT * FROM ${recordset("$1", `"destinationId" text, id text, "leaseToken" uuid, status text, "delaySeconds" float8, failed bool, error text, "statusCode" int`, count)} AS x
     ), upd AS (
       UPDATE deliveries d
          SET status = u.status,
              attempts = d.attempts + 1,
              failures = d.failures + CASE WHEN u.failed THEN 1 ELSE 0 END,
              next_attempt_at = CASE WHEN u."delaySeconds" IS NULL THEN ${NOW} ELSE ${nowPlusSeconds('u."delaySeconds"')} END,
              last_error = u.error, last_status_code = u."statusCode",
              finished_at = CASE WHEN u.status IN ('delivered', 'dead') THEN ${NOW} END,
              updated_at = now()
         FROM u
        WHERE d.destination_id = u."destinationId" AND d.id = u.id AND d.status = ANY ($3::text[])
          -- Compare-and-set: the result lands only while its lease is still the delivery's.
          AND (SELECT l.token FROM leases l WHERE l.destination_id = u."destinationId" AND l.delivery_id = u.id) = u."leaseToken"
       RETURNING d.id
     ), released AS (
       -- The leases these results end (the same snapshot as the update above; the destinations'
       -- row locks keep anything else from changing them meanwhile).
       ${citus ? RELEASE_BY_KEY : RELEASE_BY_ROW}
     ), ins AS (
       INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, queued_ms, outcome,
                             status_code, error_class, class, error_message, response_body)
       SELECT a."destinationId", a."deliveryId", a."attemptNo", a."startedAt", a."latencyMs", a."queuedMs", a.outcome,
              a."statusCode", a."errorClass", a."healthClass", a."errorMessage", a."responseBody"
         FROM json_to_recordset($2::json) AS a(
           "destinationId" text, "deliveryId" text, "attemptNo" int, "startedAt" timestamptz, "latencyMs" int, "queuedMs" int, outcome text,
           "statusCode" int, "errorClass" text, "healthClass" text, "errorMessage" text, "responseBody" text)
       ON CONFLICT DO NOTHING
     )
     SELECT id FROM upd`;

/**
 * The write-back's lease delete, by row id: each result's lease is looked up by its key, and the
 * rows found deleted by ctid, a plan that measured 15–25 % cheaper than deleting by key.
 */
const RELEASE_BY_ROW = `DELETE FROM leases l
        WHERE l.ctid = ANY (ARRAY(
          SELECT (SELECT x.ctid FROM leases x WHERE x.destination_id = u."destinationId" AND x.delivery_id = u.id AND x.token = u."leaseToken")
            FROM u))`;
/**
 * The same by key, for a Citus cell: Citus runs this statement in steps (it has an INSERT among
 * its CTEs), and refuses a ctid in a statement so run. The one place the SQL differs by store.
 */
const RELEASE_BY_KEY = `DELETE FROM leases l USING u
        WHERE l.destination_id = u."destinationId" AND l.delivery_id = u.id AND l.token = u."leaseToken"`;

/**
 * Applies results whose lease still holds (compare-and-set on the lease token) and records
 * every attempt — even one whose result came too late to land, since the request was made.
 * Returns the ids of the deliveries whose result landed. `citus`: the store is a Citus cell (Db.citus).
 */
export async function finishDeliveries(
  q: Queryable,
  updates: DeliveryUpdate[],
  attempts: AttemptRow[],
  opts: { citus?: boolean } = {},
): Promise<Set<string>> {
  if (updates.length === 0) return new Set();
  const rows = await q.query<{ id: string }>(finishSql(updates.length, opts.citus), [
    jsonRows(updates),
    jsonRows(attempts),
    WAITING_STATUSES,
  ]);
  return new Set(rows.map((r) => r.id));
}

export interface DestinationUpdate {
  id: string;
  consecutiveFailures: number;
  consecutiveAuthFailures: number;
  healthWindow: string;
  healthStatus: HealthStatus;
  consecutiveThrottles: number;
  /** Seconds from now the destination is throttled for; null leaves throttled_until as is. */
  throttleSeconds: number | null;
  throttleReason: string | null;
  /** Set to pause the destination now with this reason. */
  pauseReason: string | null;
  /** transient: probed every probe_interval_seconds; permanent: waits for a resume. */
  pauseCause: PauseCause | null;
  pauseCode: string | null;
  transition: HealthTransition;
  score: number;
  rampLimit: number | null;
  /** Adaptive pace's new state (null: off, the column is kept) and how the pace moved, if it did. */
  paceState: PaceState | null;
  paceChange: PaceChange | null;
}

/**
 * Writes counters, throttle and pause decisions, and makes the destination ready again: a
 * finished request freed a slot (or scheduled a retry the next claim will look at).
 */
export async function updateDestinationsAfterResults(q: Queryable, updates: DestinationUpdate[]): Promise<void> {
  if (updates.length === 0) return;
  // ready_at: paused or deleted → idle; throttled → when the hold ends; else now (a slot freed).
  const until = `CASE WHEN u."throttleSeconds" IS NULL THEN d.throttled_until
                      ELSE greatest(coalesce(d.throttled_until, ${NOW}), ${nowPlusSeconds('u."throttleSeconds"')}) END`;
  // A new pause: a transient one is probed after probe_interval_seconds, a permanent one never.
  const probeAt = `CASE WHEN u."pauseCause" = 'transient' THEN ${nextProbeAt("d.")} END`;
  await q.query(
    `UPDATE destinations d
        SET consecutive_failures = u."consecutiveFailures",
            consecutive_auth_failures = u."consecutiveAuthFailures",
            health_window = u."healthWindow",
            health_status = u."healthStatus",
            ramp_limit = u."rampLimit",
            pace_state = coalesce(u."paceState", d.pace_state),
            consecutive_throttles = u."consecutiveThrottles",
            throttled_until = ${until},
            throttle_reason = coalesce(u."throttleReason", d.throttle_reason),
            paused_at = CASE WHEN u."pauseReason" IS NULL THEN d.paused_at ELSE coalesce(d.paused_at, ${NOW}) END,
            pause_reason = coalesce(u."pauseReason", d.pause_reason),
            pause_cause = coalesce(u."pauseCause", d.pause_cause),
            next_probe_at = CASE WHEN u."pauseReason" IS NULL THEN d.next_probe_at ELSE ${probeAt} END,
            -- ready now: whatever the last claim planned, the next one is not a re-check
            idle_recheck = false,
            ready_at = CASE WHEN d.deleted_at IS NOT NULL THEN ${READY_AT_IDLE}
                            WHEN d.paused_at IS NOT NULL THEN d.ready_at
                            WHEN u."pauseReason" IS NOT NULL THEN ${probeAt}
                            ELSE ${readyAtOutsideHold(NOW, until)} END,
            updated_at = now()
       FROM ${recordset(
         "$1",
         `id text, "consecutiveFailures" int, "consecutiveAuthFailures" int, "healthWindow" text, "healthStatus" text,
              "rampLimit" int, "consecutiveThrottles" int, "throttleSeconds" float8, "throttleReason" text, "pauseReason" text,
              "pauseCause" text, "paceState" jsonb`,
         updates.length,
       )} AS u
      WHERE d.id = u.id`,
    [jsonRows(updates)],
  );
}

/** Puts deliveries whose sends never finished (shutdown) back in the queue, unspent. */
export async function releaseLeases(q: Queryable, leases: { destinationId: string; id: string; leaseToken: string }[]): Promise<number> {
  if (leases.length === 0) return 0;
  // Their requests may have started: each counts as an attempt, as a lost lease's does.
  const rows = await q.query<{ id: string }>(
    `WITH gone AS (
       DELETE FROM leases l USING unnest($1::text[], $2::text[], $3::uuid[]) AS u(destination_id, id, token)
        WHERE l.destination_id = u.destination_id AND l.delivery_id = u.id AND l.token = u.token
       RETURNING l.destination_id, l.delivery_id
     )
     UPDATE deliveries d SET attempts = d.attempts + 1, next_attempt_at = now(), updated_at = now()
       FROM gone WHERE d.destination_id = gone.destination_id AND d.id = gone.delivery_id
     RETURNING d.id`,
    [leases.map((l) => l.destinationId), leases.map((l) => l.id), leases.map((l) => l.leaseToken)],
  );
  await wakeDestinations(
    q,
    leases.map((l) => l.destinationId),
  );
  return rows.length;
}

/**
 * Undoes claims whose commit the worker never saw confirmed (the store went away during it): if
 * they committed, their deliveries are leased to requests that were never made. Their leases are
 * deleted, so the deliveries wait again as they were (a lease counts no attempt until it ends)
 * instead of sitting out their leases. A no-op for claims that did not commit.
 */
export async function abandonClaims(q: Queryable, leaseTokens: string[]): Promise<number> {
  if (leaseTokens.length === 0) return 0;
  const rows = await q.query<{ destination_id: string }>("DELETE FROM leases WHERE token = ANY($1::uuid[]) RETURNING destination_id", [
    leaseTokens,
  ]);
  await wakeDestinations(
    q,
    rows.map((r) => r.destination_id),
  );
  return rows.length;
}

/** Makes destinations claimable now, unless paused, deleted or inside a throttle hold (locked in id order). */
async function wakeDestinations(q: Queryable, destinationIds: string[]): Promise<void> {
  if (destinationIds.length === 0) return;
  await q.query(
    `WITH locked AS (${lockedInIdOrder("$1", { where: `${wakeable("d.")} AND ${noHoldInForce("d.")}` })})
     UPDATE destinations d SET ready_at = ${READY_AT_NOW}
       FROM locked l
      WHERE d.id = l.id AND ${wakeable("d.")} AND ${noHoldInForce("d.")}`,
    [[...new Set(destinationIds)].sort()],
  );
}

export interface ProbeRecord {
  destinationId: string;
  probeId: string;
  startedAt: Date;
  latencyMs: number;
  ok: boolean;
  statusCode: number | null;
  errorClass: string | null;
  healthClass: string;
  errorMessage: string | null;
  responseBody: string | null;
}

export interface ProbeApplied {
  /** The probe succeeded and the destination was paused for a transient cause: it is resumed. */
  resumed: boolean;
  destination: LockedDestinationState | null;
  /** The probe failed and the destination stays paused: when the next one is due. */
  nextProbeAt: Date | null;
}

/**
 * Records a probe as an attempt of the destination and applies it: success resumes the destination
 * on a ramp (concurrency 1, rising with successes), with fresh health; failure sets the next probe.
 */
export async function applyProbe(q: Queryable, p: ProbeRecord): Promise<ProbeApplied> {
  const [d] = await lockDestinationsForResults(q, [p.destinationId]);
  await q.query(
    `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome, status_code, error_class, class, error_message, response_body)
     VALUES ($1, $2, 1, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
    [
      p.destinationId,
      p.probeId,
      p.startedAt,
      Math.round(p.latencyMs),
      p.ok ? "success" : "failure",
      p.statusCode,
      p.errorClass,
      p.healthClass,
      p.errorMessage,
      p.responseBody,
    ],
  );
  if (!d || d.deleted_at || !d.paused_at || d.pause_cause !== "transient")
    return { resumed: false, destination: d ?? null, nextProbeAt: null };
  if (p.ok) {
    const health = setHealth(emptyHealth(), 2);
    await q.query(
      `UPDATE destinations
          SET paused_at = NULL, pause_reason = NULL, pause_cause = NULL, next_probe_at = NULL,
              last_paused_at = paused_at, last_resumed_at = now(),
              ramp_limit = CASE WHEN max_concurrency > 1 THEN 1 END,
              ${health.sql},
              ready_at = ${READY_AT_NOW}, updated_at = now()
        WHERE id = $1`,
      [d.id, ...health.params],
    );
    return { resumed: true, destination: d, nextProbeAt: null };
  }
  const [next] = await q.query<{ next_probe_at: Date }>(
    `UPDATE destinations SET next_probe_at = ${nextProbeAt()}, ready_at = ${nextProbeAt()}, updated_at = now()
      WHERE id = $1 RETURNING next_probe_at`,
    [d.id],
  );
  return { resumed: false, destination: d, nextProbeAt: next?.next_probe_at ?? null };
}
