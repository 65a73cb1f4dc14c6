import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { isStoreUnavailable, lastStatement, onAbortedTransaction, withRetry, type AbortedTransaction, type Db } from "../../src/db/db.js";
import { ENGINE_BACKENDS } from "../helpers/sluice.js";
import { openTestStore } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";

// The store contract (src/db/store.ts), one suite run against both drivers (server-db.ts,
// embedded-db.ts), and the server driver behind a transaction pooler: what every other module
// may rely on whichever store it runs on, so that a feature test need not prove each store again. On the server
// store the connection is pipelined: statements issued without waiting go out together, BEGIN
// rides with the first, and queryAndCommit sends COMMIT right behind the last. What must hold
// whatever goes out together: order, all or nothing, and a connection that goes back to the pool
// clean. Then notifications, and transactions Postgres aborts (run again, and told).

for (const backend of ENGINE_BACKENDS) {
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

    // On the embedded store the one session's next holder sends its statements as soon as a
    // transaction's COMMIT has gone out, not once it has answered: whatever that transaction did,
    // the session must be back outside any transaction by the time they run.
    test("transactions queued behind one another each run whole, whatever the one before did", async () => {
      await reset();
      const outcome = (p: Promise<unknown>) =>
        p.then(
          () => "ok",
          (err: Error & { code?: string }) => err.code ?? err.message,
        );
      const count = "SELECT count(*)::int AS c FROM tx_probe";
      // Issued without waiting, in this order; each must find the session as if alone.
      const results = await Promise.all([
        outcome(
          db.tx(async (q) => (await q.query("INSERT INTO tx_probe VALUES (1)"), q.queryAndCommit("INSERT INTO tx_probe VALUES (1)"))),
        ),
        outcome(db.tx(async (q) => void (await q.query("INSERT INTO tx_probe VALUES (2)")))),
        outcome(db.tx((q) => q.queryAndCommit("INSERT INTO tx_probe VALUES (3)"))),
        outcome(db.query("INSERT INTO tx_probe VALUES (4)")),
        outcome(
          db.tx(
            async (q) => void (await Promise.all([q.query("INSERT INTO tx_probe VALUES (5)"), q.query("INSERT INTO tx_probe VALUES (5)")])),
          ),
        ),
        outcome(db.tx((q) => q.queryAndCommit("INSERT INTO tx_probe VALUES (6)"))),
      ]);
      assert.deepEqual(results, ["23505", "ok", "ok", "ok", "23505", "ok"]);
      assert.deepEqual(await rows(), [2, 3, 4, 6]);
      // The one session: what a transaction committed, the one sent behind it sees.
      if (backend !== "embedded") return;
      const seen = await Promise.all(
        [10, 11, 12].map((n) =>
          db.tx(
            async (q) => (await q.query("INSERT INTO tx_probe VALUES ($1)", [n]), (await q.queryAndCommit<{ c: number }>(count))[0]!.c),
          ),
        ),
      );
      assert.deepEqual(seen, [5, 6, 7]);
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

    // A text run again and again is prepared once and from then on bound and executed by name
    // (StatementNames; on the embedded store through PGlite's protocol, not its query()). The
    // named runs must take the same parameters and give the same rows as the first, plain ones.
    test("a statement run again and again, once named, takes the same parameters and gives the same rows", async () => {
      const sql = `SELECT $1::text AS t, $2::int AS i, $3::bool AS b, $4::text[] AS ta, $5::int[] AS ia,
                          $6::json->'k' AS j, $7::jsonb AS jb, $8::timestamptz AS ts, $9::text AS nothing,
                          1.5::float8 AS f, '11111111-2222-3333-4444-555555555555'::uuid AS u, g AS n
                     FROM generate_series(1, 2) g`;
      const params = [
        "ü'x",
        42,
        true,
        ["a", "b,c"],
        [1, 2],
        '{"k":[1,"two"]}',
        '{"a":{"b":null}}',
        new Date("2026-01-02T03:04:05.678Z"),
        null,
      ];
      const runs = [];
      for (let i = 0; i < 5; i++) runs.push(await db.query(sql, params));
      runs.push(await db.tx((q) => q.query(sql, params)));
      for (const r of runs) assert.deepEqual(r, runs[0]);
      assert.deepEqual(runs[0]![0], {
        t: "ü'x",
        i: 42,
        b: true,
        ta: ["a", "b,c"],
        ia: [1, 2],
        j: [1, "two"],
        jb: { a: { b: null } },
        ts: new Date("2026-01-02T03:04:05.678Z"),
        nothing: null,
        f: 1.5,
        u: "11111111-2222-3333-4444-555555555555",
        n: 1,
      });
      // A statement without rows, named, and its failure: the error Postgres gives, and the
      // transaction it was in rolled back.
      await reset();
      for (let i = 0; i < 4; i++) await db.query("INSERT INTO tx_probe VALUES ($1)", [10 + i]);
      const failed = await db
        .tx(async (q) => {
          await q.query("INSERT INTO tx_probe VALUES ($1)", [20]);
          await q.query("INSERT INTO tx_probe VALUES ($1)", [10]);
        })
        .then(
          () => "committed",
          (err: { code?: string }) => err.code,
        );
      assert.equal(failed, "23505");
      assert.deepEqual(await rows(), [10, 11, 12, 13]);
    });

    // Named, a transaction's first statement carries BEGIN (and its settings) and its last one
    // COMMIT, in one exchange on the embedded store as in one round trip on the server.
    test("named statements carry BEGIN, the generic-plan settings and COMMIT, and a failure among them rolls back", async () => {
      await reset();
      const setting = "SELECT current_setting('plan_cache_mode') AS mode, current_setting('enable_seqscan') AS seqscan";
      for (let i = 0; i < 4; i++) {
        const [inside] = await db.tx((q) => q.query<{ mode: string; seqscan: string }>(setting), { genericPlans: true });
        // A Citus coordinator cannot plan a cell's statements generically (BEGIN_GENERIC_CITUS).
        assert.deepEqual(inside, { mode: db.citus ? "auto" : "force_generic_plan", seqscan: "off" });
        const [plain] = await db.tx((q) => q.query<{ mode: string; seqscan: string }>(setting));
        assert.deepEqual(plain, { mode: "auto", seqscan: "on" });
      }
      const insert = "INSERT INTO tx_probe VALUES ($1) RETURNING n";
      for (let i = 0; i < 4; i++) assert.deepEqual(await db.tx((q) => q.queryAndCommit(insert, [30 + i])), [{ n: 30 + i }]);
      assert.deepEqual(await rows(), [30, 31, 32, 33]);
      // The last statement fails: nothing of the transaction stays, and the next one works.
      const failed = await db
        .tx(async (q) => {
          await q.query(insert, [40]);
          return q.queryAndCommit(insert, [30]);
        })
        .then(
          () => "committed",
          (err: { code?: string }) => err.code,
        );
      assert.equal(failed, "23505");
      // The first statement fails, with BEGIN in front of it.
      const first = await db
        .tx((q) => q.queryAndCommit(insert, [31]))
        .then(
          () => "committed",
          (err: { code?: string }) => err.code,
        );
      assert.equal(first, "23505");
      assert.deepEqual(await db.tx((q) => q.queryAndCommit(insert, [41])), [{ n: 41 }]);
      assert.deepEqual(await rows(), [30, 31, 32, 33, 41]);
    });

    test("a transaction whose function runs no statement through lastStatement still commits", async () => {
      await reset();
      await db.tx(async (q) => {
        await q.query("INSERT INTO tx_probe VALUES (50)");
        await lastStatement(q).query("SELECT 1");
      });
      await db.tx(async (q) => {
        await q.query("INSERT INTO tx_probe VALUES (51)");
        // nothing through lastStatement: Db.tx commits as usual
      });
      assert.deepEqual(await rows(), [50, 51]);
    });

    test("notify reaches every listener of its channel after the commit, and an unsubscribed one no more", async () => {
      const heard: string[] = [];
      const off = await db.listen("contract_probe", (payload) => heard.push(payload));
      await db.notify("contract_probe", "one");
      await waitFor(() => heard.length === 1, { timeoutMs: 5000 });
      assert.deepEqual(heard, ["one"]);
      await off();
      await db.notify("contract_probe", "two");
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(heard, ["one"]);
    });

    test("a deadlock, serialization failure or moved cell runs the transaction again, and listeners hear of each", async () => {
      await reset();
      const aborted: AbortedTransaction[] = [];
      const off = onAbortedTransaction((a) => aborted.push(a));
      try {
        let tries = 0;
        await withRetry(db, async (q) => {
          await q.query("INSERT INTO tx_probe VALUES (60)");
          tries++;
          if (tries === 1) throw Object.assign(new Error("deadlock detected"), { code: "40P01", detail: "Process 1 waits for …" });
          if (tries === 2) throw Object.assign(new Error("could not serialize access"), { code: "40001" });
          // What Citus raises when a cell moves to another node between two steps of a statement.
          if (tries === 3) throw Object.assign(new Error("Query could not find the intermediate result file"), { code: "CIINF" });
        });
        assert.equal(tries, 4);
        assert.deepEqual(await rows(), [60], "each aborted try rolled back");
        assert.deepEqual(
          aborted.map((a) => [a.reason, a.attempt, a.retried, a.detail]),
          [
            ["deadlock", 1, true, "Process 1 waits for …"],
            ["serialization", 2, true, null],
            ["cell_moved", 3, true, null],
          ],
        );
        // An error of another kind is not run again.
        const other = await withRetry(db, () => Promise.reject(Object.assign(new Error("no"), { code: "23505" }))).catch(
          (e: { code: string }) => e.code,
        );
        assert.equal(other, "23505");
        assert.equal(aborted.length, 3);
      } finally {
        off();
      }
    });

    // What lets a feature be proved on one store: every value comes back as the same JavaScript
    // value whichever driver read it, and a constraint's error names the same things.
    test("each type Sluice reads and writes comes back as the same value, and errors carry the same fields", async () => {
      const at = new Date("2026-03-29T01:30:00.123Z");
      const [row] = await db.query<Record<string, unknown>>(
        `SELECT $1::timestamptz AS ts, 9007199254740993::int8 AS big, count(*) AS n, 7::int4 AS i, 1.5::float8 AS f,
                2.25::numeric AS num, $2::jsonb AS jb, '{"a":1}'::json AS j, $3::text[] AS arr, ARRAY[1,2]::int4[] AS ints,
                true AS yes, NULL::text AS nothing, '00000000-0000-7000-8000-000000000000'::uuid AS id, $4::text AS t,
                '2026-01-01'::date AS d`,
        [at, JSON.stringify({ a: [1, { b: null }], é: "😀" }), ["x", "y,z"], "é😀\n"],
      );
      assert.deepEqual(row, {
        ts: at,
        big: "9007199254740993",
        n: "1",
        i: 7,
        f: 1.5,
        num: "2.25",
        jb: { a: [1, { b: null }], é: "😀" },
        j: { a: 1 },
        arr: ["x", "y,z"],
        ints: [1, 2],
        yes: true,
        nothing: null,
        id: "00000000-0000-7000-8000-000000000000",
        t: "é😀\n",
        d: new Date("2026-01-01T00:00:00Z"),
      });
      const err = (await db.query("INSERT INTO tx_probe VALUES (900), (900)").catch((e: unknown) => e)) as Record<string, unknown>;
      // Citus passes on the code, message and detail of an error raised on the node holding the
      // cell, not the constraint and table (which would name the shard's): Sluice reads neither.
      const names = db.citus ? { constraint: undefined, table: undefined } : { constraint: "tx_probe_pkey", table: "tx_probe" };
      assert.deepEqual(
        { code: err.code, constraint: err.constraint, table: err.table, detail: err.detail },
        { code: "23505", ...names, detail: "Key (n)=(900) already exists." },
      );
    });

    test("a statement's own error is the statement's, never 'the store is unavailable'", async () => {
      const err = await db.query("SELECT 1/0").catch((e: unknown) => e);
      assert.equal((err as { code?: string }).code, "22012");
      assert.equal(isStoreUnavailable(err), false);
      assert.equal(db.available, true);
    });
  });
}
