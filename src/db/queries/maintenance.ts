import type { Db } from "../db.js";
import { bytesPerEntryAfterRebuild, type IndexStats, type RebuildBaseline } from "../../policy/index-rebuild.js";
import type { TableStats, VacuumPolicy, VacuumTask } from "../../policy/vacuum.js";

// VACUUM, ANALYZE and index rebuilds, run by the janitor (policy/vacuum.ts and
// policy/index-rebuild.ts say when and why).

/**
 * Every table's counters: Sluice's own (those of its schema, public unless the store is a cell)
 * and the system catalogs (whose row ids age too).
 */
export async function tableStats(db: Db): Promise<TableStats[]> {
  return db.query<TableStats>(
    `SELECT c.oid::regclass::text AS "table", n.nspname = current_schema() AS own,
            coalesce(s.n_live_tup, 0)::float8 AS live, coalesce(s.n_dead_tup, 0)::float8 AS dead,
            coalesce(s.n_mod_since_analyze, 0)::float8 AS modified,
            age(c.relfrozenxid)::float8 AS "xidAge"
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
      WHERE c.relkind IN ('r', 'm') AND c.relpersistence = 'p' AND n.nspname IN (current_schema(), 'pg_catalog')`,
  );
}

/**
 * What the task says of one table: VACUUM (with FREEZE when due) outside any transaction, as
 * VACUUM must be, then ANALYZE in a transaction of its own at the policy's statistics target.
 * SKIP_LOCKED: a table another session is vacuuming or analyzing (autovacuum, another worker's
 * janitor) is passed over rather than waited for. `truncate` false: empty pages at its end stay
 * (see VacuumPolicy.truncate).
 */
export async function vacuumTable(db: Db, task: VacuumTask, policy: Pick<VacuumPolicy, "truncate" | "statisticsTarget">): Promise<void> {
  // The name comes from pg_class through regclass, which quotes it where it must be.
  if (task.vacuum) {
    const options = ["SKIP_LOCKED", ...(task.freeze ? ["FREEZE"] : []), ...(policy.truncate ? [] : ["TRUNCATE false"])];
    await db.exec(`VACUUM (${options.join(", ")}) ${task.table}`);
  }
  if (task.analyze) {
    const target = policy.statisticsTarget;
    await db.tx(async (q) => {
      if (target !== null) await q.exec(`SET LOCAL default_statistics_target = ${Math.trunc(target)}`);
      await q.exec(`ANALYZE (SKIP_LOCKED) ${task.table}`);
    });
  }
}

// ---- index rebuilds (policy/index-rebuild.ts says when and why) ------------------------------

/** Sluice's own B-tree indexes (its schema's), or the one named: size, entries, and whether they are valid. */
export async function indexStats(db: Db, only: string | null = null): Promise<IndexStats[]> {
  return db.query<IndexStats>(
    `SELECT c.oid::regclass::text AS index, i.indrelid::regclass::text AS "table",
            pg_relation_size(c.oid)::float8 AS bytes, c.reltuples::float8 AS entries, i.indisvalid AS valid,
            i.indpred IS NOT NULL AS partial, t.reltuples::float8 AS "tableCounted",
            coalesce(s.n_live_tup, 0)::float8 AS "tableLive", coalesce(s.n_tup_del, 0)::float8 AS "tableDeleted",
            greatest(s.last_vacuum, s.last_autovacuum, s.last_analyze, s.last_autoanalyze) IS NOT NULL AS "liveKnown"
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       JOIN pg_class t ON t.oid = i.indrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_am am ON am.oid = c.relam
       LEFT JOIN pg_stat_all_tables s ON s.relid = i.indrelid
      WHERE n.nspname = current_schema() AND am.amname = 'btree' AND ($1::text IS NULL OR c.oid = $1::regclass)`,
    [only],
  );
}

export async function rebuildBaselines(db: Db): Promise<RebuildBaseline[]> {
  return db.query<RebuildBaseline>(
    `SELECT index_name AS index, bytes_per_entry AS "bytesPerEntry",
            (extract(epoch FROM measured_at) * 1000)::float8 AS "measuredAtMs"
       FROM index_rebuilds`,
  );
}

/** Takes the one rebuilding worker's lease for `seconds`; false while another worker holds it. */
export async function takeRebuildLease(db: Db, seconds: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE index_rebuild_lease SET expires_at = now() + $1::float8 * interval '1 second' WHERE expires_at < now() RETURNING 1`,
    [seconds],
  );
  return rows.length > 0;
}

export async function releaseRebuildLease(db: Db): Promise<void> {
  await db.query(`UPDATE index_rebuild_lease SET expires_at = '-infinity'`);
}

/** An interrupted rebuild's invalid copy. The name comes from pg_class through regclass, quoted where it must be. */
export async function dropLeftoverIndex(db: Db, index: string): Promise<void> {
  await db.exec(`DROP INDEX CONCURRENTLY IF EXISTS ${index}`);
}

/**
 * REINDEX CONCURRENTLY: a new copy is built beside the index from two scans of its table while
 * reads and writes go on, then swapped in. No statement waits for it; between its phases it waits
 * for the older transactions on the table to end. What it costs the others is a core and the disk
 * while it runs (docs/benchmarks.md, bench:soak). Returns the index's size and bytes per entry
 * after it, and records the latter as its baseline.
 */
export async function rebuildIndex(db: Db, index: string): Promise<{ bytes: number; bytesPerEntry: number | null }> {
  await db.execMaintenance(`REINDEX INDEX CONCURRENTLY ${index}`);
  const [after] = await indexStats(db, index);
  // An index with no entries after its rebuild says nothing about its entries' size: no baseline.
  const bytesPerEntry = after ? bytesPerEntryAfterRebuild(after) : null;
  if (bytesPerEntry !== null) await recordBaseline(db, index, bytesPerEntry);
  return { bytes: after?.bytes ?? 0, bytesPerEntry };
}

/** An index's bytes per entry when packed, against which its bloat is read from now on. */
async function recordBaseline(db: Db, index: string, bytesPerEntry: number): Promise<void> {
  await db.query(
    `INSERT INTO index_rebuilds (index_name, bytes_per_entry, measured_at) VALUES ($1, $2, now())
     ON CONFLICT (index_name) DO UPDATE SET bytes_per_entry = EXCLUDED.bytes_per_entry, measured_at = EXCLUDED.measured_at`,
    [index, bytesPerEntry],
  );
}
