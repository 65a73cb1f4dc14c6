import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { IANAZone } from "luxon";
import {
  currentQuietWindow,
  nextQuietStartMs,
  releaseAtMs,
  firstInstantAtWallTime,
  DAY_NAMES,
  type DeliverySchedule,
} from "../../src/policy/quiet-hours.js";
import {
  ALL_ZONES,
  EARLIEST_MS,
  LATEST_MS,
  ODD_ZONES,
  deliverySchedule,
  instantMs,
  quietSeconds,
  scheduleOf,
  secondOfDay,
  zone,
} from "../helpers/admitted.js";

// Quiet hours over every IANA zone this runtime knows, every wall time (00:00 and 23:59:59, start
// and end a second apart), every subset of days and every instant from 1970 to 9999-12-31, DST
// edges of the 30- and 45-minute zones and the days some zones skipped: every answer is a finite
// whole millisecond, a window never holds its own end, a release is never inside a window — and
// each call reads the zone's offset a bounded number of times (counted below), so no loop runs away.

const DAY_MS = 86_400_000;

// ---- Step count -------------------------------------------------------------------------------
// Every loop in quiet-hours.ts reads the zone's offset (IANAZone#offset) on each step, so counting
// those reads bounds the steps. A reach (one wall time to an instant) takes two reads plus, per
// offset change it crosses, a bisection over under two days of milliseconds (log2(1.7e8) < 28
// reads) and two more; tzdata never has more than two changes within two days. A runaway loop
// hits HARD_CAP and throws instead of hanging the test.
const REACH_READS = 2 + 2 * (28 + 2);
const BUDGET = {
  /** Up to four start days tried, one end, and the local date. */
  current: 5 * REACH_READS + 2,
  /** Up to 19 start days, each with its end. */
  next: 2 * 19 * REACH_READS + 2,
  first: REACH_READS,
};
const HARD_CAP = 100_000;
let reads = 0;
// eslint-disable-next-line @typescript-eslint/unbound-method -- only ever called with .call(zone, …)
const offset = IANAZone.prototype.offset;
before(() => {
  IANAZone.prototype.offset = function (this: IANAZone, ts: number): number {
    if (++reads > HARD_CAP) throw new Error(`runaway: ${reads} offset reads in one call`);
    return offset.call(this, ts);
  };
});
after(() => {
  IANAZone.prototype.offset = offset;
});

/** Runs `f`, asserting it read the zone's offset at most `budget` times. */
function counted<T>(what: string, budget: number, f: () => T): T {
  reads = 0;
  const out = f();
  assert.ok(reads <= budget, `${what}: ${reads} offset reads, budget ${budget}`);
  return out;
}

const isWholeMs = (ms: number) => Number.isSafeInteger(ms) && Math.abs(ms) <= 8.64e15;

/** Every claim this file makes about one schedule at one instant. */
function checkAt(s: DeliverySchedule, nowMs: number): void {
  const w = counted("currentQuietWindow", BUDGET.current, () => currentQuietWindow(s, nowMs));
  if (w) {
    assert.ok(isWholeMs(w.startMs) && isWholeMs(w.endMs), `${w.startMs} .. ${w.endMs}`);
    assert.ok(w.startMs <= nowMs && nowMs < w.endMs, "the window holds now");
    assert.ok(w.endMs - w.startMs <= 2 * DAY_MS, "and lasts at most two days");
    const atEnd = counted("currentQuietWindow", BUDGET.current, () => currentQuietWindow(s, w.endMs));
    assert.ok(atEnd === null || atEnd.startMs >= w.endMs, "a window never holds its own end");
  }

  const next = counted("nextQuietStartMs", BUDGET.next, () => nextQuietStartMs(s, nowMs));
  assert.ok(next !== null, "days is never empty, so a window always comes");
  assert.ok(isWholeMs(next) && next > nowMs && next - nowMs <= 17 * DAY_MS, `next start ${next - nowMs} ms ahead`);
  const opening = counted("currentQuietWindow", BUDGET.current, () => currentQuietWindow(s, next));
  assert.equal(opening?.startMs, next, "a window opens at the next start");
  if (w) assert.ok(next >= w.endMs, "the next start is after the open window");

  // A chain of windows ends within a few of them; the budget allows each its own look.
  const release = counted("releaseAtMs", 4 * BUDGET.current, () => releaseAtMs(s, "order.created", nowMs));
  assert.ok(isWholeMs(release) && release >= nowMs, `release ${release}`);
  assert.equal(w ? release >= w.endMs : release === nowMs, true, "released at the open window's end, or now");
  assert.equal(currentQuietWindow(s, release), null, "a release is never inside a window");
}

// ---- Offsets and transitions, for the DST edges ----------------------------------------------

const zones = new Map<string, IANAZone>();
const offsetMs = (z: string, ms: number): number => {
  let zz = zones.get(z);
  if (!zz) zones.set(z, (zz = IANAZone.create(z)));
  return Math.round(offset.call(zz, ms) * 60_000);
};
const wall = (z: string, ms: number) => ms + offsetMs(z, ms);

const transitionCache = new Map<string, number[]>();

/**
 * The instants in [fromMs, toMs) at which the zone's offset changes: a scan in two-day steps, then
 * bisection (two changes within two days would show as one; tzdata has none since 1970).
 */
function transitionsIn(z: string, fromMs: number, toMs: number): number[] {
  const key = `${z} ${fromMs} ${toMs}`;
  const cached = transitionCache.get(key);
  if (cached) return cached;
  const out: number[] = [];
  const step = 2 * DAY_MS;
  let o = offsetMs(z, fromMs);
  for (let t = fromMs; t < toMs; t += step) {
    const o2 = offsetMs(z, t + step);
    if (o2 === o) continue;
    let lo = t;
    let hi = t + step;
    while (hi - lo > 1) {
      const mid = lo + Math.floor((hi - lo) / 2);
      if (offsetMs(z, mid) === o) lo = mid;
      else hi = mid;
    }
    out.push(hi);
    o = o2;
  }
  transitionCache.set(key, out);
  return out;
}

/** A transition of one of the odd zones in a year from 1970 to 2037 (or a known skipped day). */
const dstEdge: fc.Arbitrary<{ zone: string; T: number }> = fc.oneof(
  fc.constantFrom(
    { zone: "Pacific/Apia", T: Date.parse("2011-12-30T10:00:00Z") },
    { zone: "Pacific/Fakaofo", T: Date.parse("2011-12-30T11:00:00Z") },
    { zone: "Pacific/Kiritimati", T: Date.parse("1994-12-31T10:00:00Z") },
    { zone: "Pacific/Kwajalein", T: Date.parse("1993-08-21T12:00:00Z") },
  ),
  fc
    .record({ zone: fc.constantFrom(...ODD_ZONES), year: fc.integer({ min: 1970, max: 2037 }), pick: fc.nat() })
    .map(({ zone, year, pick }) => {
      const ts = transitionsIn(zone, Date.UTC(year, 0, 1), Date.UTC(year + 1, 0, 1));
      return ts.length === 0 ? null : { zone, T: ts[pick % ts.length]! };
    })
    .filter((x): x is { zone: string; T: number } => x !== null),
);

/** Second of the local day of a local-ms reading. */
const secOfDay = (localMs: number) => Math.floor((((localMs % DAY_MS) + DAY_MS) % DAY_MS) / 1000);

describe("quiet hours over every zone, wall time and instant the API admits", () => {
  test("every IANA zone: 00:00–23:59:59, a second across midnight, 02:30–03:00, in 1970 and 9999-12-31", () => {
    const schedules: [number, number][] = [
      [0, 86_399],
      [86_399, 0],
      [9_000, 10_800],
    ];
    const instants = [EARLIEST_MS, LATEST_MS];
    for (const z of ALL_ZONES) {
      for (const [a, b] of schedules) {
        for (const nowMs of instants) checkAt(scheduleOf(z, a, b, true), nowMs);
      }
    }
  });

  test("property: any zone, wall times, days and instant", () => {
    fc.assert(
      fc.property(deliverySchedule, instantMs, (s, nowMs) => checkAt(s, nowMs)),
      { numRuns: 300 },
    );
  });

  test("every subset of days, across the day Apia skipped and a Lord Howe change", () => {
    const subsets = Array.from({ length: 127 }, (_, m) => DAY_NAMES.filter((_, i) => ((m + 1) >> i) & 1));
    const cases: [string, number, number, number][] = [
      // 23:00–02:00 and 00:00–23:59:59 around Apia's missing Friday 2011-12-30 (local midnight = 10:00 UTC).
      ["Pacific/Apia", 82_800, 7_200, Date.parse("2011-12-29T09:30:00Z")],
      ["Pacific/Apia", 0, 86_399, Date.parse("2011-12-30T09:59:59Z")],
      // 01:45–02:15 across Lord Howe's half-hour change (2026-04-05 02:00 -> 01:30).
      ["Australia/Lord_Howe", 6_300, 8_100, Date.parse("2026-04-04T14:50:00Z")],
    ];
    for (const days of subsets) {
      for (const [z, a, b, nowMs] of cases) checkAt(scheduleOf(z, a, b, false, days), nowMs);
    }
  });

  test("property: any subset of days, zone with a skipped day or half-hour change, wall times and instant around them", () => {
    const subsets = Array.from({ length: 127 }, (_, m) => DAY_NAMES.filter((_, i) => ((m + 1) >> i) & 1));
    fc.assert(
      fc.property(
        fc.constantFrom(...subsets),
        fc.constantFrom("Pacific/Apia", "Pacific/Fakaofo", "Australia/Lord_Howe", "Pacific/Chatham"),
        quietSeconds,
        fc.integer({ min: Date.parse("2011-12-25T00:00:00Z"), max: Date.parse("2012-01-05T00:00:00Z") }),
        (days, z, [a, b], nowMs) => checkAt(scheduleOf(z, a, b, false, days), nowMs),
      ),
      { numRuns: 150 },
    );
  });

  test("property: at DST edges (30- and 45-minute offsets, skipped days), windows starting or ending at the edge", () => {
    fc.assert(
      fc.property(
        dstEdge,
        fc.integer({ min: -3, max: 3 }),
        fc.integer({ min: -7_200_000, max: 7_200_000 }),
        fc.constantFrom(-1, 0, 1, 1800, -1800),
        fc.boolean(),
        ({ zone: z, T }, shift, nearMs, spanS, startAtEdge) => {
          // The wall times just before and just after the change, as quiet_start or quiet_end.
          const beforeS = secOfDay(wall(z, T - 1) + shift * 1000);
          const afterS = secOfDay(wall(z, T) + shift * 1000);
          const edge = startAtEdge ? beforeS : afterS;
          const other = (edge + 86_400 + (spanS === 0 ? 3600 : spanS)) % 86_400;
          const [a, b] = startAtEdge ? [edge, other] : [other, edge];
          if (a === b) return;
          const s = scheduleOf(z, a, b, true);
          for (const nowMs of [T - 1, T, T + nearMs]) checkAt(s, Math.min(LATEST_MS, Math.max(EARLIEST_MS, nowMs)));
        },
      ),
      { numRuns: 100 },
    );
  });

  test("property: firstInstantAtWallTime is the first instant the wall clock reads at least the time, any zone and date", () => {
    const date = fc.oneof(
      instantMs.map((ms) => new Date(ms)),
      dstEdge.map(({ T }) => new Date(T)),
      fc.constantFrom(new Date(Date.UTC(9999, 11, 31)), new Date(Date.UTC(1970, 0, 1)), new Date(Date.UTC(2011, 11, 30))),
    );
    fc.assert(
      fc.property(zone, date, secondOfDay, (z, d, sec) => {
        const local = { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
        const t = counted("firstInstantAtWallTime", BUDGET.first, () => firstInstantAtWallTime(z, local, sec));
        assert.ok(isWholeMs(t), `${t}`);
        const target = Date.UTC(local.year, local.month - 1, local.day) + sec * 1000;
        assert.ok(wall(z, t) >= target, "the clock reads at least the time then");
        assert.ok(wall(z, t - 1) < target, "and did not a millisecond before");
        assert.ok(wall(z, t) - target <= DAY_MS, "a skipped time is reached at the change, at most a day late");
      }),
      { numRuns: 500 },
    );
  });

  test("firstInstantAtWallTime refuses what is not a date or a second of the day", () => {
    assert.throws(() => firstInstantAtWallTime("UTC", { year: 2026, month: 2, day: 30 }, 0), RangeError);
    for (const sec of [-1, 86_400, 0.5, Number.NaN, Infinity]) {
      assert.throws(() => firstInstantAtWallTime("UTC", { year: 2026, month: 3, day: 1 }, sec), RangeError, String(sec));
    }
    assert.throws(() => firstInstantAtWallTime("Mars/Olympus_Mons", { year: 2026, month: 3, day: 1 }, 0), RangeError);
  });

  test("an instant no clock can read is refused, not read as 'no window'", () => {
    const s = scheduleOf("Europe/Berlin", 79_200, 21_600);
    for (const ms of [Number.NaN, Infinity, -Infinity, 8.64e15 + 1, 1e300]) {
      assert.throws(() => currentQuietWindow(s, ms), RangeError, String(ms));
      assert.throws(() => nextQuietStartMs(s, ms), RangeError, String(ms));
      assert.throws(() => releaseAtMs(s, "order.created", ms), RangeError, String(ms));
    }
  });
});
