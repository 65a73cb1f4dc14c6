import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Db } from "./db.js";
import { StartupError } from "../errors.js";
import { lockKey, MIGRATIONS_LOCK } from "./advisory-locks.js";
import { PACKAGE_ROOT } from "../package-root.js";
import { splitStatements } from "./sql-split.js";

// Numbered, append-only .sql files, applied in order under an advisory lock and recorded in a
// ledger, so any number of processes may start at once against one server. Each statement of a
// file goes as a query of its own (Citus refuses some DDL sent several to a text: sql-split.ts),
// all of a file in the one transaction with its ledger row.

const MIGRATIONS_DIR = path.join(PACKAGE_ROOT, "migrations") + path.sep;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f, sql: readFileSync(dir + f, "utf8") }));
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(db: Db, migrations = loadMigrations()): Promise<string[]> {
  return db.tx(async (q) => {
    // Transaction-scoped lock: released by the COMMIT/ROLLBACK, even if this process dies.
    await q.query(`SELECT pg_advisory_xact_lock(${lockKey("$1")})`, [MIGRATIONS_LOCK]);
    await q.query(`CREATE TABLE IF NOT EXISTS sluice_migrations (
      version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const recorded = await q.query<{ version: number; name: string }>("SELECT version, name FROM sluice_migrations ORDER BY version");
    const known = new Set(migrations.map((m) => m.version));
    const unknown = recorded.filter((r) => !known.has(r.version)).map((r) => r.name);
    // A newer Sluice migrated this database: its queries may rely on columns and constraints
    // this one does not know of, and this one's would fail against them. Nothing is changed.
    if (unknown.length > 0) throw newerSchemaError(unknown, migrations);
    const done = new Set(recorded.map((r) => r.version));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      for (const statement of splitStatements(m.sql)) await q.exec(statement);
      await q.query("INSERT INTO sluice_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      applied.push(m.name);
    }
    return applied;
  });
}

function newerSchemaError(unknown: string[], migrations: Migration[]): StartupError {
  const latest = migrations[migrations.length - 1]?.name ?? "none";
  const which = unknown.length === 1 ? `migration ${unknown[0]}` : `migrations ${unknown.join(", ")}`;
  return new StartupError("SLUICE_STORE_SCHEMA_NEWER", { unknown: which, latest });
}
