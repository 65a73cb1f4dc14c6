import { test, describe } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { DateTime, Settings } from "luxon";
import {
  scheduleApplies,
  DAY_NAMES,
  currentQuietWindow,
  nextQuietStartMs,
  releaseAtMs,
  firstInstantAtWallTime,
  parseWallTime,
  type DeliverySchedule,
} from "../../src/policy/quiet-hours.js";

const Z = (iso: string) => Date.parse(iso);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const win = (s: DeliverySchedule, at: string) => {
  const w = currentQuietWindow(s, Z(at));
  return w && [iso(w.startMs), iso(w.endMs)];
};
const wall = (zone: string, ms: number) => DateTime.fromMillis(ms, { zone }).toFormat("yyyy-MM-dd HH:mm:ss ZZ");

// ---------------------------------------------------------------------------------------------
// Oracle. Shares nothing with the module: no Luxon, offsets read straight off Intl, and a
// different characterisation of a window.
//
// Let wall(t) = t + offset(t) (local wall clock as "local ms") and M(t) = max{ wall(u) : u <= t }
// (the highest the clock has read so far). The first instant the clock reads >= X is <= t
// exactly when M(t) >= X. So t is inside the window of start day D iff
//   D+quiet_start <= M(t) < D'+quiet_end
// (D' = D, or D + 1 when the window crosses midnight): a plain comparison of local wall times.
// wall() only rises between transitions, so M(t) = max(wall(t), wall(T - 1ms) for every
// transition T <= t), with the transitions found by scanning Intl offsets and bisecting.
// ---------------------------------------------------------------------------------------------

const ZONES = [
  "America/New_York",
  "Europe/Berlin",
  "Australia/Lord_Howe",
  "America/Santiago",
  "Asia/Kolkata",
  "Pacific/Chatham",
  "Pacific/Kiritimati",
] as const;
const DAY_MS = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();
function intlOffsetMs(zone: string, ms: number): number {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  const sec = Math.floor(ms / 1000) * 1000;
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(new Date(sec))) if (part.type !== "literal") p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day, p.hour! % 24, p.minute, p.second) - sec;
}
const intlWall = (zone: string, ms: number) => ms + intlOffsetMs(zone, ms);

/** Every offset change from 2024 to 2028, to the millisecond. */
const transitionCache = new Map<string, number[]>();
function transitions(zone: string): number[] {
  const cached = transitionCache.get(zone);
  if (cached) return cached;
  const out: number[] = [];
  const step = 6 * 3_600_000;
  for (let t = Date.UTC(2024, 0, 1); t < Date.UTC(2029, 0, 1); t += step) {
    const o = intlOffsetMs(zone, t);
    if (intlOffsetMs(zone, t + step) === o) continue;
    let lo = t;
    let hi = t + step;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (intlOffsetMs(zone, mid) === o) lo = mid;
      else hi = mid;
    }
    out.push(hi);
  }
  transitionCache.set(zone, out);
  return out;
}

/** M(t): the highest local wall time (as local ms) the clock has shown up to and including t. */
function maxWall(zone: string, t: number): number {
  let m = intlWall(zone, t);
  for (const T of transitions(zone)) {
    if (T > t) break;
    m = Math.max(m, intlWall(zone, T - 1));
  }
  return m;
}

function parseHms(t: string): number {
  const [h, m, s] = t.split(":").map(Number);
  return (h! * 3600 + m! * 60 + (s ?? 0)) * 1000;
}

/** The window (as local wall times) containing t, or null, computed from M(t) alone. */
function oracleWindow(s: DeliverySchedule, t: number): { startLocal: number; endLocal: number } | null {
  const qs = parseHms(s.quiet_start);
  const qe = parseHms(s.quiet_end);
  if (qs === qe) return null;
  const m = maxWall(s.timezone, t);
  const mDay = Math.floor(m / DAY_MS) * DAY_MS;
  for (let d = mDay - 2 * DAY_MS; d <= mDay; d += DAY_MS) {
    const name = DAY_NAMES[(new Date(d).getUTCDay() + 6) % 7]!;
    if (s.days && !s.days.includes(name)) continue;
    const startLocal = d + qs;
    const endLocal = (qe < qs ? d + DAY_MS : d) + qe;
    if (startLocal <= m && m < endLocal) return { startLocal, endLocal };
  }
  return null;
}
const oracleInside = (s: DeliverySchedule, t: number) => oracleWindow(s, t) !== null;

/** `ms` is the first instant the clock reads >= local: M(ms) >= local > M(ms - 1). */
function isFirstReach(zone: string, ms: number, local: number): boolean {
  return maxWall(zone, ms) >= local && maxWall(zone, ms - 1) < local;
}

// ---------------------------------------------------------------------------------------------
// Generators: zones, windows biased towards the wall times a DST change skips or repeats, and
// instants biased towards the transitions of 2026 (some 2025 and 2027).
// ---------------------------------------------------------------------------------------------

const Y2025 = Date.UTC(2025, 0, 1);
const Y2028 = Date.UTC(2028, 0, 1);
const Y2026 = Date.UTC(2026, 0, 1);
const Y2027 = Date.UTC(2027, 0, 1);

function transitionsIn(zone: string, from: number, to: number): number[] {
  return transitions(zone).filter((T) => T >= from && T < to);
}

/** Local second-of-day ranges touched by a clock change (the skipped or repeated wall times). */
function affectedWallSeconds(zone: string): [number, number][] {
  return transitionsIn(zone, Y2025, Y2028).map((T) => {
    const before = intlWall(zone, T - 1) + 1;
    const after = intlWall(zone, T);
    const a = Math.floor((Math.min(before, after) % DAY_MS) / 1000);
    const b = Math.floor((Math.max(before, after) % DAY_MS) / 1000);
    return [a, b];
  });
}

const pad = (n: number) => String(n).padStart(2, "0");
function fmtTime(sec: number, withSeconds: boolean): string {
  const s = ((sec % 86400) + 86400) % 86400;
  const hms = `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}`;
  return withSeconds || s % 60 !== 0 ? `${hms}:${pad(s % 60)}` : hms;
}

function wallTimeArb(zone: string): fc.Arbitrary<number> {
  const ranges = affectedWallSeconds(zone);
  const uniform = fc.integer({ min: 0, max: 86399 });
  const round = fc.integer({ min: 0, max: 47 }).map((h) => h * 1800);
  if (ranges.length === 0) return fc.oneof(uniform, round);
  const nearChange = fc
    .tuple(fc.constantFrom(...ranges), fc.integer({ min: -1800, max: 1800 }), fc.double({ min: 0, max: 1, noNaN: true }), fc.nat(3))
    .map(([[a, b], jitter, frac, mode]) => {
      // exactly the range ends, or inside it, or a little around it
      const x = mode === 0 ? a : mode === 1 ? b : mode === 2 ? a + Math.floor((b - a) * frac) : a + jitter;
      return ((x % 86400) + 86400) % 86400;
    });
  return fc.oneof({ arbitrary: nearChange, weight: 3 }, { arbitrary: uniform, weight: 2 }, { arbitrary: round, weight: 1 });
}

function scheduleArb(zone: string): fc.Arbitrary<DeliverySchedule> {
  return fc
    .record({
      qs: wallTimeArb(zone),
      qe: wallTimeArb(zone),
      sSec: fc.boolean(),
      eSec: fc.boolean(),
      days: fc.option(fc.subarray([...DAY_NAMES], { minLength: 1 }), { nil: undefined }),
    })
    .filter((r) => r.qs !== r.qe)
    .map((r) => {
      const s: DeliverySchedule = { timezone: zone, quiet_start: fmtTime(r.qs, r.sSec), quiet_end: fmtTime(r.qe, r.eSec) };
      if (r.days) s.days = r.days;
      return s;
    });
}

function instantArb(zone: string): fc.Arbitrary<number> {
  const anyTime = fc.integer({ min: Y2025, max: Y2028 - 1 });
  const ts2026 = transitionsIn(zone, Y2026, Y2027);
  const tsOther = transitionsIn(zone, Y2025, Y2028).filter((T) => T < Y2026 || T >= Y2027);
  if (ts2026.length === 0) return anyTime;
  const around = (ts: number[]) =>
    fc
      .tuple(
        fc.constantFrom(...ts),
        fc.oneof(
          fc.integer({ min: -3 * 3_600_000, max: 3 * 3_600_000 }),
          fc.integer({ min: -40 * 3_600_000, max: 40 * 3_600_000 }),
          fc.integer({ min: -2, max: 2 }),
        ),
      )
      .map(([T, d]) => T + d);
  const parts = [
    { arbitrary: around(ts2026), weight: 6 },
    { arbitrary: anyTime, weight: 2 },
  ];
  if (tsOther.length > 0) parts.push({ arbitrary: around(tsOther), weight: 2 });
  return fc.oneof(...parts);
}

const caseArb = fc.constantFrom(...ZONES).chain((zone) => fc.tuple(scheduleArb(zone), instantArb(zone)));

/** t plus evenly spread points in [a, b) and the last ms before b. */
function samples(a: number, b: number, n = 12): number[] {
  if (b <= a) return [];
  const out = [a, b - 1];
  for (let i = 1; i < n; i++) out.push(a + Math.floor(((b - a) * i) / n));
  return out;
}

// QUIET_HOURS_RUNS=5000 for a longer soak; the default keeps the file under a few seconds.
const RUNS = Number(process.env.QUIET_HOURS_RUNS ?? 250);

describe("quiet hours: properties against an Intl-based oracle", () => {
  test("the first instant the clock reads >= a wall time (gap: the jump; repeat: the first)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES).chain((zone) => fc.tuple(fc.constant(zone), instantArb(zone), wallTimeArb(zone))),
        ([zone, near, sec]) => {
          const dayLocal = Math.floor(intlWall(zone, near) / DAY_MS) * DAY_MS;
          const d = new Date(dayLocal);
          const date = { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
          const r = firstInstantAtWallTime(zone, date, sec);
          assert.ok(isFirstReach(zone, r, dayLocal + sec * 1000), `${zone} ${JSON.stringify(date)} ${fmtTime(sec, true)} -> ${iso(r)}`);
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("inside a window <=> held, with both window ends exact to the millisecond", () => {
    fc.assert(
      fc.property(caseArb, ([s, t]) => {
        const w = currentQuietWindow(s, t);
        const o = oracleWindow(s, t);
        assert.equal(
          w !== null,
          o !== null,
          `${JSON.stringify(s)} at ${iso(t)} (${wall(s.timezone, t)}): module ${JSON.stringify(w)} oracle ${JSON.stringify(o)}`,
        );
        assert.equal(releaseAtMs(s, "order.created", t) > t, o !== null);
        if (w && o) {
          assert.ok(w.startMs <= t && t < w.endMs);
          assert.ok(isFirstReach(s.timezone, w.startMs, o.startLocal), `start ${iso(w.startMs)}`);
          assert.ok(isFirstReach(s.timezone, w.endMs, o.endLocal), `end ${iso(w.endMs)}`);
        }
      }),
      { numRuns: RUNS * 2 },
    );
  });

  test("release is the first instant no window holds; never inside a window", () => {
    fc.assert(
      fc.property(caseArb, ([s, t]) => {
        const r = releaseAtMs(s, "invoice.paid", t);
        assert.ok(r >= t);
        assert.ok(!oracleInside(s, r), `released inside a window: ${JSON.stringify(s)} ${iso(t)} -> ${iso(r)}`);
        for (const u of samples(t, r)) assert.ok(oracleInside(s, u), `${iso(u)} in [${iso(t)}, ${iso(r)}) is not held`);
        // a bypassed type is never held
        assert.equal(releaseAtMs({ ...s, bypass_event_types: ["invoice.*"] }, "invoice.paid", t), t);
      }),
      { numRuns: RUNS },
    );
  });

  test("next start is after now, starts a window, and no window opens before it", () => {
    fc.assert(
      fc.property(caseArb, ([s, t]) => {
        const n = nextQuietStartMs(s, t);
        assert.notEqual(n, null);
        const next = n!;
        assert.ok(next > t);
        const o = oracleWindow(s, next);
        assert.ok(
          o !== null && isFirstReach(s.timezone, next, o.startLocal),
          `${JSON.stringify(s)} ${iso(t)} -> ${iso(next)} does not start a window`,
        );
        const now = oracleWindow(s, t);
        for (const u of samples(t + 1, next)) {
          const ou = oracleWindow(s, u);
          // only the window open at t (if any) may hold instants before the next start
          assert.ok(ou === null || (now !== null && ou.startLocal === now.startLocal), `${iso(u)} is held before next start ${iso(next)}`);
        }
        if (now) assert.ok(next >= currentQuietWindow(s, t)!.endMs);
      }),
      { numRuns: RUNS },
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe("quiet hours: DST examples", () => {
  const berlin: DeliverySchedule = { timezone: "Europe/Berlin", quiet_start: "02:30", quiet_end: "03:30" };

  test("Europe/Berlin 02:30-03:30 on 2026-03-29: 02:30 is skipped, the window opens at the jump", () => {
    // 01:00Z: 02:00 CET becomes 03:00 CEST. The clock never reads 02:30; it first reads >= 02:30 at the jump.
    assert.deepEqual(win(berlin, "2026-03-29T01:15:00Z"), ["2026-03-29T01:00:00.000Z", "2026-03-29T01:30:00.000Z"]);
    assert.equal(wall("Europe/Berlin", Z("2026-03-29T01:00:00Z")), "2026-03-29 03:00:00 +02:00");
    assert.equal(currentQuietWindow(berlin, Z("2026-03-29T00:59:59.999Z")), null);
    assert.notEqual(currentQuietWindow(berlin, Z("2026-03-29T01:00:00Z")), null);
    assert.equal(currentQuietWindow(berlin, Z("2026-03-29T01:30:00Z")), null);
    assert.equal(iso(releaseAtMs(berlin, "x", Z("2026-03-29T01:00:00Z"))), "2026-03-29T01:30:00.000Z");
    assert.equal(iso(nextQuietStartMs(berlin, Z("2026-03-28T12:00:00Z"))), "2026-03-29T01:00:00.000Z");
    // the day before and after: an ordinary hour
    assert.deepEqual(win(berlin, "2026-03-28T02:00:00Z"), ["2026-03-28T01:30:00.000Z", "2026-03-28T02:30:00.000Z"]);
    assert.deepEqual(win(berlin, "2026-03-30T01:00:00Z"), ["2026-03-30T00:30:00.000Z", "2026-03-30T01:30:00.000Z"]);
  });

  test("Europe/Berlin 02:30-03:30 on 2026-10-25: 02:30 happens twice, the window runs from the first to 03:30 CET", () => {
    // 01:00Z: 03:00 CEST becomes 02:00 CET. One contiguous window of two hours.
    assert.deepEqual(win(berlin, "2026-10-25T00:30:00Z"), ["2026-10-25T00:30:00.000Z", "2026-10-25T02:30:00.000Z"]);
    // 01:15Z reads 02:15 CET, before quiet_start on the wall, yet inside the window already open
    assert.equal(wall("Europe/Berlin", Z("2026-10-25T01:15:00Z")), "2026-10-25 02:15:00 +01:00");
    assert.deepEqual(win(berlin, "2026-10-25T01:15:00Z"), ["2026-10-25T00:30:00.000Z", "2026-10-25T02:30:00.000Z"]);
    assert.equal(currentQuietWindow(berlin, Z("2026-10-25T00:29:59.999Z")), null);
    assert.equal(currentQuietWindow(berlin, Z("2026-10-25T02:30:00Z")), null);
    assert.equal(iso(releaseAtMs(berlin, "x", Z("2026-10-25T01:40:00Z"))), "2026-10-25T02:30:00.000Z");
  });

  test("a window inside the skipped hour is empty: nothing is held and it is not a 'next start'", () => {
    const s: DeliverySchedule = { timezone: "Europe/Berlin", quiet_start: "02:10", quiet_end: "02:50" };
    assert.equal(currentQuietWindow(s, Z("2026-03-29T01:00:00Z")), null);
    assert.equal(iso(nextQuietStartMs(s, Z("2026-03-28T12:00:00Z"))), "2026-03-30T00:10:00.000Z");
  });

  test("a gap makes two windows touch; release chains through both", () => {
    // 03:00-02:30 daily: the 2026-03-28 window ends when the clock first reads 02:30 on the 29th
    // (the 01:00Z jump) and the 29th's window starts at 03:00 CEST, the same instant.
    const s: DeliverySchedule = { timezone: "Europe/Berlin", quiet_start: "03:00", quiet_end: "02:30" };
    assert.deepEqual(win(s, "2026-03-28T12:00:00Z"), ["2026-03-28T02:00:00.000Z", "2026-03-29T01:00:00.000Z"]);
    assert.deepEqual(win(s, "2026-03-29T01:00:00Z"), ["2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]);
    assert.equal(iso(releaseAtMs(s, "x", Z("2026-03-28T12:00:00Z"))), "2026-03-30T00:30:00.000Z");
    assert.equal(iso(nextQuietStartMs(s, Z("2026-03-28T12:00:00Z"))), "2026-03-29T01:00:00.000Z");
  });

  test("America/New_York 22:00-06:00 across both 2026 changes, found from after midnight", () => {
    const ny: DeliverySchedule = { timezone: "America/New_York", quiet_start: "22:00", quiet_end: "06:00" };
    // spring forward 2026-03-08 02:00 EST -> 03:00 EDT: a 7-hour night
    const march = ["2026-03-08T03:00:00.000Z", "2026-03-08T10:00:00.000Z"];
    assert.deepEqual(win(ny, "2026-03-08T03:00:00Z"), march);
    assert.deepEqual(win(ny, "2026-03-08T06:30:00Z"), march); // 01:30 EST on the 8th
    assert.deepEqual(win(ny, "2026-03-08T07:00:00Z"), march); // 03:00 EDT, just after the jump
    assert.equal(iso(releaseAtMs(ny, "x", Z("2026-03-08T06:30:00Z"))), "2026-03-08T10:00:00.000Z");
    assert.equal(currentQuietWindow(ny, Z("2026-03-08T10:00:00Z")), null);
    assert.deepEqual(win(ny, "2026-03-09T05:00:00Z"), ["2026-03-09T02:00:00.000Z", "2026-03-09T10:00:00.000Z"]);
    // fall back 2026-11-01 02:00 EDT -> 01:00 EST: a 9-hour night, 01:xx read twice inside it
    const nov = ["2026-11-01T02:00:00.000Z", "2026-11-01T11:00:00.000Z"];
    assert.deepEqual(win(ny, "2026-11-01T05:30:00Z"), nov); // 01:30 EDT
    assert.deepEqual(win(ny, "2026-11-01T06:30:00Z"), nov); // 01:30 EST
    assert.equal(iso(releaseAtMs(ny, "x", Z("2026-11-01T05:30:00Z"))), "2026-11-01T11:00:00.000Z");
    assert.equal(currentQuietWindow(ny, Z("2026-11-01T01:59:59.999Z")), null);
    assert.equal(iso(nextQuietStartMs(ny, Z("2026-11-01T06:30:00Z"))), "2026-11-02T03:00:00.000Z");
  });

  test("Australia/Lord_Howe: half-hour changes", () => {
    const lh: DeliverySchedule = { timezone: "Australia/Lord_Howe", quiet_start: "01:45", quiet_end: "02:15" };
    // 2026-10-04 02:00 (+10:30) -> 02:30 (+11): 02:15 skipped, the window ends at the jump
    assert.deepEqual(win(lh, "2026-10-03T15:20:00Z"), ["2026-10-03T15:15:00.000Z", "2026-10-03T15:30:00.000Z"]);
    assert.equal(wall("Australia/Lord_Howe", Z("2026-10-03T15:30:00Z")), "2026-10-04 02:30:00 +11:00");
    // 2026-04-05 02:00 (+11) -> 01:30 (+10:30): from the first 01:45 to 02:15 +10:30, an hour
    assert.deepEqual(win(lh, "2026-04-04T15:20:00Z"), ["2026-04-04T14:45:00.000Z", "2026-04-04T15:45:00.000Z"]);
    assert.equal(currentQuietWindow(lh, Z("2026-04-04T14:44:59.999Z")), null);
  });

  test("America/Santiago: the clock changes at midnight", () => {
    // 2026-09-06 00:00 (-04) -> 01:00 (-03): a window from 00:00 opens at the jump
    const spring: DeliverySchedule = { timezone: "America/Santiago", quiet_start: "00:00", quiet_end: "01:30", days: ["sun"] };
    assert.deepEqual(win(spring, "2026-09-06T04:10:00Z"), ["2026-09-06T04:00:00.000Z", "2026-09-06T04:30:00.000Z"]);
    // 2026-04-05 00:00 (-03) -> Saturday 23:00 (-04): 23:30 Saturday happens twice
    const autumn: DeliverySchedule = { timezone: "America/Santiago", quiet_start: "23:30", quiet_end: "00:30", days: ["sat"] };
    assert.deepEqual(win(autumn, "2026-04-05T03:40:00Z"), ["2026-04-05T02:30:00.000Z", "2026-04-05T04:30:00.000Z"]);
  });

  test("Pacific/Kiritimati (+14) and Asia/Kolkata (+05:30): days are local days", () => {
    const k: DeliverySchedule = { timezone: "Pacific/Kiritimati", quiet_start: "09:00", quiet_end: "17:00", days: ["mon"] };
    // Monday 2026-06-15 09:00 +14 is Sunday 19:00 UTC
    assert.deepEqual(win(k, "2026-06-14T20:00:00Z"), ["2026-06-14T19:00:00.000Z", "2026-06-15T03:00:00.000Z"]);
    assert.equal(currentQuietWindow(k, Z("2026-06-15T20:00:00Z")), null);
    const i: DeliverySchedule = { timezone: "Asia/Kolkata", quiet_start: "23:30:30", quiet_end: "00:15" };
    assert.deepEqual(win(i, "2026-01-01T18:31:00Z"), ["2026-01-01T18:00:30.000Z", "2026-01-01T18:45:00.000Z"]);
  });

  test("days=['fri'] 22:00-02:00 holds Saturday 01:00 and nothing opened on Thursday or Saturday", () => {
    const s: DeliverySchedule = { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "02:00", days: ["fri"] };
    // 2026-06-12 is a Friday; CEST = UTC+2
    assert.deepEqual(win(s, "2026-06-12T23:00:00Z"), ["2026-06-12T20:00:00.000Z", "2026-06-13T00:00:00.000Z"]); // Sat 01:00
    assert.equal(iso(releaseAtMs(s, "x", Z("2026-06-12T23:00:00Z"))), "2026-06-13T00:00:00.000Z");
    assert.equal(currentQuietWindow(s, Z("2026-06-11T23:00:00Z")), null); // Fri 01:00 (a Thursday window)
    assert.equal(currentQuietWindow(s, Z("2026-06-13T21:00:00Z")), null); // Sat 23:00
    assert.equal(iso(nextQuietStartMs(s, Z("2026-06-12T23:00:00Z"))), "2026-06-19T20:00:00.000Z");
    assert.equal(iso(nextQuietStartMs(s, Z("2026-06-12T19:59:59Z"))), "2026-06-12T20:00:00.000Z");
  });

  test("results do not depend on Luxon's clock (Settings.now)", () => {
    const before = Settings.now;
    const probe = () => [
      win(berlin, "2026-10-25T01:15:00Z"),
      iso(firstInstantAtWallTime("Europe/Berlin", { year: 2026, month: 10, day: 25 }, parseWallTime("02:30"))),
      iso(firstInstantAtWallTime("Australia/Lord_Howe", { year: 2026, month: 4, day: 5 }, parseWallTime("01:45"))),
    ];
    try {
      Settings.now = () => Z("2026-01-15T12:00:00Z");
      const winter = probe();
      Settings.now = () => Z("2026-07-15T12:00:00Z");
      assert.deepEqual(probe(), winter);
      assert.deepEqual(winter[1], "2026-10-25T00:30:00.000Z");
      assert.deepEqual(winter[2], "2026-04-04T14:45:00.000Z");
    } finally {
      Settings.now = before;
    }
  });
});

describe("quiet hours: event types and degenerate schedules", () => {
  const base = { timezone: "Europe/Berlin", quiet_start: "00:00", quiet_end: "23:59:59" };
  const inside = Z("2026-06-12T10:00:00Z");

  test("applies_to and bypass_event_types use the event_types matcher", () => {
    const s: DeliverySchedule = { ...base, applies_to: ["order.*", "invoice.paid"], bypass_event_types: ["order.refunded"] };
    assert.equal(scheduleApplies(s, "order.created"), true);
    assert.equal(scheduleApplies(s, "invoice.paid"), true);
    assert.equal(scheduleApplies(s, "order.refunded"), false);
    assert.equal(scheduleApplies(s, "invoice.voided"), false);
    assert.equal(releaseAtMs(s, "invoice.voided", inside), inside);
    assert.equal(releaseAtMs(s, "order.refunded", inside), inside);
    assert.ok(releaseAtMs(s, "order.created", inside) > inside);
  });

  test("absent or empty applies_to holds every type; empty bypass bypasses nothing", () => {
    for (const s of [{ ...base }, { ...base, applies_to: [], bypass_event_types: [] }] as DeliverySchedule[]) {
      assert.equal(scheduleApplies(s, "order.created"), true);
      assert.equal(scheduleApplies(s, "destination.paused"), true);
    }
    const b: DeliverySchedule = { ...base, bypass_event_types: ["payment.*"] };
    assert.equal(scheduleApplies(b, "payment.failed"), false);
    assert.equal(scheduleApplies(b, "order.created"), true);
    // the matcher's rule for system types: "*" does not reach destination.* (name them)
    assert.equal(scheduleApplies({ ...base, bypass_event_types: ["*"] }, "destination.paused"), true);
    assert.equal(scheduleApplies({ ...base, bypass_event_types: ["destination.*"] }, "destination.paused"), false);
  });

  test("quiet_start == quiet_end is no window; empty days has no next start", () => {
    const same: DeliverySchedule = { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "22:00:00" };
    assert.equal(currentQuietWindow(same, inside), null);
    assert.equal(releaseAtMs(same, "x", inside), inside);
    assert.equal(nextQuietStartMs(same, inside), null);
    const none: DeliverySchedule = { ...base, days: [] };
    assert.equal(nextQuietStartMs(none, inside), null);
    assert.equal(currentQuietWindow(none, inside), null);
    assert.equal(releaseAtMs(none, "x", inside), inside);
  });

  test("a bad zone or wall time throws RangeError", () => {
    assert.throws(() => currentQuietWindow({ ...base, timezone: "Mars/Olympus" }, inside), RangeError);
    assert.throws(() => currentQuietWindow({ ...base, quiet_start: "24:00" }, inside), RangeError);
    assert.throws(() => parseWallTime("7:00"), RangeError);
    assert.equal(parseWallTime("06:30:15"), 6 * 3600 + 30 * 60 + 15);
  });
});
