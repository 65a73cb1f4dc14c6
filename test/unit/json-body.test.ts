import { test } from "node:test";
import assert from "node:assert/strict";
import { drainLimitBytes, parseJson } from "../../src/api/body.js";
import { SluiceError } from "../../src/errors.js";
import { BOUNDS } from "../../src/policy/bounds.js";

// The one JSON parser every body goes through: what it refuses (and with which field and words)
// and what it lets through unchanged.

/** The SluiceError parseJson throws for `text`. */
function refusal(text: string): { code: string; details: { field: string; message: string }[]; message: string } {
  try {
    parseJson(text);
  } catch (err) {
    assert.ok(err instanceof SluiceError, String(err));
    return { code: err.code, details: (err.details ?? []) as { field: string; message: string }[], message: err.message };
  }
  assert.fail(`${text.slice(0, 80)} was taken`);
}

const nest = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth);

test("nesting up to the bound is taken; deeper is 422 naming the depth found and the limit", () => {
  const max = BOUNDS.body_depth.max;
  assert.equal(max, 256);
  assert.deepEqual(parseJson(`{"payload":${nest(max - 1)}}`), { payload: JSON.parse(nest(max - 1)) as unknown });
  for (const depth of [max + 1, 5_000, 20_000]) {
    const r = refusal(`{"payload":${nest(depth - 1)}}`);
    assert.equal(r.code, "SLUICE_VALIDATION_FAILED");
    assert.equal(r.details[0]!.field, "body");
    assert.match(r.details[0]!.message, new RegExp(`nests ${depth} levels .*at most ${max}`));
  }
  // Brackets inside strings are text, not nesting.
  const quoted = JSON.stringify({ s: "[".repeat(10_000), t: '\\"[[[' });
  assert.deepEqual(parseJson(quoted), JSON.parse(quoted));
});

test("NUL and lone surrogates are refused wherever they are, naming the field path and how to mend it", () => {
  const cases: [string, string, RegExp][] = [
    ['{"name":"a\\u0000b"}', "name", /NUL character \(\\u0000\).*remove it, or send the value encoded \(e\.g\. as base64\)/],
    ['{"payload":{"items":[{},{},{"name":"x\\ud800"}]}}', "payload.items[2].name", /unpaired UTF-16 surrogate \(\\ud800/],
    ['{"payload":["\\udc00 low first"]}', "payload[0]", /unpaired UTF-16 surrogate \(\\udc00/],
    ['{"payload":["\\udbff\\udbff\\udc00"]}', "payload[0]", /\\udbff/],
    ['"\\u0000"', "body", /NUL/],
    ['{"payload":{"a\\u0000b":1}}', "payload.a\\u0000b", /field name with the NUL character .*rename the field/],
    ['{"payload":{"k\\ud800":1}}', "payload.k\\ud800", /field name with an unpaired UTF-16 surrogate/],
  ];
  for (const [text, field, message] of cases) {
    const r = refusal(text);
    assert.equal(r.code, "SLUICE_VALIDATION_FAILED", text);
    assert.deepEqual(
      r.details.map((d) => d.field),
      [field],
      text,
    );
    assert.match(r.details[0]!.message, message, text);
  }
  // Every one is named (up to 20).
  const many = refusal(JSON.stringify({ a: "\u0000", b: ["ok", "\u0000"], c: { d: "\ud800" } }));
  assert.deepEqual(
    many.details.map((d) => d.field),
    ["a", "b[1]", "c.d"],
  );
  assert.equal(refusal(JSON.stringify(Array.from({ length: 50 }, () => "\u0000"))).details.length, 20);
});

test("whole characters, escaped or not, and other escapes pass unchanged", () => {
  for (const value of [{ emoji: "\ud83d\ude00", raw: "😀", accents: "café", tab: "a\tb", ascii: "\u0041" }, ["\u0001", "\u001f"]]) {
    const escaped = JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
    assert.ok(escaped.includes("\\u"));
    assert.deepEqual(parseJson(escaped), value);
    assert.deepEqual(parseJson(JSON.stringify(value)), value);
  }
  // A byte order mark is dropped, as JSON parsers do.
  assert.deepEqual(parseJson('\ufeff{"a":1}'), { a: 1 });
});

test("prototype keys are refused with the field named, escaped spellings included", () => {
  for (const [text, field] of [
    ['{"payload":{"__proto__":{"admin":true}}}', "payload.__proto__"],
    ['{"\\u005f_proto__":{}}', "__proto__"],
    ['{"payload":[{"constructor":{"prototype":{"x":1}}}]}', "payload[0].constructor.prototype"],
  ] as const) {
    const r = refusal(text);
    assert.equal(r.code, "SLUICE_VALIDATION_FAILED", text);
    assert.deepEqual(
      r.details.map((d) => d.field),
      [field],
      text,
    );
    assert.match(r.details[0]!.message, /rename/);
  }
  // A field named constructor that holds no prototype is an ordinary field.
  assert.deepEqual(parseJson('{"constructor":"Acme","c":{"constructor":{"name":"x"}}}'), {
    constructor: "Acme",
    c: { constructor: { name: "x" } },
  });
  assert.equal(Object.getPrototypeOf(parseJson('{"a":{"b":1}}')), Object.prototype);
});

test("text that is not JSON is 400 with the parser's reason", () => {
  for (const text of ['{"url": ', "{url: 1}", "[1,]", "nul"]) {
    const r = refusal(text);
    assert.equal(r.code, "SLUICE_REQUEST_MALFORMED_JSON", text);
    assert.match(r.message, /^The body is not valid JSON \(.+\)\. Check quoting and trailing commas\.$/);
  }
});

test("the drain bound is twice the limit, at least 16 MiB", () => {
  assert.equal(drainLimitBytes(1_048_576 + 65_536), 16 * 1_048_576);
  assert.equal(drainLimitBytes(32 * 1_048_576), 64 * 1_048_576);
});
