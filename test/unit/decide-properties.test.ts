import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { decideDelivery, decideDestination, type FinishedSend } from "../../src/dispatch/decide.js";
import type { SendResult } from "../../src/delivery/sender.js";
import type { LockedDestinationState } from "../../src/db/queries/results.js";
import { classify, type RawResult } from "../../src/policy/outcome.js";
import { adaptiveOn, paceBounds } from "../../src/policy/adaptive-pace.js";
import { RETRY_JITTER } from "../../src/policy/retry-schedule.js";
import { HEALTH_STATUSES } from "../../src/policy/statuses.js";
import {
  adaptiveConfig,
  assertAllFinite,
  bound,
  instantMs,
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

// The write-back's decisions over any answer a receiver or the network can produce (every status,
// any Retry-After, latencies up to MAX_SAFE_INTEGER ms) and any admitted config and stored state:
// finite delays within the schedules' range, holds within [1 s, 7 days], a pace within its bounds.

const sendResult: fc.Arbitrary<SendResult> = fc.record({
  statusCode,
  errorClass: fc.constantFrom<RawResult["errorClass"]>(null, "timeout", "connection", "dns", "tls", "blocked", "invalid_response"),
  errorMessage: fc.option(fc.string({ maxLength: 200 }), { nil: null }),
  retryAfter: retryAfterHeader,
  responseBody: fc.string({ maxLength: 40 }),
  latencyMs: fc.oneof(fc.integer({ min: 0, max: 60_000 }), outsideMeasure),
});

const finishedSend = (nowMs: number): fc.Arbitrary<FinishedSend> =>
  fc.record({
    destinationId: fc.constant("dst_1"),
    deliveryId: fc.constant("dlv_1"),
    leaseToken: fc.constant("t"),
    attemptNo: fc.integer({ min: 1, max: INT4_MAX }),
    failuresBefore: fc.oneof(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: INT4_MAX })),
    retrySchedule,
    throttleSchedule,
    startedAt: fc
      .oneof(
        fc.integer({ min: -120_000, max: 1000 }).map((d) => stepClock(nowMs, d)),
        instantMs,
      )
      .map((ms) => new Date(ms)),
    publishedMs: fc.oneof(
      fc.integer({ min: -7 * 86_400_000, max: 1000 }).map((d) => stepClock(nowMs, d)),
      instantMs,
    ),
    result: sendResult,
  });

const lockedState = (nowMs: number): fc.Arbitrary<LockedDestinationState> =>
  fc
    .record({
      max_concurrency: bound("max_concurrency"),
      probe_interval_seconds: bound("probe_interval_seconds"),
      ramp_limit: fc.option(bound("max_concurrency"), { nil: null }),
      rate_limit: rateLimitOrNull,
      adaptive: fc.option(adaptiveConfig, { nil: null }),
      health_window: fc.stringMatching(/^[01]{0,60}$/),
      health_status: fc.constantFrom(...HEALTH_STATUSES),
      consecutive_auth_failures: fc.oneof(fc.nat({ max: 20 }), fc.integer({ min: 0, max: INT4_MAX - 100 })),
      consecutive_failures: fc.oneof(fc.nat({ max: 20 }), fc.integer({ min: 0, max: INT4_MAX - 100 })),
      consecutive_throttles: fc.oneof(fc.nat({ max: 60 }), fc.integer({ min: 0, max: INT4_MAX - 100 })),
      throttled_until: fc.option(
        fc
          .oneof(
            fc.integer({ min: -86_400_000, max: 7 * 86_400_000 }).map((d) => stepClock(nowMs, d)),
            instantMs,
          )
          .map((ms) => new Date(ms)),
        { nil: null },
      ),
      paused: fc.boolean(),
    })
    .map(({ paused, ...s }) => ({
      ...s,
      id: "dst_1",
      tenant_id: "ten_1",
      name: "d",
      url: "https://example.com/hook",
      pace_state: null,
      pause_cause: paused ? "transient" : null,
      paused_at: paused ? new Date(nowMs) : null,
      deleted_at: null,
      now: new Date(nowMs),
    }));

const random = fc.oneof(fc.constantFrom(0, 0.5, 1 - 2 ** -53), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }));

describe("write-back decisions over any answer and admitted state", () => {
  test("property: a delivery's next delay is finite, within the schedule's jitter or Retry-After's week; dead only when spent", () => {
    fc.assert(
      fc.property(
        instantMs.chain((nowMs) => fc.tuple(fc.constant(nowMs), finishedSend(nowMs))),
        random,
        ([nowMs, f], r) => {
          const { delivery, attempt, outcome } = decideDelivery(f, nowMs, () => r);
          assertAllFinite({ delivery, attempt, outcome }, "decision", false);
          if (delivery.delaySeconds !== null) {
            assert.equal(delivery.status, "retry_scheduled");
            assert.ok(delivery.delaySeconds >= 0 && delivery.delaySeconds <= WEEK * (1 + RETRY_JITTER), `delay ${delivery.delaySeconds}`);
            if (outcome.retryAfterSeconds !== null) assert.ok(delivery.delaySeconds >= 1 && delivery.delaySeconds <= WEEK);
          }
          if (delivery.status === "dead") assert.ok(f.failuresBefore + 1 > f.retrySchedule.length);
          assert.ok(Number.isSafeInteger(attempt.latencyMs) && attempt.latencyMs >= 0);
          assert.ok(Number.isSafeInteger(attempt.queuedMs) && attempt.queuedMs >= 0);
          if (f.result.statusCode !== null) assert.match(delivery.error ?? "", /^(HTTP \d{3}( \(Retry-After[^)]*\))?)?$/);
        },
      ),
      { numRuns: 1000 },
    );
  });

  test("property: a destination's update is finite: a hold in [1 s, 7 days], counters that count, a pace within its bounds", () => {
    const answers = (nowMs: number) =>
      fc.array(
        fc.record({
          raw: sendResult,
          startedAt: fc
            .oneof(
              fc.integer({ min: -120_000, max: 1000 }).map((d) => stepClock(nowMs, d)),
              instantMs,
            )
            .map((ms) => new Date(ms)),
          throttleSchedule,
          latencyMs: fc.option(fc.oneof(fc.integer({ min: 0, max: 60_000 }), outsideMeasure), { nil: undefined }),
        }),
        { maxLength: 30 },
      );
    fc.assert(
      fc.property(
        instantMs.chain((nowMs) => fc.tuple(lockedState(nowMs), answers(nowMs))),
        fc.record({
          windowSize: bound("page_limit"),
          minSamples: bound("page_limit"),
          maxConsecutiveFailures: fc.integer({ min: 1, max: 10_000 }),
          authFailuresToPause: fc.integer({ min: 1, max: 10_000 }),
        }),
        ([state, raw], healthConfig) => {
          const nowMs = state.now.getTime();
          const outcomes = raw.map((a) => ({
            outcome: classify(a.raw, nowMs),
            startedAt: a.startedAt,
            throttleSchedule: a.throttleSchedule,
            errorMessage: a.raw.errorMessage,
            ...(a.latencyMs === undefined ? {} : { latencyMs: a.latencyMs }),
          }));
          const u = decideDestination(state, outcomes, healthConfig);
          assertAllFinite(u, "update", false);
          if (u.throttleSeconds !== null)
            assert.ok(
              Number.isInteger(u.throttleSeconds) && u.throttleSeconds >= 1 && u.throttleSeconds <= WEEK,
              `hold ${u.throttleSeconds}`,
            );
          if (u.throttleReason !== null) assert.ok(u.throttleReason.startsWith("429 Too Many Requests") && u.throttleReason.length <= 300);
          assert.ok(Number.isInteger(u.score) && u.score >= 0 && u.score <= 100);
          for (const [after, before] of [
            [u.consecutiveThrottles, state.consecutive_throttles],
            [u.consecutiveFailures, state.consecutive_failures],
            [u.consecutiveAuthFailures, state.consecutive_auth_failures],
          ] as const) {
            assert.ok(Number.isSafeInteger(after) && after >= 0 && after <= before + outcomes.length);
          }
          if (u.rampLimit !== null) assert.ok(Number.isInteger(u.rampLimit) && u.rampLimit >= 1 && u.rampLimit < state.max_concurrency);
          if (adaptiveOn(state.adaptive)) {
            const b = paceBounds(state.adaptive, state.rate_limit, state.max_concurrency);
            assert.ok(u.paceState !== null && u.paceState.rate >= b.minRate && u.paceState.rate <= b.maxRate);
            assert.ok(
              Number.isInteger(u.paceState.concurrency) && u.paceState.concurrency >= 1 && u.paceState.concurrency <= state.max_concurrency,
            );
          } else {
            assert.equal(u.paceState, null);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  test("a receiver's longest Retry-After holds a destination a week and delays a delivery a week, no more", () => {
    const nowMs = Date.parse("2026-03-01T12:00:00Z");
    for (const header of [String(Number.MAX_SAFE_INTEGER), "9".repeat(40), "Fri, 31 Dec 9999 23:59:59 GMT"]) {
      const raw = { statusCode: 503, errorClass: null, errorMessage: null, retryAfter: header, responseBody: "", latencyMs: 1 };
      const d = decideDelivery(
        {
          destinationId: "dst_1",
          deliveryId: "dlv_1",
          leaseToken: "t",
          attemptNo: 1,
          failuresBefore: 0,
          retrySchedule: [5],
          throttleSchedule: [60],
          startedAt: new Date(nowMs),
          publishedMs: nowMs,
          result: raw,
        },
        nowMs,
      );
      assert.equal(d.delivery.delaySeconds, WEEK, header);
      const outcome = classify({ ...raw, statusCode: 429 }, nowMs);
      const state = fc.sample(lockedState(nowMs), { numRuns: 1, seed: 1 })[0]!;
      const u = decideDestination({ ...state, adaptive: null, throttled_until: null }, [
        { outcome, startedAt: new Date(nowMs), throttleSchedule: [60] },
      ]);
      assert.equal(u.throttleSeconds, WEEK, header);
    }
  });
});
