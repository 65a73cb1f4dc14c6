import type { Queryable } from "../db.js";
import { lockKey, PARTITIONS_LOCK } from "../advisory-locks.js";
import type { TimePartition } from "../../policy/time-partitions.js";

// The time partitions of attempts (migrations/0024_attempts_by_time.sql), made and dropped by the
// janitor as policy/time-partitions.ts plans. DDL takes no parameters: the names and bounds put
// into it are made here from numbers (partitionName), or read from the catalog as regclass prints
// them (quoted where they must be), so a partition someone else named is dropped or pruned as is.

/** Takes the partitions lock for the caller's transaction; false when another worker holds it. */
export async function tryPartitionsLock(q: Queryable): Promise<boolean> {
  const got = await q.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${lockKey("$1")}) AS ok`, [PARTITIONS_LOCK]);
  return got[0]?.ok ?? false;
}

/**
 * The range partitions of `table` (its default partition left out), with their bounds as the
 * catalog prints them read back in the same session — in whole milliseconds, outward, so that a
 * range planned from one's end never overlaps it (the microsecond between is the default's) — and
 * the store's clock: the one clock every worker's plan is made on.
 */
export async function listTimePartitions(q: Queryable, table: string): Promise<{ nowMs: number; partitions: TimePartition[] }> {
  const rows = await q.query<{ name: string; fromMs: number | null; toMs: number | null; nowMs: number }>(
    `SELECT c.oid::regclass::text AS name,
            floor(extract(epoch FROM nullif(trim(both '''' FROM b.m[1]), 'MINVALUE')::timestamptz) * 1000)::float8 AS "fromMs",
            ceil(extract(epoch FROM nullif(trim(both '''' FROM b.m[2]), 'MAXVALUE')::timestamptz) * 1000)::float8 AS "toMs",
            (extract(epoch FROM now()) * 1000)::float8 AS "nowMs"
       FROM (SELECT 1) AS one
       LEFT JOIN pg_inherits i ON i.inhparent = to_regclass($1)
       LEFT JOIN pg_class c ON c.oid = i.inhrelid
       LEFT JOIN LATERAL (SELECT regexp_match(pg_get_expr(c.relpartbound, c.oid), '^FOR VALUES FROM \\((.+)\\) TO \\((.+)\\)$') AS m) b ON true`,
    [table],
  );
  return {
    nowMs: rows[0]?.nowMs ?? Date.now(),
    // A partition open above (MAXVALUE) is none Sluice makes; it would cover all time to come.
    partitions: rows
      .filter((r): r is typeof r & { toMs: number } => r.name !== null && r.toMs !== null)
      .map((r) => ({ name: r.name, fromMs: r.fromMs, toMs: r.toMs })),
  };
}

/**
 * The partitions of `table` retention deletes from by row, as they were before partitioning: its
 * default partition, and one open below (the table from before it was partitioned, until its time
 * has passed).
 */
export async function rowPrunedPartitions(q: Queryable, table: string): Promise<string[]> {
  const rows = await q.query<{ name: string }>(
    `SELECT c.oid::regclass::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)
        AND (c.relispartition AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT'
             OR pg_get_expr(c.relpartbound, c.oid) LIKE 'FOR VALUES FROM (MINVALUE)%')
      ORDER BY 1`,
    [table],
  );
  return rows.map((r) => r.name);
}

const literal = (ms: number): string => `'${new Date(ms).toISOString()}'`;

/**
 * Makes `name` the partition of `table` for [fromMs, toMs). Rows the default partition already holds
 * in that range (an attempt written before its partition was made, or by a worker whose clock runs
 * ahead) stay there, and the partition begins just after the last of them; none begins at fromMs.
 * Returns false when the default holds rows up to the range's end, leaving the range to it.
 * `lockTimeoutMs`: making a partition locks its table for a moment; it waits no longer than this
 * for the statements running on it, and is tried again next round.
 */
export async function createTimePartition(
  q: Queryable,
  table: string,
  part: { name: string; fromMs: number; toMs: number },
  lockTimeoutMs: number,
): Promise<boolean> {
  await q.exec(`SET LOCAL lock_timeout = ${Math.max(1, Math.trunc(lockTimeoutMs))}`);
  const [stray] = await q.query<{ after: string | null; full: boolean }>(
    `SELECT (max(started_at) + interval '1 microsecond')::text AS after,
            coalesce(max(started_at) + interval '1 microsecond' >= $2::timestamptz, false) AS full
       FROM ${table}_default WHERE started_at >= $1::timestamptz AND started_at < $2::timestamptz`,
    [new Date(part.fromMs), new Date(part.toMs)],
  );
  const after = stray?.after ?? null;
  if (stray?.full) return false;
  // `after` is a timestamptz the store printed, so quoting it is all it needs.
  const from = after === null ? literal(part.fromMs) : `'${after.replaceAll("'", "")}'`;
  await q.exec(`CREATE TABLE IF NOT EXISTS ${part.name} PARTITION OF ${table} FOR VALUES FROM (${from}) TO (${literal(part.toMs)})`);
  return true;
}

/**
 * Drops partition `name` (as listTimePartitions gave it) and all its rows, waiting at most
 * `lockTimeoutMs` for its table.
 */
export async function dropTimePartition(q: Queryable, name: string, lockTimeoutMs: number): Promise<void> {
  await q.exec(`SET LOCAL lock_timeout = ${Math.max(1, Math.trunc(lockTimeoutMs))}`);
  await q.exec(`DROP TABLE IF EXISTS ${name}`);
}
