import { cellNameProblem } from "../config.js";
import { ConfigError } from "../errors.js";
import { openDb } from "./db.js";
import { migrate } from "./migrate.js";
import { cellNodes, ensureDirectory, registerCell } from "./queries/cell-directory.js";
import type { Queryable } from "./store.js";
import { cellOfUrl, cellUrl } from "./cell-url.js";

// Cells: a whole Sluice store in one schema of a Postgres database, for a group of tenants. On
// Citus a cell is a distributed schema (schema-based sharding): its tables live together on one
// node, every statement of the cell runs there, and Citus moves the cell between nodes as one.
// On a plain Postgres server a cell is a plain schema. A connection reaches a cell by having the
// cell as its whole search_path, so Sluice's statements, which name no schema, are the cell's.
// docs/citus.md says how to create, place and move cells.

/**
 * Inside a transaction on the database (not a cell's session): makes schema `cell`, distributed on
 * a Citus coordinator (`citus`), or takes an existing one, distributing it if it is not yet.
 * Returns whether the schema was new.
 */
export async function createCellSchema(q: Queryable, cell: string, citus: boolean): Promise<boolean> {
  const problem = cellNameProblem(cell);
  if (problem) throw new Error(problem);
  const [existing] = await q.query<{ distributed: boolean }>(
    citus
      ? "SELECT EXISTS (SELECT 1 FROM pg_dist_schema WHERE schemaid = n.oid) AS distributed FROM pg_namespace n WHERE nspname = $1"
      : "SELECT false AS distributed FROM pg_namespace WHERE nspname = $1",
    [cell],
  );
  if (citus) {
    // Only schemas created while this is on are distributed schemas.
    await q.query("SET LOCAL citus.enable_schema_based_sharding TO on");
  }
  if (!existing) {
    await q.query(`CREATE SCHEMA ${cell}`); // a checked name: no quoting needed
    return true;
  }
  if (citus && !existing.distributed) await q.query("SELECT citus_schema_distribute($1)", [cell]);
  return false;
}

/** What `sluice cells create` did. */
export interface CreatedCell {
  name: string;
  /** The schema was new (false: it existed, and was migrated up to date and listed). */
  created: boolean;
  /** Migrations applied to it. */
  applied: string[];
  /** On Citus, the node holding it (`host:port`). */
  node: string | null;
}

/**
 * Makes `cell` in the database at `databaseUrl` and readies it for Sluice: its schema (a
 * distributed schema on Citus), Sluice's migrations run inside it, and its row in the cell
 * directory. Listed only once migrated, so a listed cell can always be served. Safe to run again.
 */
export async function createCell(databaseUrl: string, cell: string): Promise<CreatedCell> {
  const problem = cellNameProblem(cell);
  if (problem) throw new ConfigError([`cell name: ${problem}`]);
  if (cellOfUrl(databaseUrl) !== null) {
    throw new ConfigError(["DATABASE_URL: names a cell in its options (search_path); cells are made through the database's own URL"]);
  }
  const admin = await openDb({ databaseUrl, poolSize: 1 });
  try {
    await admin.tx((q) => ensureDirectory(q, admin.citus));
    const created = await admin.tx((q) => createCellSchema(q, cell, admin.citus));
    const db = await openDb({ databaseUrl: cellUrl(databaseUrl, cell), poolSize: 1 });
    let applied: string[];
    try {
      applied = await migrate(db);
    } finally {
      await db.close();
    }
    await registerCell(admin, cell);
    const node = admin.citus ? ((await cellNodes(admin, [cell])).get(cell) ?? null) : null;
    return { name: cell, created, applied, node };
  } finally {
    await admin.close();
  }
}
