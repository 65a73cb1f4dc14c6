import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  AHEAD_WIDTHS,
  MAX_CHANGES_PER_ROUND,
  PARTITION_WIDTHS_MS,
  partitionName,
  partitionWidthMs,
  planPartitions,
  type TimePartition,
} from "../../src/policy/time-partitions.js";

// The time partitions of attempts over every retention SLUICE_RETENTION_HOURS admits (a minute to
// ten years) and any clock: ranges never overlap, reach ahead of the clock, drop only what has
// passed retention, and stay few.

const HOUR = 3_600_000;
const RETENTION_HOURS = fc.oneof(
  fc.constantFrom(1 / 60, 10 / 60, 1, 168, 24 * 3650),
  fc.double({ min: 1 / 60, max: 24 * 3650, noNaN: true }),
);
const NOW_MS = fc.integer({ min: Date.parse("2000-01-01"), max: Date.parse("2100-01-01") });

/** Rounds every `stepMs` from `startMs` to `endMs`, applying each plan as the janitor would. */
function run(retentionHours: number, startMs: number, stepMs: number, rounds: number, initial: TimePartition[] = []) {
  let parts = [...initial];
  const plans = [];
  for (let i = 0; i < rounds; i++) {
    const nowMs = startMs + i * stepMs;
    const plan = planPartitions("attempts", parts, nowMs, retentionHours);
    plans.push({ nowMs, plan });
    parts = parts.filter((p) => !plan.drop.includes(p.name)).concat(plan.create);
  }
  return { parts, plans };
}

const overlapFree = (parts: readonly TimePartition[]) => {
  const sorted = [...parts].sort((a, b) => (a.fromMs ?? -Infinity) - (b.fromMs ?? -Infinity));
  for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i - 1]!.toMs <= sorted[i]!.fromMs!, JSON.stringify(sorted.slice(i - 1, i + 1)));
};

describe("time partitions of attempts", () => {
  test("the width is the ladder's widest no wider than a quarter of retention", () => {
    assert.equal(partitionWidthMs(1 / 60), 60_000); // a minute's retention: the narrowest
    assert.equal(partitionWidthMs(10 / 60), 2 * 60_000);
    assert.equal(partitionWidthMs(168), 24 * HOUR);
    assert.equal(partitionWidthMs(24 * 3650), 365 * 24 * HOUR);
    fc.assert(
      fc.property(RETENTION_HOURS, (h) => {
        const w = partitionWidthMs(h);
        assert.ok(PARTITION_WIDTHS_MS.includes(w));
        assert.ok(w === PARTITION_WIDTHS_MS[0] || w <= (h * HOUR) / 4);
      }),
    );
  });

  test("names are the range's start in UTC, and tell ranges apart", () => {
    assert.equal(partitionName("attempts", Date.parse("2026-12-07T20:30:00Z")), "attempts_20261207t203000");
    assert.match(partitionName("attempts", Date.parse("1999-01-02T03:04:05.678Z")), /^attempts_19990102t030405$/);
  });

  test("a fresh store gets the range now falls in and AHEAD_WIDTHS widths more, nothing dropped", () => {
    const now = Date.parse("2026-12-07T20:31:10Z");
    const plan = planPartitions("attempts", [], now, 10 / 60); // 2-minute partitions
    assert.deepEqual(plan.drop, []);
    assert.deepEqual(
      plan.create.map((p) => [p.name, new Date(p.fromMs).toISOString(), new Date(p.toMs).toISOString()]),
      [
        ["attempts_20261207t203000", "2026-12-07T20:30:00.000Z", "2026-12-07T20:32:00.000Z"],
        ["attempts_20261207t203200", "2026-12-07T20:32:00.000Z", "2026-12-07T20:34:00.000Z"],
        ["attempts_20261207t203400", "2026-12-07T20:34:00.000Z", "2026-12-07T20:36:00.000Z"],
      ],
    );
  });

  test("the table from before partitioning (open below) is dropped once its end has passed retention", () => {
    const end = Date.parse("2026-12-01T00:00:00Z");
    const legacy: TimePartition = { name: "attempts_legacy", fromMs: null, toMs: end };
    assert.deepEqual(planPartitions("attempts", [legacy], end + 168 * HOUR - 1, 168).drop, []);
    assert.deepEqual(planPartitions("attempts", [legacy], end + 168 * HOUR, 168).drop, ["attempts_legacy"]);
    // And the first range starts where it ended, not on the width's multiple before it.
    assert.equal(planPartitions("attempts", [legacy], end + 1000, 168).create[0]!.fromMs, end);
  });

  test("rounds at any pace keep ranges apart, reach ahead of the clock, drop only what passed retention, and stay few", () => {
    fc.assert(
      fc.property(
        RETENTION_HOURS,
        NOW_MS,
        fc.double({ min: 0.01, max: 3, noNaN: true }), // rounds a fraction of a width to three widths apart
        fc.integer({ min: 1, max: 60 }),
        (h, start, stepWidths, rounds) => {
          const width = partitionWidthMs(h);
          const { parts, plans } = run(h, start, Math.max(1, Math.round(stepWidths * width)), rounds);
          overlapFree(parts);
          for (const { nowMs, plan } of plans) {
            assert.ok(plan.create.length <= MAX_CHANGES_PER_ROUND && plan.drop.length <= MAX_CHANGES_PER_ROUND);
            for (const c of plan.create) assert.ok(c.fromMs < c.toMs && c.toMs - c.fromMs <= width, JSON.stringify(c));
            for (const c of plan.create) assert.ok(c.toMs > nowMs - width, "nothing made for time long past");
          }
          const last = plans[plans.length - 1]!;
          const end = Math.max(...parts.map((p) => p.toMs));
          assert.ok(end >= last.nowMs + AHEAD_WIDTHS * width, "the ranges reach ahead of the clock");
          // Kept: retention's worth, a width it has not yet passed all of, and those ahead.
          const kept = parts.filter((p) => p.toMs > last.nowMs - h * HOUR).length;
          assert.equal(kept, parts.length, "everything past retention was dropped");
          // From a width before retention's cutoff to AHEAD_WIDTHS + 1 widths past the clock.
          assert.ok(parts.length <= Math.ceil((h * HOUR) / width) + AHEAD_WIDTHS + 3, `${parts.length}`);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("a round after a long stop starts at the clock, leaving the time between to the default partition", () => {
    const h = 10 / 60;
    const { parts } = run(h, Date.parse("2026-12-07T00:00:00Z"), 60_000, 3);
    const later = Date.parse("2026-12-09T00:00:30Z");
    const plan = planPartitions("attempts", parts, later, h);
    assert.equal(plan.create[0]!.fromMs, Date.parse("2026-12-09T00:00:00Z"));
    assert.equal(plan.create.length, AHEAD_WIDTHS + 1);
    assert.deepEqual(plan.drop.sort(), parts.map((p) => p.name).sort());
  });
});
