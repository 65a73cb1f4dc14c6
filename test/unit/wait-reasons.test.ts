import { test } from "node:test";
import assert from "node:assert/strict";
import { explainWait, type WaitFacts } from "../../src/policy/wait-reasons.js";
import { parseTraceContext } from "../../src/policy/trace-context.js";

// What an attempt's trace says it waited for (docs/tracing.md), and which caller contexts count.

const T0 = Date.parse("2026-03-02T10:00:00Z"); // a Monday
const S = 1000;
const facts = (f: Partial<WaitFacts>): WaitFacts => ({
  fromMs: T0,
  sendMs: T0 + 60 * S,
  deliverAtMs: null,
  retryAtMs: null,
  throttledUntilMs: null,
  pause: null,
  quiet: null,
  rateLimited: false,
  ordered: false,
  ...f,
});
const named = (f: Partial<WaitFacts>) => explainWait(facts(f)).map((s) => [s.reason, (s.fromMs - T0) / S, (s.untilMs - T0) / S]);

test("a short wait nothing explains is not named; a long one is a send slot, or tokens", () => {
  assert.deepEqual(named({ sendMs: T0 + 200 }), []);
  assert.deepEqual(named({}), [["concurrency", 0, 60]]);
  assert.deepEqual(named({ ordered: true }), [["ordering", 0, 60]]);
  assert.deepEqual(named({ rateLimited: true }), [["rate_limited", 0, 60]]);
});

test("a throttle hold covers the wait up to its end; the rest is named apart", () => {
  assert.deepEqual(named({ throttledUntilMs: T0 + 40 * S }), [
    ["throttled", 0, 40],
    ["concurrency", 40, 60],
  ]);
  // A hold that ended before the wait began held nothing.
  assert.deepEqual(named({ throttledUntilMs: T0 - S, sendMs: T0 + 500 }), []);
  // Past the send: clipped to it.
  assert.deepEqual(named({ throttledUntilMs: T0 + 600 * S }), [["throttled", 0, 60]]);
});

test("holds overlap in hold_reason's order: paused, throttled, quiet hours, scheduled, retry", () => {
  assert.deepEqual(
    named({
      sendMs: T0 + 100 * S,
      deliverAtMs: T0 + 30 * S,
      pause: { fromMs: T0 + 20 * S, untilMs: T0 + 50 * S },
      throttledUntilMs: T0 + 70 * S,
    }),
    [
      ["throttled", 0, 20],
      ["paused", 20, 50],
      ["throttled", 50, 70],
      ["concurrency", 70, 100],
    ],
  );
  assert.deepEqual(named({ retryAtMs: T0 + 30 * S, sendMs: T0 + 30.2 * S }), [["retry_scheduled", 0, 30]]);
});

test("quiet hours: the windows that held the delivery, in the destination's zone", () => {
  // Quiet 10:00–10:30 UTC; the wait runs 09:50–11:00.
  const schedule = { timezone: "UTC", quiet_start: "10:00", quiet_end: "10:30" };
  const f = { fromMs: T0 - 600 * S, sendMs: T0 + 3600 * S, quiet: { schedule, eventType: "order.created" } };
  assert.deepEqual(
    explainWait(facts(f)).map((s) => [
      s.reason,
      new Date(s.fromMs).toISOString().slice(11, 16),
      new Date(s.untilMs).toISOString().slice(11, 16),
    ]),
    [
      ["concurrency", "09:50", "10:00"],
      ["quiet_hours", "10:00", "10:30"],
      ["concurrency", "10:30", "11:00"],
    ],
  );
  // A type the schedule lets through was not held by it.
  const bypass = { ...schedule, bypass_event_types: ["order.*"] };
  assert.ok(!explainWait(facts({ ...f, quiet: { schedule: bypass, eventType: "order.created" } })).some((s) => s.reason === "quiet_hours"));
});

test("a caller's traceparent is kept only when valid; tracestate travels with it, cut between members", () => {
  const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  assert.deepEqual(parseTraceContext(tp, undefined), { traceparent: tp });
  assert.deepEqual(parseTraceContext(tp.toUpperCase(), "a=1, b=2"), { traceparent: tp, tracestate: "a=1,b=2" });
  assert.deepEqual(parseTraceContext(tp, ["a=1", "b=2"]), { traceparent: tp, tracestate: "a=1,b=2" });
  // A later version may add fields: read as version 00.
  assert.deepEqual(parseTraceContext(`01${tp.slice(2)}-extra`, undefined), { traceparent: tp });
  for (const bad of [
    `${tp}-extra`,
    `ff${tp.slice(2)}`,
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",
    "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
    "nonsense",
    "",
  ]) {
    assert.equal(parseTraceContext(bad, "a=1"), undefined, bad);
  }
  assert.equal(parseTraceContext(["x", "y"], undefined), undefined);
  const long = Array.from({ length: 40 }, (_, i) => `k${i}=${"v".repeat(20)}`).join(",");
  const cut = parseTraceContext(tp, long)!.tracestate!;
  assert.ok(cut.length <= 512 && long.startsWith(cut) && !cut.endsWith(","));
  assert.equal(parseTraceContext(tp, "a=\u0001")?.tracestate, undefined, "a control character is not sent on");
});
