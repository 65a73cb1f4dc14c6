import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { StatementNames, isStaleShape } from "../../src/db/statements.js";
import { limitFor, recordset } from "../../src/db/json-rows.js";

test("a statement is named from its third use, and keeps its name", () => {
  const names = new StatementNames();
  assert.equal(names.config("SELECT 1", []).name, undefined);
  assert.equal(names.config("SELECT 1", []).name, undefined);
  const third = names.config("SELECT $1::int", [1]);
  assert.equal(third.name, undefined, "another text counts apart");
  const named = names.config("SELECT 1", []);
  assert.equal(typeof named.name, "string");
  assert.equal(names.config("SELECT 1", []).name, named.name);
  assert.deepEqual(names.config("SELECT 1", [7]).values, [7], "the values travel with the name");
});

test("distinct texts get distinct names, and no more than the cap", () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 40 }), fc.nat({ max: 20 }), (texts, max) => {
      const names = new StatementNames(max);
      const given = new Map<string, string>();
      for (let round = 0; round < 4; round++) {
        for (const t of texts) {
          const name = names.config(t, []).name;
          if (name === undefined) continue;
          assert.equal(given.get(t) ?? name, name, "a text's name never changes");
          given.set(t, name);
        }
      }
      assert.equal(new Set(given.values()).size, given.size, "no two texts share a name");
      assert.ok(given.size <= max);
      assert.equal(given.size, Math.min(max, texts.length));
    }),
  );
});

test("recordset's LIMIT never cuts a row, is within 2× of the count, and takes few texts", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 100_000 }), (n) => {
      const limit = limitFor(n);
      assert.ok(limit >= Math.max(1, n));
      assert.ok(limit < 2 * Math.max(1, n));
    }),
  );
  const texts = new Set(Array.from({ length: 1000 }, (_, i) => recordset("$1", "id text", i + 1)));
  assert.equal(texts.size, 11, "1 … 1,000 rows: LIMIT 1, 2, 4, …, 1024");
});

test("only a stale plan's feature_not_supported counts as a stale shape", () => {
  const stale = { code: "0A000", routine: "RevalidateCachedQuery", message: "cached plan must not change result type" };
  assert.equal(isStaleShape(stale), true);
  assert.equal(isStaleShape({ ...stale, message: "le plan en cache ne doit pas modifier le type en résultat" }), true, "any language");
  assert.equal(isStaleShape({ code: "0A000" }), true, "no routine sent: the code decides");
  assert.equal(isStaleShape({ code: "0A000", routine: "transformLockingClause" }), false, "another feature not supported");
  assert.equal(isStaleShape({ code: "23505", routine: "RevalidateCachedQuery" }), false);
  assert.equal(isStaleShape(null), false);
  assert.equal(isStaleShape("0A000"), false);
});
