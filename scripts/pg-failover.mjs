// A Postgres primary with a synchronous streaming standby, from Debian's server binaries, on two
// loopback ports: what the failover test (test/integration/failover.test.ts) runs Sluice against.
// Crash or stop the primary, promote the standby, and make the old primary a standby again.
//
//   const pair = await startReplicatedPair();
//   pair.url("postgres")   postgres://postgres@127.0.0.1:A,127.0.0.1:B/postgres?target_session_attrs=read-write
//   await pair.crashPrimary(); await pair.promoteStandby(); await pair.rejoin(); ... await pair.stop();
//
// Durability: fsync is off, for speed. A commit is still acknowledged only once the standby has
// written its WAL (synchronous_commit = on with synchronous_standby_names = '*'), so it survives the
// crash of either server's processes — what the test does — but not of the machine, which both
// servers share here anyway. Promotion is `SELECT pg_promote()`, as `pg_ctl promote` does it; no
// Patroni, so nothing decides to fail over: the caller does, as an operator or a script would.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { findPostgresBinDir, postgresUserExists } from "./ensure-deps.mjs";
import { freePort } from "./pg-server.mjs";

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every node still running, killed if this process exits without stopping them. */
const live = new Set();
let exitHook = false;

/** Postgres refuses root: as root, server commands run as the `postgres` user. Returns [file, args]. */
function asServerUser(file, args) {
  if (process.getuid?.() !== 0) return [file, args];
  return ["runuser", ["-u", "postgres", "--", file, ...args]];
}

/** Runs a server binary to completion; throws with its output when it fails. */
function runTool(binDir, tool, args) {
  const [file, argv] = asServerUser(path.join(binDir, tool), args);
  const r = spawnSync(file, argv, { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    throw new Error(`${tool} failed (${r.error?.message ?? `exit code ${r.status}`}):\n${r.stdout ?? ""}${r.stderr ?? ""}`);
  }
}

/** Runs one statement on the node at `port` and returns its rows. */
export async function sqlAt(port, text, params = []) {
  const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, connectionTimeoutMillis: 2000 });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * One server: a data directory and a port, started and signalled here. `running` while its
 * postmaster lives.
 */
class Node {
  constructor(name, binDir, baseDir, port) {
    this.name = name;
    this.binDir = binDir;
    this.dataDir = path.join(baseDir, name);
    this.socketDir = baseDir;
    this.port = port;
    this.child = null;
    this.log = "";
  }

  get running() {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the server on its data and waits until it accepts connections (a standby: once consistent). */
  async start() {
    const settings = [
      "listen_addresses=127.0.0.1",
      "max_connections=200",
      "shared_buffers=64MB",
      "fsync=off",
      "wal_level=replica",
      "max_wal_senders=5",
      "max_replication_slots=5",
      "hot_standby=on",
    ];
    const [file, args] = asServerUser(path.join(this.binDir, "postgres"), [
      "-D",
      this.dataDir,
      "-p",
      String(this.port),
      "-k",
      this.socketDir,
      ...settings.flatMap((s) => ["-c", s]),
    ]);
    this.log = "";
    const child = spawn(file, args, { stdio: ["ignore", "pipe", "pipe"] });
    const append = (d) => (this.log = (this.log + d.toString()).slice(-32_000));
    child.stdout.on("data", append);
    child.stderr.on("data", append);
    this.child = child;
    this.exited = new Promise((r) => child.once("exit", r));
    live.add(this);
    if (!exitHook) {
      exitHook = true;
      process.on("exit", () => {
        for (const n of live) n.killSync();
      });
    }
    for (const deadline = Date.now() + READY_TIMEOUT_MS; ; await sleep(50)) {
      if (!this.running) throw new Error(`Postgres ${this.name} on port ${this.port} exited while starting:\n${this.log}`);
      try {
        await sqlAt(this.port, "SELECT 1");
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`Postgres ${this.name} did not accept connections: ${err.message}\n${this.log}`, { cause: err });
      }
    }
  }

  postmasterPid() {
    try {
      return Number(readFileSync(path.join(this.dataDir, "postmaster.pid"), "utf8").split("\n")[0]) || undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * SIGQUIT is `pg_ctl stop -m immediate` (no checkpoint, clients cut off: a crash, as far as the
   * data is concerned); SIGINT is `-m fast` (clients cut off, a checkpoint, the standby sent all
   * WAL). Sent to the postmaster itself: runuser would turn a signal into a smart shutdown.
   */
  async signal(sig) {
    if (!this.running) return;
    const pid = this.postmasterPid() ?? this.child.pid;
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
    const late = await Promise.race([this.exited.then(() => false), sleep(STOP_TIMEOUT_MS).then(() => true)]);
    if (late) this.killSync();
    await this.exited;
    live.delete(this);
  }

  killSync() {
    for (const pid of [this.postmasterPid(), this.child?.pid]) {
      try {
        if (pid) process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    live.delete(this);
  }
}

/**
 * Starts a primary and a synchronous standby of it (pg_basebackup -R with a replication slot).
 * Resolves once the standby streams synchronously. Each node has `name`, `port` and `running`.
 */
export async function startReplicatedPair() {
  const binDir = findPostgresBinDir();
  if (!binDir) throw new Error("no Postgres server binaries found: run `node scripts/ensure-deps.mjs` (Debian's postgresql)");
  const isRoot = process.getuid?.() === 0;
  if (isRoot && !postgresUserExists()) throw new Error("running as root, and there is no `postgres` user to run Postgres as");
  const baseDir = mkdtempSync(path.join(os.tmpdir(), "sluice-failover-"));
  if (isRoot) {
    const id = (flag) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    chownSync(baseDir, id("-u"), id("-g"));
  }
  const nodes = [new Node("a", binDir, baseDir, await freePort()), new Node("b", binDir, baseDir, await freePort())];
  let primary = 0;
  let rebuilt = 0;

  /** Makes `node` a fresh standby of the primary and waits until the primary commits synchronously to it. */
  const follow = async (node) => {
    const from = nodes[primary];
    rmSync(node.dataDir, { recursive: true, force: true });
    const slot = `standby_${node.name}_${++rebuilt}`;
    // -c fast: no waiting for a spread checkpoint; -C -S: a slot keeps the WAL the standby still needs.
    runTool(binDir, "pg_basebackup", [
      ...["-h", "127.0.0.1", "-p", String(from.port), "-U", "postgres", "-D", node.dataDir],
      ...["-R", "-X", "stream", "-C", "-S", slot, "-c", "fast", "--no-sync"],
    ]);
    await node.start();
    // Set with ALTER SYSTEM after the base backup, so the standby does not inherit it: a standby
    // promoted with '*' and no standby of its own would wait on every commit.
    await sqlAt(from.port, "ALTER SYSTEM SET synchronous_standby_names = '*'");
    await sqlAt(from.port, "SELECT pg_reload_conf()");
    for (const deadline = Date.now() + READY_TIMEOUT_MS; ; await sleep(50)) {
      const rows = await sqlAt(from.port, "SELECT sync_state FROM pg_stat_replication");
      if (rows.some((r) => r.sync_state === "sync")) return;
      if (Date.now() > deadline) throw new Error(`standby ${node.name} did not become synchronous:\n${node.log}`);
    }
  };

  try {
    runTool(binDir, "initdb", ["-D", nodes[0].dataDir, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C"]);
    await nodes[0].start();
    await follow(nodes[1]);
  } catch (err) {
    for (const n of nodes) n.killSync();
    rmSync(baseDir, { recursive: true, force: true });
    throw err;
  }

  return {
    nodes,
    get primary() {
      return nodes[primary];
    },
    get standby() {
      return nodes[1 - primary];
    },
    /** Both hosts, in the nodes' order (not the roles'): a URL that outlives failovers. */
    url(database = "postgres", attrs = "read-write") {
      return `postgres://postgres@${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}/${database}?target_session_attrs=${attrs}`;
    },
    /** The primary's processes end as in `pg_ctl stop -m immediate`. */
    crashPrimary: () => nodes[primary].signal("SIGQUIT"),
    /** `pg_ctl stop -m fast`: the planned way, after which the standby has every commit. */
    stopPrimary: () => nodes[primary].signal("SIGINT"),
    /** Promotes the standby and resolves once it takes writes; it is the primary from then on. */
    async promoteStandby() {
      const standby = nodes[1 - primary];
      const [row] = await sqlAt(standby.port, "SELECT pg_promote(true, 60) AS promoted");
      if (row?.promoted !== true) throw new Error(`standby ${standby.name} was not promoted:\n${standby.log}`);
      primary = 1 - primary;
    },
    /** The old primary, stopped, becomes a synchronous standby of the new one (a fresh base backup: simpler than pg_rewind). */
    async rejoin() {
      const old = nodes[1 - primary];
      if (old.running) throw new Error(`node ${old.name} still runs: stop it first`);
      await follow(old);
    },
    async stop() {
      for (const n of nodes) await n.signal("SIGINT");
      rmSync(baseDir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
