// Debian's PgBouncer in transaction pooling mode (what hosted poolers default to), in front of a
// Postgres server: a real pooler, started and stopped by the tests and benches that need one.
// Plain JS beside pg-server.mjs so that `npm test` can start one for the whole run.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findPgBouncer } from "./ensure-deps.mjs";
import { freePort } from "./pg-server.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The URL `databaseUrl` names, through the pooler at `port`: same user and database. */
export function throughPooler(databaseUrl, port) {
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return url.toString();
}

/**
 * Starts PgBouncer in front of the server `databaseUrl` names; every database on that server is
 * reachable through it (a `*` entry). Resolves once it answers a query for that database.
 */
export async function startPgBouncer(databaseUrl, opts = {}) {
  const bin = findPgBouncer();
  if (!bin) throw new Error("no pgbouncer found: `npm test` installs Debian's pgbouncer (scripts/ensure-deps.mjs)");
  const target = new URL(databaseUrl);
  const port = await freePort();
  // Readable by the postgres user, which PgBouncer runs as when we run as root (it refuses root).
  const dir = mkdtempSync(join(tmpdir(), "sluice-pgbouncer-"));
  chmodSync(dir, 0o755);
  const file = (name, text) => {
    writeFileSync(join(dir, name), text, { mode: 0o644 });
    return join(dir, name);
  };
  // Trusted users: the URL's, and `opts.users` (roles per cell, say), each without a password.
  const names = [decodeURIComponent(target.username), ...(opts.users ?? [])];
  const users = file("users.txt", names.map((n) => `"${n}" ""\n`).join(""));
  const ini = file(
    "pgbouncer.ini",
    [
      "[databases]",
      `* = host=${target.hostname} port=${target.port}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${users}`,
      "pool_mode = transaction",
      `max_client_conn = ${opts.maxClients ?? 1000}`,
      // Fewer server connections than Sluice's pool holds clients: transactions must share them.
      `default_pool_size = ${opts.poolSize ?? 4}`,
      "",
    ].join("\n"),
  );
  const root = process.getuid?.() === 0;
  const [cmd, args] = root ? ["runuser", ["-u", "postgres", "--", bin, ini]] : [bin, [ini]];
  const child = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = ""; // its log goes to stderr: the last of it explains a failed start
  child.stderr?.on("data", (d) => (log = (log + d.toString()).slice(-2000)));
  const url = throughPooler(databaseUrl, port);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(5000)]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const { default: pg } = await import("pg");
  for (const deadline = Date.now() + 15_000; ; await sleep(100)) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`pgbouncer exited (code ${child.exitCode}) before it answered:\n${log}`);
    }
    const c = new pg.Client({ connectionString: url });
    try {
      await c.connect();
      await c.query("SELECT 1");
      await c.end();
      return { url, port, stop };
    } catch (err) {
      await c.end().catch(() => undefined);
      if (Date.now() > deadline) {
        await stop();
        throw err;
      }
    }
  }
}
