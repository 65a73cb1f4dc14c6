// `npm test`: starts a throwaway Postgres, runs test/unit and test/integration with node --test,
// stops the server, exits with the test run's exit code.
//
//   npm test                                   every test file
//   npm test -- test/unit/receiver.test.ts     only files matching the given paths/substrings
//   npm test -- receiver --test-name-pattern=x  arguments starting with "-" go to node --test
//
// Tests get SLUICE_TEST_DATABASE_URL (and create their own databases on that server), never
// DATABASE_URL, so code that defaults to PGlite keeps doing so; and SLUICE_TEST_POOLER_PORT, a
// PgBouncer in transaction mode in front of that server.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startThrowawayPostgres, waitForChild } from "./pg-server.mjs";
import { startPgBouncer } from "./pgbouncer.mjs";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TEST_DIRS = ["test/unit", "test/integration"];

const toPosix = (p) => p.split(path.sep).join("/");

/** Every *.test.ts under dir, as sorted repo-relative posix paths. */
function findTestFiles(dir) {
  const out = [];
  const walk = (rel) => {
    const abs = path.join(repoRoot, rel);
    if (!existsSync(abs)) return;
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && entry.name.endsWith(".test.ts")) out.push(toPosix(child));
    }
  };
  walk(dir);
  return out.sort();
}

function selectFiles(all, filters) {
  if (filters.length === 0) return all;
  const selected = new Set();
  for (const filter of filters) {
    const rel = toPosix(path.relative(repoRoot, path.resolve(process.cwd(), filter)));
    const matches = all.filter((f) => f === rel || f.startsWith(`${rel}/`) || f.includes(filter));
    if (matches.length === 0 && existsSync(path.join(repoRoot, rel)) && statSync(path.join(repoRoot, rel)).isFile()) {
      matches.push(rel); // a test file outside the default dirs, named explicitly
    }
    if (matches.length === 0) {
      console.error(`run-tests: no test file matches "${filter}"`);
      process.exit(1);
    }
    for (const m of matches) selected.add(m);
  }
  return all.filter((f) => selected.has(f)).concat([...selected].filter((f) => !all.includes(f)));
}

async function main() {
  const args = process.argv.slice(2);
  const nodeTestFlags = args.filter((a) => a.startsWith("-"));
  const filters = args.filter((a) => !a.startsWith("-"));

  const all = TEST_DIRS.flatMap(findTestFiles);
  const files = selectFiles(all, filters);
  if (files.length === 0) {
    console.error(`run-tests: no *.test.ts files under ${TEST_DIRS.join(" or ")}`);
    return 1;
  }

  // The dashboard tests load the built page (dist/ui) from a real Sluice: build it first (~1 s).
  const built = spawnSync(process.execPath, [path.join(repoRoot, "scripts", "build-ui.mjs")], { cwd: repoRoot, stdio: "inherit" });
  if (built.status !== 0) {
    console.error("run-tests: building the dashboard (scripts/build-ui.mjs) failed");
    return 1;
  }

  const server = await startThrowawayPostgres({ fsync: false });
  console.error(
    `run-tests: started throwaway PostgreSQL ${server.version} on 127.0.0.1:${server.port}; ` + `running ${files.length} test file(s)`,
  );

  // One transaction pooler for the run, in front of every test database: the "pooled" store shape.
  const bouncer = await startPgBouncer(server.url).catch(async (err) => {
    await server.stop();
    throw err;
  });
  const env = { ...process.env, SLUICE_TEST_DATABASE_URL: server.url, SLUICE_TEST_POOLER_PORT: String(bouncer.port) };
  delete env.DATABASE_URL; // a developer's own database is never a test target
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--test", "--test-concurrency=2", "--test-timeout=180000", ...nodeTestFlags, ...files],
    { cwd: repoRoot, stdio: "inherit", env },
  );

  const code = await waitForChild(child, "run-tests: could not start node --test", 1);
  await bouncer.stop();
  await server.stop();
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`run-tests: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
