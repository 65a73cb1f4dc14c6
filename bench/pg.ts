// The bench's Postgres: a throwaway server (scripts/pg-server.mjs), databases on it, and what the
// bench reads from them — server settings, row counters, and what a system's connections do.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../scripts/pg-server.mjs";
import { registerPostgres } from "./procs.js";

/** A throwaway server, stopped (and its data deleted) with the bench's children on any exit. */
export async function startPostgres(fsync: boolean, statStatements = false, icuLocale?: string): Promise<ThrowawayPostgres> {
  const server = await startThrowawayPostgres({ fsync, statStatements, icuLocale, log: () => undefined });
  registerPostgres(server);
  return server;
}

/** The postmaster's pid, from its lock file. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number((readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0] ?? "").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * A pg_stat_statements row's time spent JIT-compiling, in ms (`s`: the view's alias; 0 on a Postgres
 * without the columns, before 15).
 */
export const JIT_MS_SQL = `coalesce((to_jsonb(s) ->> 'jit_generation_time')::float8 + (to_jsonb(s) ->> 'jit_inlining_time')::float8
                     + (to_jsonb(s) ->> 'jit_optimization_time')::float8 + (to_jsonb(s) ->> 'jit_emission_time')::float8, 0)`;

/** This database's ms of JIT compiling since pg_stat_statements was last reset. */
export async function jitMsSinceReset(db: pg.Client): Promise<number> {
  const r = await db.query<{ ms: number }>(
    `SELECT coalesce(sum(${JIT_MS_SQL}), 0)::float8 AS ms
       FROM pg_stat_statements s
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE '%pg_stat_statements%'`,
  );
  return Number(r.rows[0]?.ms ?? 0);
}

/** The same server, another database. */
export function databaseUrl(serverUrl: string, dbName: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${dbName}`;
  return u.toString();
}

export async function adminQuery<R = Record<string, unknown>>(serverUrl: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const c = new pg.Client({ connectionString: databaseUrl(serverUrl, "postgres") });
  await c.connect();
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

const SETTINGS = [
  "server_version",
  "fsync",
  "synchronous_commit",
  "full_page_writes",
  "wal_sync_method",
  "shared_buffers",
  "max_connections",
];

export async function serverSettings(serverUrl: string): Promise<Record<string, string>> {
  const rows = await adminQuery<{ name: string; setting: string }>(
    serverUrl,
    "SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name",
    [SETTINGS],
  );
  return Object.fromEntries(SETTINGS.map((n) => [n, rows.find((r) => r.name === n)?.setting ?? "?"]));
}

/** A client of `url` whose connection errors (the server going away on Ctrl-C) surface as failed queries. */
export async function connect(url: string): Promise<pg.Client> {
  const db = new pg.Client({ connectionString: url });
  db.on("error", () => undefined);
  await db.connect();
  return db;
}

/** Deliveries by status, as `deliveries.<status>` (or `<status>` for one destination). */
export async function deliveriesByStatus(db: pg.Client, destinationId?: string): Promise<Record<string, number>> {
  const rows = (
    await db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM deliveries ${destinationId ? "WHERE destination_id = $1" : ""} GROUP BY status ORDER BY status`,
      destinationId ? [destinationId] : [],
    )
  ).rows;
  return Object.fromEntries(rows.map((r) => [destinationId ? r.status : `deliveries.${r.status}`, r.n]));
}

export type Stats = Map<string, { rows: number; scans: number }>;

/** Cumulative rows read by sequential scans per table and fetched through each index (pg_stat_*). */
export async function tableStats(db: pg.Client): Promise<Stats> {
  const rows = (
    await db.query<{ name: string; rows: string; scans: string }>(
      `SELECT 'seq scan ' || relname AS name, coalesce(seq_tup_read, 0) AS rows, coalesce(seq_scan, 0) AS scans FROM pg_stat_user_tables
     UNION ALL
     SELECT 'index ' || indexrelname, coalesce(idx_tup_read, 0), coalesce(idx_scan, 0) FROM pg_stat_user_indexes`,
    )
  ).rows;
  return new Map(rows.map((r) => [r.name, { rows: Number(r.rows), scans: Number(r.scans) }]));
}

export function diffStats(a: Stats, b: Stats): { name: string; rows: number; scans: number }[] {
  return [...b]
    .map(([name, v]) => ({ name, rows: v.rows - (a.get(name)?.rows ?? 0), scans: v.scans - (a.get(name)?.scans ?? 0) }))
    .filter((x) => x.rows > 0 || x.scans > 0)
    .sort((x, y) => y.rows - x.rows);
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
