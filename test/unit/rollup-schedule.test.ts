import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { MINUTE_MS, ROLLUP_SCHEDULE as S, rollupDue, type LastRollup } from "../../src/policy/rollup-schedule.js";

// When the janitor rolls the dashboard's stats up (policy/rollup-schedule.ts): counts every few
// seconds, so that the stats endpoints count only a few seconds of attempts live, and the minute's
// tasks just after each minute ends.

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);
const ms = fc.integer({ min: 0, max: 10 * MINUTE_MS });
const last: fc.Arbitrary<LastRollup> = fc
  .record({
    triedMs: ms.map((x) => T0 + x),
    rolledUntilMs: fc.option(
      fc.integer({ min: 0, max: 10 }).map((m) => T0 + m * MINUTE_MS),
      { nil: null },
    ),
    behind: fc.boolean(),
    countedAfter: fc.integer({ min: 0, max: 2 * MINUTE_MS }),
  })
  .map(({ countedAfter, ...l }) => ({ ...l, countedMs: l.triedMs + countedAfter }));

test("the first pass is due at once with the minute's tasks; after a round left behind, nothing for a minute", () => {
  fc.assert(
    fc.property(last, ms, (l, dt) => {
      const now = l.countedMs + dt;
      assert.equal(rollupDue(now, null), "minute");
      if (l.behind) assert.equal(rollupDue(now, l), dt < MINUTE_MS ? null : "minute", JSON.stringify({ l, dt }));
    }),
  );
});

test("the minute's tasks are due once the minute after their last is over and settled, the gap kept; else a count every few seconds", () => {
  fc.assert(
    fc.property(
      last.filter((l) => !l.behind),
      ms,
      (l, dt) => {
        const now = l.countedMs + dt;
        const minute = now - l.triedMs >= S.minGapMs && (l.rolledUntilMs === null || now - S.settleMs >= l.rolledUntilMs + MINUTE_MS);
        const expected = minute ? "minute" : dt >= S.countEveryMs ? "count" : null;
        assert.equal(rollupDue(now, l), expected, JSON.stringify({ l, dt }));
      },
    ),
  );
});

test("run every tick: the minute's tasks come within a tick of each minute's end and settling, counts every few seconds between", () => {
  // A pass started at `t` runs the tasks of the minute `t` is in (the store's clock = this one's).
  const tick = 1_000;
  let l: LastRollup | null = null;
  const minutes: number[] = [];
  const passes: number[] = [];
  for (let t = T0 + 7_000; t < T0 + 30 * MINUTE_MS; t += tick) {
    const due = rollupDue(t, l);
    if (due === null) continue;
    passes.push(t);
    if (due === "minute") minutes.push(t);
    l = {
      triedMs: due === "minute" ? t : l!.triedMs,
      rolledUntilMs: due === "minute" ? Math.floor(t / MINUTE_MS) * MINUTE_MS : l!.rolledUntilMs,
      behind: false,
      countedMs: t,
    };
  }
  assert.equal(minutes.length, 30, "one a minute");
  for (const t of minutes.slice(1)) assert.ok(t % MINUTE_MS >= S.settleMs && t % MINUTE_MS < S.settleMs + tick, new Date(t).toISOString());
  for (let i = 1; i < passes.length; i++) {
    const gap = passes[i]! - passes[i - 1]!;
    assert.ok(gap <= S.countEveryMs, `no gap over ${S.countEveryMs} ms: ${gap}`);
  }
});

test("a store whose clock is behind: the minute's tasks that sampled the minute before are tried again after the least gap, counts meanwhile", () => {
  const l: LastRollup = { triedMs: T0 + S.settleMs, rolledUntilMs: T0 - MINUTE_MS, behind: false, countedMs: T0 + S.settleMs };
  assert.equal(rollupDue(T0 + S.settleMs + 2_000, l), null);
  assert.equal(rollupDue(T0 + S.settleMs + S.countEveryMs, l), "count");
  assert.equal(rollupDue(T0 + S.settleMs + S.minGapMs, l), "minute");
});
