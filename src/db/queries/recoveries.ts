import type { Queryable } from "../db.js";
import type { RecoverableStatus, RecoveryStatus } from "../../policy/statuses.js";
import { REQUEUE_SET } from "./deliveries.js";
import { NOW } from "./sql-time.js";

// Recoveries: a destination's finished deliveries whose event occurred in [since, until), queued
// again page by page by the workers (dispatch/recovery.ts). Each page is one short transaction
// that holds the recovery's row lock (no two workers take the same page) and then the
// destination's (waiting deliveries change only under it), and moves the position forward.

export interface RecoveryRow {
  id: string;
  tenant_id: string;
  destination_id: string;
  since: Date;
  until: Date;
  statuses: RecoverableStatus[];
  status: RecoveryStatus;
  /** Matching deliveries when the recovery was requested. */
  deliveries: number;
  requeued: number;
  position_occurred_at: Date | null;
  position_id: string | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
}

export interface RecoveryRange {
  destinationId: string;
  since: Date;
  until: Date;
  statuses: readonly RecoverableStatus[];
}

// Every statement over a destination's finished deliveries names the partial index's predicate,
// so the planner can prove the index applies whatever the statuses parameter holds.
const FINISHED = "status IN ('delivered', 'dead', 'discarded')";

/** The database's clock: a recovery's default `until`, on the same clock as occurred_at defaults. */
export async function dbNow(q: Queryable): Promise<Date> {
  return (await q.query<{ now: Date }>("SELECT now() AS now"))[0]!.now;
}

/** How many deliveries a recovery of this range would queue again now. */
export async function countRecoverable(q: Queryable, r: RecoveryRange): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM deliveries
      WHERE destination_id = $1 AND status = ANY($2::text[]) AND ${FINISHED} AND occurred_at >= $3 AND occurred_at < $4`,
    [r.destinationId, r.statuses, r.since, r.until],
  );
  return rows[0]!.n;
}

export async function insertRecovery(
  q: Queryable,
  id: string,
  tenantId: string,
  r: RecoveryRange,
  deliveries: number,
): Promise<RecoveryRow> {
  const rows = await q.query<RecoveryRow>(
    `INSERT INTO recoveries (id, tenant_id, destination_id, since, until, statuses, deliveries)
     VALUES ($1, $2, $3, $4, $5, $6::text[], $7) RETURNING *`,
    [id, tenantId, r.destinationId, r.since, r.until, r.statuses, deliveries],
  );
  return rows[0]!;
}

export async function getRecovery(q: Queryable, tenantId: string, destinationId: string, id: string): Promise<RecoveryRow | null> {
  const rows = await q.query<RecoveryRow>("SELECT * FROM recoveries WHERE id = $1 AND tenant_id = $2 AND destination_id = $3", [
    id,
    tenantId,
    destinationId,
  ]);
  return rows[0] ?? null;
}

/**
 * Locks the running recovery whose last page is oldest (round-robin between recoveries), skipping
 * those another worker is paging; null when none is left to take.
 */
export async function lockNextRecovery(q: Queryable): Promise<RecoveryRow | null> {
  const rows = await q.query<RecoveryRow>(
    "SELECT * FROM recoveries WHERE status = 'running' ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED",
  );
  return rows[0] ?? null;
}

/**
 * Takes the recovery's destination row lock (after the recovery's own: every page locks in that
 * order) and says whether the destination still exists; a deleted one gets nothing queued.
 */
export async function lockRecoveryDestination(q: Queryable, destinationId: string): Promise<boolean> {
  const rows = await q.query<{ deleted: boolean }>("SELECT deleted_at IS NOT NULL AS deleted FROM destinations WHERE id = $1 FOR UPDATE", [
    destinationId,
  ]);
  return rows.length === 1 && !rows[0]!.deleted;
}

export interface RecoveryPage {
  /** Deliveries in the page (in the statuses when the page was read). */
  scanned: number;
  /** Of those, queued again (a concurrent change may have moved one out of the statuses). */
  requeued: number;
  /** The page's last (occurred_at, id): the new position; null for an empty page. */
  lastOccurredAt: Date | null;
  lastId: string | null;
}

/**
 * Queues again the next `pageSize` deliveries of the recovery after its position, in
 * (occurred_at, id) order. Per status, an index range scan of at most `pageSize` entries; the
 * caller holds the recovery's and the destination's row locks.
 */
export async function requeuePage(q: Queryable, r: RecoveryRow, pageSize: number): Promise<RecoveryPage> {
  // Before the first page the position is (since, ''): every id sorts after '', so this is
  // occurred_at >= since, written as the same row comparison the index serves.
  const fromAt = r.position_occurred_at ?? r.since;
  const fromId = r.position_id ?? "";
  const rows = await q.query<{ scanned: number; requeued: number; last_occurred_at: Date | null; last_id: string | null }>(
    `WITH page AS MATERIALIZED (
       SELECT p.id, p.occurred_at
         FROM unnest($2::text[]) AS s(status)
         CROSS JOIN LATERAL (
           SELECT dl.id, dl.occurred_at FROM deliveries dl
            WHERE dl.destination_id = $1 AND dl.status = s.status AND dl.${FINISHED}
              AND (dl.occurred_at, dl.id) > ($3::timestamptz, $4::text) AND dl.occurred_at < $5
            ORDER BY dl.occurred_at, dl.id
            LIMIT $6
         ) p
        ORDER BY p.occurred_at, p.id
        LIMIT $6
     ), requeued AS (
       UPDATE deliveries d SET ${REQUEUE_SET}
         FROM page
        WHERE d.destination_id = $1 AND d.id = page.id AND d.status = ANY($2::text[])
       RETURNING d.id
     ), last AS (
       SELECT occurred_at, id FROM page ORDER BY occurred_at DESC, id DESC LIMIT 1
     )
     SELECT (SELECT count(*)::int FROM page) AS scanned, (SELECT count(*)::int FROM requeued) AS requeued,
            (SELECT occurred_at FROM last) AS last_occurred_at, (SELECT id FROM last) AS last_id`,
    [r.destination_id, r.statuses, fromAt, fromId, r.until, pageSize],
  );
  const row = rows[0]!;
  return { scanned: row.scanned, requeued: row.requeued, lastOccurredAt: row.last_occurred_at, lastId: row.last_id };
}

/** Records a page: the new position (unchanged when null), the count, and `done` when nothing is left. */
export async function advanceRecovery(
  q: Queryable,
  id: string,
  page: Pick<RecoveryPage, "requeued" | "lastOccurredAt" | "lastId">,
  done: boolean,
): Promise<void> {
  await q.query(
    `UPDATE recoveries
        SET position_occurred_at = coalesce($2, position_occurred_at), position_id = coalesce($3, position_id),
            requeued = requeued + $4, updated_at = now(),
            status = CASE WHEN $5::bool THEN 'done' ELSE status END,
            finished_at = CASE WHEN $5::bool THEN ${NOW} ELSE finished_at END
      WHERE id = $1`,
    [id, page.lastOccurredAt, page.lastId, page.requeued, done],
  );
}

/** Finished recoveries older than `retentionHours`, like the deliveries they queued. */
export async function pruneRecoveries(q: Queryable, retentionHours: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH d AS (DELETE FROM recoveries WHERE status = 'done' AND finished_at < now() - $1::float8 * interval '1 hour' RETURNING 1)
     SELECT count(*)::int AS n FROM d`,
    [retentionHours],
  );
  return rows[0]!.n;
}
