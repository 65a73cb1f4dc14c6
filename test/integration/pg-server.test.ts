// The throwaway server and per-test databases that every integration test relies on.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createTestDatabase, onServer } from "../helpers/db.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const withClient = onServer;

describe("createTestDatabase", () => {
  it("creates a fresh, usable database and drop() removes it", async () => {
    const db = await createTestDatabase();
    const name = new URL(db.url).pathname.slice(1);
    assert.match(name, /^sluice_test_[0-9a-f]{12}$/);
    try {
      await withClient(db.url, async (c) => {
        assert.deepEqual((await c.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
        assert.equal((await c.query<{ db: string }>("SELECT current_database() AS db")).rows[0]?.db, name);
        await c.query("CREATE TABLE t (id int PRIMARY KEY)");
        await c.query("INSERT INTO t VALUES (1), (2)");
        assert.equal((await c.query<{ n: number }>("SELECT count(*)::int AS n FROM t")).rows[0]?.n, 2);
      });
    } finally {
      await db.drop();
    }
    await assert.rejects(
      withClient(db.url, async () => {}),
      { code: "3D000" },
    ); // invalid_catalog_name
    await db.drop(); // a second drop is harmless
  });

  it("gives each caller its own database", async () => {
    const [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    try {
      assert.notEqual(a.url, b.url);
      await withClient(a.url, (c) => c.query("CREATE TABLE only_in_a (x int)"));
      const found = await withClient(b.url, (c) => c.query<{ t: string | null }>("SELECT to_regclass('only_in_a') AS t"));
      assert.equal(found.rows[0]?.t, null);
    } finally {
      await Promise.all([a.drop(), b.drop()]);
    }
  });

  it("drop() ends connections that are still open", async () => {
    const db = await createTestDatabase();
    const client = new pg.Client({ connectionString: db.url });
    const errors: unknown[] = [];
    client.on("error", (err) => errors.push(err));
    await client.connect();
    await db.drop();
    await assert.rejects(client.query("SELECT 1"));
    await client.end().catch(() => {});
  });

  it("explains how to run tests when SLUICE_TEST_DATABASE_URL is unset", async () => {
    const saved = process.env.SLUICE_TEST_DATABASE_URL;
    delete process.env.SLUICE_TEST_DATABASE_URL;
    try {
      await assert.rejects(createTestDatabase(), /npm test.*throwaway Postgres/);
    } finally {
      process.env.SLUICE_TEST_DATABASE_URL = saved;
    }
  });
});

describe("scripts/pg-server.mjs as a command wrapper", () => {
  it("runs the command against a fresh server, passes its exit code through and cleans up", async () => {
    // The child prints the url and data dir, checks it can query, then exits 7.
    const probe = [
      "import pg from 'pg';",
      "const c = new pg.Client({ connectionString: process.env.DATABASE_URL });",
      "await c.connect();",
      "const r = await c.query(\"SELECT current_setting('data_directory') AS dir\");",
      "await c.end();",
      "console.log(JSON.stringify({ url: process.env.DATABASE_URL,",
      "  testUrl: process.env.SLUICE_TEST_DATABASE_URL, dir: r.rows[0].dir }));",
      "process.exit(7);",
    ].join("\n");
    const child = spawn(process.execPath, ["scripts/pg-server.mjs", "--", process.execPath, "--input-type=module", "-e", probe], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));

    assert.equal(code, 7, `stdout: ${stdout}\nstderr: ${stderr}`);
    const seen = JSON.parse(stdout) as { url: string; testUrl: string; dir: string };
    assert.match(seen.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    assert.equal(seen.testUrl, seen.url);
    assert.notEqual(seen.url, process.env.SLUICE_TEST_DATABASE_URL, "must be its own server");
    assert.equal(existsSync(seen.dir), false, "data directory left behind");
  });
});
