// The bench's Postgres: a throwaway server (scripts/pg-server.mjs) and fresh databases on it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { startThrowawayPostgres } from "../scripts/pg-server.mjs";
import { onCleanup } from "./procs.js";

const SETTINGS = "server_version fsync synchronous_commit full_page_writes wal_sync_method shared_buffers max_connections".split(" ");

/** A throwaway server, stopped (and its data deleted) with the bench's children on any exit; and its settings, read back. */
export async function startPostgres(o: { fsync: boolean; statStatements?: boolean; icuLocale?: string }) {
  const server = await startThrowawayPostgres({ ...o, log: () => undefined });
  onCleanup(() => server.stop());
  const sql = "SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name";
  const rows = await adminQuery<{ name: string; setting: string }>(server.url, sql, [SETTINGS]);
  const settings: Record<string, string> = Object.fromEntries(rows.map((r) => [r.name, r.setting]));
  // The postmaster's pid, from its lock file: the root of the server's processes.
  const postmaster = (): number | null => {
    try {
      const pid = Number(readFileSync(join(server.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : null;
    } catch {
      return null;
    }
  };
  return { server, settings, postmaster };
}

export function databaseUrl(serverUrl: string, dbName: string): string {
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

/** `f(url)` on a fresh database `dbName`, created after a CHECKPOINT (no run inherits the dirty pages of the one before), then dropped. */
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
