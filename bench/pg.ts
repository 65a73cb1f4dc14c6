// The bench's Postgres server: the shared `scripts/pg-server.mjs` when it is there, otherwise a
// private equivalent (initdb into a temp dir, then `postgres -D … -p … -k …`, as the `postgres`
// user when we are root — Postgres refuses to run as root).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, chownSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import pg from "pg";
import { freePort } from "./procs.js";

export interface PgServer {
  url: string;
  port: number;
  dataDir: string;
  stop(): Promise<void>;
  /** Which implementation started it, for the report. */
  source: string;
}

const PG_BIN = process.env.PG_BIN ?? "/usr/lib/postgresql/15/bin";
const SHARED_SCRIPT = fileURLToPath(new URL("../scripts/pg-server.mjs", import.meta.url));

type StartFn = (opts: { fsync?: boolean; log?: (line: string) => void }) => Promise<Omit<PgServer, "source">>;

export async function startPostgres(opts: { fsync: boolean }): Promise<PgServer> {
  if (existsSync(SHARED_SCRIPT)) {
    // A computed specifier: the script is plain JS without type declarations.
    const mod = (await import(pathToFileURL(SHARED_SCRIPT).href)) as { startThrowawayPostgres?: StartFn };
    if (typeof mod.startThrowawayPostgres === "function") {
      const s = await mod.startThrowawayPostgres({ fsync: opts.fsync });
      return { ...s, source: "scripts/pg-server.mjs" };
    }
  }
  return startPrivatePostgres(opts);
}

function asPostgresUser(cmd: string, args: string[]): [string, string[]] {
  return userInfo().uid === 0 ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
}

async function startPrivatePostgres(opts: { fsync: boolean }): Promise<PgServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "sluice-bench-pg-"));
  if (userInfo().uid === 0) {
    const pgUser = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const pgGroup = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dataDir, Number(pgUser.stdout.trim()), Number(pgGroup.stdout.trim()));
  }
  const [initCmd, initArgs] = asPostgresUser(join(PG_BIN, "initdb"), ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
  const init = spawnSync(initCmd, initArgs, { encoding: "utf8" });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);

  const port = await freePort();
  const settings = ["listen_addresses=127.0.0.1", "max_connections=300", `fsync=${opts.fsync ? "on" : "off"}`];
  // Without fsync the rest of the durability machinery is pointless work too.
  if (!opts.fsync) settings.push("synchronous_commit=off", "full_page_writes=off");
  const [cmd, args] = asPostgresUser(join(PG_BIN, "postgres"), ["-D", dataDir, "-p", String(port), "-k", dataDir, ...settings.flatMap((s) => ["-c", s])]);
  const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b: Buffer) => {
    if (stderr.length < 20_000) stderr += b.toString();
  });
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      await c.end();
      break;
    } catch {
      await c.end().catch(() => undefined);
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`postgres did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let stopped = false;
  return {
    url, port, dataDir, source: "bench/pg.ts (private)",
    async stop() {
      if (stopped) return;
      stopped = true;
      const pid = postmasterPid(dataDir);
      if (pid !== null) signal(pid, "SIGINT"); // fast shutdown
      const until = Date.now() + 10_000;
      while (pid !== null && alive(pid) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      if (pid !== null && alive(pid)) signal(pid, "SIGKILL");
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The postmaster's pid, from its lock file (authoritative whoever started it). */
export function postmasterPid(dataDir: string): number | null {
  try {
    const first = readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0] ?? "";
    const pid = Number(first.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
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

export async function recreateDatabase(serverUrl: string, dbName: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(dbName)) throw new Error(`bad database name ${dbName}`);
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await adminQuery(serverUrl, `CREATE DATABASE ${dbName}`);
  return databaseUrl(serverUrl, dbName);
}

export async function dropDatabase(serverUrl: string, dbName: string): Promise<void> {
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
}

export interface ServerSettings {
  version: string;
  fsync: string;
  synchronous_commit: string;
  full_page_writes: string;
  wal_sync_method: string;
  shared_buffers: string;
  max_connections: number;
}

export async function serverSettings(serverUrl: string): Promise<ServerSettings> {
  const rows = await adminQuery<{ name: string; setting: string }>(serverUrl,
    `SELECT name, current_setting(name) AS setting FROM unnest($1::text[]) AS name`,
    [["server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers", "max_connections"]]);
  const get = (n: string): string => rows.find((r) => r.name === n)?.setting ?? "?";
  return {
    version: get("server_version"), fsync: get("fsync"), synchronous_commit: get("synchronous_commit"),
    full_page_writes: get("full_page_writes"), wal_sync_method: get("wal_sync_method"),
    shared_buffers: get("shared_buffers"), max_connections: Number(get("max_connections")),
  };
}
