import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Db } from "../../src/db/db.js";
import { idAt } from "../../src/db/queries/retention.js";
import { newId } from "../../src/ids.js";
import { BACKENDS } from "../helpers/sluice.js";
import { openTestStore } from "../helpers/db.js";

// Retention finds old events by id (migration 0016): idAt's SQL must build exactly the prefix that
// src/ids.ts puts on an id made at that moment, and ids must sort by time against it in the
// store's own comparison. If either side's format changed, old events would be kept for ever or
// new ones pruned.

for (const backend of BACKENDS) {
  describe(`ids as time bounds on ${backend} Postgres`, () => {
    let db: Db;
    let close: () => Promise<void>;
    before(async () => ({ db, close } = await openTestStore(backend)));
    after(async () => close?.());

    test("idAt gives the id prefix of a moment, for any moment from 1970 to 10889", async () => {
      // 12 hex digits of milliseconds last until the year 10889.
      const moments = fc.sample(fc.integer({ min: 0, max: 0xffff_ffff_ffff }), 200);
      const rows = await db.query<{ ms: string; bound: string }>(
        `SELECT ms::text, ${idAt("evt", "to_timestamp(ms / 1000.0)")} AS bound FROM unnest($1::bigint[]) AS ms`,
        [moments.map(String)],
      );
      for (const { ms, bound } of rows) assert.equal(bound, `evt_${Number(ms).toString(16).padStart(12, "0")}`);
    });

    test("an id made now sorts after the bound of a moment before and before the bound of a moment after", async () => {
      const id = newId("evt");
      const [r] = await db.query<{ after_before: boolean; before_after: boolean }>(
        `SELECT $1::text COLLATE "C" > ${idAt("evt", "now() - interval '1 second'")} AS after_before,
                $1::text COLLATE "C" < ${idAt("evt", "now() + interval '1 second'")} AS before_after`,
        [id],
      );
      assert.deepEqual(r, { after_before: true, before_after: true });
    });
  });
}
