// Each test gets its own database on the throwaway server that `npm test` starts
// (scripts/run-tests.mjs), so tests can run in parallel without seeing each other's rows.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDb, type Db } from "../../src/db/db.js";
import { migrate } from "../../src/db/migrate.js";
import { startPgBouncer, throughPooler } from "../../scripts/pgbouncer.mjs";
import { createCellSchema } from "../../src/db/cells.js";
import { cellUrl } from "../../src/db/cell-url.js";

export interface TestDatabase {
  /** Connection string for the new, empty database. */
  url: string;
  /** Ends every connection to the database and drops it. Safe to call twice. */
  drop(): Promise<void>;
}

function serverUrl(): string {
  const url = process.env.SLUICE_TEST_DATABASE_URL;
  if (!url) {
    throw new Error(
      "SLUICE_TEST_DATABASE_URL is not set: run tests through `npm test`, which starts a throwaway Postgres " +
        "(or `node scripts/pg-server.mjs -- node --import tsx --test <file>`)",
    );
  }
  return url;
}

/** Runs `fn` with a connected client, always closing it. */
export async function onServer<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates `sluice_test_<random>` on the test server. `icuLocale` (e.g. "en-US", [A-Za-z-] only):
 * its default collation is that ICU locale instead of the server's C (Postgres ≥ 15).
 */
export async function createTestDatabase(opts: { icuLocale?: string } = {}): Promise<TestDatabase> {
  const base = serverUrl();
  const name = `sluice_test_${randomBytes(6).toString("hex")}`;
  const icu = opts.icuLocale;
  if (icu !== undefined && !/^[A-Za-z-]+$/.test(icu)) throw new Error(`not an ICU locale name: ${icu}`);
  // name and icu are checked above, so interpolating them is safe; CREATE DATABASE takes no parameters.
  const locale = icu ? ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${icu}'` : "";
  await onServer(base, (c) => c.query(`CREATE DATABASE ${name}${locale}`));
  const url = new URL(base);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      await onServer(base, async (c) => {
        await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
        // FORCE also covers a connection that slipped in after the terminate.
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      });
    },
  };
}

/** The Citus coordinator `npm run test:citus` started (SLUICE_CITUS_URL), or undefined outside that run. */
export const CITUS_URL: string | undefined = process.env.SLUICE_CITUS_URL || undefined;

/**
 * A new cell (a distributed schema, docs/citus.md) on the Citus cluster `npm run test:citus`
 * started: its URL, and `drop` to remove it with everything in it.
 */
export async function createTestCell(): Promise<TestDatabase> {
  if (!CITUS_URL) throw new Error("SLUICE_CITUS_URL is not set: cells are tested by `npm run test:citus`, which starts a Citus cluster");
  const coordinator = CITUS_URL;
  const cell = `cell_${randomBytes(6).toString("hex")}`;
  const admin = await openDb({ databaseUrl: coordinator, poolSize: 1 });
  try {
    await admin.tx((q) => createCellSchema(q, cell, true));
  } finally {
    await admin.close();
  }
  let dropped = false;
  return {
    url: cellUrl(coordinator, cell),
    async drop() {
      if (dropped) return;
      dropped = true;
      await onServer(coordinator, (c) => c.query(`DROP SCHEMA IF EXISTS ${cell} CASCADE`));
    },
  };
}

/** Where a test's store lives: embedded PGlite, a server database reached directly or through PgBouncer, or a Citus cell. */
export type StoreShape = "embedded" | "server" | "pooled" | "cell";

/**
 * `npm run test:citus` runs some suites pinned to the server store (SLUICE_TEST_SERVER_AS_CELL)
 * with each "server" store a cell instead, so that their statements meet Citus too.
 */
const SERVER_AS_CELL = CITUS_URL !== undefined && process.env.SLUICE_TEST_SERVER_AS_CELL === "1";

/** A new database, or cell, for a store of this shape (not embedded). */
export function createTestStoreDatabase(shape: Exclude<StoreShape, "embedded">): Promise<TestDatabase> {
  return shape === "cell" || (shape === "server" && SERVER_AS_CELL) ? createTestCell() : createTestDatabase();
}

/**
 * A bare store (no Sluice running): an in-memory PGlite, a fresh database on the throwaway
 * server, or a fresh cell on the Citus cluster. `close` also drops the database or cell.
 */
export async function openTestStore(
  backend: StoreShape,
  opts: { poolSize?: number } = {},
): Promise<{ db: Db; close: () => Promise<void> }> {
  if (backend === "embedded") {
    const db = await openDb({ dataDir: "memory://" });
    return { db, close: () => db.close() };
  }
  const tdb = await createTestStoreDatabase(backend);
  const bouncer = backend === "pooled" ? await poolerFor(tdb.url) : null;
  const db = await openDb({
    databaseUrl: bouncer?.url ?? tdb.url,
    directUrl: bouncer ? tdb.url : undefined,
    poolSize: opts.poolSize ?? 2,
  });
  return {
    db,
    close: async () => {
      await db.close();
      await bouncer?.stop();
      await tdb.drop();
    },
  };
}

/**
 * `databaseUrl` through a transaction pooler: the one `npm test` started for the run
 * (SLUICE_TEST_POOLER_PORT), else a new one, stopped by `stop`.
 */
export async function poolerFor(databaseUrl: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = Number(process.env.SLUICE_TEST_POOLER_PORT);
  if (port) return { url: throughPooler(databaseUrl, port), stop: async () => undefined };
  return startPgBouncer(databaseUrl);
}

/** Runs `fn` on a bare test store (openTestStore), migrated first unless `migrate` is false, and closes it after. */
export async function withTestStore<T>(
  backend: StoreShape,
  fn: (db: Db) => Promise<T>,
  opts: { migrate?: boolean; poolSize?: number } = {},
): Promise<T> {
  const { db, close } = await openTestStore(backend, opts);
  try {
    if (opts.migrate !== false) await migrate(db);
    return await fn(db);
  } finally {
    await close();
  }
}
