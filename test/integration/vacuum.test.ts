import { test } from "node:test";
import assert from "node:assert/strict";
import { withTestStore } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Db } from "../../src/db/db.js";
import { vacuumOnce } from "../../src/dispatch/janitor.js";
import { tableStats } from "../../src/db/queries/maintenance.js";
import { DEFAULT_VACUUM_POLICY, SERVER_VACUUM_POLICY } from "../../src/policy/vacuum.js";
import { metrics } from "../../src/metrics.js";

/** sluice_vacuums_total for `table` in this process. */
const vacuumsOf = async (table: string): Promise<number> =>
  (await metrics.vacuums.get()).values.find((v) => v.labels.table === table)?.value ?? 0;

// The embedded store has no autovacuum (PGlite is Postgres in single-user mode), so the janitor
// vacuums it: a table with many dead rows is vacuumed, and one without is left alone; each is
// analyzed once enough of its rows changed, from a small sample (see policy/vacuum.ts). On a
// server, where autovacuum comes once a minute, it vacuums the small hot tables (leases,
// destinations) between its rounds, and nothing else.

/**
 * `table`'s dead rows once `ok` holds of them (the counters reach the views within about a
 * second), or as they are after 5 s: the caller's assertion says what was wrong.
 */
async function deadRows(db: Db, table: string, ok: (n: number) => boolean): Promise<number> {
  let n = -1;
  const counted = async () => ok((n = (await tableStats(db)).find((t) => t.table === table)!.dead));
  await waitFor(counted, { timeoutMs: 5_000, intervalMs: 100 }).catch(() => undefined);
  return n;
}

test("on the embedded store the janitor vacuums the tables whose dead rows passed the threshold, and only those", async () => {
  await withTestStore("embedded", async (db) => {
    await db.exec("CREATE TABLE churn (id int PRIMARY KEY, n int); CREATE TABLE calm (id int PRIMARY KEY, n int)");
    await db.query("INSERT INTO churn SELECT g, 0 FROM generate_series(1, 1000) g");
    await db.query("INSERT INTO calm SELECT g, 0 FROM generate_series(1, 1000) g");
    for (let i = 0; i < 5; i++) await db.query("UPDATE churn SET n = n + 1 WHERE id <= 200");
    // (Page pruning already removes some of the 1,000 dead versions; the threshold is 50 + 5 % of 1,000.)
    const counted = await deadRows(db, "churn", (n) => n >= 200);
    assert.ok(counted >= 200, `dead rows counted: ${counted}`);
    const done = await vacuumOnce(db);
    const tables = done.map((d) => d.task.table);
    const vacuumed = done.filter((d) => d.task.vacuum).map((d) => d.task.table);
    assert.ok(vacuumed.includes("churn"), JSON.stringify(done));
    assert.ok(!vacuumed.includes("calm"), JSON.stringify(done));
    // Both were analyzed (1,000 rows written), at statistics target 10: a histogram of 10 buckets.
    for (const table of ["churn", "calm"])
      assert.ok(
        done.some((d) => d.task.table === table && d.task.analyze),
        JSON.stringify(done),
      );
    const bounds = await db.query<{ tablename: string; n: number }>(
      `SELECT tablename, array_length(histogram_bounds::text::int[], 1) AS n FROM pg_stats
        WHERE tablename IN ('churn', 'calm') AND attname = 'id' ORDER BY tablename`,
    );
    assert.deepEqual(bounds, [
      { tablename: "calm", n: 11 },
      { tablename: "churn", n: 11 },
    ]);
    // Everything it picked is Sluice's own: no catalog is anywhere near the freeze age here.
    const own = new Set((await tableStats(db)).filter((t) => t.own).map((t) => t.table));
    assert.ok(
      tables.every((t) => own.has(t)),
      JSON.stringify(done),
    );
    assert.equal(await deadRows(db, "churn", (n) => n === 0), 0);
    // A freeze round over everything (a policy whose age limit every table passes) runs too.
    const frozen = await vacuumOnce(db, { ...DEFAULT_VACUUM_POLICY, freezeAge: -1 });
    assert.ok(
      frozen.some((d) => d.task.table === "pg_class" && d.task.freeze),
      JSON.stringify(frozen.map((d) => d.task.table)),
    );
    // Statements prepared before it still run.
    assert.deepEqual(await db.query("SELECT count(*)::int AS n FROM churn WHERE n = 5"), [{ n: 200 }]);
  });
});

test("on a server the janitor vacuums leases once its dead rows pass the threshold, and not a table of its own choosing", async () => {
  await withTestStore("server", async (db) => {
    await db.exec("CREATE TABLE churn (id int PRIMARY KEY, n int)");
    await db.query("INSERT INTO churn SELECT g, 0 FROM generate_series(1, 1000) g");
    // What claims and write-backs do to leases, many times over: they come and go.
    for (let i = 0; i < 15; i++) {
      await db.query(
        `INSERT INTO leases (destination_id, delivery_id, token, expires_at)
         SELECT 'd_vac' || (g % 100 + 1), 'dl_' || g, gen_random_uuid(), now() FROM generate_series(1, 200) g`,
      );
      await db.query("DELETE FROM leases WHERE destination_id LIKE 'd_vac%'");
      await db.query("UPDATE churn SET n = n + 1");
    }
    const threshold = (live: number) => SERVER_VACUUM_POLICY.deadBase + SERVER_VACUUM_POLICY.deadShare * live;
    assert.ok((await deadRows(db, "leases", (n) => n > threshold(0))) > threshold(0), "dead leases counted");
    assert.ok((await deadRows(db, "churn", (n) => n > threshold(1000))) > threshold(1000), "dead churn rows counted");
    const size = async () => (await db.query<{ n: number }>("SELECT pg_relation_size('leases')::float8 AS n"))[0]!.n;
    const sizeBefore = await size();
    const counted = await vacuumsOf("leases");
    const done = await vacuumOnce(db, SERVER_VACUUM_POLICY);
    assert.equal(await vacuumsOf("leases"), counted + 1, "sluice_vacuums_total{table=leases} counts it");
    const tables = done.map((d) => d.task.table);
    // Every lease is gone, yet the file keeps its pages: no truncation, so no exclusive lock on a
    // table every claim reads.
    assert.ok(sizeBefore > 0);
    assert.equal(await size(), sizeBefore);
    assert.ok(tables.includes("leases"), JSON.stringify(done));
    assert.ok(!tables.includes("churn"), JSON.stringify(done));
    assert.ok(
      done.every((d) => !d.task.freeze && ["leases", "destinations"].includes(d.task.table)),
      JSON.stringify(done),
    );
    assert.equal(await deadRows(db, "leases", (n) => n === 0), 0);
  });
});
