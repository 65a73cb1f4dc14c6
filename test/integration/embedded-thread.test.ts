import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDb } from "../../src/db/db.js";
import { PACKAGE_ROOT } from "../../src/package-root.js";

// The embedded store runs PGlite on a thread of its own (src/db/embedded-thread.ts): what must
// hold is that Sluice's thread keeps running while a statement executes, that a statement's
// error arrives whole (its SQLSTATE and fields, which Sluice's error handling reads), and that
// the thread changes nothing about the store's life — a closed store says so, an idle one does
// not keep the process alive, and a folder opened again has what was committed.

test("Sluice's thread keeps running while the embedded store executes a long statement", async () => {
  const db = await openDb({ dataDir: "memory://" });
  try {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const started = performance.now();
    // Several hundred milliseconds of WebAssembly Postgres, however fast the machine.
    await db.query("SELECT count(*) FROM generate_series(1, 3000000) g WHERE g % 7 = 3");
    const ms = performance.now() - started;
    clearInterval(timer);
    // In Sluice's own thread the statement would hold it from start to end: no tick at all.
    assert.ok(ticks >= Math.min(10, ms / 5 / 4), `${ticks} timer ticks during a ${ms.toFixed(0)} ms statement`);
  } finally {
    await db.close();
  }
});

test("a statement's error crosses the thread with its SQLSTATE and fields, and the store stays usable", async () => {
  const db = await openDb({ dataDir: "memory://" });
  try {
    await db.exec("CREATE TABLE probe (n int CONSTRAINT probe_pkey PRIMARY KEY)");
    await db.query("INSERT INTO probe VALUES (1)");
    const err = await db.query("INSERT INTO probe VALUES (1)").then(
      () => assert.fail("a duplicate key was accepted"),
      (e: unknown) => e as Error & { code?: string; constraint?: string; detail?: string; table?: string },
    );
    assert.ok(err instanceof Error);
    assert.equal(err.code, "23505");
    assert.equal(err.constraint, "probe_pkey");
    assert.equal(err.table, "probe");
    assert.match(err.detail ?? "", /\(n\)=\(1\)/);
    assert.match(err.message, /duplicate key/);
    // In a transaction too, and the transaction is rolled back.
    await assert.rejects(
      db.tx(async (q) => {
        await q.query("INSERT INTO probe VALUES (2)");
        await q.query("INSERT INTO probe VALUES (1)");
      }),
      (e: { code?: string }) => e.code === "23505",
    );
    assert.deepEqual(await db.query("SELECT n FROM probe ORDER BY n"), [{ n: 1 }]);
  } finally {
    await db.close();
  }
});

test("a closed embedded store refuses statements with a clear error", async () => {
  const db = await openDb({ dataDir: "memory://" });
  await db.close();
  await assert.rejects(db.query("SELECT 1"), /the embedded store is closed/);
});

test("a folder opened again has what was committed; an idle store does not keep the process alive", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-embedded-thread-"));
  try {
    // A child process that opens the store, commits, and never closes it: it must end by itself.
    const script = `
      const { openDb } = await import(${JSON.stringify(path.join(PACKAGE_ROOT, "src/db/db.ts"))});
      const db = await openDb({ dataDir: ${JSON.stringify(dir)} });
      await db.exec("CREATE TABLE kept (n int)");
      await db.query("INSERT INTO kept VALUES (42)");
      console.log("committed");`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: PACKAGE_ROOT, stdio: "pipe" });
    let out = "";
    child.stdout.on("data", (b: Buffer) => (out += b.toString()));
    child.stderr.on("data", (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        resolve(null);
      }, 60_000);
      child.on("exit", (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    assert.equal(code, 0, `the child did not end by itself with exit code 0: ${out}`);
    assert.match(out, /committed/);
    const db = await openDb({ dataDir: dir });
    try {
      assert.deepEqual(await db.query("SELECT n FROM kept"), [{ n: 42 }]);
    } finally {
      await db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
