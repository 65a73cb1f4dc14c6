import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import type { Db } from "../../src/db/db.js";
import { BACKENDS } from "../helpers/sluice.js";
import { openTestStore } from "../helpers/db.js";

// Statements that run again and again are prepared once per connection (src/db/statements.ts).
// When a column they return is added, dropped or retyped — a migration by a newer Sluice while
// this one runs — Postgres refuses such a statement ("cached plan must not change result type",
// 0A000) on every connection that prepared it, until it is prepared again. The store does that
// itself: the statement, and a transaction it was part of, run again and succeed.

/** The server store's pool: more connections with the old statement than a statement has tries. */
const CONNECTIONS = 5;

for (const backend of BACKENDS) {
  describe(`a prepared statement whose result changed under it, on ${backend} Postgres`, () => {
    let db: Db;
    let close: () => Promise<void>;
    before(async () => {
      ({ db, close } = await openTestStore(backend, { poolSize: CONNECTIONS }));
      await db.exec("CREATE TABLE plan_probe (a int); INSERT INTO plan_probe VALUES (1)");
    });
    after(async () => close?.());

    const read = "SELECT * FROM plan_probe";
    /**
     * Prepares `read` (named from its third use) on every connection of the pool: each round holds
     * them all at once, in transactions that wait a little.
     */
    const prepareEverywhere = async () => {
      for (let i = 0; i < 4; i++) {
        await Promise.all(
          Array.from({ length: CONNECTIONS }, () =>
            db.tx(async (q) => {
              await q.query("SELECT pg_sleep(0.02)");
              return q.query(read);
            }),
          ),
        );
      }
    };

    test("runs again, prepared anew, in and outside transactions, on every connection", async () => {
      await prepareEverywhere();
      await db.exec("ALTER TABLE plan_probe ADD COLUMN b int DEFAULT 2");
      // One at a time: each would be handed a connection that prepared it before the change.
      for (let i = 0; i < CONNECTIONS; i++) {
        assert.deepEqual(await db.query(read), [{ a: 1, b: 2 }]);
        assert.deepEqual(await db.tx((q) => q.query(read)), [{ a: 1, b: 2 }]);
      }

      // A column retyped under the statements, and a transaction that writes before it reads:
      // its write is not applied twice.
      await prepareEverywhere();
      await db.exec("ALTER TABLE plan_probe ALTER COLUMN b TYPE text");
      const [written] = await Promise.all([
        db.tx(async (q) => {
          await q.query("INSERT INTO plan_probe VALUES (2, 'x')");
          return q.query(read);
        }),
        db.query(read),
      ]);
      assert.deepEqual(written, [
        { a: 1, b: "2" },
        { a: 2, b: "x" },
      ]);
      assert.deepEqual(await db.query(read), written);
    });
  });
}
