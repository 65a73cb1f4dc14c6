import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { nextAskAfterMs, SLOW_ANSWER_FACTOR } from "../../src/policy/slow-answer.js";

// The wait before a repeated read asks again (the dashboard's poller, the /metrics gauges).

const ms = fc.integer({ min: 0, max: 10_000_000 });

test("property: never sooner than everyMs; after a slow answer SLOW_ANSWER_FACTOR times its time, up to the cap", () => {
  fc.assert(
    fc.property(ms, ms, ms, (everyMs, tookMs, maxMs) => {
      const wait = nextAskAfterMs(everyMs, tookMs, maxMs);
      assert.ok(wait >= everyMs);
      assert.ok(wait <= Math.max(everyMs, maxMs));
      if (SLOW_ANSWER_FACTOR * tookMs <= maxMs) assert.ok(wait >= SLOW_ANSWER_FACTOR * tookMs);
      // So, below the cap, the asker's share of the time is at most 1 / (1 + factor).
      if (SLOW_ANSWER_FACTOR * tookMs <= maxMs && tookMs > 0) assert.ok(tookMs / (tookMs + wait) <= 1 / (1 + SLOW_ANSWER_FACTOR));
    }),
  );
});

test("property: a slower answer never means a sooner ask", () => {
  fc.assert(
    fc.property(ms, ms, ms, ms, (everyMs, a, b, maxMs) => {
      const [fast, slow] = a <= b ? [a, b] : [b, a];
      assert.ok(nextAskAfterMs(everyMs, fast, maxMs) <= nextAskAfterMs(everyMs, slow, maxMs));
    }),
  );
});

test("examples: the poller's 30 ms answer on a 10 ms beat waits 120 ms; a 2 s sample on a 5 s beat waits 8 s; a hung one the cap", () => {
  assert.equal(nextAskAfterMs(10, 30, 30_000), 120);
  assert.equal(nextAskAfterMs(5_000, 2_000, 60_000), 8_000);
  assert.equal(nextAskAfterMs(5_000, 30_000, 60_000), 60_000);
  assert.equal(nextAskAfterMs(5_000, 10, 60_000), 5_000);
});
