import type { Queryable } from "../db.js";
import type { DeliverySchedule } from "../../policy/quiet-hours.js";

// Read-only aggregates for metrics and audits.

/** Live leases per destination (only destinations with something in flight). */
export async function inflightByDestination(q: Queryable): Promise<{ destination_id: string; n: number }[]> {
  return q.query("SELECT destination_id, count(*)::int AS n FROM deliveries WHERE status = 'delivering' GROUP BY destination_id");
}

/**
 * Waiting deliveries by why they wait, and the age of the oldest in each group. The reasons are
 * derived as the API derives hold_reason: paused, throttled, quiet_hours (for the destinations
 * whose window is open now, worked out by the caller), scheduled, rate_limited.
 */
export async function heldByReason(q: Queryable, quietDestinationIds: string[] = []): Promise<{ reason: string; n: number; oldest_age_s: number }[]> {
  return q.query(
    `SELECT reason, count(*)::int AS n, coalesce(max(extract(epoch FROM now() - created_at)), 0)::float8 AS oldest_age_s
       FROM (SELECT dl.created_at,
                    CASE WHEN d.paused_at IS NOT NULL THEN 'paused'
                         WHEN d.throttled_until > now() THEN 'throttled'
                         WHEN dl.quiet_hold AND dl.destination_id = ANY($1::text[]) AND dl.next_attempt_at <= now() THEN 'quiet_hours'
                         WHEN dl.status = 'queued' AND dl.attempts = 0 AND dl.next_attempt_at > now() THEN 'scheduled'
                         WHEN d.rate_limited AND dl.next_attempt_at <= now() THEN 'rate_limited'
                    END AS reason
               FROM deliveries dl JOIN destinations d ON d.id = dl.destination_id
              WHERE dl.status IN ('queued', 'retry_scheduled')) w
      WHERE reason IS NOT NULL
      GROUP BY reason`,
    [quietDestinationIds],
  );
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

/** Live destinations per health status. */
export async function destinationsByHealth(q: Queryable): Promise<{ status: string; n: number }[]> {
  return q.query("SELECT health_status AS status, count(*)::int AS n FROM destinations WHERE deleted_at IS NULL GROUP BY health_status");
}

/** Live destinations with quiet hours, for working out whose window is open now. */
export async function scheduledDestinations(q: Queryable): Promise<{ id: string; delivery_schedule: DeliverySchedule }[]> {
  return q.query("SELECT id, delivery_schedule FROM destinations WHERE delivery_schedule IS NOT NULL AND deleted_at IS NULL");
}
