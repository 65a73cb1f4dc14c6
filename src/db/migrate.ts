import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Db } from "./db.js";

// Numbered, append-only .sql files, applied in order under an advisory lock and recorded in a
// ledger, so any number of processes may start at once against one server.

const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations/", import.meta.url));
const LOCK_KEY = 7_245_001; // arbitrary, fixed: the advisory lock id of Sluice migrations

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
    await q.query("SELECT pg_advisory_xact_lock($1)", [LOCK_KEY]);
    await q.query(`CREATE TABLE IF NOT EXISTS sluice_migrations (
      version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await q.query<{ version: number }>("SELECT version FROM sluice_migrations")).map((r) => r.version),
    );
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await q.exec(m.sql);
      await q.query("INSERT INTO sluice_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      applied.push(m.name);
    }
    return applied;
  });
}
