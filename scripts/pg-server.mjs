// A throwaway Postgres server for tests and benches: initdb into a temp dir, start on a free port,
// stop and delete everything afterwards.
//
// Library:  const pg = await startThrowawayPostgres();  ...  await pg.stop();
// Script:   node scripts/pg-server.mjs -- <cmd> [args...]
//           runs <cmd> with DATABASE_URL and SLUICE_TEST_DATABASE_URL pointing at the server and
//           exits with its exit code. Without a command it prints the url and waits for Ctrl-C.
//
// SLUICE_PG_LOG_DIR=<dir> also appends each server's whole log to <dir>/postgres-<port>.log
// (with every failed statement's text), for finding which statement a server refused.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { findPostgresBinDir, postgresUserExists } from "./ensure-deps.mjs";

const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;
const LOG_LIMIT_CHARS = 64 * 1024;

/** Servers still running; killed synchronously if the process exits without stopping them. */
const live = new Set();
let exitHookInstalled = false;

function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: SIGKILL is all we can do, then best-effort cleanup.
  process.on("exit", () => {
    for (const server of live) server.killSync();
  });
}

function shellQuote(s) {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

function postgresIds() {
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  return { uid, gid };
}

/**
 * Postgres refuses to run as root, so as root every server command goes through
 * `runuser -u postgres --` (or `su` where runuser is missing). Returns [file, args].
 */
function asServerUser(isRoot, file, args) {
  if (!isRoot) return [file, args];
  if (existsSync("/usr/sbin/runuser") || existsSync("/sbin/runuser")) {
    return ["runuser", ["-u", "postgres", "--", file, ...args]];
  }
  return ["su", ["postgres", "-s", "/bin/sh", "-c", [file, ...args].map(shellQuote).join(" ")]];
}

/** A loopback port free a moment ago (another process may still take it first). */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The postmaster's own pid (under runuser, the child we spawned is runuser, not postgres), or undefined when it is not running. */
export function readPostmasterPid(dataDir) {
  try {
    const pid = Number(readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function tryKill(pid, signal) {
  if (pid === undefined) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Starts a private Postgres server in a new temp dir.
 * fsync=false trades crash safety for speed (fine for data that is deleted at stop()).
 * statStatements=true loads pg_stat_statements (track=all) and turns on track_io_timing.
 * icuLocale (e.g. "en-US"): the databases' default collation is that ICU locale, as on most servers
 * outside tests (default: C).
 * Returns { url, port, dataDir, version, stop }; url connects as superuser `postgres`, no password.
 */
/**
 * Waits for a child process and returns its exit code (128 + signal number when signalled).
 * Ctrl-C reaches the child through the terminal; a signal aimed at us alone is passed on, so
 * either way the caller gets to clean up after the child has finished.
 */
export async function waitForChild(child, errorPrefix, errorCode) {
  const forward = (signal) => child.kill(signal);
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  process.on("SIGHUP", forward);
  return new Promise((resolve) => {
    child.on("error", (err) => {
      console.error(`${errorPrefix}: ${err.message}`);
      resolve(errorCode);
    });
    child.on("exit", (c, signal) => resolve(c ?? 128 + (os.constants.signals[signal] ?? 0)));
  });
}

/**
 * What a starter script does with what it started: with no command, holds it until Ctrl-C or
 * SIGTERM; with one, runs it with `env` added and returns its exit code. Either way `stop` runs
 * at the end.
 */
export async function holdOrRun(name, [cmd, ...args], env, stop) {
  if (cmd === undefined) {
    await new Promise((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    await stop();
    return 0;
  }
  const child = spawn(cmd, args, { stdio: "inherit", env: { ...process.env, ...env } });
  const code = await waitForChild(child, `${name}: could not run ${cmd}`, 127);
  await stop();
  return code;
}

/** Runs `main(argv)` when `moduleUrl` is the script node was started with, exiting with its code. */
export function runIfMain(moduleUrl, name, main) {
  if (process.argv[1] === undefined || path.resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return;
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

export async function startThrowawayPostgres({
  fsync = false,
  crashSafe = false,
  statStatements = false,
  icuLocale = undefined,
  log = console.error,
} = {}) {
  const binDir = findPostgresBinDir();
  if (binDir === undefined) {
    throw new Error(
      "no Postgres server found (initdb in /usr/lib/postgresql/*/bin or on PATH); " +
        "run `node scripts/ensure-deps.mjs` or install Debian's postgresql package",
    );
  }
  const isRoot = process.getuid?.() === 0;
  if (isRoot && !postgresUserExists()) {
    throw new Error("running as root and Postgres refuses root, but there is no `postgres` user to run it as");
  }

  const baseDir = mkdtempSync(path.join(os.tmpdir(), "sluice-pg-"));
  const dataDir = path.join(baseDir, "data");
  const cleanupDir = () => rmSync(baseDir, { recursive: true, force: true, maxRetries: 3 });
  try {
    // The postgres user must own the dir it writes data and its socket into.
    if (isRoot) {
      const { uid, gid } = postgresIds();
      chownSync(baseDir, uid, gid);
    }

    const [initFile, initArgs] = asServerUser(isRoot, path.join(binDir, "initdb"), [
      "-D",
      dataDir,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--no-sync",
      // C locale: no dependency on generated OS locales, and deterministic sort order. An ICU
      // locale needs none either (Debian's Postgres is built with ICU).
      "--locale=C",
      ...(icuLocale ? ["--locale-provider=icu", `--icu-locale=${icuLocale}`] : []),
    ]);
    const init = spawnSync(initFile, initArgs, { cwd: baseDir, encoding: "utf8" });
    if (init.error || init.status !== 0) {
      throw new Error(
        `initdb failed (${init.error?.message ?? init.signal ?? `exit code ${init.status}`}):\n` +
          `${init.stdout ?? ""}${init.stderr ?? ""}`,
      );
    }
  } catch (err) {
    cleanupDir();
    throw err;
  }

  // Another process can grab the port between freePort() and postgres binding it; retry then.
  let current;
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      current = await launch({ binDir, isRoot, baseDir, dataDir, port, fsync, crashSafe, statStatements, log, cleanupDir });
      break;
    } catch (err) {
      if (attempt < 3 && err instanceof PortInUseError) continue;
      cleanupDir();
      throw err;
    }
  }
  const { url, port, version } = current;
  return {
    url,
    port,
    dataDir,
    version,
    stop: () => current.stop(),
    /** Stops the server the way `pg_ctl stop -m immediate` does (SIGQUIT: no checkpoint, clients cut off); the data stays. */
    crash: () => current.crash(),
    /** Starts the server again on the same port and data (crash recovery runs first); resolves once it accepts connections. */
    async restart() {
      current = await launch({ binDir, isRoot, baseDir, dataDir, port, fsync, crashSafe, statStatements, log, cleanupDir });
    },
  };
}

class PortInUseError extends Error {}

async function launch({ binDir, isRoot, baseDir, dataDir, port, fsync, crashSafe, statStatements, log, cleanupDir }) {
  const settings = [
    "listen_addresses=127.0.0.1",
    "max_connections=300",
    "shared_buffers=256MB",
    // Without fsync the data survives a crash of the server process (the kernel holds it), not of
    // the machine. synchronous_commit=off would also lose commits acknowledged in the last ~200 ms
    // before a server crash: crashSafe keeps it on, for tests that crash the server.
    ...(fsync ? [] : ["fsync=off", "full_page_writes=off", ...(crashSafe ? [] : ["synchronous_commit=off"])]),
    // For profiling (bench/profile.ts): per-statement counters, nested statements included, and
    // I/O timings. The library must be loaded at start; CREATE EXTENSION in a database shows them.
    ...(statStatements ? ["shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all", "track_io_timing=on"] : []),
  ];
  const [file, args] = asServerUser(isRoot, path.join(binDir, "postgres"), [
    "-D",
    dataDir,
    "-p",
    String(port),
    "-k",
    baseDir,
    ...settings.flatMap((s) => ["-c", s]),
  ]);
  const child = spawn(file, args, { cwd: baseDir, stdio: ["ignore", "pipe", "pipe"] });

  let serverLog = "";
  const logDir = process.env.SLUICE_PG_LOG_DIR;
  if (logDir) mkdirSync(logDir, { recursive: true });
  const appendLog = (chunk) => {
    if (logDir) appendFileSync(path.join(logDir, `postgres-${port}.log`), chunk);
    serverLog += chunk.toString();
    if (serverLog.length > LOG_LIMIT_CHARS) serverLog = serverLog.slice(-LOG_LIMIT_CHARS);
  };
  child.stdout.on("data", appendLog);
  child.stderr.on("data", appendLog);

  let exitInfo;
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      exitInfo = signal ?? `exit code ${code}`;
      resolve();
    });
  });
  let spawnError;
  child.on("error", (err) => {
    spawnError = err;
  });

  let postmasterPid = isRoot ? undefined : child.pid;
  let stopped = false;
  const server = {
    killSync() {
      tryKill(postmasterPid ?? readPostmasterPid(dataDir), "SIGKILL");
      tryKill(child.pid, "SIGKILL");
      live.delete(server);
      try {
        cleanupDir();
      } catch {
        // best effort: a dying backend may still be writing
      }
    },
  };
  live.add(server);
  installExitHook();

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let version;
  for (;;) {
    if (spawnError || exitInfo !== undefined) {
      live.delete(server);
      const why = spawnError ? `could not be started: ${spawnError.message}` : `exited during startup (${exitInfo})`;
      if (/could not bind|already in use/i.test(serverLog)) {
        throw new PortInUseError(`port ${port} was taken`);
      }
      throw new Error(`Postgres ${why}. Server log:\n${serverLog}`);
    }
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on("error", () => {});
    let connected = false;
    try {
      await client.connect();
      connected = true;
      const r = await client.query("SHOW server_version");
      version = String(r.rows[0]?.server_version ?? "unknown");
      await client.end();
      break;
    } catch {
      // refused or "the database system is starting up": not ready yet. A failed connect has
      // already closed its socket; end() is only needed once connected.
      if (connected) await client.end().catch(() => {});
    }
    if (Date.now() > deadline) {
      server.killSync();
      throw new Error(
        `Postgres did not accept connections on 127.0.0.1:${port} within ${READY_TIMEOUT_MS / 1000} s. ` + `Server log:\n${serverLog}`,
      );
    }
    await sleep(50);
  }
  postmasterPid ??= readPostmasterPid(dataDir);

  async function stop() {
    if (stopped) return;
    stopped = true;
    if (exitInfo === undefined) {
      // SIGINT = fast shutdown: disconnect clients, checkpoint, exit. Sent to the postmaster itself:
      // runuser would turn a signal into SIGTERM (smart shutdown, waits for clients) then SIGKILL.
      tryKill(postmasterPid ?? child.pid, "SIGINT");
      const timedOut = await Promise.race([exited.then(() => false), sleep(STOP_TIMEOUT_MS).then(() => true)]);
      if (timedOut) {
        log(`pg-server: Postgres on port ${port} did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`);
        tryKill(postmasterPid, "SIGKILL");
        tryKill(child.pid, "SIGKILL");
        await Promise.race([exited, sleep(2000)]);
      }
    }
    live.delete(server);
    cleanupDir();
  }

  async function crash() {
    if (stopped || exitInfo !== undefined) return;
    tryKill(postmasterPid ?? child.pid, "SIGQUIT");
    const timedOut = await Promise.race([exited.then(() => false), sleep(STOP_TIMEOUT_MS).then(() => true)]);
    if (timedOut) {
      tryKill(postmasterPid, "SIGKILL");
      tryKill(child.pid, "SIGKILL");
      await Promise.race([exited, sleep(2000)]);
    }
    live.delete(server);
  }

  return { url, port, dataDir, version, stop, crash };
}

async function runAsScript(argv) {
  const sep = argv.indexOf("--");
  const command = sep === -1 ? argv : argv.slice(sep + 1);
  const server = await startThrowawayPostgres({ fsync: process.env.SLUICE_PG_FSYNC === "1" });
  console.error(`pg-server: PostgreSQL ${server.version} at ${server.url}`);
  const env = { DATABASE_URL: server.url, SLUICE_TEST_DATABASE_URL: server.url };
  return holdOrRun("pg-server", command, env, () => server.stop());
}

runIfMain(import.meta.url, "pg-server", runAsScript);
