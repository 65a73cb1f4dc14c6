import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  paceBounds,
  initialPace,
  adaptPace,
  paceWithin,
  pacedRateLimit,
  effectiveLimits,
  ratePerSecond,
  PACE,
  type PaceBounds,
  type PaceSignal,
  type PaceState,
} from "../../src/policy/adaptive-pace.js";
import { grantBuckets } from "../../src/policy/token-bucket.js";
import {
  adaptiveConfig,
  assertAllFinite,
  bound,
  clockStepMs,
  instantMs,
  outsideCount,
  outsideMeasure,
  rateLimitOrNull,
  statusCode,
  stepClock,
} from "../helpers/admitted.js";

// Adaptive pace over every config the API admits, any answers (latencies up to MAX_SAFE_INTEGER
// ms, starts before or after now) and clocks that step back: the pace stays a finite rate inside
// [minRate, maxRate] and a whole concurrency inside [1, max_concurrency].

const bounds = fc
  .record({ cfg: adaptiveConfig, rl: rateLimitOrNull, maxConcurrency: bound("max_concurrency") })
  .map(({ cfg, rl, maxConcurrency }) => ({ cfg: { ...cfg, enabled: true }, rl, maxConcurrency }));

/** An answer, its start given relative to the write-back's clock (a few minutes before it, or a little after), or as any instant. */
const answer = fc.record({
  kind: fc.constantFrom<PaceSignal["kind"]>("success", "success", "success", "throttled", "gone", "failure"),
  statusCode,
  errorClass: fc.constantFrom(null, "timeout", "connection", "http_5xx", "http_429"),
  start: fc.oneof(
    fc.integer({ min: -120_000, max: 5_000 }).map((rel) => ({ rel })),
    instantMs.map((abs) => ({ abs })),
  ),
  latencyMs: fc.oneof(fc.integer({ min: 0, max: 5_000 }), outsideMeasure),
});
type Answer = typeof answer extends fc.Arbitrary<infer T> ? T : never;

const signalsAt = (answers: Answer[], nowMs: number): PaceSignal[] =>
  answers.map(({ start, ...a }) => ({ ...a, startedAtMs: "abs" in start ? start.abs : stepClock(nowMs, start.rel) }));

/** A run of write-backs: each a clock step and a batch of answers. */
const batches = fc.array(fc.record({ step: clockStepMs, answers: fc.array(answer, { maxLength: 12 }) }), { minLength: 1, maxLength: 25 });

function checkState(s: PaceState, b: PaceBounds, what: string): void {
  assertAllFinite(s, what);
  assert.ok(s.rate >= b.minRate && s.rate <= b.maxRate, `${what}: rate ${s.rate} outside [${b.minRate}, ${b.maxRate}]`);
  assert.ok(
    Number.isInteger(s.concurrency) && s.concurrency >= 1 && s.concurrency <= b.maxConcurrency,
    `${what}: concurrency ${s.concurrency}`,
  );
  const paced = pacedRateLimit(null, s);
  assert.ok(Number.isInteger(paced.burst_capacity) && paced.burst_capacity! >= 1, `burst ${paced.burst_capacity}`);
  for (const bucket of grantBuckets(paced, 0)) assert.ok(bucket.ratePerMs > 0 && Number.isFinite(bucket.ratePerMs) && bucket.capacity >= 1);
}

/** A pace_state as the store could hand it back: any finite JSON numbers, nulls where allowed. */
const storedPace: fc.Arbitrary<PaceState> = fc.record({
  rate: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.double({ min: 0, max: 1e6, noNaN: true })),
  concurrency: fc.oneof(outsideCount, fc.integer()),
  probing: fc.boolean(),
  ceiling: fc.option(fc.double({ min: 0, max: 1e6, noNaN: true }), { nil: null }),
  confirmed: fc.option(fc.boolean(), { nil: undefined }),
  baselineMs: fc.option(outsideMeasure, { nil: null }),
  baselineAtMs: fc.option(instantMs, { nil: null }),
  recentMs: fc.option(outsideMeasure, { nil: null }),
  recentN: outsideCount,
  slowSinceMs: fc.option(instantMs, { nil: null }),
  windowStartMs: instantMs,
  windowOk: outsideCount,
  cutAtMs: fc.option(instantMs, { nil: null }),
  changedAtMs: instantMs,
  reason: fc.constant("stored"),
});

describe("adaptive pace over every admitted config", () => {
  test("property: bounds are finite, positive and ordered, never above the config's max or the fixed rate limit", () => {
    fc.assert(
      fc.property(bounds, ({ cfg, rl, maxConcurrency }) => {
        const b = paceBounds(cfg, rl, maxConcurrency);
        assertAllFinite(b, "bounds");
        assert.ok(b.minRate > 0 && b.minRate <= b.maxRate);
        assert.ok(b.maxRate <= (cfg.max_per_second ?? PACE.defaultMaxPerSecond));
        const fixed = ratePerSecond(rl);
        if (fixed !== null) assert.ok(b.maxRate <= fixed);
      }),
      { numRuns: 500 },
    );
  });

  test("property: any run of answers at any clock keeps the pace finite and within its bounds", () => {
    fc.assert(
      fc.property(bounds, instantMs, batches, ({ cfg, rl, maxConcurrency }, startMs, run) => {
        const b = paceBounds(cfg, rl, maxConcurrency);
        let nowMs = startMs;
        let state: PaceState | null = null;
        checkState(initialPace(b, nowMs), b, "initial");
        for (const { step, answers } of run) {
          nowMs = stepClock(nowMs, step);
          const { state: next, change } = adaptPace(state, b, signalsAt(answers, nowMs), nowMs);
          checkState(next, b, "adapted");
          if (change) {
            assertAllFinite(change, "change");
            assert.ok(change.direction === "down" ? change.to < change.from : change.to > change.from, JSON.stringify(change));
          }
          state = next;
        }
      }),
      { numRuns: 200 },
    );
  });

  test("property: a stored pace of any finite numbers is brought inside the bounds, and adapts from there", () => {
    fc.assert(
      fc.property(
        bounds,
        storedPace,
        instantMs,
        fc.array(answer, { maxLength: 8 }),
        ({ cfg, rl, maxConcurrency }, stored, nowMs, answers) => {
          const b = paceBounds(cfg, rl, maxConcurrency);
          checkState(paceWithin(stored, b, nowMs), b, "within");
          checkState(adaptPace(stored, b, signalsAt(answers, nowMs), nowMs).state, b, "adapted");
        },
      ),
      { numRuns: 300 },
    );
  });

  test("property: effective limits are a finite rate limit and a whole concurrency in [1, max_concurrency], ramp included", () => {
    fc.assert(
      fc.property(
        fc.record({
          adaptive: fc.option(adaptiveConfig, { nil: null }),
          pace_state: fc.option(storedPace, { nil: null }),
          rate_limit: rateLimitOrNull,
          max_concurrency: bound("max_concurrency"),
          ramp_limit: fc.option(bound("max_concurrency"), { nil: null }),
        }),
        instantMs,
        (d, nowMs) => {
          const e = effectiveLimits(d, nowMs);
          assertAllFinite(e, "limits");
          assert.ok(Number.isInteger(e.maxConcurrency) && e.maxConcurrency >= 1 && e.maxConcurrency <= d.max_concurrency);
          if (d.ramp_limit !== null) assert.ok(e.maxConcurrency <= d.ramp_limit);
          if (e.rateLimit?.max_per_second !== undefined) assert.ok(e.rateLimit.max_per_second > 0);
        },
      ),
      { numRuns: 500 },
    );
  });
});
