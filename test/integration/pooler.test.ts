// Sluice behind a transaction pooler (PgBouncer, pool_mode = transaction): each transaction may
// run on a different server connection, so nothing may outlive one. Named prepared statements
// and LISTEN are what Sluice holds across transactions; with SLUICE_DIRECT_DATABASE_URL set the
// pooled statements go unnamed and LISTEN takes the direct connection. Without it, concurrent
// publishes fail ("prepared statement s6 does not exist") and notifications are dropped by the
// pooler, so both tests below fail.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startPgBouncer, type PgBouncer } from "../../scripts/pgbouncer.mjs";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { sleep, waitFor } from "../helpers/wait-for.js";

describe("behind PgBouncer in transaction mode, with a direct URL for LISTEN", () => {
  let tdb: TestDatabase;
  let bouncer: PgBouncer;
  let rx: Receiver;
  let api: TestSluice;
  let worker: TestSluice;

  before(async () => {
    tdb = await createTestDatabase();
    bouncer = await startPgBouncer(tdb.url);
    rx = await startReceiver();
    const env = { SLUICE_DIRECT_DATABASE_URL: tdb.url };
    // Apart, so that a publish reaches the worker only through NOTIFY, not in-process.
    api = await startSluice("server", { databaseUrl: bouncer.url, env, worker: false });
    worker = await startSluice("server", { databaseUrl: bouncer.url, env, api: false });
  });
  after(async () => {
    await worker?.stop();
    await api?.stop();
    await rx?.close();
    await bouncer?.stop();
    await tdb?.drop();
  });

  test("concurrent publishes all answer 202, and every delivery arrives once", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const d = await api.api<{ id: string }>("POST", "/v1/destinations", { url: `${rx.url}/d${i}` });
      assert.equal(d.status, 201, JSON.stringify(d.body));
      ids.push(d.body.id);
    }
    const statuses: number[] = [];
    // 8 publishers × 10 batches × 20 events: more transactions at once than the pooler has connections.
    await Promise.all(
      Array.from({ length: 8 }, async (_, p) => {
        for (let b = 0; b < 10; b++) {
          const events = ids.map((id, i) => ({ type: "pool.test", payload: { p, b, i }, destination_ids: [id] }));
          const r = await api.api("POST", "/v1/events/batch", { events });
          statuses.push(r.status);
        }
      }),
    );
    assert.deepEqual([...new Set(statuses)], [202]);
    await rx.waitForCount(1600, 60_000);
    const seen = new Set(rx.received.map((r) => JSON.stringify((r.json as { data: unknown }).data)));
    assert.equal(seen.size, 1600);
  });

  test("a publish wakes the idle worker through the direct LISTEN session", async () => {
    const d = await api.api<{ id: string }>("POST", "/v1/destinations", { url: `${rx.url}/wake` });
    // Idle for a while, so that the worker's claim loop has gone to its long sleep (nothing is
    // due) and only a notification wakes it. With LISTEN through the pooler (SLUICE_DIRECT_DATABASE_URL
    // naming PgBouncer too) the notification is dropped and this test fails.
    await waitFor(() => rx.inflight === 0);
    await sleep(3000);
    const before = rx.countByPath("/wake");
    const sentAt = Date.now();
    const r = await api.api("POST", "/v1/events", { type: "pool.wake", payload: {}, destination_ids: [d.body.id] });
    assert.equal(r.status, 202);
    await waitFor(() => rx.countByPath("/wake") > before, { timeoutMs: 20_000 });
    // The fallback poll would take tens of seconds; a notification takes milliseconds, 5 s is slack for a busy machine.
    assert.ok(Date.now() - sentAt < 5000, `arrived ${Date.now() - sentAt} ms after the publish`);
  });
});
