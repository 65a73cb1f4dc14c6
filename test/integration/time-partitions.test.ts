import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ENGINE_BACKENDS, startSluice } from "../helpers/sluice.js";
import { partitionOnce } from "../../src/dispatch/time-partitions.js";
import { pruneOnce } from "../../src/dispatch/janitor.js";
import { createTimePartition } from "../../src/db/queries/partitions.js";
import type { Db } from "../../src/db/db.js";

// attempts partitioned by time (migrations/0024_attempts_by_time.sql): the janitor's partitions on
// every store shape, a range past retention dropped with its rows, and the attempts no range holds
// pruned by row as before.

const partitions = async (db: Db) =>
  (
    await db.query<{ name: string; bound: string }>(
      `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'attempts'::regclass ORDER BY 1`,
    )
  ).reduce<Record<string, string>>((m, r) => ({ ...m, [r.name]: r.bound }), {});

const attempt = (db: Db, id: string, startedAt: string) =>
  db.query(
    `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome)
     VALUES ('dst_partitions', $1, 1, ${startedAt}, 1, 'success')`,
    [id],
  );

/** Where each attempt of the test's destination is: delivery id → partition. */
const placed = async (db: Db) =>
  (
    await db.query<{ id: string; part: string }>(
      "SELECT delivery_id AS id, tableoid::regclass::text AS part FROM attempts WHERE destination_id = 'dst_partitions' ORDER BY 1",
    )
  ).reduce<Record<string, string>>((m, r) => ({ ...m, [r.id]: shardless(r.part) }), {});

/** A Citus cell's row is in its partition's shard (`cell.attempts_default_102061`): the partition's name. */
const shardless = (name: string): string => name.replace(/^[^"]*\./, "").replace(/_\d+("?)$/, "$1");

for (const backend of ENGINE_BACKENDS) {
  describe(`time partitions of attempts on ${backend} Postgres`, () => {
    test("ranges made ahead; one past retention dropped whole; the rest pruned by row; strays kept", async () => {
      const s = await startSluice(backend, { worker: false });
      try {
        const db = s.running.db;
        const made = await partitionOnce(db, 168);
        // Day-wide ranges: from the migration's table (attempts_legacy) to two days ahead.
        assert.ok(made && made.created.length >= 3 && made.created.length <= 4, JSON.stringify(made));
        assert.deepEqual(await partitionOnce(db, 168), { created: [], dropped: [], leftToDefault: [] }, "a second round has nothing to do");
        // As if migrated 300 hours ago and partitioned since: the old table ends then, a range runs
        // 300 → 200 hours ago (named by someone else, as SQL must quote it), and the time from there
        // to the first of today's ranges is the default's.
        await db.query("ALTER TABLE attempts DETACH PARTITION attempts_legacy");
        await db.query(
          "ALTER TABLE attempts ATTACH PARTITION attempts_legacy FOR VALUES FROM (MINVALUE) TO (now() - interval '300 hours')",
        );
        await db.query(
          `CREATE TABLE "Attempts Old" PARTITION OF attempts FOR VALUES FROM (now() - interval '300 hours') TO (now() - interval '200 hours')`,
        );
        await attempt(db, "dlv_legacy", "now() - interval '400 hours'");
        await attempt(db, "dlv_old", "now() - interval '250 hours'");
        await attempt(db, "dlv_gap_past", "now() - interval '190 hours'");
        await attempt(db, "dlv_gap_kept", "now() - interval '100 hours'");
        await attempt(db, "dlv_now", "now()");
        await attempt(db, "dlv_ahead", "now() + interval '30 days'"); // a worker's clock far ahead
        const where = await placed(db);
        assert.equal(where.dlv_legacy, "attempts_legacy");
        assert.equal(where.dlv_old, '"Attempts Old"');
        assert.equal(where.dlv_gap_past, "attempts_default");
        assert.equal(where.dlv_ahead, "attempts_default");
        assert.match(where.dlv_now!, /^attempts_\d{8}t\d{6}$/);

        const round = await partitionOnce(db, 168);
        assert.deepEqual(round?.dropped.sort(), ['"Attempts Old"', "attempts_legacy"]);
        await pruneOnce(db, 168);
        assert.deepEqual(Object.keys(await placed(db)), ["dlv_ahead", "dlv_gap_kept", "dlv_now"]);
        const left = await partitions(db);
        assert.equal(left.attempts_legacy, undefined);
        assert.equal(left["Attempts Old"], undefined);
        assert.equal(left.attempts_default, "DEFAULT");

        // A range the default already holds an attempt in begins just after it, the attempt left
        // where it is; one it holds attempts up to the end of is left to it.
        const [{ ms: stray }] = (await db.query<{ ms: number }>(
          "SELECT floor(extract(epoch FROM now() + interval '31 days') * 1000)::float8 AS ms",
        )) as [{ ms: number }];
        await attempt(db, "dlv_stray", `'${new Date(stray).toISOString()}'::timestamptz`);
        const fromMs = stray - 3_600_000;
        assert.equal(
          await db.tx((q) => createTimePartition(q, "attempts", { name: "attempts_full", fromMs, toMs: stray + 1 }, 1000)),
          true,
        );
        assert.match((await partitions(db)).attempts_full!, /FROM \('.*'\) TO/);
        assert.equal((await placed(db)).dlv_stray, "attempts_default");
        await attempt(db, "dlv_after_stray", `'${new Date(stray).toISOString()}'::timestamptz + interval '500 microseconds'`);
        assert.equal((await placed(db)).dlv_after_stray, "attempts_full");
        await attempt(db, "dlv_end", `'${new Date(stray + 7_200_000).toISOString()}'::timestamptz - interval '1 microsecond'`);
        const full = { name: "attempts_none", fromMs: stray + 3_600_000, toMs: stray + 7_200_000 };
        assert.equal(await db.tx((q) => createTimePartition(q, "attempts", full, 1000)), false);
        assert.equal((await partitions(db)).attempts_none, undefined);
      } finally {
        await s.stop();
      }
    });
  });
}
