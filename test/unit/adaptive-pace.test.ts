import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  adaptPace,
  congestionCause,
  initialPace,
  pacedRateLimit,
  paceBounds,
  paceWithin,
  PACE,
  type PaceBounds,
  type PaceSignal,
  type PaceState,
} from "../../src/policy/adaptive-pace.js";

const T0 = Date.parse("2026-11-25T12:00:00Z");
const ok = (startedAtMs: number, latencyMs = 5): PaceSignal => ({
  kind: "success",
  statusCode: 200,
  errorClass: null,
  startedAtMs,
  latencyMs,
});
const too = (startedAtMs: number): PaceSignal => ({
  kind: "throttled",
  statusCode: 429,
  errorClass: "http_429",
  startedAtMs,
  latencyMs: 2,
});
const bounds = (over: Partial<PaceBounds> = {}): PaceBounds => ({
  minRate: 1,
  maxRate: 1000,
  maxConcurrency: 200,
  targetLatencyMs: null,
  ...over,
});

/**
 * A destination with an endless backlog against a receiver, in 50 ms steps: each step sends what
 * the pace (and concurrency, by latency) allows, the receiver answers, the answers are written back.
 * `answer(t, acceptedLastSecond)` → status and latency for one request at t. Returns the final
 * state and the times of every request accepted and refused.
 */
function run(b: PaceBounds, seconds: number, answer: (t: number, acceptedLastSecond: number) => { status: number; latencyMs: number }) {
  const STEP = 50;
  let s: PaceState = initialPace(b, T0);
  let credit = 0;
  const lastSecond: number[] = []; // 200s of the last second, for the receiver
  const accepted: number[] = []; // times of 200s
  const rejected: number[] = []; // times of 429s
  let lastLatency = 1;
  for (let t = T0; t < T0 + seconds * 1000; t += STEP) {
    credit = Math.min(credit + (s.rate * STEP) / 1000, Math.max(1, s.rate * PACE.burstSeconds) + (s.rate * STEP) / 1000);
    // Little's law: at most `concurrency` in flight, each for its latency.
    const byConcurrency = (s.concurrency * STEP) / Math.max(lastLatency, 1);
    const n = Math.floor(Math.min(credit, byConcurrency));
    credit -= n;
    const signals: PaceSignal[] = [];
    for (let i = 0; i < n; i++) {
      const at = t + (i * STEP) / Math.max(n, 1);
      while (lastSecond.length && lastSecond[0]! <= at - 1000) lastSecond.shift();
      const a = answer(at, lastSecond.length);
      lastLatency = a.latencyMs;
      if (a.status === 429) {
        rejected.push(at);
        signals.push(too(at));
      } else {
        lastSecond.push(at);
        accepted.push(at);
        signals.push(ok(at, a.latencyMs));
      }
    }
    s = adaptPace(s, b, signals, t + STEP).state;
  }
  return { state: s, accepted, rejected };
}
const countIn = (xs: number[], from: number, to: number) => xs.filter((x) => x >= from && x < to).length;

describe("adaptive pace (policy/adaptive-pace.ts)", () => {
  test("bounds: a fixed rate_limit caps the pace, per second and per minute; min never above max", () => {
    assert.equal(paceBounds({ enabled: true }, null, 5).maxRate, PACE.defaultMaxPerSecond);
    assert.equal(paceBounds({ enabled: true, max_per_second: 500 }, { max_per_second: 50 }, 5).maxRate, 50);
    assert.equal(paceBounds({ enabled: true }, { max_per_minute: 120 }, 5).maxRate, 2);
    const b = paceBounds({ enabled: true, min_per_second: 20 }, { max_per_second: 10 }, 5);
    assert.deepEqual([b.minRate, b.maxRate], [10, 10]);
  });

  test("the buckets it pays from: the pace per second with a small burst, any per-minute window kept", () => {
    assert.deepEqual(pacedRateLimit(null, { rate: 100 }), { max_per_second: 100, burst_capacity: 5 });
    assert.deepEqual(pacedRateLimit({ max_per_minute: 600, burst_capacity: 2 }, { rate: 3 }), {
      max_per_minute: 600,
      max_per_second: 3,
      burst_capacity: 1,
    });
  });

  test("congestion signals: 429, 503, timeouts; not 500, 4xx or DNS", () => {
    assert.equal(congestionCause({ kind: "throttled", statusCode: 429, errorClass: "http_429" }), "429");
    assert.equal(congestionCause({ kind: "failure", statusCode: 503, errorClass: "http_5xx" }), "503");
    assert.equal(congestionCause({ kind: "failure", statusCode: null, errorClass: "timeout" }), "timeout");
    assert.equal(congestionCause({ kind: "failure", statusCode: 500, errorClass: "http_5xx" }), null);
    assert.equal(congestionCause({ kind: "failure", statusCode: 404, errorClass: "http_4xx" }), null);
    assert.equal(congestionCause({ kind: "failure", statusCode: null, errorClass: "dns" }), null);
  });

  test("a 429 cuts once per episode: answers to requests started before the cut do not cut again", () => {
    const b = bounds();
    const s0 = { ...initialPace(b, T0), rate: 100 };
    const first = adaptPace(s0, b, [too(T0 + 10), too(T0 + 20), too(T0 + 30)], T0 + 100);
    assert.equal(first.state.rate, 80);
    assert.deepEqual(first.change, { direction: "down", cause: "429", from: 100, to: 80 });
    assert.match(first.state.reason, /^429 Too Many Requests: pace cut from 100 to 80\/s$/);
    const late = adaptPace(first.state, b, [too(T0 + 90)], T0 + 200);
    assert.equal(late.state.rate, 80, "started before the cut: same episode");
    assert.equal(late.change, null);
    const soon = adaptPace(late.state, b, [too(T0 + 150)], T0 + 300);
    assert.equal(soon.state.rate, 80, "at most one cut a second: the receiver's window still holds the load from before");
    const next = adaptPace(soon.state, b, [too(T0 + 1050)], T0 + 1100);
    assert.equal(next.state.rate, 64);
  });

  test("a cut far below the capacity (a hiccup) is outgrown: after reprobeAfterMs without a cut it grows multiplicatively again", () => {
    const b = bounds();
    let s = adaptPace({ ...initialPace(b, T0), rate: 10 }, b, [too(T0 + 5)], T0 + 10).state;
    assert.deepEqual([s.rate, s.probing], [8, false]);
    const rates: number[] = [];
    for (let sec = 1; sec <= 25; sec++) {
      const now = T0 + 10 + sec * 1000;
      // A backlog: it sends all its pace allows, and every answer is fast.
      const n = Math.ceil(s.rate);
      s = adaptPace(
        s,
        b,
        Array.from({ length: n }, (_, i) => ok(now - 1000 + (i * 1000) / n)),
        now,
      ).state;
      rates.push(s.rate);
    }
    assert.ok(rates[10]! - rates[9]! <= 0.2 + 1e-9, "additive first: +2 % of the pace at the cut");
    assert.ok(rates[24]! > 30, `then multiplicative: ${rates.map((r) => r.toFixed(1)).join(" ")}`);
  });

  test("two cuts at about the same pace confirm a capacity: near it the pace climbs slowly, and probes only once well past it", () => {
    const b = bounds();
    const at = (rate: number, ceiling: number | null, nowMs: number) =>
      adaptPace({ ...initialPace(b, T0), rate, ceiling, probing: false, cutAtMs: T0 }, b, [too(nowMs - 5)], nowMs).state;
    // Cuts a fifth apart (a fall, cut after cut) confirm nothing; one within 15 % of the last does.
    assert.equal(at(80, 100, T0 + 2_000).confirmed, false);
    assert.equal(at(95, 100, T0 + 2_000).confirmed, true);
    assert.equal(at(100, null, T0 + 2_000).confirmed, false);
    // Confirmed at 100: from 90 on the step is a quarter of +2 % of it, and 25 s without a cut
    // is no reason to probe while the pace has not passed 105.
    const climb = (s: PaceState, nowMs: number) =>
      adaptPace(
        s,
        b,
        Array.from({ length: Math.ceil(s.rate) }, (_, i) => ok(nowMs - 1000 + (i * 1000) / Math.ceil(s.rate))),
        nowMs,
      ).state;
    const base: PaceState = { ...initialPace(b, T0), ceiling: 100, confirmed: true, probing: false, cutAtMs: T0, windowStartMs: T0 };
    assert.ok(Math.abs(climb({ ...base, rate: 85 }, T0 + 1_000).rate - 87) < 1e-9, "below 90: +2 % of the capacity");
    assert.ok(Math.abs(climb({ ...base, rate: 95 }, T0 + 1_000).rate - 95.5) < 1e-9, "from 90: +0.5 %");
    const waited = climb({ ...base, rate: 101, windowStartMs: T0 + 24_000 }, T0 + 25_000);
    assert.deepEqual([waited.probing, waited.rate], [false, 101.5]);
    const past = climb({ ...base, rate: 106, windowStartMs: T0 + 24_000 }, T0 + 25_000);
    assert.deepEqual([past.probing, past.rate], [true, 159]);
  });

  test("after a fall in capacity (100 → 40/s, a 429 above it) it settles near the new one: most of it used, few 429s", () => {
    let cap = 100;
    const r = run(bounds(), 240, (t, acceptedLastSecond) => {
      cap = t < T0 + 60_000 ? 100 : 40;
      return { status: acceptedLastSecond >= cap ? 429 : 200, latencyMs: 3 };
    });
    const from = T0 + 120_000;
    const to = T0 + 240_000;
    const used = countIn(r.accepted, from, to) / 120 / 40;
    const per1000 = (countIn(r.rejected, from, to) * 1000) / countIn(r.accepted, from, to);
    // Before capacities were confirmed: 91 % used, 2.7 429s per 1,000 (the pace climbed back
    // into the 429s every ~10 s at +2 % a second).
    assert.ok(used >= 0.92 && used <= 1, `used ${used.toFixed(3)} of 40/s`);
    assert.ok(per1000 <= 2, `${per1000.toFixed(2)} 429s per 1,000`);
  });

  test("an idle destination does not climb: raises need the pace used", () => {
    const b = bounds();
    let s = initialPace(b, T0);
    for (let i = 1; i <= 60; i++) s = adaptPace(s, b, [ok(T0 + i * 1000 - 10)], T0 + i * 1000).state;
    assert.equal(s.rate, PACE.startPerSecond);
  });

  test("rising latency cuts, and concurrency follows pace × baseline latency", () => {
    const b = bounds();
    let s = { ...initialPace(b, T0), rate: 100 };
    s = adaptPace(s, b, [ok(T0, 10), ok(T0 + 1, 10), ok(T0 + 2, 10)], T0 + 20).state;
    assert.equal(s.baselineMs, 10);
    // 10 ms is below the floor that stands for the claim and write-back around each request.
    assert.equal(s.concurrency, Math.ceil(100 * (PACE.minLatencyMs / 1000) * PACE.concurrencyHeadroom) + 1);
    const slower = adaptPace(s, b, [ok(T0 + 5, 200)], T0 + 30_000).state;
    assert.ok(slower.baselineMs! > 10 && slower.baselineMs! < 200, "the baseline rises slowly toward slower answers");
    assert.equal(slower.concurrency, Math.ceil(100 * (slower.baselineMs! / 1000) * PACE.concurrencyHeadroom) + 1);
    const few = adaptPace(s, b, [ok(T0 + 30, 80), ok(T0 + 31, 90), ok(T0 + 32, 100)], T0 + 200);
    assert.equal(few.change, null, "a few slow answers are not yet a trend");
    const started = adaptPace(few.state, b, [ok(T0 + 210, 90), ok(T0 + 211, 100)], T0 + 300);
    assert.equal(started.change, null, "slow, but not for long yet: a stall of our own would look like this");
    assert.equal(started.state.slowSinceMs, T0 + 300);
    const slow = adaptPace(started.state, b, [ok(T0 + 1250, 95)], T0 + 1300);
    assert.equal(slow.change?.cause, "latency");
    assert.match(slow.state.reason, /^latency \d+(\.\d+)? ms, well above its baseline of 10(\.\d+)? ms: pace cut from 100 to 80\/s$/);
    const recovered = adaptPace(
      started.state,
      b,
      [1250, 1251, 1252, 1253, 1254, 1255, 1256, 1257].map((at) => ok(T0 + at, 10)),
      T0 + 1300,
    );
    assert.equal(recovered.change?.direction ?? "none", "none", "back to fast before it counted: no cut");
    assert.equal(recovered.state.slowSinceMs, null);
    const target = bounds({ targetLatencyMs: 50 });
    const five = [30, 31, 32, 33, 34].map((at) => ok(T0 + at, 60));
    const t0 = adaptPace({ ...s, recentMs: null, recentN: 0 }, target, five, T0 + 200).state;
    const t = adaptPace(t0, target, [ok(T0 + 1150, 60)], T0 + 1200);
    assert.match(t.state.reason, /above target_latency_ms 50/);
  });

  test("property: never outside its bounds, whatever the answers", () => {
    const signal = fc.record({
      kind: fc.constantFrom<PaceSignal["kind"][]>("success", "throttled", "failure", "gone"),
      statusCode: fc.constantFrom(200, 429, 503, 500, 404, null),
      errorClass: fc.constantFrom(null, "timeout", "dns", "http_5xx"),
      startedBackMs: fc.integer({ min: 0, max: 5000 }),
      latencyMs: fc.integer({ min: 0, max: 30_000 }),
    });
    fc.assert(
      fc.property(
        fc.double({ min: 0.01, max: 500, noNaN: true }),
        fc.double({ min: 0.01, max: 5000, noNaN: true }),
        fc.integer({ min: 1, max: 1000 }),
        fc.option(fc.integer({ min: 1, max: 5000 }), { nil: null }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3000 }), fc.array(signal, { maxLength: 20 })), { maxLength: 60 }),
        (lo, hi, maxConcurrency, targetLatencyMs, batches) => {
          const b = bounds({ minRate: Math.min(lo, hi), maxRate: hi, maxConcurrency, targetLatencyMs });
          let s: PaceState | null = null;
          let now = T0;
          for (const [dt, sigs] of batches) {
            now += dt;
            const r = adaptPace(
              s,
              b,
              sigs.map((x) => ({ ...x, startedAtMs: now - x.startedBackMs })),
              now,
            );
            s = r.state;
            assert.ok(s.rate >= b.minRate - 1e-9 && s.rate <= b.maxRate + 1e-9, `rate ${s.rate} outside [${b.minRate}, ${b.maxRate}]`);
            assert.ok(Number.isInteger(s.concurrency) && s.concurrency >= 1 && s.concurrency <= maxConcurrency);
            if (r.change) assert.notEqual(r.change.from, r.change.to);
          }
        },
      ),
    );
  });

  test("property: every 429 from a request started after the last cut, a second or more after it, cuts the pace (down to the minimum)", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 1000, noNaN: true }),
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 10 }),
        (rate, minRate, n) => {
          const b = bounds({ minRate: Math.min(minRate, 1000) });
          let s = paceWithin({ ...initialPace(b, T0), rate }, b, T0);
          let now = T0;
          for (let i = 0; i < n; i++) {
            const before = s.rate;
            now += PACE.cutEveryMs;
            s = adaptPace(s, b, [ok(now - 50), too(now - 10)], now).state;
            if (before > b.minRate) assert.ok(s.rate < before, `${before} → ${s.rate}`);
            assert.ok(s.rate <= Math.max(b.minRate, before * PACE.cutFactor) + 1e-9);
          }
        },
      ),
    );
  });

  test("property: converges under a receiver that answers 429 above N/s: most of N used, few 429s", () => {
    fc.assert(
      fc.property(fc.integer({ min: 30, max: 400 }), (N) => {
        const r = run(bounds(), 180, (_t, acceptedLastSecond) => ({ status: acceptedLastSecond >= N ? 429 : 200, latencyMs: 3 }));
        const from = T0 + 60_000;
        const to = T0 + 180_000;
        const used = countIn(r.accepted, from, to) / 120 / N;
        const per1000 = (countIn(r.rejected, from, to) * 1000) / Math.max(1, countIn(r.accepted, from, to));
        assert.ok(used >= 0.8, `N ${N}: used ${used.toFixed(3)} of capacity`);
        assert.ok(used <= 1.0001, `N ${N}: used ${used}`);
        assert.ok(per1000 <= 5, `N ${N}: ${per1000.toFixed(2)} 429s per 1,000`);
      }),
      { numRuns: 15 },
    );
  });

  test("converges under a receiver whose latency grows past a knee, and finds a capacity that doubles mid-run", () => {
    // Knee: one FIFO server that takes 1/N s per request (plus 5 ms): past N/s the queue grows.
    const N = 100;
    let free = T0;
    const knee = run(bounds(), 120, (t) => {
      free = Math.max(t, free) + 1000 / N;
      return { status: 200, latencyMs: free - t + 5 };
    });
    const used = countIn(knee.accepted, T0 + 60_000, T0 + 120_000) / 60 / N;
    assert.ok(used >= 0.7 && used <= 1.1, `knee: used ${used.toFixed(3)}`);

    let cap = 50;
    const shift = run(bounds(), 240, (t, acceptedLastSecond) => {
      cap = t < T0 + 120_000 ? 50 : 100;
      return { status: acceptedLastSecond >= cap ? 429 : 200, latencyMs: 3 };
    });
    const after = countIn(shift.accepted, T0 + 180_000, T0 + 240_000) / 60 / 100;
    assert.ok(after >= 0.8, `after the capacity doubled: used ${after.toFixed(3)}`);
  });

  // The receivers of test/integration/adaptive-pace.test.ts ("hidden capacity"), with its bounds,
  // its 20 s run and its last-8-s window, on this virtual clock: how much of each capacity is used
  // once converged is checked here, where it does not depend on how many requests a busy machine
  // manages to make in those seconds.
  test("the integration's hidden capacities, found within its 20 s: 429 above 40/s, a knee at 40/s, 60 → 20/s at 9 s", () => {
    const N = 40;
    const b = bounds({ maxRate: 500, maxConcurrency: 50 });
    const [from, to] = [T0 + 12_000, T0 + 20_000];
    const perSecond = (xs: number[]) => countIn(xs, from, to) / ((to - from) / 1000);

    const cap = run(b, 20, (_t, acceptedLastSecond) => ({ status: acceptedLastSecond >= N ? 429 : 200, latencyMs: 3 }));
    const capSent = perSecond(cap.accepted) + perSecond(cap.rejected);
    assert.ok(cap.rejected.length > 0, "the capacity was found by its 429s");
    assert.ok(capSent < N, `sent ${capSent}/s to a receiver that takes ${N}/s`);
    assert.ok(perSecond(cap.accepted) >= 0.6 * N, `used ${perSecond(cap.accepted)}/s of ${N}/s`);
    assert.ok(cap.state.rate < N * 1.1, `pace ${cap.state.rate}/s`);

    let free = T0;
    const knee = run(b, 20, (t) => {
      free = Math.max(t, free) + 1000 / N;
      return { status: 200, latencyMs: free - t + 5 };
    });
    const kneeSent = perSecond(knee.accepted);
    assert.ok(kneeSent >= 0.5 * N && kneeSent <= 1.1 * N, `knee: ${kneeSent}/s`);

    const shift = run(b, 20, (t, acceptedLastSecond) => ({
      status: acceptedLastSecond >= (t < T0 + 9_000 ? 60 : 20) ? 429 : 200,
      latencyMs: 3,
    }));
    const shiftSent = perSecond(shift.accepted) + perSecond(shift.rejected);
    assert.ok(shiftSent < 20 * 1.15, `after the fall to 20/s: sent ${shiftSent}/s`);
    assert.ok(perSecond(shift.accepted) >= 0.6 * 20, `after the fall to 20/s: used ${perSecond(shift.accepted)}/s`);
  });
});
