// A local Citus cluster for tests and benches: builds Citus from the vendored source when it is
// not installed, then starts a coordinator and workers on loopback ports, each a throwaway server
// from pg-server.mjs (cells are made in it by src/db/cells.ts, as `sluice cells create` makes
// them); and `npm run test:citus`, which runs the suites with every store a cell.
//
// Library:  ensureCitus();  const c = await startCitusCluster({ workers: 2 });  ...  await c.stop();
// Script:   node scripts/citus.mjs build             builds and installs Citus when absent
//           node scripts/citus.mjs test [files…]     npm run test:citus (below)
//           node scripts/citus.mjs start [--workers N] [-- <cmd> [args...]]
//           builds if needed and starts a cluster; prints its URLs and waits for Ctrl-C, or runs
//           <cmd> with SLUICE_CITUS_URL set to the coordinator and exits with its exit code.
//
// Citus is built for PostgreSQL 15 only: Debian bookworm's server, the one the tests run.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { sqlAt } from "./pg-failover.mjs";
import { holdOrRun, readPostmasterPid, runIfMain, startThrowawayPostgres, waitForChild } from "./pg-server.mjs";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

export const CITUS_VERSION = "13.2.2";
const PG_MAJOR = "15";
const PG_CONFIG = `/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config`;
export const CITUS_LIBRARY = `/usr/lib/postgresql/${PG_MAJOR}/lib/citus.so`;
const CITUS_CONTROL = `/usr/share/postgresql/${PG_MAJOR}/extension/citus.control`;

/** What Citus 13.2.2's configure and make need from Debian (its vendor README's list, and a compiler). */
const BUILD_PACKAGES = [
  `postgresql-server-dev-${PG_MAJOR}`,
  "libcurl4-openssl-dev",
  "liblz4-dev",
  "libzstd-dev",
  "libkrb5-dev",
  "build-essential",
];

/** True when the Citus library and its extension files are installed for PostgreSQL 15. */
export function citusInstalled() {
  return existsSync(CITUS_LIBRARY) && existsSync(CITUS_CONTROL);
}

/**
 * The vendored release: ../shared/vendor beside the checkout. Looked for up the tree, so that a
 * worktree nested deeper finds the same folder.
 */
function findTarball() {
  const name = `citus-${CITUS_VERSION}.tar.gz`;
  for (let dir = repoRoot; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "shared", "vendor", name);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * Runs a build step with its output kept (make's is thousands of lines); on failure, throws with
 * the last of it. Returns how long it took, in seconds.
 */
function step(log, what, cmd, args, opts = {}) {
  log(`citus: ${what}`);
  const started = Date.now();
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 256 * 1024 * 1024, ...opts });
  if (r.error || r.status !== 0) {
    const output = `${r.stdout ?? ""}${r.stderr ?? ""}`.slice(-6000);
    throw new Error(`${what} failed (${r.error?.message ?? r.signal ?? `exit code ${r.status}`}):\n${output}`);
  }
  return (Date.now() - started) / 1000;
}

function missingPackages() {
  return BUILD_PACKAGES.filter((pkg) => {
    const r = spawnSync("dpkg-query", ["-W", "-f=${Status}", pkg], { encoding: "utf8" });
    return r.status !== 0 || !r.stdout.includes("install ok installed");
  });
}

/**
 * PostgreSQL 15.20 exports have_createdb_privilege() from commands/dbcommands.h, and Citus
 * 13.2.2's compat header defines a static inline one of the same name for 15, so the build stops
 * at "static declaration follows non-static declaration". Renaming the compat copy with a macro
 * keeps its callers (which then use it) and lets both declarations coexist. Harmless on earlier
 * 15.x minors, which do not export it.
 */
function patchCompatHeader(sourceDir, log) {
  const file = path.join(sourceDir, "src", "include", "pg_version_compat.h");
  const text = readFileSync(file, "utf8");
  const definition = "static inline bool\nhave_createdb_privilege(void)";
  const rename = "#define have_createdb_privilege citus_compat_have_createdb_privilege\n";
  if (text.includes(rename)) return;
  if (!text.includes(definition)) {
    log("citus: pg_version_compat.h has no static have_createdb_privilege(); building unpatched");
    return;
  }
  log("citus: patching src/include/pg_version_compat.h (have_createdb_privilege clash with PostgreSQL 15.20)");
  writeFileSync(file, text.replace(definition, rename + definition));
}

/**
 * Builds Citus from ../shared/vendor/citus-13.2.2.tar.gz and installs it into PostgreSQL 15,
 * unless it is installed already (then it returns false at once). Needs root for apt-get and
 * `make install`. Installing postgresql-server-dev-15 upgrades the server to the newest 15.x.
 * Progress goes to `log` (stderr), one line a step.
 */
export function ensureCitus({ log = console.error } = {}) {
  if (citusInstalled()) return false;
  const started = Date.now();
  const tarball = findTarball();
  if (tarball === undefined) {
    throw new Error(`Citus is not installed and citus-${CITUS_VERSION}.tar.gz is not in shared/vendor/ beside the checkout`);
  }
  const missing = missingPackages();
  if (process.getuid?.() !== 0) {
    const apt = missing.length > 0 ? `sudo apt-get install -y ${missing.join(" ")}, then ` : "";
    throw new Error(`Citus is not installed (${CITUS_LIBRARY}); building it needs root: ${apt}sudo node scripts/citus.mjs build`);
  }
  let aptSeconds = 0;
  if (missing.length > 0) {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    aptSeconds += step(log, "apt-get update", "apt-get", ["update"], { env });
    const what = `installing build dependencies: apt-get install -y ${missing.join(" ")}`;
    aptSeconds += step(log, what, "apt-get", ["install", "-y", ...missing], { env });
  }
  let buildSeconds = 0;
  const buildDir = mkdtempSync(path.join(os.tmpdir(), "sluice-citus-build-"));
  try {
    step(log, `unpacking ${tarball}`, "tar", ["-xzf", tarball, "-C", buildDir]);
    const sourceDir = path.join(buildDir, `citus-${CITUS_VERSION}`);
    patchCompatHeader(sourceDir, log);
    const env = { ...process.env, PG_CONFIG };
    buildSeconds += step(log, `configure (PG_CONFIG=${PG_CONFIG})`, "./configure", [], { cwd: sourceDir, env });
    const jobs = Math.max(2, os.availableParallelism?.() ?? 2);
    buildSeconds += step(log, `make -j${jobs}`, "make", [`-j${jobs}`], { cwd: sourceDir, env });
    buildSeconds += step(log, "make install", "make", ["install"], { cwd: sourceDir, env });
  } finally {
    rmSync(buildDir, { recursive: true, force: true });
  }
  if (!citusInstalled()) throw new Error(`make install finished, but ${CITUS_LIBRARY} or ${CITUS_CONTROL} is missing`);
  const total = Math.round((Date.now() - started) / 1000);
  log(
    `citus: installed Citus ${CITUS_VERSION} in ${total} s (apt-get ${Math.round(aptSeconds)} s, configure and make ${Math.round(buildSeconds)} s)`,
  );
  return true;
}

/**
 * One node: a throwaway server from pg-server.mjs with Citus preloaded. pg-server.mjs takes no
 * settings of its own, and shared_preload_libraries is read only at start: ALTER SYSTEM writes it
 * to postgresql.auto.conf, and crash() + restart() is how that server starts again on the same
 * data and port (recovery of a just-made cluster takes a moment).
 */
async function startNode(log, fsync) {
  const server = await startThrowawayPostgres({ log, fsync });
  try {
    if (!server.version.startsWith(`${PG_MAJOR}.`)) {
      throw new Error(`Citus here is built for PostgreSQL ${PG_MAJOR}, but the server found is ${server.version}`);
    }
    await sqlAt(server.port, "ALTER SYSTEM SET shared_preload_libraries = 'citus'");
    // Logical decoding is how Citus moves shards (and so cells) between nodes without blocking writes.
    await sqlAt(server.port, "ALTER SYSTEM SET wal_level = 'logical'");
    await server.crash();
    await server.restart();
    await sqlAt(server.port, "CREATE EXTENSION citus");
    return server;
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/**
 * Starts a Citus cluster on loopback: a coordinator and `workers` workers, each a server on a free
 * port with Citus preloaded and created, the workers added to the coordinator's metadata. Every
 * URL connects as superuser `postgres` to database `postgres`. stop() stops every node and
 * deletes its data. `fsync`: durable nodes (pg-server.mjs's setting; default off, as there).
 * postmasterPids() reads each node's pid (coordinator first), for benches that count CPU per node.
 * Needs Citus installed (ensureCitus).
 */
export async function startCitusCluster({ workers = 2, fsync = false, log = console.error } = {}) {
  if (!citusInstalled()) {
    throw new Error(`Citus is not installed (${CITUS_LIBRARY}): run \`node scripts/citus.mjs build\` (as root)`);
  }
  if (!Number.isInteger(workers) || workers < 0) throw new Error(`workers must be a whole number ≥ 0, not ${workers}`);
  const started = Date.now();
  const settled = await Promise.allSettled(Array.from({ length: workers + 1 }, () => startNode(log, fsync)));
  const nodes = settled.filter((s) => s.status === "fulfilled").map((s) => s.value);
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const [coordinator, ...workerNodes] = nodes;
  try {
    await sqlAt(coordinator.port, "SELECT citus_set_coordinator_host('127.0.0.1', $1)", [coordinator.port]);
    for (const w of workerNodes) await sqlAt(coordinator.port, "SELECT citus_add_node('127.0.0.1', $1)", [w.port]);
    // The release ("Citus 13.2.2 on x86_64…"); the extension's own version is its SQL schema's (13.2-1).
    const [row] = await sqlAt(coordinator.port, "SELECT substring(citus_version() FROM '^Citus (\\S+)') AS version");
    return {
      coordinatorUrl: coordinator.url,
      workerUrls: workerNodes.map((w) => w.url),
      coordinatorPort: coordinator.port,
      workerPorts: workerNodes.map((w) => w.port),
      postgresVersion: coordinator.version,
      citusVersion: String(row?.version ?? "unknown"),
      startMs: Date.now() - started,
      postmasterPids: () => nodes.map((n) => readPostmasterPid(n.dataDir) ?? null),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function parseStartArgs(argv) {
  const sep = argv.indexOf("--");
  const own = sep === -1 ? argv : argv.slice(0, sep);
  const command = sep === -1 ? [] : argv.slice(sep + 1);
  let workers = 2;
  for (let i = 0; i < own.length; i++) {
    if (own[i] === "--workers") workers = Number(own[++i]);
    else throw new Error(`unknown option ${own[i]} (usage: node scripts/citus.mjs start [--workers N] [-- <cmd> [args...]])`);
  }
  return { workers, command };
}

/**
 * Suites pinned to the server store whose statements should meet Citus too: run with every
 * "server" store a cell (SLUICE_TEST_SERVER_AS_CELL, test/helpers/db.ts).
 */
const SERVER_SUITES_ON_CELLS = [
  "events-search",
  "health",
  "backlog-alerts",
  "workers",
  "fuzz",
  "id-bound",
  "request-edges",
  "cli-client",
].map((n) => `test/integration/${n}.test.ts`);

/**
 * The files `test` runs, in two groups: every test/citus suite and each integration suite that
 * runs on ENGINE_BACKENDS or FEATURE_BACKENDS (a cell when SLUICE_CITUS_URL is set) or reads
 * CITUS_URL itself (the cells and stats suites); then SERVER_SUITES_ON_CELLS. With filters, only
 * the files matching one.
 */
function citusTestFiles(filters) {
  const own = [];
  for (const dir of ["test/citus", "test/integration"]) {
    for (const name of readdirSync(path.join(repoRoot, dir)).sort()) {
      if (!name.endsWith(".test.ts")) continue;
      const rel = `${dir}/${name}`;
      const text = dir === "test/integration" ? readFileSync(path.join(repoRoot, rel), "utf8") : "";
      if (dir === "test/integration" && !/ENGINE_BACKENDS|FEATURE_BACKENDS|CITUS_URL/.test(text)) continue;
      own.push(rel);
    }
  }
  const wanted = (rel) => filters.length === 0 || filters.some((f) => rel.includes(f));
  return { own: own.filter(wanted), serverAsCell: SERVER_SUITES_ON_CELLS.filter(wanted) };
}

/**
 * `npm run test:citus`: builds Citus if needed, starts a cluster (a coordinator and two workers),
 * and runs the cell suites and the engine, flow-control, fault and API suites with every store a
 * new cell (SLUICE_CITUS_URL), then SERVER_SUITES_ON_CELLS. The coordinator is also the plain
 * server the few tests pinned to one store use (SLUICE_TEST_DATABASE_URL): a database made on it
 * has no Citus in it.
 */
async function runCitusTests(args) {
  const flags = args.filter((a) => a.startsWith("-"));
  const { own, serverAsCell } = citusTestFiles(args.filter((a) => !a.startsWith("-")));
  if (own.length + serverAsCell.length === 0) {
    console.error(`citus: no test file matches ${args.join(" ")}`);
    return 1;
  }
  ensureCitus();
  const cluster = await startCitusCluster({ workers: 2 });
  console.error(
    `citus: Citus ${cluster.citusVersion} on PostgreSQL ${cluster.postgresVersion} (coordinator and ${cluster.workerUrls.length} workers) ` +
      `started in ${(cluster.startMs / 1000).toFixed(1)} s; running ${own.length + serverAsCell.length} test file(s)`,
  );
  const env = { ...process.env, SLUICE_CITUS_URL: cluster.coordinatorUrl, SLUICE_TEST_DATABASE_URL: cluster.coordinatorUrl };
  delete env.DATABASE_URL;
  delete env.SLUICE_TEST_POOLER_PORT;
  const run = async (files, extra) => {
    if (files.length === 0) return 0;
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "--test", "--test-concurrency=2", "--test-timeout=600000", ...flags, ...files],
      { cwd: repoRoot, stdio: "inherit", env: { ...env, ...extra } },
    );
    return waitForChild(child, "citus: could not start node --test", 1);
  };
  try {
    const first = await run(own, {});
    const second = await run(serverAsCell, { SLUICE_TEST_SERVER_AS_CELL: "1" });
    return first || second;
  } finally {
    await cluster.stop();
  }
}

async function runAsScript([sub, ...rest]) {
  if (sub === "build") {
    if (!ensureCitus()) console.error(`citus: Citus is installed (${CITUS_LIBRARY})`);
    return 0;
  }
  if (sub === "test") return runCitusTests(rest);
  if (sub !== "start") {
    console.error("usage: node scripts/citus.mjs build | test [files...] [--node-test-flags] | start [--workers N] [-- <cmd> [args...]]");
    return 2;
  }
  const { workers, command } = parseStartArgs(rest);
  ensureCitus();
  const cluster = await startCitusCluster({ workers });
  console.error(
    `citus: Citus ${cluster.citusVersion} on PostgreSQL ${cluster.postgresVersion}, started in ${(cluster.startMs / 1000).toFixed(1)} s`,
  );
  console.error(`citus: coordinator ${cluster.coordinatorUrl}`);
  for (const [i, url] of cluster.workerUrls.entries()) console.error(`citus: worker ${i + 1}    ${url}`);

  return holdOrRun("citus", command, { SLUICE_CITUS_URL: cluster.coordinatorUrl }, () => cluster.stop());
}

runIfMain(import.meta.url, "citus", runAsScript);
