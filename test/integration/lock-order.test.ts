import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ENGINE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver, type Responder } from "../helpers/receiver.js";
import { createTestDatabase } from "../helpers/db.js";
import { onServer } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Destination, EventBatchAccepted } from "../helpers/api-types.js";

// Destination row locks are taken in one order (src/db/queries/row-locks.ts). Publishing wakes the
// destinations it adds deliveries to while result write-backs, under a mix of healthy, throttled,
// failing and slow answers, lock the same rows: taken in different orders, the two deadlocked,
// and Postgres aborted one of them after deadlock_timeout. Here many publishers each reach a random
// few destinations; the server's deadlock counter must not move. On the embedded
// store (one session: no deadlock by construction) the same workload must not stall.

// Many destinations, each batch to a few of them: the planner then hashes the batch and walks the
// destinations table in heap order, which updates have shuffled — the order the old wake-up locked in.
const DESTINATIONS = 200;
const PER_BATCH = 60;
const PUBLISHERS = 6;
const RUN_MS = 6_000;

/** Answers by the destination's number (its path): mostly 200, some 429, some 500, some slow. */
function mixed(): Responder {
  return (req) => {
    const i = Number(req.path.split("/").pop());
    if (i % 8 === 1) return Math.random() < 0.2 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 };
    if (i % 8 === 2) return { status: 500 };
    if (i % 8 === 3) return { status: 200, delayMs: 200 };
    // A little slow: with one request at a time each destination spends most of the run at its
    // cap, its ready_at at its lease's end — so every publish wakes (locks) it, as results lock it.
    return { status: 200, delayMs: 10 };
  };
}

const healthy = (i: number) => i % 8 !== 1 && i % 8 !== 2;

function shuffled<T>(xs: T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

for (const backend of ENGINE_BACKENDS) {
  describe(`publishing beside busy write-backs (${backend})`, () => {
    let s: TestSluice;
    let rx: Receiver;
    before(async () => {
      rx = await startReceiver(mixed());
      s = await startSluice(backend, { env: { SLUICE_CLAIM_LOOPS: "2", SLUICE_DB_POOL_SIZE: "16" } });
      if (s.databaseUrl) {
        // Seen at once rather than a second later: the counter moves within the run if a cycle forms.
        const name = new URL(s.databaseUrl).pathname.slice(1);
        await onServer(s.databaseUrl, (c) => c.query(`ALTER DATABASE ${name} SET deadlock_timeout = '50ms'`));
      }
    });
    after(async () => {
      await s?.stop();
      await rx?.close();
    });

    test("no deadlock, and every healthy destination gets what was published to it", async () => {
      const ids: string[] = [];
      for (let i = 0; i < DESTINATIONS; i++) {
        const d = await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/d/${i}`,
          event_types: ["mix.*"],
          max_concurrency: 1,
          // Failures retried quickly: the 500s write back until they pause, as a platform's would.
          retry_schedule_seconds: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
          // Generous: on a loaded machine a healthy answer can be slow, and timeouts would pause it.
          timeout_seconds: 30,
        });
        ids.push(d.body.id);
      }
      if (s.databaseUrl) {
        // Rows moved about the heap (as a running Sluice's updates move them), and statistics.
        // (Each row picked here: Citus refuses a volatile function in a write's WHERE.)
        for (let k = 0; k < 3; k++) {
          const picked = ids.filter(() => Math.random() < 0.5);
          await s.running.db.query("UPDATE destinations SET ready_at = NULL WHERE id = ANY($1::text[])", [picked]);
        }
        await s.running.db.query("ANALYZE destinations");
      }
      const deadlocks = async () =>
        s.databaseUrl
          ? (
              await s.running.db.query<{ n: number }>("SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()")
            )[0]!.n
          : 0;
      const before = await deadlocks();
      const sent = new Map<number, number>();
      const deadline = Date.now() + RUN_MS;
      let batches = 0;
      await Promise.all(
        Array.from({ length: PUBLISHERS }, async () => {
          while (Date.now() < deadline) {
            const order = shuffled(ids.map((id, i) => ({ id, i }))).slice(0, PER_BATCH);
            const events = order.map(({ id, i }) => ({ type: "mix.e", payload: { i }, destination_ids: [id] }));
            const r = await s.api<EventBatchAccepted>("POST", "/v1/events/batch", { events });
            assert.equal(r.status, 202, JSON.stringify(r.body).slice(0, 300));
            for (const { i } of order) sent.set(i, (sent.get(i) ?? 0) + 1);
            batches++;
            // A pace, not a flood: what is published must also drain within the test.
            await new Promise((r) => setTimeout(r, 30));
          }
        }),
      );
      // A session reports its statistics at most once a second.
      await new Promise((r) => setTimeout(r, 1500));
      const after = await deadlocks();
      assert.ok(batches >= PUBLISHERS * 5, `only ${batches} batches published`);
      assert.equal(after - before, 0, `${after - before} deadlocks during the run`);
      // Nothing stalled: every healthy destination receives all it was sent.
      const received = (i: number) => rx.countByPath(`/d/${i}`);
      await waitFor(() => ids.every((_, i) => !healthy(i) || received(i) >= (sent.get(i) ?? 0)), {
        timeoutMs: 60_000,
        message: () =>
          "not everything arrived: " +
          ids
            .map((_, i) => (healthy(i) && received(i) < (sent.get(i) ?? 0) ? `/d/${i}: ${received(i)} of ${sent.get(i)}` : ""))
            .filter(Boolean)
            .join(", "),
      });
    });
  });
}

describe("the publish's wake-up locks destination rows in id order (server)", () => {
  test("holding the lowest id's row, every other row of the publish stays free until it is released", async () => {
    const tdb = await createTestDatabase();
    const s = await startSluice("server", { worker: false, databaseUrl: tdb.url });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 300; i++) {
        ids.push((await s.api<Destination>("POST", "/v1/destinations", { url: `https://example.com/${i}` })).body.id);
      }
      const reached = [...ids].sort().slice(0, 30);
      const [lowest, ...rest] = reached;
      // The lowest id's row moves to the end of the heap (an update writes a new row version), and
      // statistics say the table is much bigger than a batch: a plan that walks the table locks in
      // heap order, the lowest id last.
      await s.running.db.query("UPDATE destinations SET ready_at = NULL WHERE id = $1", [lowest]);
      await s.running.db.query("ANALYZE destinations");
      await onServer(tdb.url, async (w) => {
        // A write-back holding the lowest id (write-backs lock in id order too).
        await w.query("BEGIN");
        await w.query("SELECT id FROM destinations WHERE id = $1 FOR UPDATE", [lowest]);
        const publish = s.api("POST", "/v1/events/batch", {
          events: reached.map((id) => ({ type: "order.x", payload: {}, destination_ids: [id] })),
        });
        await waitFor(
          async () =>
            (
              await w.query<{ n: number }>(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
              )
            ).rows[0]!.n > 0,
          { timeoutMs: 10_000, message: "the publish never waited for the row held" },
        );
        // Taken in id order, the publish waits at the lowest id holding none of the others.
        const free = await w.query<{ id: string }>("SELECT id FROM destinations WHERE id = ANY($1::text[]) FOR UPDATE SKIP LOCKED", [rest]);
        await w.query("ROLLBACK");
        assert.equal((await publish).status, 202);
        assert.equal(free.rows.length, rest.length, `the publish held ${rest.length - free.rows.length} rows while it waited`);
      });
    } finally {
      await s.stop();
      await tdb.drop();
    }
  });
});
