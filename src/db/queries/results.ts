import type { Queryable } from "../db.js";
import { jsonRows } from "../json-rows.js";

// Writing attempt results back, in batches. A result lands only if its lease is still the
// delivery's lease (compare-and-set): a late answer from an expired lease never overwrites
// newer state.

export interface LockedDestinationState {
  id: string;
  consecutive_failures: number;
  consecutive_throttles: number;
  throttled_until: Date | null;
  paused_at: Date | null;
  deleted_at: Date | null;
  now: Date;
}

/** Locks the destinations (in id order: two write-backs never deadlock) and reads their live state. */
export async function lockDestinationsForResults(q: Queryable, ids: string[]): Promise<LockedDestinationState[]> {
  return q.query<LockedDestinationState>(
    `SELECT id, consecutive_failures, consecutive_throttles, throttled_until, paused_at, deleted_at, now() AS now
       FROM destinations WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
    [ids],
  );
}

export interface DeliveryUpdate {
  destinationId: string;
  id: string;
  leaseToken: string;
  status: "delivered" | "queued" | "retry_scheduled" | "dead";
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
  outcome: "success" | "failure" | "throttled";
  statusCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  responseBody: string | null;
}

/**
 * Applies results whose lease still holds (compare-and-set on the lease token) and records
 * every attempt — even one whose result came too late to land, since the request was made.
 * Returns the ids of the deliveries whose result landed.
 */
export async function finishDeliveries(q: Queryable, updates: DeliveryUpdate[], attempts: AttemptRow[]): Promise<Set<string>> {
  if (updates.length === 0) return new Set();
  const rows = await q.query<{ id: string }>(
    `WITH u AS (
       SELECT * FROM json_to_recordset($1::json) AS u(
         "destinationId" text, id text, "leaseToken" uuid, status text, "delaySeconds" float8, failed bool, error text, "statusCode" int)
     ), upd AS (
       UPDATE deliveries d
          SET status = u.status,
              failures = d.failures + CASE WHEN u.failed THEN 1 ELSE 0 END,
              next_attempt_at = CASE WHEN u."delaySeconds" IS NULL THEN now() ELSE now() + make_interval(secs => u."delaySeconds") END,
              last_error = u.error, last_status_code = u."statusCode",
              lease_token = NULL, lease_expires_at = NULL,
              finished_at = CASE WHEN u.status IN ('delivered', 'dead') THEN now() END,
              updated_at = now()
         FROM u
        WHERE d.destination_id = u."destinationId" AND d.id = u.id AND d.lease_token = u."leaseToken" AND d.status = 'delivering'
       RETURNING d.id
     ), ins AS (
       INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome,
                             status_code, error_class, error_message, response_body)
       SELECT a."destinationId", a."deliveryId", a."attemptNo", a."startedAt", a."latencyMs", a.outcome,
              a."statusCode", a."errorClass", a."errorMessage", a."responseBody"
         FROM json_to_recordset($2::json) AS a(
           "destinationId" text, "deliveryId" text, "attemptNo" int, "startedAt" timestamptz, "latencyMs" int, outcome text,
           "statusCode" int, "errorClass" text, "errorMessage" text, "responseBody" text)
       ON CONFLICT DO NOTHING
     )
     SELECT id FROM upd`,
    [jsonRows(updates), jsonRows(attempts)],
  );
  return new Set(rows.map((r) => r.id));
}

export interface DestinationUpdate {
  id: string;
  consecutiveFailures: number;
  consecutiveThrottles: number;
  /** Seconds from now the destination is throttled for; null leaves throttled_until as is. */
  throttleSeconds: number | null;
  throttleReason: string | null;
  /** Set to pause the destination now with this reason. */
  pauseReason: string | null;
}

/**
 * Writes counters, throttle and pause decisions, and makes the destination ready again: a
 * finished request freed a slot (or scheduled a retry the next claim will look at).
 */
export async function updateDestinationsAfterResults(q: Queryable, updates: DestinationUpdate[]): Promise<void> {
  if (updates.length === 0) return;
  // ready_at: paused or deleted → idle; throttled → when the hold ends; else now (a slot freed).
  const until = `CASE WHEN u."throttleSeconds" IS NULL THEN d.throttled_until
                      ELSE greatest(coalesce(d.throttled_until, now()), now() + make_interval(secs => u."throttleSeconds")) END`;
  await q.query(
    `UPDATE destinations d
        SET consecutive_failures = u."consecutiveFailures",
            consecutive_throttles = u."consecutiveThrottles",
            throttled_until = ${until},
            throttle_reason = coalesce(u."throttleReason", d.throttle_reason),
            paused_at = CASE WHEN u."pauseReason" IS NULL THEN d.paused_at ELSE coalesce(d.paused_at, now()) END,
            pause_reason = coalesce(u."pauseReason", d.pause_reason),
            ready_at = CASE WHEN d.deleted_at IS NOT NULL OR d.paused_at IS NOT NULL OR u."pauseReason" IS NOT NULL THEN NULL
                            ELSE greatest(now(), coalesce(${until}, now())) END,
            updated_at = now()
       FROM json_to_recordset($1::json) AS u(
              id text, "consecutiveFailures" int, "consecutiveThrottles" int, "throttleSeconds" float8, "throttleReason" text, "pauseReason" text)
      WHERE d.id = u.id`,
    [jsonRows(updates)],
  );
}

/** Puts deliveries whose sends never finished (shutdown) back in the queue, unspent. */
export async function releaseLeases(q: Queryable, leases: { destinationId: string; id: string; leaseToken: string }[]): Promise<number> {
  if (leases.length === 0) return 0;
  const rows = await q.query<{ id: string }>(
    `UPDATE deliveries d
        SET status = 'queued', lease_token = NULL, lease_expires_at = NULL, next_attempt_at = now(), updated_at = now()
       FROM unnest($1::text[], $2::text[], $3::uuid[]) AS u(destination_id, id, token)
      WHERE d.destination_id = u.destination_id AND d.id = u.id AND d.lease_token = u.token AND d.status = 'delivering'
     RETURNING d.id`,
    [leases.map((l) => l.destinationId), leases.map((l) => l.id), leases.map((l) => l.leaseToken)],
  );
  await q.query(
    `UPDATE destinations SET ready_at = now()
      WHERE id = ANY($1::text[]) AND paused_at IS NULL AND deleted_at IS NULL
        AND (throttled_until IS NULL OR throttled_until <= now())`,
    [[...new Set(leases.map((l) => l.destinationId))]],
  );
  return rows.length;
}
