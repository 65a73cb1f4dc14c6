// The bench's Postgres: a throwaway server (scripts/pg-server.mjs), databases on it, and what the
// bench reads from them — server settings, deliveries by status, and what a system's connections do.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../scripts/pg-server.mjs";
import { registerPostgres } from "./procs.js";

const SETTINGS = [
  "server_version",
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "wal_sync_method",
  "shared_buffers",
  "max_connections",
];

/** A throwaway server, stopped (and its data deleted) with the bench's children on any exit; and its settings, read back. */
export async function startPostgres(o: { fsync: boolean; statStatements?: boolean; icuLocale?: string }) {
  const server: ThrowawayPostgres = await startThrowawayPostgres({ ...o, log: () => undefined });
  registerPostgres(server);
  const rows = await adminQuery<{ name: string; setting: string }>(
    server.url,
    "SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name",
    [SETTINGS],
  );
  const settings: Record<string, string> = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  return { server, settings, postmaster: () => postmasterPid(server.dataDir) };
}

/** The postmaster's pid, from its lock file. */
function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number((readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0] ?? "").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** The same server, another database. */
function databaseUrl(serverUrl: string, dbName: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${dbName}`;
  return u.toString();
}

export async function adminQuery<R = Record<string, unknown>>(serverUrl: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const c = await connect(databaseUrl(serverUrl, "postgres"));
  try {
    return (await c.query(sql, params)).rows as R[];
  } finally {
    await c.end();
  }
}

/**
 * `f(url)` on a fresh database `dbName` — created after a CHECKPOINT, so that no run inherits the
 * dirty pages of the one before — and dropped afterwards.
 */
export async function withDatabase<T>(serverUrl: string, dbName: string, f: (url: string) => Promise<T>): Promise<T> {
  if (!/^[a-z_][a-z0-9_]*$/.test(dbName)) throw new Error(`bad database name ${dbName}`);
  const drop = (): Promise<unknown> => adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  try {
    await adminQuery(serverUrl, "CHECKPOINT");
    await drop();
    await adminQuery(serverUrl, `CREATE DATABASE ${dbName}`);
    return await f(databaseUrl(serverUrl, dbName));
  } finally {
    await drop().catch(() => undefined);
  }
}

/** A client of `url` whose connection errors (the server going away on Ctrl-C) surface as failed queries. */
export async function connect(url: string): Promise<pg.Client> {
  const db = new pg.Client({ connectionString: url });
  db.on("error", () => undefined);
  await db.connect();
  return db;
}

/** Deliveries by status, as `deliveries.<status>`. */
export async function deliveriesByStatus(db: pg.Client): Promise<Record<string, number>> {
  const r = await db.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries GROUP BY 1 ORDER BY 1");
  return Object.fromEntries(r.rows.map((x) => [`deliveries.${x.status}`, x.n]));
}

/**
 * Samples pg_stat_activity of one database twice a second: per state and wait event, how many of
 * its client connections were in it on average.
 */
export class PgActivitySampler {
  private readonly totals = new Map<string, number>();
  private samples = 0;
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;

  private constructor(private readonly client: pg.Client) {}

  static async begin(url: string): Promise<PgActivitySampler> {
    const s = new PgActivitySampler(await connect(url));
    s.timer = setInterval(() => void (s.sampling ??= s.sample().finally(() => (s.sampling = null))), 500);
    return s;
  }

  async end(): Promise<Record<string, number>> {
    clearInterval(this.timer!);
    await this.sampling;
    await this.client.end().catch(() => undefined);
    const sorted = [...this.totals].sort((a, b) => b[1] - a[1]);
    return Object.fromEntries(sorted.map(([k, v]) => [k, Math.round((v / Math.max(1, this.samples)) * 100) / 100]));
  }

  private async sample(): Promise<void> {
    const rows = await this.client
      .query<{ k: string; n: number }>(
        `SELECT CASE WHEN state = 'active' THEN 'active: ' || coalesce(wait_event_type || ':' || wait_event, 'CPU')
                    ELSE coalesce(state, '?') END AS k, count(*)::int AS n
           FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
          GROUP BY 1`,
      )
      .then((r) => r.rows)
      .catch(() => null); // a sample lost is no loss
    if (!rows) return;
    this.samples++;
    for (const r of rows) this.totals.set(r.k, (this.totals.get(r.k) ?? 0) + r.n);
  }
}
