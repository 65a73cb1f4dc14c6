import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDb, type EmbeddedDb } from "../../src/db/db.js";
import { isFatal } from "../../src/db/embedded-thread.js";
import { PACKAGE_ROOT } from "../../src/package-root.js";
import { waitFor } from "../helpers/wait-for.js";

// The embedded store runs PGlite on a thread of its own (src/db/embedded-thread.ts): what must
// hold is that Sluice's thread keeps running while a statement executes, that a statement's
// error arrives whole (its SQLSTATE and fields, which Sluice's error handling reads), and that
// the thread changes nothing about the store's life — a closed store says so, an idle one does
// not keep the process alive, and a folder opened again has what was committed. Should the
// thread crash, the store is unavailable (as a server is in an outage) until a new thread has
// opened the folder again, which happens by itself.

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

/** The error a promise rejects with (fails the test if it resolves). */
async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; cause?: unknown }> {
  return p.then(
    () => assert.fail("it succeeded"),
    (e: unknown) => e as Error & { code?: string },
  );
}

test("a crashed thread: the store is unavailable, then opens its folder again by itself; a transaction cut short is not half-applied", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-embedded-crash-"));
  const db = (await openDb({ dataDir: dir })) as EmbeddedDb;
  try {
    const seen: boolean[] = [];
    db.onAvailability((up) => seen.push(up));
    await db.exec("CREATE TABLE kept (n int)");
    await db.query("INSERT INTO kept VALUES (1)");
    // A transaction under way when the thread dies: its next statement fails as unavailable, and
    // the row it inserted is not there afterwards.
    let crash!: () => void;
    const crashed = new Promise<void>((r) => (crash = r));
    const cutShort = db.tx(async (q) => {
      await q.query("INSERT INTO kept VALUES (2)");
      crash();
      await new Promise((r) => setTimeout(r, 50));
      await q.query("INSERT INTO kept VALUES (3)");
    });
    await crashed;
    await db.killThread();
    const err = await rejection(cutShort);
    assert.equal(err.code, "SLUICE_STORE_UNAVAILABLE", String(err));
    assert.match(String((err.cause as Error).message), /thread stopped/);
    // Until it has reopened, statements fail at once with the same code (none waits forever).
    if (!db.available) assert.equal((await rejection(db.query("SELECT 1"))).code, "SLUICE_STORE_UNAVAILABLE");
    await waitFor(() => db.available, { timeoutMs: 30_000, message: () => "the store did not reopen" });
    assert.deepEqual(seen, [false, true]);
    assert.deepEqual(await db.query("SELECT n FROM kept ORDER BY n"), [{ n: 1 }]);
    await db.query("INSERT INTO kept VALUES (4)");
    assert.deepEqual(await db.query("SELECT n FROM kept ORDER BY n"), [{ n: 1 }, { n: 4 }]);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// The session is handed on as soon as a COMMIT has gone out (db.ts EmbeddedDb.exclusive): the
// next holders' calls then wait on the thread, behind it. A crash there fails each of them as
// unavailable, like any call on a crashed thread, and leaves nothing of theirs behind.
test("a crash while a commit runs, with the next transactions queued behind it: each fails as unavailable, none is half-applied", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-embedded-queued-"));
  const db = (await openDb({ dataDir: dir })) as EmbeddedDb;
  try {
    await db.exec("CREATE TABLE queued (n int)");
    // Seconds of WebAssembly Postgres, its COMMIT sent with it; then two transactions and a
    // statement issued behind it.
    const slow = db.tx((q) =>
      q.queryAndCommit("INSERT INTO queued SELECT count(*)::int FROM generate_series(1, 20000000) g WHERE g % 7 = 3"),
    );
    const behind = [
      db.tx((q) => q.queryAndCommit("INSERT INTO queued VALUES (2)")),
      db.tx(async (q) => void (await q.query("INSERT INTO queued VALUES (3)"))),
      db.query("INSERT INTO queued VALUES (4)"),
    ];
    await new Promise((r) => setTimeout(r, 100));
    await db.killThread();
    const outcomes = await Promise.all(
      [slow, ...behind].map((p) =>
        p.then(
          () => "ok",
          (err: { code?: string }) => err.code ?? "?",
        ),
      ),
    );
    // The last one may run on the reopened store, if it got its turn after that: then it landed.
    assert.deepEqual(outcomes.slice(0, 3), ["SLUICE_STORE_UNAVAILABLE", "SLUICE_STORE_UNAVAILABLE", "SLUICE_STORE_UNAVAILABLE"]);
    assert.ok(["ok", "SLUICE_STORE_UNAVAILABLE"].includes(outcomes[3]!), outcomes[3]);
    await waitFor(() => db.available, { timeoutMs: 30_000, message: () => "the store did not reopen" });
    assert.deepEqual(await db.query("SELECT n FROM queued ORDER BY n"), outcomes[3] === "ok" ? [{ n: 4 }] : []);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a crashed thread of a store in memory: unavailable for good (its data went with it), and it still closes", async () => {
  const db = (await openDb({ dataDir: "memory://" })) as EmbeddedDb;
  await db.query("SELECT 1");
  await db.killThread();
  await waitFor(() => !db.available, { timeoutMs: 5_000 });
  const err = await rejection(db.query("SELECT 1"));
  assert.equal(err.code, "SLUICE_STORE_UNAVAILABLE");
  await new Promise((r) => setTimeout(r, 300)); // longer than the first reopen's wait
  assert.equal(db.available, false);
  await db.close();
});

test("a trap in PGlite's WebAssembly ends its thread (then reopened); a statement's own error does not", () => {
  assert.equal(isFatal(new WebAssembly.RuntimeError("unreachable")), true);
  assert.equal(isFatal(Object.assign(new Error("Program terminated with exit(1)"), { name: "ExitStatus" })), true);
  assert.equal(isFatal(Object.assign(new Error("duplicate key value"), { code: "23505" })), false);
  assert.equal(isFatal(new Error("the embedded store is closed")), false);
});
