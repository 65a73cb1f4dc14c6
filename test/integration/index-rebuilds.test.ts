import { test } from "node:test";
import assert from "node:assert/strict";
import { withTestStore } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";
import { ENGINE_BACKENDS } from "../helpers/sluice.js";
import type { Db } from "../../src/db/db.js";
import { rebuildIndexesOnce } from "../../src/dispatch/index-rebuilds.js";
import { indexStats, rebuildIndex, releaseRebuildLease, takeRebuildLease } from "../../src/db/queries/maintenance.js";
import type { RebuildPolicy } from "../../src/policy/index-rebuild.js";
import { metrics } from "../../src/metrics.js";

// The janitor's index rebuilds (policy/index-rebuild.ts) on every store shape, the pooled one
// included (REINDEX CONCURRENTLY runs outside a transaction, through PgBouncer). A time-ordered
// primary key as Sluice's ids make one, with 1 row in 100 kept — what held deliveries do to the
// indexes of events and deliveries: every leaf keeps a few entries, and no page comes back.

// Only the test's table is big enough to be looked at: Sluice's own indexes are nearly empty here.
const POLICY: RebuildPolicy = { factor: 2, minBytes: 1_048_576, minIntervalMs: 0 };

/** Rows `from`…`to` of `held`, ids as Sluice mints them (time first, in hex), all but 1 in 100 then deleted. */
async function publishAndPrune(db: Db, from: number, to: number): Promise<void> {
  const deletedBefore = (await heldPkey(db)).tableDeleted;
  await db.query(`INSERT INTO held SELECT 'evt_' || lpad(to_hex(g), 12, '0'), g FROM generate_series($1::int, $2::int) g`, [from, to]);
  const [{ n: deleted }] = (await db.query<{ n: number }>(
    `WITH d AS (DELETE FROM held WHERE n >= $1 AND n % 100 <> 0 RETURNING 1) SELECT count(*)::int AS n FROM d`,
    [from],
  )) as [{ n: number }];
  // The inserts and deletes reach pg_stat_all_tables within about a second: the policy reads them.
  // Waited for before the VACUUM, whose count of live rows they would otherwise be added to.
  await waitFor(async () => (await heldPkey(db)).tableDeleted >= deletedBefore + deleted, { timeoutMs: 10_000, intervalMs: 100 });
  // VACUUM frees the dead entries (not their pages) and counts what is left.
  await db.exec("VACUUM held");
}

const heldPkey = async (db: Db) => (await indexStats(db)).find((i) => i.index === "held_pkey")!;
const rebuildsOf = async (index: string): Promise<number> =>
  (await metrics.indexRebuilds.get()).values.find((v) => v.labels.index === index)?.value ?? 0;

// A Citus cell is left to the node that holds it (janitor.ts): proved in test/citus/cell.test.ts.
for (const backend of ENGINE_BACKENDS.filter((b) => b !== "cell")) {
  test(`${backend}: an index left mostly empty is rebuilt to its size, once, and again when it is twice that`, async () => {
    await withTestStore(backend, async (db) => {
      await db.exec(`CREATE TABLE held (id text COLLATE "C" PRIMARY KEY, n int)`);
      await publishAndPrune(db, 0, 199_999);
      const bloated = await heldPkey(db);
      assert.equal(bloated.entries, 2000);
      assert.ok(bloated.bytes > 4 * 1_048_576, `${bloated.bytes} bytes before`);

      // Never measured, and retention has deleted from its table: rebuilt once to learn its bytes per entry.
      const rebuildsBefore = await rebuildsOf("held_pkey");
      const first = await rebuildIndexesOnce(db, POLICY);
      assert.deepEqual(
        first?.map((d) => [d.kind, d.index, d.kind === "rebuild" && d.bloat]),
        [["rebuild", "held_pkey", null]],
      );
      const packed = await heldPkey(db);
      assert.ok(packed.bytes < bloated.bytes / 20, `${bloated.bytes} → ${packed.bytes} bytes`);
      assert.equal(await rebuildsOf("held_pkey"), rebuildsBefore + 1);
      const [baseline] = await db.query<{ b: number }>("SELECT bytes_per_entry AS b FROM index_rebuilds WHERE index_name = 'held_pkey'");
      assert.ok(Math.abs(baseline!.b - packed.bytes / 2000) < 1, JSON.stringify({ baseline, packed }));
      // Nothing changed since: nothing to do, and no lease taken.
      assert.deepEqual(await rebuildIndexesOnce(db, POLICY), []);

      // Another 100,000 published and pruned the same way: 3,000 entries over pages for 100,000.
      await publishAndPrune(db, 200_000, 299_999);
      const again = await rebuildIndexesOnce(db, POLICY);
      assert.equal(again?.length, 1, JSON.stringify(again));
      const task = again?.[0];
      assert.ok(task?.kind === "rebuild" && task.bloat !== null && task.bloat >= 2, JSON.stringify(task));
      assert.ok((task.bytesAfter ?? Infinity) < task.bytes / 10, JSON.stringify(task));
      assert.equal((await db.query("SELECT count(*)::int AS n FROM held"))[0]!.n, 3000, "a rebuild keeps every row");
    });
  });

  test(`${backend}: an index on a table that has only grown is left alone, and its growth after a rebuild is not bloat`, async () => {
    await withTestStore(backend, async (db) => {
      await db.exec(`CREATE TABLE held (id text COLLATE "C" PRIMARY KEY, n int)`);
      await db.query(`INSERT INTO held SELECT 'evt_' || lpad(to_hex(g), 12, '0'), g FROM generate_series(0, 99999) g`);
      // ANALYZE counts the entries once the inserts have reached pg_stat_all_tables (later, they
      // would be added to its count).
      await waitFor(async () => (await heldPkey(db)).tableLive >= 100_000, { timeoutMs: 10_000, intervalMs: 100 });
      await db.exec("ANALYZE held");
      // Nothing deleted from its table: there is nothing for a rebuild to give back, and no figure is taken.
      assert.deepEqual(await rebuildIndexesOnce(db, POLICY), []);
      assert.deepEqual(await db.query("SELECT * FROM index_rebuilds WHERE index_name = 'held_pkey'"), []);

      // Rebuilt (as the janitor would once retention turned the table over), then the table grows
      // by half again, packed at its right-hand end, before anything counts it: the catalog still
      // says 100,000 entries over 1.5 times the pages.
      const packed = await rebuildIndex(db, "held_pkey");
      await db.query(`INSERT INTO held SELECT 'evt_' || lpad(to_hex(g), 12, '0'), g FROM generate_series(100000, 149999) g`);
      await waitFor(async () => (await heldPkey(db)).tableLive >= 150_000, { timeoutMs: 10_000, intervalMs: 100 });
      const grown = await heldPkey(db);
      assert.ok(grown.bytes > 1.4 * packed.bytes, JSON.stringify({ packed, grown }));
      // Read by the live rows, it is as packed as the rebuild left it: not rebuilt, even at a factor of 1.3.
      assert.deepEqual(await rebuildIndexesOnce(db, { ...POLICY, factor: 1.3 }), [], JSON.stringify(grown));
    });
  });

  test(`${backend}: an interrupted rebuild's invalid copy is dropped; a held lease leaves the round to its holder`, async () => {
    await withTestStore(backend, async (db) => {
      await db.exec(`CREATE TABLE held (id text COLLATE "C" PRIMARY KEY, n int)`);
      await publishAndPrune(db, 0, 199_999);
      // A unique build that fails half-way leaves an invalid index behind, as an interrupted REINDEX CONCURRENTLY does.
      await assert.rejects(db.exec("CREATE UNIQUE INDEX CONCURRENTLY held_pkey_ccnew ON held ((1))"), /could not create unique index/);
      assert.equal((await indexStats(db)).find((i) => i.index === "held_pkey_ccnew")?.valid, false);

      assert.ok(await takeRebuildLease(db, 60));
      assert.equal(await rebuildIndexesOnce(db, POLICY), null, "another worker holds the lease");
      await releaseRebuildLease(db);

      const done = await rebuildIndexesOnce(db, POLICY);
      assert.deepEqual(
        done?.map((d) => [d.kind, d.index]),
        [
          ["drop", "held_pkey_ccnew"],
          ["rebuild", "held_pkey"],
        ],
      );
      const left = (await indexStats(db)).filter((i) => i.table === "held");
      assert.deepEqual(
        left.map((i) => [i.index, i.valid]),
        [["held_pkey", true]],
      );
      // The round let the lease go.
      assert.ok(await takeRebuildLease(db, 60));
    });
  });
}

test("a rebuild is built on one core, and the setting that says so ends with it", async () => {
  await withTestStore("server", async (db) => {
    const setting = async () => (await db.query<{ v: string }>("SELECT current_setting('max_parallel_maintenance_workers') AS v"))[0]!.v;
    const before = await setting();
    assert.notEqual(before, "0", "the server's default allows parallel workers");
    // What the statement saw, kept in a table it creates.
    await db.execMaintenance("CREATE TABLE seen AS SELECT current_setting('max_parallel_maintenance_workers') AS v");
    assert.deepEqual(await db.query("SELECT v FROM seen"), [{ v: "0" }]);
    // Every connection the pool holds still has the default: ask as many at once as it may hold.
    const after = await Promise.all(Array.from({ length: 12 }, setting));
    assert.deepEqual(new Set(after), new Set([before]));
    // A failed statement leaves no connection behind with the setting either.
    await assert.rejects(db.execMaintenance("REINDEX INDEX CONCURRENTLY no_such_index"), /does not exist/);
    assert.deepEqual(new Set(await Promise.all(Array.from({ length: 12 }, setting))), new Set([before]));
  });
});

test("factor 0 turns rebuilds off: nothing is rebuilt, leftovers are still dropped", async () => {
  await withTestStore("server", async (db) => {
    await db.exec(`CREATE TABLE held (id text COLLATE "C" PRIMARY KEY, n int)`);
    await publishAndPrune(db, 0, 199_999);
    assert.deepEqual(await rebuildIndexesOnce(db, { ...POLICY, factor: 0 }), []);
    await assert.rejects(db.exec("CREATE UNIQUE INDEX CONCURRENTLY held_pkey_ccnew ON held ((1))"));
    assert.deepEqual(
      (await rebuildIndexesOnce(db, { ...POLICY, factor: 0 }))?.map((d) => d.kind),
      ["drop"],
    );
  });
});
