import { test } from "node:test";
import assert from "node:assert/strict";
import { Type, type TSchema } from "@sinclair/typebox";
import { compareInstants, fieldError, makeAjv, rangeText, usefulErrors, type AjvLikeError } from "../../src/api/field-errors.js";
import { EARLIEST_INSTANT, LATEST_INSTANT } from "../../src/policy/bounds.js";

// Ajv's errors become messages that name what a field takes, both ends of a range included, with
// numbers in plain digits. The errors come from real ajv instances configured as the API's.

/** The {field, message} pairs the API would answer for `value` against `schema`. */
function messages(schema: TSchema, value: unknown, opts: { coerce?: boolean; part?: string } = {}): Record<string, string> {
  const validate = makeAjv(opts.coerce ?? false).compile(schema);
  assert.equal(validate(value), false, `${JSON.stringify(value)} was valid`);
  const found = usefulErrors(validate.errors as AjvLikeError[]).map((e) => fieldError(e, opts.part ?? "body"));
  return Object.fromEntries(found.map((f) => [f.field, f.message]));
}

const Timeout = Type.Object({ timeout_seconds: Type.Integer({ minimum: 1, maximum: 60 }) });

test("a number out of range names both ends, and 'a whole number' for an integer", () => {
  assert.deepEqual(messages(Timeout, { timeout_seconds: 0 }), { timeout_seconds: "must be a whole number between 1 and 60" });
  assert.deepEqual(messages(Timeout, { timeout_seconds: 61 }), { timeout_seconds: "must be a whole number between 1 and 60" });
  const rate = Type.Object({ max_per_second: Type.Number({ minimum: 0.001, maximum: 100_000 }) });
  assert.deepEqual(messages(rate, { max_per_second: 0 }), { max_per_second: "must be a number between 0.001 and 100000" });
});

test("numbers are plain digits, never exponent notation", () => {
  const tiny = Type.Object({ x: Type.Number({ minimum: 1e-7, maximum: 1e9 }) });
  assert.deepEqual(messages(tiny, { x: 0 }), { x: "must be a number between 0.0000001 and 1000000000" });
});

test("exclusive and one-sided ranges say which end is allowed", () => {
  const s = Type.Object({
    a: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
    b: Type.Integer({ minimum: 1 }),
    c: Type.Number({ exclusiveMaximum: 10 }),
    d: Type.Number({ minimum: 0, exclusiveMaximum: 1 }),
  });
  assert.deepEqual(messages(s, { a: 0, b: 0, c: 10, d: 1 }), {
    a: "must be a number more than 0 and at most 1",
    b: "must be a whole number at least 1",
    c: "must be a number less than 10",
    d: "must be a number at least 0 and less than 1",
  });
  assert.equal(rangeText(null, null), null);
});

test("a wrong type on a bounded field names the range too", () => {
  assert.deepEqual(messages(Timeout, { timeout_seconds: "5" }), { timeout_seconds: "must be a whole number between 1 and 60" });
  assert.deepEqual(messages(Timeout, { timeout_seconds: 1.5 }), { timeout_seconds: "must be a whole number between 1 and 60" });
  const nullable = Type.Object({ n: Type.Union([Type.Integer({ minimum: 1, maximum: 1000 }), Type.Null()]) });
  assert.deepEqual(messages(nullable, { n: 0 }), { n: "must be a whole number between 1 and 1000" });
  assert.deepEqual(messages(nullable, { n: true }), { n: "must be a whole number between 1 and 1000" });
  const plain = Type.Object({ flag: Type.Boolean(), o: Type.Object({}) });
  assert.deepEqual(messages(plain, { flag: "yes", o: 1 }), { flag: "must be true or false", o: "must be an object" });
});

test("the query string's numbers (coerced from text) say the same, under query.", () => {
  const q = Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 1000 }) });
  assert.deepEqual(messages(q, { limit: "0" }, { coerce: true, part: "querystring" }), {
    "query.limit": "must be a whole number between 1 and 1000",
  });
  assert.deepEqual(messages(q, { limit: "abc" }, { coerce: true, part: "querystring" }), {
    "query.limit": "must be a whole number between 1 and 1000",
  });
});

test("array and string sizes name both ends", () => {
  const s = Type.Object({
    ids: Type.Array(Type.String(), { minItems: 1, maxItems: 100 }),
    tags: Type.Array(Type.String(), { maxItems: 2 }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    note: Type.String({ maxLength: 3 }),
  });
  assert.deepEqual(messages(s, { ids: [], tags: ["a", "b", "c"], name: "", note: "long" }), {
    ids: "must have between 1 and 100 items",
    tags: "must have at most 2 items",
    name: "must be between 1 and 200 characters long",
    note: "must be at most 3 characters long",
  });
  assert.deepEqual(messages(s, { ids: "dst_1", tags: [], name: 5, note: "" }), {
    ids: "must be an array of between 1 and 100 items",
    name: "must be a string between 1 and 200 characters long",
  });
});

const Instant = Type.String({ format: "date-time", formatMinimum: EARLIEST_INSTANT, formatMaximum: LATEST_INSTANT });

test("a date-time outside the instants Postgres and JavaScript hold says the range (formatMinimum/Maximum are active)", () => {
  const range = `must be a time between ${EARLIEST_INSTANT} and ${LATEST_INSTANT}`;
  assert.equal(range, "must be a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z");
  for (const coerce of [false, true]) {
    const s = Type.Object({ at: Instant });
    assert.deepEqual(messages(s, { at: "1969-12-31T23:59:59Z" }, { coerce }), { at: range });
    assert.deepEqual(messages(s, { at: "0000-01-01T00:00:00Z" }, { coerce }), { at: range });
    assert.deepEqual(messages(s, { at: "1970-01-01T00:30:00+01" }, { coerce }), { at: range }, "an hour-only offset");
    assert.deepEqual(messages(s, { at: "1969-12-31T23:59:60Z" }, { coerce }), { at: range }, "a leap second");
    assert.deepEqual(messages(s, { at: "9999-12-31T23:59:59-01:00" }, { coerce }), { at: range }, "year 10000 in UTC");
    assert.equal(makeAjv(coerce).compile(s)({ at: EARLIEST_INSTANT }), true, "the earliest instant itself");
    assert.equal(makeAjv(coerce).compile(s)({ at: "2024-05-01T12:00:00Z" }), true);
  }
  assert.deepEqual(messages(Type.Object({ at: Instant }), { at: "tomorrow" }), {
    at: `must be an RFC 3339 time (seconds 00–59, offset Z or ±hh:mm) between ${EARLIEST_INSTANT} and ${LATEST_INSTANT}, e.g. 2024-05-01T12:00:00Z`,
  });
});

test("compareInstants orders RFC 3339 instants, the epoch included", () => {
  assert.ok(compareInstants("1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z")! < 0);
  assert.equal(compareInstants("1970-01-01T00:00:00Z", "1970-01-01T01:00:00+01:00"), 0);
  assert.equal(compareInstants("1970-01-01T01:00:00+01", "1970-01-01T00:00:00z"), 0);
  assert.equal(compareInstants("not a time", "1970-01-01T00:00:00Z"), undefined);
});

test("an absent body says how to send one; the other messages keep their words", () => {
  assert.deepEqual(messages(Timeout, undefined), { body: "is required: send a JSON object with 'Content-Type: application/json'" });
  assert.deepEqual(messages(Timeout, null), { body: "is required: send a JSON object with 'Content-Type: application/json'" });
  assert.deepEqual(messages(Timeout, [1]), { body: "must be an object" });
  const s = Type.Object({ kind: Type.Union([Type.Literal("a"), Type.Literal("b")]), x: Type.Integer() }, { additionalProperties: false });
  const got = messages(s, { kind: "a", colour: 1 });
  assert.equal(got.x, "is required");
  assert.equal(got.colour, "is not a known field; check its spelling against the API reference");
});
