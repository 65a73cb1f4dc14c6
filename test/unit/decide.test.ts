import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { decideDelivery, decideDestination, type FinishedSend } from "../../src/dispatch/decide.js";
import type { SendResult } from "../../src/delivery/sender.js";
import type { Outcome } from "../../src/policy/outcome.js";

const NOW = Date.parse("2026-03-01T12:00:00Z");
const res = (statusCode: number | null, extra: Partial<SendResult> = {}): SendResult => ({
  statusCode,
  errorClass: statusCode === null ? "timeout" : null,
  errorMessage: null,
  retryAfter: null,
  responseBody: "",
  latencyMs: 12,
  ...extra,
});
const send = (result: SendResult, failuresBefore = 0, retrySchedule = [5, 30]): FinishedSend => ({
  destinationId: "dst_1",
  deliveryId: "dlv_1",
  leaseToken: "t",
  attemptNo: failuresBefore + 1,
  failuresBefore,
  retrySchedule,
  throttleSchedule: [60, 300, 900],
  startedAt: new Date(NOW - 100),
  publishedMs: NOW - 2_100,
  result,
});

describe("decideDelivery", () => {
  test("2xx delivers", () => {
    const d = decideDelivery(send(res(200)), NOW);
    assert.equal(d.delivery.status, "delivered");
    assert.equal(d.attempt.outcome, "success");
    assert.equal(d.attempt.queuedMs, 2_000, "from the publish to the request's start");
  });
  test("a failure schedules the next retry from the schedule, then dies when it is spent", () => {
    const first = decideDelivery(send(res(500)), NOW, () => 0.5);
    assert.deepEqual([first.delivery.status, first.delivery.delaySeconds, first.delivery.failed], ["retry_scheduled", 5, true]);
    const second = decideDelivery(send(res(500), 1), NOW, () => 0.5);
    assert.equal(second.delivery.delaySeconds, 30);
    const third = decideDelivery(send(res(500), 2), NOW, () => 0.5);
    assert.equal(third.delivery.status, "dead");
  });
  test("a 503's Retry-After sets that delivery's next attempt", () => {
    const d = decideDelivery(send(res(503, { retryAfter: "42" })), NOW, () => 0.5);
    assert.equal(d.delivery.status, "retry_scheduled");
    assert.equal(d.delivery.delaySeconds, 42);
  });
  test("a 503's Retry-After of 0 still waits the floor, not the schedule and not zero", () => {
    const d = decideDelivery(send(res(503, { retryAfter: "0" })), NOW, () => 0.5);
    assert.equal(d.delivery.delaySeconds, 1);
    assert.match(d.delivery.error!, /Retry-After: now/);
  });
  test("429 spends no retry and is not a failure", () => {
    const d = decideDelivery(send(res(429, { retryAfter: "5" }), 2), NOW);
    assert.equal(d.delivery.status, "queued");
    assert.equal(d.delivery.failed, false);
    assert.equal(d.attempt.outcome, "throttled");
  });
  test("a blocked address spends no retry: the delivery is held (queued) for the pause, never dead", () => {
    const blocked = res(null, { errorClass: "blocked", errorMessage: "Refused to connect to localhost (127.0.0.1): a loopback address" });
    // Even with the schedule spent, a fixed refusal must not kill the delivery.
    for (const [failuresBefore, schedule] of [
      [0, [5, 30]],
      [2, [5, 30]],
      [0, []],
    ] as const) {
      const d = decideDelivery(send(blocked, failuresBefore, [...schedule]), NOW, () => 0.5);
      assert.deepEqual([d.delivery.status, d.delivery.delaySeconds, d.delivery.failed], ["queued", null, true]);
      assert.equal(d.attempt.outcome, "failure");
      assert.equal(d.attempt.errorClass, "blocked");
      assert.equal(d.attempt.healthClass, "blocked");
      assert.match(d.delivery.error!, /^blocked: Refused to connect to localhost/);
    }
  });
  test("timeouts are failures with their class recorded", () => {
    const d = decideDelivery(send(res(null, { errorMessage: "timed out" })), NOW, () => 0.5);
    assert.equal(d.delivery.status, "retry_scheduled");
    assert.equal(d.attempt.errorClass, "timeout");
    assert.match(d.delivery.error!, /timeout/);
  });
});

describe("decideDestination", () => {
  const state = (over: Partial<Parameters<typeof decideDestination>[0]> = {}) => ({
    id: "dst_1",
    tenant_id: "ten_1",
    name: "",
    url: "http://x",
    max_concurrency: 5,
    probe_interval_seconds: 300,
    ramp_limit: null as number | null,
    rate_limit: null,
    adaptive: null,
    pace_state: null,
    pause_cause: null,
    health_window: "",
    health_status: "healthy" as const,
    consecutive_auth_failures: 0,
    consecutive_failures: 0,
    consecutive_throttles: 0,
    throttled_until: null as Date | null,
    paused_at: null as Date | null,
    deleted_at: null,
    now: new Date(NOW),
    ...over,
  });
  const o = (kind: Outcome["kind"], retryAfterSeconds: number | null = null, startedAt = NOW - 100) => ({
    outcome: { kind, statusCode: null, errorClass: null, retryAfterSeconds } as Outcome,
    startedAt: new Date(startedAt),
    throttleSchedule: [60, 300, 900],
  });

  test("429 without Retry-After escalates the hold one step per episode", () => {
    const first = decideDestination(state(), [o("throttled")]);
    assert.equal(first.throttleSeconds, 60);
    assert.equal(first.consecutiveThrottles, 1);
    const second = decideDestination(state({ consecutive_throttles: 1 }), [o("throttled")]);
    assert.equal(second.throttleSeconds, 300);
  });
  test("429s of requests that started before the current hold are the same episode", () => {
    // Five concurrent requests all answered 429: one step, not five.
    const u = decideDestination(state(), [o("throttled"), o("throttled"), o("throttled"), o("throttled"), o("throttled")]);
    assert.equal(u.consecutiveThrottles, 1);
    assert.equal(u.throttleSeconds, 60);
    const during = decideDestination(state({ consecutive_throttles: 1, throttled_until: new Date(NOW + 30_000) }), [o("throttled")]);
    assert.equal(during.consecutiveThrottles, 1);
  });
  test("Retry-After sets the hold", () => {
    const u = decideDestination(state(), [o("throttled", 7)]);
    assert.equal(u.throttleSeconds, 7);
    assert.match(u.throttleReason!, /Retry-After: 7/);
  });
  test("Retry-After: 0 (or a past date) holds about a second and never escalates", () => {
    const fresh = decideDestination(state(), [o("throttled", 0)]);
    assert.deepEqual([fresh.throttleSeconds, fresh.consecutiveThrottles], [1, 0]);
    assert.match(fresh.throttleReason!, /retry now/);
    // Again and again: still the floor, and a later 429 without the header starts at step one.
    let s = state();
    for (let i = 0; i < 5; i++) {
      const u = decideDestination(s, [o("throttled", 0)]);
      assert.equal(u.throttleSeconds, 1);
      s = state({ consecutive_throttles: u.consecutiveThrottles });
    }
    assert.equal(decideDestination(s, [o("throttled")]).throttleSeconds, 60);
  });
  test("a retry-now 429 neither shortens a longer hold nor takes over its reason", () => {
    const u = decideDestination(state({ consecutive_throttles: 2, throttled_until: new Date(NOW + 200_000) }), [o("throttled", 0)]);
    assert.equal(u.throttleSeconds, 1); // the write keeps the later hold (GREATEST)
    assert.equal(u.throttleReason, null);
    assert.equal(u.consecutiveThrottles, 2);
  });
  test("success resets both counters; failures count up; 410 pauses", () => {
    assert.deepEqual(
      [decideDestination(state({ consecutive_failures: 3, consecutive_throttles: 2 }), [o("success")])].map((u) => [
        u.consecutiveFailures,
        u.consecutiveThrottles,
      ]),
      [[0, 0]],
    );
    assert.equal(decideDestination(state({ consecutive_failures: 3 }), [o("failure"), o("failure")]).consecutiveFailures, 5);
    assert.match(decideDestination(state(), [o("gone")]).pauseReason!, /410/);
  });
  test("a blocked address pauses at once with a permanent cause (never probed) and code blocked", () => {
    const blocked = {
      ...o("failure"),
      outcome: { kind: "failure", statusCode: null, errorClass: "blocked", retryAfterSeconds: null } as Outcome,
      errorMessage:
        "Refused to connect to 10.0.0.1: a private-network address, which this Sluice does not deliver to. Set SLUICE_ALLOW_PRIVATE_NETWORKS=1 …",
    };
    const u = decideDestination(state(), [blocked]);
    assert.deepEqual([u.pauseCause, u.pauseCode, u.transition, u.consecutiveFailures], ["permanent", "blocked", "paused", 1]);
    assert.match(u.pauseReason!, /^auto: refused to connect to 10\.0\.0\.1: a private-network address.*SLUICE_ALLOW_PRIVATE_NETWORKS/);
    assert.equal(decideDestination(state({ paused_at: new Date(NOW - 1000) }), [blocked]).pauseReason, null);
  });
  test("429s never touch health; failures move the window; ten in a row pause with a transient cause", () => {
    const t = decideDestination(state({ health_window: "1111" }), [o("throttled"), o("throttled")]);
    assert.equal(t.healthWindow, "1111");
    assert.equal(t.consecutiveFailures, 0);
    const f = decideDestination(
      state(),
      Array.from({ length: 10 }, () => o("failure")),
    );
    assert.equal(f.healthWindow, "0000000000");
    assert.equal(f.pauseCause, "transient");
    assert.equal(f.transition, "paused");
    assert.match(f.pauseReason!, /10 consecutive failures/);
  });
  test("an already paused destination's late answers update health but never pause or alert again", () => {
    const f = decideDestination(state({ paused_at: new Date(NOW - 1000), consecutive_failures: 10 }), [o("failure")]);
    assert.equal(f.pauseReason, null);
    assert.equal(f.transition, null);
    assert.equal(f.consecutiveFailures, 11);
  });
  test("the ramp after a probe rises by one per success and ends at the cap", () => {
    assert.equal(decideDestination(state({ ramp_limit: 1 }), [o("success")]).rampLimit, 2);
    assert.equal(decideDestination(state({ ramp_limit: 3 }), [o("success"), o("success")]).rampLimit, null);
    assert.equal(decideDestination(state({ ramp_limit: 2 }), [o("failure")]).rampLimit, 2);
  });
});
