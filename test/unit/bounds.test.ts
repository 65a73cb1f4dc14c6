import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { BOUNDS, EARLIEST_MS, LATEST_MS, describeBound, formatNumber, withinBound } from "../../src/policy/bounds.js";
import { jsonDepth } from "../../src/policy/json-depth.js";

// The one table of what the API takes (src/policy/bounds.ts): docs/api.md shows it row by row, and
// each end means something for the figures derived from it.

test("docs/api.md's Bounds table lists exactly BOUNDS", () => {
  const text = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
  const section = text.slice(text.indexOf("### Bounds"), text.indexOf("## API keys"));
  const rows = section.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| field") && !l.startsWith("| ---"));
  const expected = Object.values(BOUNDS).map(
    (b) => `| ${b.fields} | ${formatNumber(b.min)} – ${formatNumber(b.max)} | ${b.unit}${b.integer ? ", whole" : ""} | ${b.why} |`,
  );
  assert.deepEqual(rows, expected);
});

test("every bound is a finite range with min ≤ max, whole where counted", () => {
  for (const [name, b] of Object.entries(BOUNDS)) {
    assert.ok(Number.isFinite(b.min) && Number.isFinite(b.max) && b.min <= b.max, name);
    if (b.integer) assert.ok(Number.isSafeInteger(b.min) && Number.isSafeInteger(b.max), name);
    assert.ok(withinBound(b, b.min) && withinBound(b, b.max), name);
    for (const outside of [b.min - 1, b.max + 1, Number.NaN, Infinity, -Infinity, String(b.min)]) {
      assert.ok(!withinBound(b, outside), `${name}: ${String(outside)}`);
    }
    if (b.integer) assert.ok(!withinBound(b, b.min + 0.5), name);
  }
  assert.ok(EARLIEST_MS === 0 && LATEST_MS === Date.UTC(9999, 11, 31, 23, 59, 59));
});

test("the slowest admitted rates wait a finite, sensible time for a token", () => {
  // A token at the slowest per-second rate comes within 1,000 s; at the slowest per-minute rate within a day.
  assert.ok(1 / BOUNDS.rate_per_second.min <= 1000);
  assert.ok(60 / BOUNDS.rate_per_minute.min <= 86_400 * 1000);
  assert.ok(Number.isFinite(Math.ceil(1 / (BOUNDS.rate_per_minute.min / 60_000))));
});

test("messages name ranges in plain digits", () => {
  assert.equal(describeBound(BOUNDS.timeout_seconds), "a whole number between 1 and 60 (s)");
  assert.equal(describeBound(BOUNDS.rate_per_second), "between 0.001 and 100000 (per second)");
  for (const [n, shown] of [
    [1e-7, "0.0000001"],
    [1e21, "1000000000000000000000"],
    [0.0010000000000000002, "0.0010000000000000002"],
  ] as const) {
    assert.equal(formatNumber(n), shown);
  }
});

test("jsonDepth counts nesting outside strings, and stops reading past its bound", () => {
  assert.equal(jsonDepth("1"), 0);
  assert.equal(jsonDepth('{"a": [1, {"b": []}]}'), 4);
  assert.equal(jsonDepth('"[[[[" '), 0);
  assert.equal(jsonDepth('["\\"[[", {"x": "\\\\"}, [[]]]'), 3);
  const deep = "[".repeat(100_000) + "]".repeat(100_000);
  assert.equal(jsonDepth(deep, 256), 257);
  assert.equal(jsonDepth(deep), 100_000);
});
