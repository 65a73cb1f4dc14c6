import type { Db } from "../db.js";
import type { TableStats, VacuumPolicy, VacuumTask } from "../../policy/vacuum.js";

// VACUUM and ANALYZE, run by the janitor (policy/vacuum.ts says when and why).

/** Every table's counters: Sluice's own and the system catalogs (whose row ids age too). */
export async function tableStats(db: Db): Promise<TableStats[]> {
  return db.query<TableStats>(
    `SELECT c.oid::regclass::text AS "table", n.nspname = 'public' AS own,
            coalesce(s.n_live_tup, 0)::float8 AS live, coalesce(s.n_dead_tup, 0)::float8 AS dead,
            coalesce(s.n_mod_since_analyze, 0)::float8 AS modified,
            age(c.relfrozenxid)::float8 AS "xidAge"
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
      WHERE c.relkind IN ('r', 'm') AND c.relpersistence = 'p' AND n.nspname IN ('public', 'pg_catalog')`,
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
