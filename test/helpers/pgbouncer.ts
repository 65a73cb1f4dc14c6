// Debian's PgBouncer in transaction pooling mode (what hosted poolers default to), in front of a
// database on the throwaway test server: a real pooler, started and stopped by the test.
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { findPgBouncer } from "../../scripts/ensure-deps.mjs";
import { sleep } from "../../src/sleep.js";
import { closedPort } from "./processes.js";

export interface PgBouncer {
  /** The same database as the one given, through the pooler. */
  url: string;
  stop(): Promise<void>;
}

/** Starts PgBouncer for the database `databaseUrl` names; resolves once it answers a query. */
export async function startPgBouncer(databaseUrl: string, opts: { poolSize?: number } = {}): Promise<PgBouncer> {
  const bin = findPgBouncer();
  if (!bin) throw new Error("no pgbouncer found: `npm test` installs Debian's pgbouncer (scripts/ensure-deps.mjs)");
  const target = new URL(databaseUrl);
  const port = await closedPort();
  // Readable by the postgres user, which PgBouncer runs as when the tests run as root (it refuses root).
  const dir = mkdtempSync(join(tmpdir(), "sluice-pgbouncer-"));
  chmodSync(dir, 0o755);
  const user = decodeURIComponent(target.username);
  const file = (name: string, text: string): string => {
    writeFileSync(join(dir, name), text, { mode: 0o644 });
    return join(dir, name);
  };
  const users = file("users.txt", `"${user}" ""\n`);
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
      "max_client_conn = 1000",
      // Fewer server connections than Sluice's pool holds clients: transactions must share them.
      `default_pool_size = ${opts.poolSize ?? 4}`,
      "",
    ].join("\n"),
  );
  const root = process.getuid?.() === 0;
  const [cmd, args] = root ? ["runuser", ["-u", "postgres", "--", bin, ini]] : [bin, [ini]];
  const child: ChildProcess = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"] });
  let log = ""; // its log goes to stderr: the last of it explains a failed start
  child.stderr?.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-2000)));
  const url = new URL(databaseUrl);
  url.port = String(port);
  url.hostname = "127.0.0.1";
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(5000)]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (const deadline = Date.now() + 15_000; ; await sleep(100)) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`pgbouncer exited (code ${child.exitCode}) before it answered:\n${log}`);
    }
    const c = new pg.Client({ connectionString: url.toString() });
    try {
      await c.connect();
      await c.query("SELECT 1");
      await c.end();
      return { url: url.toString(), stop };
    } catch (err) {
      await c.end().catch(() => undefined);
      if (Date.now() > deadline) {
        await stop();
        throw err;
      }
    }
  }
}
