// Makes a fresh machine ready for `npm test` / `npm run bench`: npm dependencies, a Postgres
// server binary, and the Debian tools some tests run (promtool, chromium, pgbouncer). Plain Node with no imports outside the
// standard library, because it runs before node_modules may exist. pg-server.mjs reuses
// findPostgresBinDir() from here.
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function isExecutable(file) {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * The directory holding `initdb` and `postgres`: the highest version under
 * /usr/lib/postgresql/<v>/bin (Debian's layout), else wherever `initdb` is on PATH.
 * Returns undefined when there is none.
 */
export function findPostgresBinDir() {
  const debianRoot = "/usr/lib/postgresql";
  let versions = [];
  try {
    versions = readdirSync(debianRoot).filter((v) => /^\d+(\.\d+)?$/.test(v));
  } catch {
    // not a Debian-style install
  }
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = path.join(debianRoot, v, "bin");
    if (isExecutable(path.join(bin, "initdb")) && isExecutable(path.join(bin, "postgres"))) return bin;
  }
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const initdb = path.join(dir, "initdb");
    if (!isExecutable(initdb)) continue;
    // PATH entries are often symlinks (/usr/local/bin/initdb -> .../15/bin/initdb); postgres sits
    // beside the real file.
    const bin = path.dirname(realpathSync(initdb));
    if (isExecutable(path.join(bin, "postgres"))) return bin;
  }
  return undefined;
}

/** The `promtool` on PATH (Debian's prometheus package puts it in /usr/bin), or undefined. */
export function findPromtool() {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && isExecutable(path.join(dir, "promtool"))) return path.join(dir, "promtool");
  }
  return undefined;
}

/** True when a `postgres` OS user exists (Postgres refuses to run as root, so root needs one). */
export function postgresUserExists() {
  return spawnSync("id", ["-u", "postgres"], { stdio: "ignore" }).status === 0;
}

class SetupError extends Error {}

let aptUpdated = false;

/** apt-get install, after one apt-get update per run (Postgres and promtool may both be missing). */
function aptInstall(args) {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  if (!aptUpdated) {
    console.error("ensure-deps: running apt-get update");
    run("apt-get", ["update"], env);
    aptUpdated = true;
  }
  console.error(`ensure-deps: running apt-get install -y ${args.join(" ")}`);
  run("apt-get", ["install", "-y", ...args], env);
}

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { cwd: repoRoot, stdio: "inherit", env });
  if (r.error) throw new SetupError(`could not run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new SetupError(`\`${[cmd, ...args].join(" ")}\` failed (${r.signal ?? `exit code ${r.status}`})`);
  }
}

function mtimeMs(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function isSymlink(file) {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

function ensureNpmDependencies() {
  const lock = path.join(repoRoot, "package-lock.json");
  // npm writes node_modules/.package-lock.json at the end of every install, so a lockfile newer than
  // it means the tree is stale.
  const installed = mtimeMs(path.join(repoRoot, "node_modules", ".package-lock.json"));
  const locked = mtimeMs(lock);
  const stale = !existsSync(path.join(repoRoot, "node_modules")) || installed === undefined || (locked !== undefined && locked > installed);
  if (!stale) return;
  if (isSymlink(path.join(repoRoot, "node_modules"))) {
    // A worktree borrowing another checkout's node_modules: npm ci would empty the other checkout's.
    console.error("ensure-deps: node_modules is a symlink; not reinstalling through it (run npm ci where it points)");
    return;
  }
  console.error("ensure-deps: installing npm dependencies… (npm ci)");
  run("npm", ["ci"]);
}

function ensurePostgres() {
  const isRoot = process.getuid?.() === 0;
  if (findPostgresBinDir() === undefined) {
    if (!isRoot) {
      throw new SetupError(
        "no Postgres server found (looked for initdb in /usr/lib/postgresql/*/bin and on PATH).\n" +
          "The integration tests start a throwaway Postgres server. Install Debian's postgresql\n" +
          "package first:  sudo apt-get install -y postgresql",
      );
    }
    if (!isExecutable("/usr/bin/apt-get")) {
      throw new SetupError(
        "no Postgres server found (looked for initdb in /usr/lib/postgresql/*/bin and on PATH) and\n" +
          "apt-get is not available to install one. Install a Postgres server (initdb + postgres).",
      );
    }
    console.error("ensure-deps: no Postgres server found; installing Debian's postgresql package");
    aptInstall(["postgresql"]);
    if (findPostgresBinDir() === undefined) {
      throw new SetupError("installed postgresql, but still cannot find initdb under /usr/lib/postgresql/*/bin");
    }
  }
  if (isRoot && !postgresUserExists()) {
    throw new SetupError(
      "running as root, and Postgres refuses to run as root, but there is no `postgres` user to run it as.\n" +
        "Debian's postgresql package creates one; otherwise: useradd --system --home-dir /var/lib/postgresql postgres",
    );
  }
}

/**
 * A tool some tests run, from its Debian package when it is missing: installed as root with
 * apt-get, else a message that says how.
 */
function ensureDebianTool({ tool, find, pkg, aptArgs = [pkg], usedBy, override = "" }) {
  if (find() !== undefined) return;
  const how = `apt-get install -y ${aptArgs.join(" ")}`;
  if (process.getuid?.() !== 0 || !isExecutable("/usr/bin/apt-get")) {
    throw new SetupError(`no ${tool} found. ${usedBy}; install Debian's ${pkg} package first:\n  sudo ${how}${override}`);
  }
  console.error(`ensure-deps: no ${tool} found; installing Debian's ${pkg} package`);
  aptInstall(aptArgs);
  if (find() === undefined) throw new SetupError(`installed ${pkg}, but still cannot find ${tool}`);
}

/** Debian's Chromium, where test/helpers/browser.ts looks for it (SLUICE_TEST_CHROMIUM overrides). */
export function findChromium() {
  const candidates = [process.env.SLUICE_TEST_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"];
  return candidates.find((c) => c && isExecutable(c));
}

/** Debian's PgBouncer (test/helpers/pgbouncer.ts), or undefined. */
export function findPgBouncer() {
  return ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find(isExecutable);
}

const TOOLS = [
  // Debian ships promtool only inside the prometheus package (19 MB, 25-35 s to install); without
  // recommends no node exporter comes along, and in a container apt's policy-rc.d keeps its
  // server from starting.
  {
    tool: "promtool on PATH",
    find: findPromtool,
    pkg: "prometheus",
    aptArgs: ["--no-install-recommends", "prometheus"],
    usedBy: "The metrics tests check /metrics with it",
  },
  // playwright-core never downloads a browser: the dashboard tests are given Debian's (about
  // 90 MB with its libraries, 40-60 s to install).
  {
    tool: "chromium (looked for /usr/bin/chromium)",
    find: findChromium,
    pkg: "chromium",
    usedBy: "The dashboard tests drive it",
    override: "\nor point SLUICE_TEST_CHROMIUM at a Chromium or Chrome executable.",
  },
  // The pooler tests run Sluice through PgBouncer in transaction mode (about 1 MB).
  { tool: "pgbouncer", find: findPgBouncer, pkg: "pgbouncer", usedBy: "The pooler tests run Sluice through it" },
];

function main() {
  try {
    ensureNpmDependencies();
    ensurePostgres();
    for (const t of TOOLS) ensureDebianTool(t);
  } catch (err) {
    if (!(err instanceof SetupError)) throw err;
    console.error(`ensure-deps: ${err.message}`);
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main();
}
