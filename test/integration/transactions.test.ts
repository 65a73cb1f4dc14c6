import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { lastStatement, type Db } from "../../src/db/db.js";
import { BACKENDS } from "../helpers/sluice.js";
import { openTestStore } from "../helpers/db.js";

// Db.tx on both stores. On the server store the connection is pipelined: statements issued
// without waiting go out together, BEGIN rides with the first, and queryAndCommit sends COMMIT
// right behind the last. What must hold whatever goes out together: order, all or nothing, and a
// connection that goes back to the pool clean.

for (const backend of BACKENDS) {
  describe(`transactions on ${backend} Postgres`, () => {
    let db: Db;
    let close: () => Promise<void>;
    before(async () => {
      ({ db, close } = await openTestStore(backend));
      await db.exec("CREATE TABLE tx_probe (n int PRIMARY KEY)");
    });
    after(async () => close?.());

    const rows = async () => (await db.query<{ n: number }>("SELECT n FROM tx_probe ORDER BY n")).map((r) => r.n);
    const reset = () => db.query("DELETE FROM tx_probe");

    test("statements sent together run in order, each seeing the ones before it, and commit together", async () => {
      await reset();
      const seen = await db.tx(async (q) => {
        const a = q.query("INSERT INTO tx_probe VALUES (1)");
        const b = q.query<{ c: number }>("SELECT count(*)::int AS c FROM tx_probe");
        const c = q.query("INSERT INTO tx_probe VALUES (2)");
        const d = q.query<{ c: number }>("SELECT count(*)::int AS c FROM tx_probe");
        const [, before, , after] = await Promise.all([a, b, c, d]);
        return [before[0]!.c, after[0]!.c];
      });
      assert.deepEqual(seen, [1, 2]);
      assert.deepEqual(await rows(), [1, 2]);
    });

    test("a failure fails the statements sent behind it and rolls back everything", async () => {
      await reset();
      const outcome = await db
        .tx(async (q) => {
          await Promise.all([
            q.query("INSERT INTO tx_probe VALUES (1)"),
            q.query("INSERT INTO tx_probe VALUES (1)"), // duplicate key
            q.query("INSERT INTO tx_probe VALUES (3)"),
          ]);
        })
        .then(
          () => "committed",
          (err: { code?: string }) => err.code,
        );
      assert.equal(outcome, "23505");
      assert.deepEqual(await rows(), []);
      // The connection went back clean: the next transaction works as usual.
      await db.tx((q) => q.query("INSERT INTO tx_probe VALUES (4)"));
      assert.deepEqual(await rows(), [4]);
    });

    test("queryAndCommit commits with its statement; nothing may run after it", async () => {
      await reset();
      const after = await db
        .tx(async (q) => {
          await q.query("INSERT INTO tx_probe VALUES (1)");
          await q.queryAndCommit("INSERT INTO tx_probe VALUES (2)");
          await q.query("INSERT INTO tx_probe VALUES (3)");
        })
        .then(
          () => "no error",
          (err: Error) => err.message,
        );
      assert.match(after, /after queryAndCommit/);
      assert.deepEqual(await rows(), [1, 2], "committed as queryAndCommit ran; the statement after it never ran");
    });

    test("a failing last statement rolls the transaction back, and the connection stays usable", async () => {
      await reset();
      const outcome = await db
        .tx(async (q) => {
          await q.query("INSERT INTO tx_probe VALUES (1)");
          await lastStatement(q).query("INSERT INTO tx_probe VALUES (1)");
        })
        .then(
          () => "committed",
          (err: { code?: string }) => err.code,
        );
      assert.equal(outcome, "23505");
      assert.deepEqual(await rows(), []);
      for (let i = 0; i < 3; i++) await db.tx((q) => lastStatement(q).query("INSERT INTO tx_probe VALUES ($1)", [10 + i]));
      assert.deepEqual(await rows(), [10, 11, 12]);
    });

    test("a transaction-local setting left by one statement is read by the next, sent with it, and gone after the commit", async () => {
      const [value, later] = await db.tx(async (q) => {
        const [, read] = await Promise.all([
          q.query("SELECT set_config('sluice.tx_probe', '{a,b}', true)"),
          q.query<{ ids: string[] }>("SELECT current_setting('sluice.tx_probe')::text[] AS ids"),
        ]);
        // Still there for a statement sent on its own afterwards, in the same transaction.
        const again = await q.query<{ ids: string[] }>("SELECT current_setting('sluice.tx_probe')::text[] AS ids");
        return [read[0]!.ids, again[0]!.ids];
      });
      assert.deepEqual(value, ["a", "b"]);
      assert.deepEqual(later, ["a", "b"]);
      const outside = await db.query<{ v: string | null }>("SELECT nullif(current_setting('sluice.tx_probe', true), '') AS v");
      assert.equal(outside[0]!.v, null);
    });
  });
}
