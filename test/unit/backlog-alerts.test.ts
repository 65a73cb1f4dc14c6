import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  expectedHoldSeconds,
  growthNeeded,
  staleLimitSeconds,
  watchBacklog,
  type BacklogAlertConfig,
  type BacklogFacts,
  type BacklogWatch,
} from "../../src/policy/backlog-alerts.js";

const T0 = Date.parse("2026-11-25T12:00:00Z");
const MIN = 60_000;
const CFG = { growMinutes: 30, ageMinutes: 60 };
const facts = (minute: number, waiting: number, over: Partial<BacklogFacts> = {}): BacklogFacts => ({
  nowMs: T0 + minute * MIN,
  waiting,
  oldestAgeS: waiting > 0 ? 60 : null,
  paused: false,
  quiet: false,
  expectedHoldS: 0,
  ...over,
});

/** Runs one sample a minute; returns every transition type, in order, with its minute. */
function replay(samples: BacklogFacts[], cfg: BacklogAlertConfig = CFG) {
  let w: BacklogWatch | null = null;
  const out: { minute: number; type: string; reason: string }[] = [];
  for (const f of samples) {
    const r = watchBacklog(w, f, cfg);
    w = r.watch;
    for (const t of r.transitions) out.push({ minute: (f.nowMs - T0) / MIN, type: t.type, reason: t.reason });
  }
  return { out, watch: w };
}

describe("backlog alerts (policy/backlog-alerts.ts)", () => {
  test("a backlog rising for backlog_alert_minutes fires growing once, and recovered once when it drains", () => {
    const rising = Array.from({ length: 45 }, (_, m) => facts(m, m * 100));
    const drained = [facts(45, 0), facts(46, 0)];
    const { out, watch } = replay([...rising, ...drained]);
    assert.deepEqual(
      out.map((o) => [o.minute, o.type]),
      [
        [31, "destination.backlog_growing"],
        [45, "destination.backlog_recovered"],
      ],
    );
    // The first look that finds deliveries (minute 1) starts the count.
    assert.match(out[0]!.reason, /^3100 deliveries waiting, up from 100 30 min ago/);
    assert.equal(watch, null, "nothing waiting and nothing standing: nothing stored");
  });

  test("a steady or draining backlog is not growing; nor is one that rose by less than the minimum", () => {
    const hovering = Array.from({ length: 90 }, (_, m) => facts(m, 10_000 + ((m * 37) % 11) - 5));
    assert.deepEqual(replay(hovering).out, []);
    const draining = Array.from({ length: 90 }, (_, m) => facts(m, 9000 - m * 100));
    assert.deepEqual(replay(draining).out, []);
    const small = Array.from({ length: 90 }, (_, m) => facts(m, 1 + (m % 7)));
    assert.deepEqual(replay(small).out, [], "a standing queue of a few deliveries is normal traffic");
    assert.equal(growthNeeded(0), 50);
    assert.equal(growthNeeded(10_000), 1000);
  });

  test("a backlog that stops rising but never drains stays growing; it recovers only back at its starting level", () => {
    const samples = [
      ...Array.from({ length: 35 }, (_, m) => facts(m, 500 + m * 10)),
      ...Array.from({ length: 30 }, (_, m) => facts(35 + m, 840)),
      facts(65, 600),
      facts(66, 500),
    ];
    const { out } = replay(samples);
    assert.deepEqual(
      out.map((o) => [o.minute, o.type]),
      [
        [30, "destination.backlog_growing"],
        [66, "destination.backlog_recovered"],
      ],
    );
  });

  test("paused or quiet: growth by design does not count, and nothing fires or recovers meanwhile", () => {
    const paused = Array.from({ length: 60 }, (_, m) => facts(m, m * 100, { paused: true }));
    assert.deepEqual(replay(paused).out, []);
    // Growing first, then paused: it stays growing (no recovered for a pause), and after the
    // resume the count starts from the backlog it resumed with.
    const samples = [
      ...Array.from({ length: 33 }, (_, m) => facts(m, m * 100)),
      ...Array.from({ length: 20 }, (_, m) => facts(33 + m, 3300 + m * 100, { quiet: true })),
      ...Array.from({ length: 20 }, (_, m) => facts(53 + m, 5000 - m * 100)),
    ];
    assert.deepEqual(
      replay(samples).out.map((o) => [o.minute, o.type]),
      [
        [31, "destination.backlog_growing"],
        [53, "destination.backlog_recovered"],
      ],
    );
  });

  test("stale: oldest waiting over backlog_alert_age_minutes, or over twice the hold that explains it when longer", () => {
    const old = (minute: number, ageMin: number, over: Partial<BacklogFacts> = {}) =>
      facts(minute, 10, { oldestAgeS: ageMin * 60, ...over });
    const plain = replay([old(0, 59), old(1, 61), old(2, 75), old(3, 10)]);
    assert.deepEqual(
      plain.out.map((o) => [o.minute, o.type]),
      [
        [1, "destination.backlog_stale"],
        [3, "destination.backlog_recovered"],
      ],
    );
    assert.match(plain.out[0]!.reason, /the oldest waiting delivery is 61 min old, over the limit of 60 min \(backlog_alert_age_minutes\)/);
    // An 8 h quiet window explains up to 16 h of waiting.
    const quietHold = 8 * 3600;
    const held = replay([old(0, 9 * 60, { expectedHoldS: quietHold }), old(1, 17 * 60, { expectedHoldS: quietHold })]);
    assert.deepEqual(
      held.out.map((o) => o.type),
      ["destination.backlog_stale"],
    );
    assert.match(held.out[0]!.reason, /over the limit of 16 h \(twice the 8 h its holds explain\)/);
    assert.equal(staleLimitSeconds(100, null), null, "null turns it off");
    assert.deepEqual(replay([old(0, 500)], { growMinutes: 30, ageMinutes: null }).out, []);
  });

  test("expected hold: the quiet window's length (open or next), the throttle hold, the backlog at its pace", () => {
    const schedule = { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "06:00" };
    // Outside the window (13:00 Berlin): the next one, 8 h.
    assert.equal(
      expectedHoldSeconds({ nowMs: T0, schedule, throttledUntilMs: null, throttleHoldS: 0, waiting: 0, ratePerSecond: null }),
      8 * 3600,
    );
    // The night DST ends (2026-10-25) the same wall-clock window is 9 h long.
    const dstNight = Date.parse("2026-10-24T21:00:00Z");
    assert.equal(
      expectedHoldSeconds({ nowMs: dstNight, schedule, throttledUntilMs: null, throttleHoldS: 0, waiting: 0, ratePerSecond: null }),
      9 * 3600,
    );
    assert.equal(
      expectedHoldSeconds({
        nowMs: T0,
        schedule: null,
        throttledUntilMs: T0 + 30_000,
        throttleHoldS: 300,
        waiting: 0,
        ratePerSecond: null,
      }),
      300,
    );
    assert.equal(
      expectedHoldSeconds({ nowMs: T0, schedule: null, throttledUntilMs: T0 - 1, throttleHoldS: 300, waiting: 0, ratePerSecond: null }),
      0,
      "a hold that ended explains nothing",
    );
    assert.equal(
      expectedHoldSeconds({ nowMs: T0, schedule: null, throttledUntilMs: null, throttleHoldS: 0, waiting: 6000, ratePerSecond: 2 }),
      3000,
    );
  });

  test("property: one alert per transition — growing and stale never fire twice without a recovered between, recovered only after one", () => {
    const sample = fc.record({
      dMin: fc.integer({ min: 1, max: 20 }),
      waiting: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 20_000 })),
      ageMin: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }),
      paused: fc.boolean(),
      quiet: fc.boolean(),
      holdS: fc.integer({ min: 0, max: 20_000 }),
    });
    fc.assert(
      fc.property(
        fc.array(sample, { maxLength: 120 }),
        fc.option(fc.integer({ min: 1, max: 60 }), { nil: null }),
        fc.option(fc.integer({ min: 1, max: 300 }), { nil: null }),
        (samples, growMinutes, ageMinutes) => {
          let w: BacklogWatch | null = null;
          let now = T0;
          const standing = { growing: false, stale: false };
          for (const s of samples) {
            now += s.dMin * MIN;
            const f: BacklogFacts = {
              nowMs: now,
              waiting: s.waiting,
              oldestAgeS: s.waiting > 0 && s.ageMin !== undefined ? s.ageMin * 60 : null,
              paused: s.paused,
              quiet: s.quiet && !s.paused,
              expectedHoldS: s.holdS,
            };
            const r = watchBacklog(w, f, { growMinutes, ageMinutes });
            for (const t of r.transitions) {
              if (t.type === "destination.backlog_growing") {
                assert.ok(!standing.growing, "growing fired twice");
                standing.growing = true;
              } else if (t.type === "destination.backlog_stale") {
                assert.ok(!standing.stale, "stale fired twice");
                standing.stale = true;
              } else {
                assert.ok(standing.growing || standing.stale, "recovered with nothing standing");
                standing.growing = standing.stale = false;
              }
            }
            if (f.paused || f.quiet) assert.deepEqual(r.transitions, []);
            // The stored flags say what stands, and recovered clears both.
            assert.equal(r.watch?.growing ?? false, standing.growing);
            assert.equal(r.watch?.stale ?? false, standing.stale);
            if (growMinutes === null) assert.ok(!standing.growing);
            if (ageMinutes === null) assert.ok(!standing.stale);
            w = r.watch;
          }
        },
      ),
    );
  });
});
