import type { Queryable } from "../db.js";

// The claim transaction, step by step. Every statement here runs inside one transaction that
// holds the claimed destinations' row locks, so limits hold across all worker processes.
// Rule: whoever changes a destination's waiting deliveries holds its row lock first.

export interface ClaimedDestination {
  id: string;
  url: string;
  secrets: { secret: string; expires_at: string | null }[];
  timeout_seconds: number;
  max_concurrency: number;
  ordered: boolean;
  retry_schedule_seconds: number[];
  throttle_schedule_seconds: number[];
  throttled_until: Date | null;
  paused_at: Date | null;
  now: Date;
}

/**
 * Locks up to `limit` destinations whose ready_at has come, oldest ready_at first (round-robin
 * fairness). `shard` = [index, count] restricts to a stable hash slice of destination ids.
 */
export async function lockReadyDestinations(q: Queryable, limit: number, shard: [number, number] | null): Promise<ClaimedDestination[]> {
  const shardSql = shard ? "AND abs(hashtext(d.id)) % $3 = $2" : "";
  const params: unknown[] = shard ? [limit, shard[0], shard[1]] : [limit];
  return q.query<ClaimedDestination>(
    `SELECT d.id, d.url, d.secrets, d.timeout_seconds, d.max_concurrency, d.ordered,
            d.retry_schedule_seconds, d.throttle_schedule_seconds, d.throttled_until, d.paused_at, now() AS now
       FROM destinations d
      WHERE d.ready_at <= now() ${shardSql}
      ORDER BY d.ready_at
      LIMIT $1
      FOR UPDATE SKIP LOCKED`,
    params,
  );
}

/**
 * Returns deliveries whose lease expired (their worker died or stalled) to the queue, then
 * counts live leases per destination. Returns { id → inflight }.
 */
export async function reclaimAndCountInflight(q: Queryable, destinationIds: string[]): Promise<Map<string, number>> {
  await q.query(
    `UPDATE deliveries
        SET status = 'queued', lease_token = NULL, lease_expires_at = NULL, updated_at = now(),
            last_error = 'lease expired: the worker stopped before recording a result'
      WHERE destination_id = ANY($1::text[]) AND status = 'delivering' AND lease_expires_at <= now()`,
    [destinationIds],
  );
  const rows = await q.query<{ destination_id: string; n: number }>(
    `SELECT destination_id, count(*)::int AS n FROM deliveries
      WHERE destination_id = ANY($1::text[]) AND status = 'delivering'
      GROUP BY destination_id`,
    [destinationIds],
  );
  return new Map(rows.map((r) => [r.destination_id, r.n]));
}

export interface Grant {
  destinationId: string;
  count: number;
  ordered: boolean;
  leaseSeconds: number;
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
  occurred_at: Date;
  created_at: Date;
}

/**
 * Leases up to `count` due deliveries per destination in FIFO order (occurred_at, id). An
 * ordered destination only ever takes its head, and only when the head is due.
 */
export async function leaseDeliveries(q: Queryable, grants: Grant[]): Promise<LeasedDelivery[]> {
  if (grants.length === 0) return [];
  return q.query<LeasedDelivery>(
    `WITH g AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::bool[], $4::int[]) AS g(destination_id, n, ordered, lease_seconds)
     ), picked AS (
       SELECT p.id, p.destination_id, g.lease_seconds
         FROM g CROSS JOIN LATERAL (
           SELECT dl.id, dl.destination_id, dl.next_attempt_at
             FROM deliveries dl
            WHERE dl.destination_id = g.destination_id
              AND dl.status IN ('queued', 'retry_scheduled')
              AND (g.ordered OR dl.next_attempt_at <= now())
            ORDER BY dl.occurred_at, dl.id
            LIMIT g.n
         ) p
        WHERE p.next_attempt_at <= now()
     )
     UPDATE deliveries d
        SET status = 'delivering', attempts = d.attempts + 1, lease_token = gen_random_uuid(),
            lease_expires_at = now() + make_interval(secs => picked.lease_seconds), updated_at = now()
       FROM picked, events e
      WHERE d.destination_id = picked.destination_id AND d.id = picked.id AND e.id = d.event_id
     RETURNING d.id, d.destination_id, d.event_id, d.attempts, d.failures, d.lease_token::text AS lease_token,
               e.type, e.payload::text AS payload, e.occurred_at, e.created_at`,
    [grants.map((g) => g.destinationId), grants.map((g) => g.count), grants.map((g) => g.ordered), grants.map((g) => g.leaseSeconds)],
  );
}

export interface AfterLease {
  destination_id: string;
  inflight: number;
  next_waiting: Date | null;
  next_lease_expiry: Date | null;
}

/**
 * What is left per destination after the lease: live leases, when the next waiting delivery
 * comes due (for an ordered destination: its head's), and the earliest lease expiry.
 */
export async function stateAfterLease(q: Queryable, destinations: { id: string; ordered: boolean }[]): Promise<AfterLease[]> {
  return q.query<AfterLease>(
    `SELECT g.id AS destination_id,
            (SELECT count(*)::int FROM deliveries x WHERE x.destination_id = g.id AND x.status = 'delivering') AS inflight,
            CASE WHEN g.ordered THEN
              (SELECT x.next_attempt_at FROM deliveries x
                WHERE x.destination_id = g.id AND x.status IN ('queued', 'retry_scheduled')
                ORDER BY x.occurred_at, x.id LIMIT 1)
            ELSE
              (SELECT min(x.next_attempt_at) FROM deliveries x
                WHERE x.destination_id = g.id AND x.status IN ('queued', 'retry_scheduled'))
            END AS next_waiting,
            (SELECT min(x.lease_expires_at) FROM deliveries x
              WHERE x.destination_id = g.id AND x.status = 'delivering') AS next_lease_expiry
       FROM unnest($1::text[], $2::bool[]) AS g(id, ordered)`,
    [destinations.map((d) => d.id), destinations.map((d) => d.ordered)],
  );
}

/** Writes each destination's new ready_at (null: idle until new work arrives). */
export async function setReadyAt(q: Queryable, updates: { id: string; readyAt: Date | null }[]): Promise<void> {
  if (updates.length === 0) return;
  await q.query(
    `UPDATE destinations d SET ready_at = u.ready_at
       FROM unnest($1::text[], $2::timestamptz[]) AS u(id, ready_at)
      WHERE d.id = u.id`,
    [updates.map((u) => u.id), updates.map((u) => u.readyAt)],
  );
}

/** Milliseconds (by the database clock) until the next destination becomes ready, or null. */
export async function nextReadyDelayMs(q: Queryable): Promise<number | null> {
  const rows = await q.query<{ ms: number | null }>(
    "SELECT (extract(epoch FROM (min(ready_at) - now())) * 1000)::float8 AS ms FROM destinations WHERE ready_at IS NOT NULL",
  );
  return rows[0]?.ms ?? null;
}
