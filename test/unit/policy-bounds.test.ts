import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { classify, type RawResult } from "../../src/policy/outcome.js";
import { parseRetryAfter, retryAfterWaitSeconds, RETRY_NOW_FLOOR_SECONDS } from "../../src/policy/retry-after.js";
import { retryDelaySeconds, RETRY_JITTER } from "../../src/policy/retry-schedule.js";
import { throttleHoldSeconds, throttleReason, MAX_THROTTLE_HOLD_SECONDS } from "../../src/policy/throttle.js";
import {
  applyOutcomes,
  healthView,
  scoreOf,
  statusOf,
  type HealthConfig,
  type HealthInput,
  type HealthState,
} from "../../src/policy/health.js";
import { slotsFree, nextReadyAt, type AfterClaim } from "../../src/policy/gates.js";
import { watchBacklog, expectedHoldSeconds, staleLimitSeconds, type BacklogWatch } from "../../src/policy/backlog-alerts.js";
import { ratePerSecond } from "../../src/policy/adaptive-pace.js";
import { HEALTH_STATUSES } from "../../src/policy/statuses.js";
import { BOUNDS } from "../../src/policy/bounds.js";
import {
  assertAllFinite,
  bound,
  clockStepMs,
  deliverySchedule,
  httpDates,
  instantMs,
  outsideCount,
  outsideMeasure,
  rateLimitOrNull,
  retryAfterHeader,
  retrySchedule,
  statusCode,
  stepClock,
  throttleSchedule,
  WEEK,
  INT4_MAX,
} from "../helpers/admitted.js";

// The small policy modules over everything the API admits (src/policy/bounds.ts) and anything a
// receiver, the network or the store can hand them: every answer is finite and in its documented
// range. Token buckets, quiet hours, adaptive pace, the claim planner and the write-back's
// decisions have files of their own (*-properties.test.ts).

// ---- outcome.ts -----------------------------------------------------------------------------------

// Every status 100–599 (and no answer at all), with any Retry-After: one outcome, its fields consistent.

const rawErrorClass = fc.constantFrom<RawResult["errorClass"]>(null, "timeout", "connection", "dns", "tls", "blocked", "invalid_response");

describe("classify over every status and any Retry-After", () => {
  test("property: for every status 100–599 and none, the kind follows the status; Retry-After is read for 429 and 503 only", () => {
    const statuses = [null, ...Array.from({ length: 500 }, (_, i) => 100 + i)];
    fc.assert(
      fc.property(rawErrorClass, retryAfterHeader, instantMs, (err, header, nowMs) => {
        for (const status of statuses) {
          const o = classify({ statusCode: status, errorClass: err, retryAfter: header }, nowMs);
          assert.equal(o.statusCode, status);
          const expected =
            status === null
              ? "failure"
              : status >= 200 && status < 300
                ? "success"
                : status === 429
                  ? "throttled"
                  : status === 410
                    ? "gone"
                    : "failure";
          assert.equal(o.kind, expected);
          if (status === null) assert.equal(o.errorClass, err ?? "connection");
          else if (o.kind === "success") assert.equal(o.errorClass, null);
          else assert.ok(o.errorClass !== null && (status < 200 ? o.errorClass === "invalid_response" : o.errorClass.startsWith("http_")));
          if (status !== 429 && status !== 503) {
            assert.equal(o.retryAfterSeconds, null);
            assert.equal(o.retryAfterHeader, null);
          } else if (o.retryAfterSeconds !== null) {
            assert.ok(Number.isSafeInteger(o.retryAfterSeconds) && o.retryAfterSeconds >= 0 && o.retryAfterSeconds <= WEEK);
            assert.equal(o.retryAfterHeader, header!.trim());
          } else {
            assert.equal(o.retryAfterHeader, null);
          }
        }
      }),
      { numRuns: 100 },
    );
  });
});

// ---- retry-after.ts -------------------------------------------------------------------------------

// Any Retry-After a receiver can send, read at any instant: a whole number of seconds, at most a
// week (the longest hold or delay a schedule may set), or null.

describe("Retry-After over any header", () => {
  test("the cap is a week, the longest retry delay too", () => {
    assert.equal(BOUNDS.retry_delay_seconds.max, WEEK);
  });

  test("property: null, or whole seconds in [0, a week]; delta-seconds as given up to the week", () => {
    fc.assert(
      fc.property(retryAfterHeader, instantMs, (header, nowMs) => {
        const s = parseRetryAfter(header, nowMs);
        if (s === null) return;
        assert.ok(Number.isSafeInteger(s) && s >= 0 && s <= WEEK, `${s} from ${JSON.stringify(header)}`);
        const value = header!.trim();
        if (/^\d+$/.test(value)) assert.equal(s, Math.min(Number(value), WEEK));
      }),
      { numRuns: 2000 },
    );
  });

  test("property: an HTTP-date in any form reads as the seconds until it, 0 when not in the future", () => {
    fc.assert(
      fc.property(instantMs, instantMs, fc.nat({ max: 2 }), (atMs, nowMs, form) => {
        const at = Math.floor(atMs / 1000) * 1000;
        const header = httpDates(at)[form]!;
        const s = parseRetryAfter(header, nowMs);
        // RFC 850's two-digit year is read by Date.parse as it reads it: only check the other two forms exactly.
        if (form === 1) return assert.ok(s === null || (Number.isSafeInteger(s) && s >= 0 && s <= WEEK));
        assert.equal(s, Math.min(WEEK, Math.max(0, Math.ceil((at - nowMs) / 1000))), header);
      }),
      { numRuns: 1000 },
    );
  });

  test("property: the wait for any header is whole seconds in [floor, a week]", () => {
    fc.assert(
      fc.property(retryAfterHeader, instantMs, (header, nowMs) => {
        const s = parseRetryAfter(header, nowMs);
        if (s === null) return;
        const w = retryAfterWaitSeconds(s);
        assert.ok(Number.isSafeInteger(w) && w >= RETRY_NOW_FLOOR_SECONDS && w >= s && w <= WEEK, `${w}`);
      }),
      { numRuns: 1000 },
    );
  });

  test("property: the wait for any count is never below the floor and stays finite", () => {
    fc.assert(
      fc.property(outsideCount, (s) => {
        const w = retryAfterWaitSeconds(s);
        assert.ok(Number.isSafeInteger(w) && w >= RETRY_NOW_FLOOR_SECONDS && w >= s);
      }),
      { numRuns: 300 },
    );
  });
});

// ---- retry-schedule.ts ----------------------------------------------------------------------------

// A retry delay is within ±RETRY_JITTER of its schedule entry, for every schedule the API admits
// ([] included) and any count of attempts the store can hold.

const random = fc.oneof(fc.constantFrom(0, 0.5, 1 - 2 ** -53), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }));

describe("retry schedule over every admitted schedule", () => {
  test("property: null exactly when the schedule is spent (or nothing failed yet), else finite within ±20 % of the entry", () => {
    fc.assert(
      fc.property(retrySchedule, fc.oneof(outsideCount, fc.integer({ min: -3, max: 60 })), random, (schedule, attemptsMade, r) => {
        const delay = retryDelaySeconds(schedule, attemptsMade, () => r);
        if (attemptsMade < 1 || attemptsMade > schedule.length) return assert.equal(delay, null);
        const base = schedule[attemptsMade - 1]!;
        assert.ok(delay !== null && Number.isFinite(delay), `${delay}`);
        assert.ok(delay >= 0 && delay >= base * (1 - RETRY_JITTER) && delay <= base * (1 + RETRY_JITTER), `${delay} for ${base}`);
        assert.ok(delay <= BOUNDS.retry_delay_seconds.max * (1 + RETRY_JITTER));
      }),
      { numRuns: 1000 },
    );
  });
});

// ---- throttle.ts ----------------------------------------------------------------------------------

// A throttle hold is whole seconds in [1 s, 7 days] for every schedule the API admits, any run of
// 429s the store can count and any Retry-After a receiver can send.

describe("throttle over every admitted schedule and any Retry-After", () => {
  test("the cap is the throttle schedule's own upper bound", () => {
    assert.equal(MAX_THROTTLE_HOLD_SECONDS, WEEK);
  });

  test("property: a hold is whole seconds in [1 s, 7 days]: the schedule's entry, or Retry-After within [floor, 7 days]", () => {
    fc.assert(
      fc.property(throttleSchedule, outsideCount, retryAfterHeader, instantMs, (schedule, consecutive, header, nowMs) => {
        const ra = parseRetryAfter(header, nowMs);
        const hold = throttleHoldSeconds(schedule, consecutive, ra);
        assert.ok(Number.isInteger(hold) && hold >= 1 && hold <= WEEK, `hold ${hold} for Retry-After ${ra}`);
        if (ra === null) assert.equal(hold, schedule[Math.min(Math.max(consecutive, 1), schedule.length) - 1]);
        else assert.equal(hold, Math.min(WEEK, Math.max(RETRY_NOW_FLOOR_SECONDS, ra)));
      }),
      { numRuns: 1000 },
    );
  });

  test("a Retry-After far past a week holds a week, and the reason says so", () => {
    for (const ra of [WEEK + 1, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
      const hold = throttleHoldSeconds([60], 1, ra);
      assert.equal(hold, WEEK);
      assert.match(
        throttleReason({ holdSeconds: hold, consecutive: 1, retryAfterSeconds: ra, retryAfterHeader: String(ra) }),
        /holding 604800 s/,
      );
    }
    assert.throws(() => throttleHoldSeconds([60], 1, Number.NaN), RangeError);
  });

  test("property: the reason names the hold it is given, in plain digits, and stays short", () => {
    fc.assert(
      fc.property(throttleSchedule, outsideCount, retryAfterHeader, instantMs, (schedule, consecutive, header, nowMs) => {
        const ra = parseRetryAfter(header, nowMs);
        const hold = throttleHoldSeconds(schedule, consecutive, ra);
        const reason = throttleReason({ holdSeconds: hold, consecutive, retryAfterSeconds: ra, retryAfterHeader: header });
        assert.ok(reason.startsWith("429 Too Many Requests"));
        // The quoted header is cut at 64 characters; the rest is built from numbers.
        assert.ok(reason.length <= 260, `${reason.length} characters`);
        const quoted = header?.trim() ?? "";
        assertAllFinite(quoted === "" ? reason : reason.split(quoted.slice(0, 64)).join(""), "reason");
        if (ra === null || ra === 0 || hold < ra) assert.ok(reason.includes(`holding ${hold} s`), reason);
        else assert.ok(reason.includes(`Retry-After: ${ra} s`), reason);
      }),
      { numRuns: 1000 },
    );
  });
});

// ---- health.ts ------------------------------------------------------------------------------------

// Health over any answers, any settings the config admits (SLUICE_HEALTH_WINDOW 1–1000, …) and any
// stored state (counters up to int4's top, windows of any length): a score in 0–100, a window of
// at most windowSize "0"/"1"s, counters that only count.

const outcome: fc.Arbitrary<HealthInput> = fc
  .record({
    statusCode,
    errorClass: fc.constantFrom<RawResult["errorClass"]>(null, "timeout", "connection", "dns", "tls", "blocked", "invalid_response"),
    retryAfter: retryAfterHeader,
    nowMs: instantMs,
    errorMessage: fc.option(fc.oneof(fc.string({ maxLength: 600 }), fc.constant("getaddrinfo ENOTFOUND x")), { nil: null }),
  })
  .map(({ nowMs, errorMessage, ...raw }) => ({ ...classify(raw, nowMs), errorMessage }));

const healthConfig: fc.Arbitrary<HealthConfig> = fc.record({
  windowSize: fc.oneof(fc.constantFrom(1, 1000), fc.integer({ min: 1, max: 1000 })),
  minSamples: fc.oneof(fc.constantFrom(1, 1000), fc.integer({ min: 1, max: 1000 })),
  maxConsecutiveFailures: fc.oneof(fc.constantFrom(1, 10_000), fc.integer({ min: 1, max: 10_000 })),
  authFailuresToPause: fc.oneof(fc.constantFrom(1, 10_000), fc.integer({ min: 1, max: 10_000 })),
});

const counter = fc.oneof(fc.constantFrom(0, 1, INT4_MAX - 1, INT4_MAX), fc.integer({ min: 0, max: INT4_MAX }));
const stored: fc.Arbitrary<HealthState> = fc.record({
  window: fc.oneof(
    fc.stringMatching(/^[01]{0,60}$/),
    fc.array(fc.constantFrom("0", "1"), { maxLength: 1200 }).map((a) => a.join("")),
  ),
  consecutiveFailures: counter,
  consecutiveAuthFailures: counter,
  status: fc.constantFrom(...HEALTH_STATUSES),
});

describe("health over any answers, settings and stored state", () => {
  test("property: score 0–100, window of 0/1 within windowSize, counters reset or count by one per answer", () => {
    fc.assert(
      fc.property(stored, fc.array(outcome, { maxLength: 60 }), healthConfig, fc.boolean(), (state, outcomes, cfg, paused) => {
        const r = applyOutcomes(state, outcomes, cfg, { paused });
        assertAllFinite(r, "health", false);
        assert.ok(Number.isInteger(r.score) && r.score >= 0 && r.score <= 100, `score ${r.score}`);
        assert.equal(r.score, scoreOf(r.state.window));
        assert.match(r.state.window, /^[01]*$/);
        assert.ok(r.state.window.length <= cfg.windowSize);
        assert.ok(HEALTH_STATUSES.includes(r.state.status));
        assert.equal(r.state.status, statusOf(r.score, r.state.window.length, cfg));
        for (const n of [r.state.consecutiveFailures, r.state.consecutiveAuthFailures]) {
          assert.ok(
            Number.isSafeInteger(n) && n >= 0 && n <= Math.max(state.consecutiveFailures, state.consecutiveAuthFailures) + outcomes.length,
          );
        }
        if (paused) assert.deepEqual([r.pause, r.transition], [null, null]);
        if (r.pause) {
          assert.ok(r.pause.reason.startsWith("auto: ") && r.pause.reason.length <= 500, r.pause.reason);
          assert.equal(r.transition, "paused");
        }
        const view = healthView(r.state, cfg);
        assert.ok(view.score >= 0 && view.score <= 100);
      }),
      { numRuns: 500 },
    );
  });
});

// ---- gates.ts -------------------------------------------------------------------------------------

// The gates over any admitted max_concurrency, any lease count the store can hold, any instants
// (leases already expired, throttles long past or far ahead, tokens years away).

const relInstant = (nowMs: number) =>
  fc.option(
    fc.oneof(
      instantMs,
      fc.integer({ min: -86_400_000, max: 86_400_000 }).map((d) => stepClock(nowMs, d)),
    ),
    { nil: null },
  );

const afterClaim: fc.Arbitrary<AfterClaim> = instantMs.chain((nowMs) =>
  fc.record({
    nowMs: fc.constant(nowMs),
    maxConcurrency: bound("max_concurrency"),
    ordered: fc.boolean(),
    inflight: fc.oneof(fc.integer({ min: 0, max: 1100 }), outsideCount),
    throttledUntilMs: relInstant(nowMs),
    paused: fc.boolean(),
    nextWaitingMs: relInstant(nowMs),
    nextLeaseExpiryMs: relInstant(nowMs),
    nextTokenMs: fc.option(relInstant(nowMs), { nil: undefined }),
  }),
);

describe("gates over any admitted state", () => {
  test("property: free slots are a whole number in [0, cap]; none when paused or throttled", () => {
    fc.assert(
      fc.property(afterClaim, (g) => {
        const n = slotsFree(g);
        const cap = g.ordered ? 1 : g.maxConcurrency;
        assert.ok(Number.isInteger(n) && n >= 0 && n <= cap);
        if (g.paused || (g.throttledUntilMs !== null && g.throttledUntilMs > g.nowMs)) assert.equal(n, 0);
        else assert.equal(n, Math.max(0, cap - g.inflight));
      }),
      { numRuns: 1000 },
    );
  });

  test("property: ready_at is null or a finite instant one of its inputs names, never before a throttle ends", () => {
    fc.assert(
      fc.property(afterClaim, (s) => {
        const at = nextReadyAt(s);
        if (s.paused) return assert.equal(at, null);
        if (at === null) {
          assert.equal(s.nextLeaseExpiryMs, null, "nothing in flight to wake it");
          assert.ok(s.nextWaitingMs === null || slotsFree(s) === 0, "and no waiting work it could send");
          return;
        }
        assert.ok(Number.isSafeInteger(at), `${at}`);
        const named = [s.nowMs, s.nextWaitingMs, s.nextLeaseExpiryMs, s.nextTokenMs, s.throttledUntilMs].filter((x) => x != null);
        assert.ok(named.includes(at), `${at} is none of ${named.join(", ")}`);
        if (s.throttledUntilMs !== null && s.throttledUntilMs > s.nowMs)
          assert.ok(at >= s.throttledUntilMs, "never before the throttle ends");
        // Only an expired lease (the crash case: wake at once) puts it before now.
        if (at < s.nowMs) assert.ok(s.nextLeaseExpiryMs !== null && s.nextLeaseExpiryMs <= at);
        // Due work waits for its token.
        if (at !== s.nextLeaseExpiryMs && at !== s.throttledUntilMs && s.nextTokenMs != null) assert.ok(at >= s.nextTokenMs);
      }),
      { numRuns: 1000 },
    );
  });
});

// ---- backlog-alerts.ts ----------------------------------------------------------------------------

// Backlog alerts over any admitted alert settings, any counts and ages the store can report and a
// clock that steps back: finite watches, one alert per kind at most, reasons in plain numbers.

const alertConfig = fc.record({
  growMinutes: fc.option(bound("backlog_alert_minutes"), { nil: null }),
  ageMinutes: fc.option(bound("backlog_alert_age_minutes"), { nil: null }),
});

const facts = fc.record({
  step: clockStepMs,
  waiting: fc.oneof(fc.integer({ min: 0, max: 500 }), outsideCount),
  oldestAgeS: fc.option(fc.oneof(fc.integer({ min: 0, max: 100_000 }), outsideMeasure), { nil: null }),
  paused: fc.boolean(),
  quiet: fc.boolean(),
  expectedHoldS: fc.oneof(fc.constant(0), outsideMeasure),
});

describe("backlog alerts over any admitted settings and facts", () => {
  test("property: expectedHoldSeconds is finite and non-negative for every admitted schedule, throttle and rate", () => {
    fc.assert(
      fc.property(
        fc.option(deliverySchedule, { nil: null }),
        instantMs,
        fc.option(
          fc.oneof(
            instantMs.map((abs) => ({ abs })),
            fc.integer({ min: -1000, max: 7 * 86_400_000 }).map((rel) => ({ rel })),
          ),
          {
            nil: null,
          },
        ),
        bound("throttle_hold_seconds"),
        outsideCount,
        rateLimitOrNull,
        (schedule, nowMs, throttled, throttleHoldS, waiting, rl) => {
          const throttledUntilMs = throttled === null ? null : "abs" in throttled ? throttled.abs : stepClock(nowMs, throttled.rel);
          const hold = expectedHoldSeconds({ nowMs, schedule, throttledUntilMs, throttleHoldS, waiting, ratePerSecond: ratePerSecond(rl) });
          assert.ok(Number.isFinite(hold) && hold >= 0, `${hold}`);
        },
      ),
      { numRuns: 200 },
    );
  });

  test("property: the stale limit is null exactly when the alert is off, else finite and at least the setting", () => {
    fc.assert(
      fc.property(fc.oneof(fc.constant(0), outsideMeasure), fc.option(bound("backlog_alert_age_minutes"), { nil: null }), (hold, age) => {
        const limit = staleLimitSeconds(hold, age);
        if (age === null) return assert.equal(limit, null);
        assert.ok(limit !== null && Number.isFinite(limit) && limit >= age * 60 && limit >= 2 * hold);
      }),
      { numRuns: 500 },
    );
  });

  test("property: any run of minutes keeps the watch finite and tells each finding once", () => {
    fc.assert(
      fc.property(alertConfig, instantMs, fc.array(facts, { minLength: 1, maxLength: 40 }), (cfg, startMs, run) => {
        let watch: BacklogWatch | null = null;
        let nowMs = startMs;
        const standing = { growing: false, stale: false };
        for (const f of run) {
          nowMs = stepClock(nowMs, f.step);
          const r = watchBacklog(watch, { ...f, nowMs }, cfg);
          assertAllFinite(r, "backlog");
          const types = r.transitions.map((t) => t.type);
          assert.equal(new Set(types).size, types.length, "one alert per kind");
          if (types.includes("destination.backlog_recovered")) {
            assert.deepEqual(types, ["destination.backlog_recovered"]);
            assert.ok(standing.growing || standing.stale, "recovered only from a standing alert");
          }
          if (types.includes("destination.backlog_growing")) assert.ok(!standing.growing && cfg.growMinutes !== null);
          if (types.includes("destination.backlog_stale")) assert.ok(!standing.stale && cfg.ageMinutes !== null);
          standing.growing = r.watch?.growing ?? false;
          standing.stale = r.watch?.stale ?? false;
          watch = r.watch;
        }
      }),
      { numRuns: 300 },
    );
  });
});
