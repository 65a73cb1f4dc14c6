import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDb, type EmbeddedDb } from "../../src/db/db.js";
import { pino } from "pino";
import { startSluice } from "../helpers/sluice.js";
import { startReceiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Destination } from "../helpers/api-types.js";

// The embedded store's thread under a running Sluice (its own store tests: embedded-thread.test.ts,
// split from this file so each stays well inside the runner's per-file time limit on a busy
// machine): a crash of the thread loses no event, and a folder that will not open again is
// reported while Sluice retries.

test("sluice start on a folder: a crash of the store's thread loses no event, and delivery resumes by itself", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-embedded-crash-app-"));
  const rx = await startReceiver({ status: 200 });
  const raw: string[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => void raw.push(line) });
  const s = await startSluice("embedded", { env: { SLUICE_DATA_DIR: dir }, log });
  try {
    const d = await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/crash` });
    assert.equal(d.status, 201, JSON.stringify(d.body));
    const publish = async (n: number) => {
      const r = await s.api("POST", "/v1/events", { type: "crash.test", payload: { n } });
      return r.status;
    };
    assert.equal(await publish(1), 202);
    await waitFor(() => rx.received.length >= 1, { timeoutMs: 10_000 });
    await (s.running.db as EmbeddedDb).killThread();
    // Publishing while the store is down is refused (503, to be retried), never accepted and lost.
    // (Opening the folder again takes a WebAssembly Postgres' start-up: the first tries meet it down.)
    let accepted = 0;
    let refused = 0;
    for (let n = 2; n <= 6; n++) {
      let status = 0;
      for (let tries = 0; status !== 202 && tries < 200; tries++) {
        status = await publish(n);
        if (status !== 202) {
          assert.equal(status, 503);
          refused++;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      if (status === 202) accepted++;
    }
    assert.equal(accepted, 5);
    assert.ok(refused > 0, "no publish met the store down");
    const got = () => new Set(rx.received.map((r) => (r.json as { data: { n: number } }).data.n));
    await waitFor(() => got().size === 6, { timeoutMs: 30_000, message: () => `received n = ${[...got()].join(", ")}` });
    // The operator is told once that the store was lost, and why, and once that it is back.
    const lines = raw.map((l) => JSON.parse(l) as { level: number; msg: string; cause?: string });
    const lost = lines.filter((l) => l.msg.startsWith("lost the store"));
    assert.equal(lost.length, 1, raw.join(""));
    assert.equal(lost[0]!.level, 40);
    assert.match(lost[0]!.cause ?? "", /thread stopped/);
    assert.equal(lines.filter((l) => l.msg.startsWith("store reachable again")).length, 1, raw.join(""));
  } finally {
    await s.stop();
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("sluice start on a folder that will not open again: the operator is told why while it tries, and it is back once the folder opens", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-embedded-reopen-fails-"));
  const raw: string[] = [];
  const log = pino({ level: "info" }, { write: (line: string) => void raw.push(line) });
  const s = await startSluice("embedded", { env: { SLUICE_DATA_DIR: dir }, log });
  const lines = () => raw.map((l) => JSON.parse(l) as { level: number; msg: string; cause?: string; down_seconds?: number });
  /** The log lines that begin with `start`. */
  const logged = (start: string) => lines().filter((l) => l.msg.startsWith(start));
  try {
    assert.equal((await s.api("GET", "/v1/destinations")).status, 200);
    // A damaged control file: Postgres cannot start on the folder until it is mended.
    const control = path.join(dir, "global", "pg_control");
    const good = readFileSync(control);
    writeFileSync(control, Buffer.alloc(good.length, 0x55));
    await (s.running.db as EmbeddedDb).killThread();
    await waitFor(() => logged("store still unreachable").length > 0, {
      timeoutMs: 20_000,
      message: () => raw.join(""),
    });
    const still = logged("store still unreachable");
    assert.equal(still[0]!.level, 40);
    assert.match(still[0]!.cause ?? "", /the folder did not open again/);
    assert.ok((still[0]!.down_seconds ?? 0) > 0);
    assert.equal((await s.api("GET", "/v1/destinations")).status, 503);
    // Several failed tries by now (0.1 s, 0.2 s, 0.4 s, … apart), told once: the cause is the same.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(logged("store still unreachable").length, 1, raw.join(""));
    // The folder moved away (deleted, a volume unmounted): PGlite would make a new, empty store in
    // its place. It is not opened; the log says what is wrong, as the cause changed.
    renameSync(dir, `${dir}-moved`);
    await waitFor(() => logged("store still unreachable").length === 2, {
      timeoutMs: 20_000,
      message: () => raw.join(""),
    });
    assert.match(logged("store still unreachable")[1]!.cause ?? "", /no longer holds the store/);
    assert.equal(existsSync(dir), false, "a new store was made in the folder's place");
    // Another store put in its place: not this one, so not opened either.
    const other = mkdtempSync(path.join(tmpdir(), "sluice-embedded-other-"));
    await (await openDb({ dataDir: other })).close();
    renameSync(other, dir);
    await waitFor(() => logged("store still unreachable").length === 3, {
      timeoutMs: 30_000,
      message: () => raw.join(""),
    });
    assert.match(logged("store still unreachable")[2]!.cause ?? "", /holds another store now/);
    rmSync(dir, { recursive: true, force: true });
    renameSync(`${dir}-moved`, dir);
    writeFileSync(control, good);
    await waitFor(() => logged("store reachable again").length > 0, { timeoutMs: 30_000, message: () => raw.join("") });
    assert.equal((await s.api("GET", "/v1/destinations")).status, 200);
    assert.equal(logged("lost the store").length, 1, raw.join(""));
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(`${dir}-moved`, { recursive: true, force: true });
  }
});
