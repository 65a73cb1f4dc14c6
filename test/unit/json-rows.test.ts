import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { jsonRows } from "../../src/db/json-rows.js";

// jsonRows writes batches for json_to_recordset: what it writes must read back as the rows, with
// the raw keys' JSON texts in place (not encoded again) and undefined values left out, as
// JSON.stringify leaves them out.

const value = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const row = fc.record(
  {
    id: fc.string({ unit: "grapheme" }),
    n: value,
    at: fc.oneof(fc.constant(null), fc.date({ noInvalidDate: true })),
    payload: fc.oneof(
      fc.constant(null),
      fc.constant(undefined),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    ),
    'odd "key"\n': fc.oneof(value, fc.constant(undefined)),
  },
  { requiredKeys: ["id", "n", "at"] },
);

test("a batch with raw JSON values reads back as its rows, the raw texts parsed once", () => {
  fc.assert(
    fc.property(fc.array(row, { maxLength: 20 }), (rows) => {
      const expected = rows.map((r) => {
        const o = JSON.parse(JSON.stringify(r)) as Record<string, unknown>;
        if (typeof r.payload === "string") o.payload = JSON.parse(r.payload);
        return o;
      });
      assert.deepEqual(JSON.parse(jsonRows(rows, ["payload"])), expected);
    }),
  );
});

test("without raw keys it is JSON.stringify", () => {
  fc.assert(fc.property(fc.array(row), (rows) => assert.equal(jsonRows(rows), JSON.stringify(rows))));
});
