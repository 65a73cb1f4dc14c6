import type { Queryable } from "../db.js";

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

/** Applies results whose lease still holds; returns the ids that landed. */
export async function finishDeliveries(q: Queryable, updates: DeliveryUpdate[]): Promise<Set<string>> {
  if (updates.length === 0) return new Set();
  const rows = await q.query<{ id: string }>(
    `UPDATE deliveries d
        SET status = u.status,
            failures = d.failures + CASE WHEN u.failed THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN u.delay_s IS NULL THEN now() ELSE now() + make_interval(secs => u.delay_s) END,
            last_error = u.error, last_status_code = u.status_code,
            lease_token = NULL, lease_expires_at = NULL,
            finished_at = CASE WHEN u.status IN ('delivered', 'dead') THEN now() END,
            updated_at = now()
       FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::float8[], $6::bool[], $7::text[], $8::int[])
            AS u(destination_id, id, token, status, delay_s, failed, error, status_code)
      WHERE d.destination_id = u.destination_id AND d.id = u.id AND d.lease_token = u.token AND d.status = 'delivering'
     RETURNING d.id`,
    [
      updates.map((u) => u.destinationId),
      updates.map((u) => u.id),
      updates.map((u) => u.leaseToken),
      updates.map((u) => u.status),
      updates.map((u) => u.delaySeconds),
      updates.map((u) => u.failed),
      updates.map((u) => u.error),
      updates.map((u) => u.statusCode),
    ],
  );
  return new Set(rows.map((r) => r.id));
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

/** Records attempts (every request made, even one whose result came too late to land). */
export async function insertAttempts(q: Queryable, rows: AttemptRow[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome,
                           status_code, error_class, error_message, response_body)
     SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::text[],
                          $7::int[], $8::text[], $9::text[], $10::text[])
     ON CONFLICT DO NOTHING`,
    [
      rows.map((r) => r.destinationId),
      rows.map((r) => r.deliveryId),
      rows.map((r) => r.attemptNo),
      rows.map((r) => r.startedAt),
      rows.map((r) => r.latencyMs),
      rows.map((r) => r.outcome),
      rows.map((r) => r.statusCode),
      rows.map((r) => r.errorClass),
      rows.map((r) => r.errorMessage),
      rows.map((r) => r.responseBody),
    ],
  );
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
  await q.query(
    `UPDATE destinations d
        SET consecutive_failures = u.failures,
            consecutive_throttles = u.throttles,
            throttled_until = CASE WHEN u.throttle_s IS NULL THEN d.throttled_until
                                   ELSE greatest(coalesce(d.throttled_until, now()), now() + make_interval(secs => u.throttle_s)) END,
            throttle_reason = coalesce(u.throttle_reason, d.throttle_reason),
            paused_at = CASE WHEN u.pause_reason IS NULL THEN d.paused_at ELSE coalesce(d.paused_at, now()) END,
            pause_reason = coalesce(u.pause_reason, d.pause_reason),
            updated_at = now()
       FROM unnest($1::text[], $2::int[], $3::int[], $4::float8[], $5::text[], $6::text[])
            AS u(id, failures, throttles, throttle_s, throttle_reason, pause_reason)
      WHERE d.id = u.id`,
    [
      updates.map((u) => u.id),
      updates.map((u) => u.consecutiveFailures),
      updates.map((u) => u.consecutiveThrottles),
      updates.map((u) => u.throttleSeconds),
      updates.map((u) => u.throttleReason),
      updates.map((u) => u.pauseReason),
    ],
  );
  // ready_at from the row just written: paused → idle; throttled → when the hold ends; else now.
  await q.query(
    `UPDATE destinations
        SET ready_at = CASE WHEN paused_at IS NOT NULL OR deleted_at IS NOT NULL THEN NULL
                            WHEN throttled_until > now() THEN throttled_until
                            ELSE now() END
      WHERE id = ANY($1::text[])`,
    [updates.map((u) => u.id)],
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
