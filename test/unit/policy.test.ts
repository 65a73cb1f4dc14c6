import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { retryDelaySeconds, DEFAULT_RETRY_SCHEDULE_SECONDS, RETRY_JITTER } from "../../src/policy/retry-schedule.js";
import { parseRetryAfter, retryAfterWaitSeconds, MAX_RETRY_AFTER_SECONDS, RETRY_NOW_FLOOR_SECONDS } from "../../src/policy/retry-after.js";
import { matchesEventType } from "../../src/policy/event-match.js";
import { throttleHoldSeconds, throttleReason, DEFAULT_THROTTLE_SCHEDULE_SECONDS } from "../../src/policy/throttle.js";
import { classify } from "../../src/policy/outcome.js";
import { slotsFree, nextReadyAt } from "../../src/policy/gates.js";

describe("retry schedule", () => {
  test("each delay stays within ±jitter of its schedule entry, then the schedule is spent", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 100_000 }), { maxLength: 20 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (schedule, r) => {
          for (let n = 1; n <= schedule.length; n++) {
            const d = retryDelaySeconds(schedule, n, () => r)!;
            const base = schedule[n - 1]!;
            assert.ok(d >= base * (1 - RETRY_JITTER) - 1e-9 && d <= base * (1 + RETRY_JITTER) + 1e-9, `${d} vs ${base}`);
          }
          assert.equal(
            retryDelaySeconds(schedule, schedule.length + 1, () => r),
            null,
          );
          assert.equal(
            retryDelaySeconds(schedule, 0, () => r),
            null,
          );
        },
      ),
    );
  });

  test("the default has ten retries from 5 s to a day", () => {
    assert.equal(DEFAULT_RETRY_SCHEDULE_SECONDS.length, 10);
    assert.equal(
      retryDelaySeconds(DEFAULT_RETRY_SCHEDULE_SECONDS, 1, () => 0.5),
      5,
    );
    assert.equal(
      retryDelaySeconds(DEFAULT_RETRY_SCHEDULE_SECONDS, 10, () => 0.5),
      86400,
    );
  });

  test("an empty schedule means no retries", () => {
    assert.equal(retryDelaySeconds([], 1), null);
  });
});

describe("Retry-After", () => {
  const now = Date.parse("2026-03-01T12:00:00Z");
  test("delta seconds", () => {
    assert.equal(parseRetryAfter("5", now), 5);
    assert.equal(parseRetryAfter(" 120 ", now), 120);
    assert.equal(parseRetryAfter("0", now), 0);
  });
  test("HTTP-date in the future, rounded up to whole seconds", () => {
    assert.equal(parseRetryAfter("Sun, 01 Mar 2026 12:00:30 GMT", now), 30);
    assert.equal(parseRetryAfter(new Date(now + 1500).toUTCString(), now), 1); // toUTCString drops ms
  });
  test("garbage or absence gives null (the schedule applies)", () => {
    for (const v of [null, undefined, "", "soon", "-5", "1.5"]) {
      assert.equal(parseRetryAfter(v, now), null, String(v));
    }
  });
  test("a wait past a week is a week: no hold the store cannot write", () => {
    assert.equal(parseRetryAfter(String(MAX_RETRY_AFTER_SECONDS), now), MAX_RETRY_AFTER_SECONDS);
    assert.equal(parseRetryAfter(String(MAX_RETRY_AFTER_SECONDS + 1), now), MAX_RETRY_AFTER_SECONDS);
    assert.equal(parseRetryAfter("99999999999999999999", now), MAX_RETRY_AFTER_SECONDS);
    assert.equal(parseRetryAfter("9".repeat(400), now), MAX_RETRY_AFTER_SECONDS); // Number() is Infinity
    assert.equal(parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now), MAX_RETRY_AFTER_SECONDS);
  });
  test("a date not in the future means now (0), never null", () => {
    assert.equal(parseRetryAfter("Sun, 01 Mar 2026 11:00:00 GMT", now), 0);
    assert.equal(parseRetryAfter(new Date(now).toUTCString(), now), 0);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * 365 * 86400 }),
        (ago) => parseRetryAfter(new Date(now - ago * 1000).toUTCString(), now) === 0,
      ),
    );
  });
  test("the wait is never below the floor, and exactly the header above it", () => {
    assert.equal(retryAfterWaitSeconds(0), RETRY_NOW_FLOOR_SECONDS);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), (n) => retryAfterWaitSeconds(n) === Math.max(n, RETRY_NOW_FLOOR_SECONDS)),
    );
  });
  test("any non-negative integer round-trips, up to the week a wait is capped at", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), (n) => parseRetryAfter(String(n), now) === Math.min(n, MAX_RETRY_AFTER_SECONDS)),
    );
  });
});

describe("event type matching", () => {
  test("empty matches all but destination.*", () => {
    assert.ok(matchesEventType([], "order.created"));
    assert.ok(!matchesEventType([], "destination.paused"));
  });
  test("exact and trailing-* prefix", () => {
    assert.ok(matchesEventType(["order.*"], "order.created"));
    assert.ok(!matchesEventType(["order.*"], "invoice.paid"));
    assert.ok(matchesEventType(["invoice.paid"], "invoice.paid"));
    assert.ok(!matchesEventType(["invoice.paid"], "invoice.paid.v2"));
    assert.ok(matchesEventType(["*"], "anything"));
  });
  test("destination.* events reach only destinations that name them", () => {
    assert.ok(!matchesEventType(["*"], "destination.paused"));
    assert.ok(matchesEventType(["destination.*"], "destination.paused"));
    assert.ok(matchesEventType(["destination.paused"], "destination.paused"));
    assert.ok(!matchesEventType(["destination.resumed"], "destination.paused"));
  });
});

describe("throttle hold", () => {
  test("Retry-After wins; else the schedule by count, the last entry repeating", () => {
    assert.equal(throttleHoldSeconds(DEFAULT_THROTTLE_SCHEDULE_SECONDS, 1, 7), 7);
    const expected = [60, 300, 900, 3600, 21600, 21600, 21600];
    expected.forEach((s, i) => assert.equal(throttleHoldSeconds(DEFAULT_THROTTLE_SCHEDULE_SECONDS, i + 1, null), s));
  });
  test("Retry-After: 0 holds the floor whatever the count, never the schedule", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        (n) => throttleHoldSeconds(DEFAULT_THROTTLE_SCHEDULE_SECONDS, n, 0) === RETRY_NOW_FLOOR_SECONDS,
      ),
    );
  });
  test("the reason says what came: a 0, a past date, a delay or nothing", () => {
    assert.match(
      throttleReason({ holdSeconds: 1, consecutive: 1, retryAfterSeconds: 0, retryAfterHeader: "0" }),
      /Retry-After: 0 \(retry now\): holding 1 s/,
    );
    assert.match(
      throttleReason({ holdSeconds: 1, consecutive: 1, retryAfterSeconds: 0, retryAfterHeader: "Sun, 01 Mar 2026 11:00:00 GMT" }),
      /date Sun, 01 Mar 2026 11:00:00 GMT, which is not in the future \(retry now\): holding 1 s/,
    );
    assert.match(throttleReason({ holdSeconds: 7, consecutive: 1, retryAfterSeconds: 7, retryAfterHeader: "7" }), /Retry-After: 7 s$/);
    assert.match(
      throttleReason({ holdSeconds: 300, consecutive: 2, retryAfterSeconds: null }),
      /2nd in a row, no Retry-After\): holding 300 s/,
    );
    const long = "Sun, 01 Mar 2026 11:00:00 GMT".padEnd(200, "x");
    assert.ok(throttleReason({ holdSeconds: 1, consecutive: 1, retryAfterSeconds: 0, retryAfterHeader: long }).length < 200);
  });
});

describe("outcome classification", () => {
  const now = Date.parse("2026-03-01T12:00:00Z");
  const r = (statusCode: number | null, retryAfter: string | null = null, errorClass: "timeout" | "dns" | null = null) =>
    classify({ statusCode, retryAfter, errorClass }, now);
  test("2xx success, 429 throttled, 410 gone", () => {
    assert.equal(r(200).kind, "success");
    assert.equal(r(204).kind, "success");
    assert.deepEqual(r(429, "5"), {
      kind: "throttled",
      statusCode: 429,
      errorClass: "http_429",
      retryAfterSeconds: 5,
      retryAfterHeader: "5",
    });
    assert.equal(r(429, "Sun, 01 Mar 2026 11:00:00 GMT").retryAfterSeconds, 0);
    assert.equal(r(410).kind, "gone");
  });
  test("503 is a failure, its Retry-After kept for that delivery only; other 5xx ignore it", () => {
    assert.deepEqual(r(503, "9"), {
      kind: "failure",
      statusCode: 503,
      errorClass: "http_5xx",
      retryAfterSeconds: 9,
      retryAfterHeader: "9",
    });
    assert.equal(r(500, "9").retryAfterSeconds, null);
  });
  test("3xx, 4xx and transport errors are failures with a class", () => {
    assert.equal(r(302).errorClass, "http_3xx");
    assert.equal(r(404).errorClass, "http_4xx");
    assert.equal(r(null, null, "timeout").errorClass, "timeout");
    assert.equal(r(null, null, "dns").errorClass, "dns");
  });
  test("every status code classifies to exactly one kind", () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 599 }), (s) => {
        const o = r(s);
        return (o.kind === "success") === (s >= 200 && s < 300) && (o.kind === "throttled") === (s === 429);
      }),
    );
  });
});

describe("gates", () => {
  const base = { nowMs: 1_000_000, maxConcurrency: 5, ordered: false, inflight: 0, throttledUntilMs: null, paused: false };
  test("free slots: cap minus live leases; ordered means one", () => {
    assert.equal(slotsFree(base), 5);
    assert.equal(slotsFree({ ...base, inflight: 5 }), 0);
    assert.equal(slotsFree({ ...base, ordered: true }), 1);
    assert.equal(slotsFree({ ...base, ordered: true, inflight: 1 }), 0);
    assert.equal(slotsFree({ ...base, paused: true }), 0);
    assert.equal(slotsFree({ ...base, throttledUntilMs: base.nowMs + 1 }), 0);
    assert.equal(slotsFree({ ...base, throttledUntilMs: base.nowMs }), 5);
  });

  test("next ready_at never falls inside a throttle hold, is null when paused or idle, and is never later than a lease expiry outside a hold", () => {
    const opt = (a: fc.Arbitrary<number>) => fc.option(a, { nil: null });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 0, max: 60 }),
        fc.boolean(),
        fc.boolean(),
        opt(fc.integer({ min: -100_000, max: 100_000 })),
        opt(fc.integer({ min: -100_000, max: 100_000 })),
        opt(fc.integer({ min: 1, max: 100_000 })),
        (cap, inflight, ordered, paused, waitingOff, throttleOff, leaseOff) => {
          const now = 1_000_000;
          const s = {
            nowMs: now,
            maxConcurrency: cap,
            ordered,
            inflight,
            paused,
            throttledUntilMs: throttleOff === null ? null : now + throttleOff,
            nextWaitingMs: waitingOff === null ? null : now + waitingOff,
            nextLeaseExpiryMs: leaseOff === null || inflight === 0 ? null : now + leaseOff,
          };
          const at = nextReadyAt(s);
          if (paused) return at === null;
          if (s.nextWaitingMs === null && s.nextLeaseExpiryMs === null) return at === null;
          if (s.nextLeaseExpiryMs !== null && at === null) return false;
          if (at !== null && s.throttledUntilMs !== null && at < s.throttledUntilMs) return false;
          if (at !== null && at < now) return false;
          if (s.nextLeaseExpiryMs !== null && (s.throttledUntilMs === null || s.throttledUntilMs <= s.nextLeaseExpiryMs)) {
            return at !== null && at <= s.nextLeaseExpiryMs;
          }
          // Due work with a free slot is ready now (unless throttled).
          if (
            s.nextWaitingMs !== null &&
            s.nextWaitingMs <= now &&
            slotsFree(s) > 0 &&
            (s.throttledUntilMs === null || s.throttledUntilMs <= now)
          )
            return at === now;
          // Waiting work under a throttle hold is looked at when the hold ends, at the latest:
          // nothing else (a write-back, a lease expiry) may be coming to wake it.
          if (s.nextWaitingMs !== null && s.throttledUntilMs !== null && s.throttledUntilMs > now) {
            return at !== null && at <= Math.max(s.throttledUntilMs, s.nextWaitingMs);
          }
          return true;
        },
      ),
    );
  });
});
