// Advisory-lock keys: every key Sluice takes, in one place, so no two uses share one by accident.
// Arbitrary but fixed (other processes on the same store must agree on them); all are
// transaction-scoped (pg_advisory_xact_lock), released by COMMIT or ROLLBACK even if the process dies.
// Advisory locks belong to the database, and cells (docs/citus.md) share one: each lock is taken
// through lockKey, which makes it the store's own.

/**
 * SQL: the key to lock for the key in parameter `param`, in the store's own schema. The public
 * schema (a store that is no cell) keeps the key as it is, so that processes of an older Sluice
 * on the same store still exclude each other; a cell's key carries a hash of its schema's name,
 * so one cell's janitor never makes another's skip its turn.
 */
export function lockKey(param: string): string {
  return `(CASE current_schema() WHEN 'public' THEN ${param}::bigint
           ELSE (${param}::bigint << 32) | (hashtext(current_schema())::bigint & 4294967295) END)`;
}

/** Applying migrations: one process at a time, so many may start at once against one server. */
export const MIGRATIONS_LOCK = 7_245_001;

/** Making the default tenant: serialises first starts of several processes. */
export const BOOTSTRAP_LOCK = 7_245_002;

/** Retention pruning: one worker at a time (the others skip their turn rather than wait). */
export const RETENTION_LOCK = 7_245_003;

/** Stats rollups (stats_minutes, backlog_samples): one worker a minute (the others skip their turn). */
export const STATS_ROLLUP_LOCK = 7_245_004;

/** Making and dropping the time partitions of attempts: one worker at a time (the others skip their turn). */
export const PARTITIONS_LOCK = 7_245_005;
