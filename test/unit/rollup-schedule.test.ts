import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { MINUTE_MS, ROLLUP_SCHEDULE as S, rollupDue, type LastRollup } from "../../src/policy/rollup-schedule.js";

// When the janitor rolls the dashboard's stats up (policy/rollup-schedule.ts): just after each
// minute ends, so that the stats endpoints count at most about a minute of attempts live.

const T0 = Date.UTC(2026, 10, 26, 12, 0, 0);
const ms = fc.integer({ min: 0, max: 10 * MINUTE_MS });
const last: fc.Arbitrary<LastRollup> = fc.record({
  triedMs: ms.map((x) => T0 + x),
  rolledUntilMs: fc.option(
    fc.integer({ min: 0, max: 10 }).map((m) => T0 + m * MINUTE_MS),
    { nil: null },
  ),
  behind: fc.boolean(),
});

test("the first pass is due at once; none within the least gap of a try, nor within a minute of a round left behind", () => {
  fc.assert(
    fc.property(last, ms, (l, dt) => {
      const now = l.triedMs + dt;
      assert.equal(rollupDue(now, null), true);
      if (dt < S.minGapMs || (l.behind && dt < MINUTE_MS)) assert.equal(rollupDue(now, l), false, JSON.stringify({ l, dt }));
    }),
  );
});

test("a pass is due once the minute after the rollups' end is over and settled — and, the gap kept, not before", () => {
  fc.assert(
    fc.property(last, ms, (l, dt) => {
      const now = l.triedMs + dt;
      if (dt < (l.behind ? MINUTE_MS : S.minGapMs)) return;
      const ended = l.rolledUntilMs === null || l.behind || now - S.settleMs >= l.rolledUntilMs + MINUTE_MS;
      assert.equal(rollupDue(now, l), ended, JSON.stringify({ l, dt }));
    }),
  );
});

test("run every tick, passes come within a tick and the settling time of each minute's end: the live tail stays under a minute and a few seconds", () => {
  // A pass started at `t` ends the rollups at the minute `t` is in (the store's clock = this one's).
  const tick = 2_000;
  let l: LastRollup | null = null;
  const passes: number[] = [];
  for (let t = T0 + 7_000; t < T0 + 30 * MINUTE_MS; t += tick) {
    if (!rollupDue(t, l)) continue;
    passes.push(t);
    l = { triedMs: t, rolledUntilMs: Math.floor(t / MINUTE_MS) * MINUTE_MS, behind: false };
  }
  assert.equal(passes.length, 30, "one a minute");
  for (const t of passes.slice(1)) assert.ok(t % MINUTE_MS >= S.settleMs && t % MINUTE_MS < S.settleMs + tick, new Date(t).toISOString());
});

test("a store whose clock is behind: a pass that does not move the rollups' end is tried again after the least gap, not every tick", () => {
  const l: LastRollup = { triedMs: T0 + S.settleMs, rolledUntilMs: T0 - MINUTE_MS, behind: false };
  assert.equal(rollupDue(T0 + S.settleMs + 2_000, l), false);
  assert.equal(rollupDue(T0 + S.settleMs + S.minGapMs, l), true);
});
