import type { Queryable } from "../db.js";
import { lockKey, RETENTION_LOCK } from "../advisory-locks.js";
import { UNLEASED } from "./leases.js";
import { nowPlusSeconds } from "./sql-time.js";
import { rowPrunedPartitions } from "./partitions.js";

// Retention, run by dispatch/janitor.ts: finished deliveries, events with nothing left to deliver
// and the attempts no time partition holds (the others go with their partition: partitions.ts)
// are deleted past retention in batches of `batch` rows, idempotency keys after 24 h, settled
// alerts past retention; deliveries held too long for a paused destination, and those a deleted
// destination left waiting, are discarded. Each statement returns how many rows it removed or
// changed.

const cutoff = `now() - $1::float8 * interval '1 hour'`; // $1 may be a fraction of an hour

/** Takes the retention lock for the caller's transaction; false when another worker holds it. */
export async function tryRetentionLock(q: Queryable): Promise<boolean> {
  const got = await q.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${lockKey("$1")}) AS ok`, [RETENTION_LOCK]);
  return got[0]?.ok ?? false;
}

/**
 * Attempts started more than `retentionHours` ago in the partitions retention deletes from by row
 * (rowPrunedPartitions: the default and the table from before partitioning); the others go with
 * their partition (policy/time-partitions.ts). At most `batch` rows from each.
 */
export async function pruneAttempts(q: Queryable, retentionHours: number, batch: number): Promise<number> {
  let n = 0;
  for (const table of await rowPrunedPartitions(q, "attempts")) {
    const rows = await q.query<{ n: number }>(
      `WITH d AS (DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE started_at < ${cutoff} LIMIT $2) RETURNING 1)
       SELECT count(*)::int AS n FROM d`,
      [retentionHours, batch],
    );
    n += rows[0]!.n;
  }
  return n;
}

// The batches below name their rows by ctid, as pruneAttempts does: named by key (`(destination_id,
// id) IN (…)`), the planner joined a batch of 5,000 to the whole table by a hash over a sequential
// scan — 127 ms a batch at 600,000 deliveries against 14 by ctid, and 200 against 15 for events —
// work that grew with the rows kept, in every batch. The finished delivery's conditions are asked
// again of the row deleted: one retried by id since the batch was chosen (a new version of the
// row, which a ctid no longer names) is left alone.

/** Deliveries delivered, discarded or dead more than `retentionHours` ago. */
export async function pruneDeliveries(q: Queryable, retentionHours: number, batch: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH d AS (DELETE FROM deliveries WHERE ctid IN (
        SELECT ctid FROM deliveries WHERE finished_at < ${cutoff} AND status IN ('delivered', 'discarded', 'dead') LIMIT $2)
        AND finished_at < ${cutoff} AND status IN ('delivered', 'discarded', 'dead')
      RETURNING 1)
     SELECT count(*)::int AS n FROM d`,
    [retentionHours, batch],
  );
  return rows[0]!.n;
}

/**
 * The least id minted at `at` (a timestamptz expression) with `prefix`: ids begin with their
 * creation time in 12 hex digits of milliseconds (src/ids.ts), so under COLLATE "C" the ids made
 * before `at` are those below it — a range of the primary key, no index on created_at needed.
 */
export const idAt = (prefix: string, at: string): string =>
  `('${prefix}_' || lpad(to_hex((extract(epoch FROM ${at}) * 1000)::bigint), 12, '0')) COLLATE "C"`;

/**
 * Events made more than `retentionHours` ago that no delivery refers to any more, taken in id
 * order above `after` (an id; "" for the start). Returns how many went and the last id deleted,
 * to pass as `after` to the next batch of the round: the events still held (deliveries of paused,
 * failing or throttled destinations) gather at the old end of the id range, and a batch that
 * began there each time re-read all of them before finding anything to delete — work that grew
 * with the held backlog, in every batch (some 70 ms a batch with 100,000 held, in a scratch
 * measurement). Read once a round, they cost that once.
 */
export async function pruneEvents(
  q: Queryable,
  retentionHours: number,
  batch: number,
  after = "",
): Promise<{ n: number; last: string | null }> {
  const rows = await q.query<{ n: number; last: string | null }>(
    `WITH d AS (DELETE FROM events WHERE ctid IN (
        SELECT e.ctid FROM events e WHERE e.id > $3::text COLLATE "C" AND e.id < ${idAt("evt", cutoff)}
           AND NOT EXISTS (SELECT 1 FROM deliveries dl WHERE dl.event_id = e.id) ORDER BY e.id LIMIT $2)
      RETURNING id)
     SELECT count(*)::int AS n, max(id) AS last FROM d`,
    [retentionHours, batch, after],
  );
  return rows[0]!;
}

/**
 * Held for a paused destination longer than its paused_retention_hours: discarded, with the
 * reason on each delivery (still retryable by id). Destination rows are locked first.
 */
export async function discardHeldPastPausedRetention(q: Queryable): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH p AS (
       SELECT id, paused_at, paused_retention_hours FROM destinations
        WHERE paused_at IS NOT NULL AND paused_at < ${nowPlusSeconds("-3600 * paused_retention_hours")}
        ORDER BY id FOR UPDATE SKIP LOCKED
     ), d AS (
       UPDATE deliveries dl
          SET status = 'discarded', finished_at = now(), updated_at = now(),
              last_error = 'discarded: held for over ' || p.paused_retention_hours || ' h while the destination was paused'
         FROM p
        WHERE dl.destination_id = p.id AND dl.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("dl")}
          AND greatest(dl.created_at, p.paused_at) < ${nowPlusSeconds("-3600 * p.paused_retention_hours")}
       RETURNING 1)
     SELECT count(*)::int AS n FROM d`,
  );
  return rows[0]!.n;
}

/**
 * What a deleted destination leaves behind, discarded as its waiting deliveries were at the
 * delete: deliveries in flight then that came back waiting (a result that scheduled a retry, or a
 * lease that expired with its worker — a deleted destination is never claimed again, so nothing
 * else would reclaim it). Live leases are left to finish. Destination rows are locked first.
 */
export async function discardLeftOfDeleted(q: Queryable): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH p AS (
       SELECT id FROM destinations WHERE deleted_at IS NOT NULL ORDER BY id FOR UPDATE SKIP LOCKED
     ), expired AS (
       DELETE FROM leases l USING p WHERE l.destination_id = p.id AND l.expires_at <= now()
       RETURNING l.destination_id, l.delivery_id
     ), d AS (
       UPDATE deliveries x
          SET status = 'discarded', finished_at = now(), updated_at = now(), last_error = 'destination deleted',
              -- an expired lease's attempt counts: its request may have been made
              attempts = x.attempts + CASE WHEN EXISTS (
                SELECT 1 FROM expired e WHERE e.destination_id = x.destination_id AND e.delivery_id = x.id) THEN 1 ELSE 0 END
         FROM p
        WHERE x.destination_id = p.id AND x.status IN ('queued', 'retry_scheduled')
          AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.destination_id = x.destination_id AND l.delivery_id = x.id AND l.expires_at > now())
       RETURNING 1)
     SELECT count(*)::int AS n FROM d`,
  );
  return rows[0]!.n;
}

/**
 * Alerts finished (published, e-mail settled) more than `retentionHours` ago, and the settled
 * digests of hours that long gone. A death's dedup key only matters while its delivery can still
 * be written back, which ends long before: a finished delivery is pruned after the same time.
 */
export async function pruneAlerts(q: Queryable, retentionHours: number, batch: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH d AS (DELETE FROM alerts WHERE id IN (
        SELECT id FROM alerts WHERE created_at < ${cutoff} AND published_at IS NOT NULL AND email_state <> 'pending' LIMIT $2)
      RETURNING 1),
     g AS (DELETE FROM alert_digests WHERE hour < ${cutoff} AND state <> 'pending')
     SELECT count(*)::int AS n FROM d`,
    [retentionHours, batch],
  );
  return rows[0]!.n;
}

/** Idempotency keys older than 24 hours (the window a retried POST is recognised in). */
export async function pruneIdempotencyKeys(q: Queryable): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH d AS (DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours' RETURNING 1) SELECT count(*)::int AS n FROM d`,
  );
  return rows[0]!.n;
}
