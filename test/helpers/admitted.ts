// fast-check generators for everything the API admits, with the ranges taken from
// src/policy/bounds.ts: each bound's ends, the floats next to them and zero where admitted are
// drawn often, not left to chance. The property tests (test/unit/*-properties.test.ts) feed these
// to the pure policy modules and the claim planner.

import fc from "fast-check";
import { BOUNDS, EARLIEST_MS, LATEST_MS, type BoundName, type NumberBound } from "../../src/policy/bounds.js";
import { DAY_NAMES, type DeliverySchedule } from "../../src/policy/quiet-hours.js";
import type { RateLimit } from "../../src/policy/token-bucket.js";
import type { AdaptiveConfig } from "../../src/policy/adaptive-pace.js";

export { EARLIEST_MS, LATEST_MS };

/** The next double above / below `x` (0.001 → 0.0010000000000000002). */
/** The longest hold or wait Sluice takes (a week), and Postgres's int4: ends results are held to. */
export const WEEK = BOUNDS.throttle_hold_seconds.max;
export const INT4_MAX = 2 ** 31 - 1;

export function nextUp(x: number): number {
  if (x === 0) return Number.MIN_VALUE;
  const f = new Float64Array([x]);
  const i = new BigInt64Array(f.buffer);
  i[0] = i[0]! + (x > 0 ? 1n : -1n);
  return f[0]!;
}
export function nextDown(x: number): number {
  return -nextUp(-x);
}

/** The values at and next to a bound's ends that the bound still admits. */
export function edgesOf(b: NumberBound): number[] {
  const candidates = b.integer
    ? [b.min, b.min + 1, b.max - 1, b.max]
    : [b.min, nextUp(b.min), nextUp(nextUp(b.min)), nextDown(b.max), b.max];
  return [...new Set(candidates.filter((v) => v >= b.min && v <= b.max))];
}

/**
 * Any number the bound admits: its edges, uniformly over the range, and (floats) spread evenly
 * over the orders of magnitude, so that 0.003 and 70,000 both turn up in a range 0.001–100,000.
 */
export function admitted(b: NumberBound): fc.Arbitrary<number> {
  if (b.integer) {
    return fc.oneof(
      { weight: 1, arbitrary: fc.constantFrom(...edgesOf(b)) },
      { weight: 3, arbitrary: fc.integer({ min: b.min, max: b.max }) },
    );
  }
  const lo = Math.log(Math.max(b.min, Number.MIN_VALUE));
  const hi = Math.log(b.max);
  return fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom(...edgesOf(b)) },
    { weight: 2, arbitrary: fc.double({ min: b.min, max: b.max, noNaN: true, noDefaultInfinity: true }) },
    {
      weight: 2,
      arbitrary: fc.double({ min: lo, max: hi, noNaN: true }).map((e) => Math.min(b.max, Math.max(b.min, Math.exp(e)))),
    },
  );
}

export const bound = (name: BoundName): fc.Arbitrary<number> => admitted(BOUNDS[name]);

/** A whole number that comes from outside (a header, a latency, a counter in the store): 0 .. MAX_SAFE_INTEGER. */
export const outsideCount: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, 1, 2, 2 ** 31 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER),
  fc.integer({ min: 0, max: 1000 }),
  fc.maxSafeNat(),
);

/** A finite non-negative measurement from outside (latency ms and the like), up to MAX_SAFE_INTEGER. */
export const outsideMeasure: fc.Arbitrary<number> = fc.oneof(
  outsideCount,
  fc.double({ min: 0, max: Number.MAX_SAFE_INTEGER, noNaN: true, noDefaultInfinity: true }),
);

/** Instants the API takes and clocks can read: 1970-01-01 .. 9999-12-31T23:59:59Z, whole ms. */
export const instantMs: fc.Arbitrary<number> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(EARLIEST_MS, EARLIEST_MS + 1, LATEST_MS - 1, LATEST_MS, Date.parse("2026-03-29T01:00:00Z")) },
  { weight: 2, arbitrary: fc.integer({ min: EARLIEST_MS, max: LATEST_MS }) },
  // Near today, where most real clocks are.
  { weight: 2, arbitrary: fc.integer({ min: Date.parse("2020-01-01T00:00:00Z"), max: Date.parse("2040-01-01T00:00:00Z") }) },
);

/** A clock read again later: forward by up to a week, standing still, or stepped back by up to a day. */
export const clockStepMs: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, 1, -1, 999, 1000, 60_000, -3_600_000),
  fc.integer({ min: 0, max: 7 * 86_400_000 }),
  fc.integer({ min: -86_400_000, max: 0 }),
);

/** Moves `ms` by `step`, staying inside the instants a clock can read. */
export const stepClock = (ms: number, step: number): number => Math.min(LATEST_MS, Math.max(EARLIEST_MS, ms + step));

/** rate_limit as the API admits it (every field optional, as the schema has it), or null. */
export const rateLimit: fc.Arbitrary<RateLimit> = fc.record(
  {
    max_per_second: bound("rate_per_second"),
    max_per_minute: bound("rate_per_minute"),
    burst_capacity: bound("burst_capacity"),
  },
  { requiredKeys: [] },
);
export const rateLimitOrNull: fc.Arbitrary<RateLimit | null> = fc.option(rateLimit, { nil: null });

/** adaptive as the API admits it. */
export const adaptiveConfig: fc.Arbitrary<AdaptiveConfig> = fc.record(
  {
    enabled: fc.boolean(),
    min_per_second: bound("adaptive_rate_per_second"),
    max_per_second: bound("adaptive_rate_per_second"),
    target_latency_ms: bound("target_latency_ms"),
  },
  { requiredKeys: ["enabled"] },
);

const pad = (n: number) => String(n).padStart(2, "0");

/** "HH:MM" or "HH:MM:SS" for a second of the day (whole minutes may be written either way). */
export const wallTimeOf = (sec: number, withSeconds: boolean): string => {
  const hms = `${pad(Math.floor(sec / 3600))}:${pad(Math.floor(sec / 60) % 60)}`;
  return withSeconds || sec % 60 !== 0 ? `${hms}:${pad(sec % 60)}` : hms;
};

/** A second of the day, with midnight, the last second and the hours DST moves drawn often. */
export const secondOfDay: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, 1, 59, 60, 86_399, 86_340, 3600, 7200, 9000, 10_800, 1800, 2700, 5400, 84_600, 86_370),
  fc.integer({ min: 0, max: 86_399 }),
);

/** Every IANA zone this runtime knows. */
export const ALL_ZONES: readonly string[] = Intl.supportedValuesOf("timeZone");

/** Zones with unusual offsets or transitions, drawn more often than their share. */
export const ODD_ZONES = [
  "Australia/Lord_Howe", // 30-minute DST
  "Pacific/Chatham", // +12:45 / +13:45
  "Asia/Kathmandu", // +05:45
  "Australia/Eucla", // +08:45
  "Australia/Adelaide", // +09:30 / +10:30
  "America/St_Johns", // -03:30 / -02:30
  "Asia/Tehran", // +03:30 / +04:30 until 2022
  "Asia/Kolkata",
  "Pacific/Apia", // skipped 2011-12-30
  "Pacific/Kiritimati", // skipped 1994-12-31
  "Pacific/Kwajalein", // skipped 1993-08-21
  "Pacific/Fakaofo", // skipped 2011-12-30
  "America/Santiago", // DST at midnight
  "America/Havana", // DST at midnight
  "Asia/Gaza", // DST at midnight and odd dates
  "Africa/Casablanca", // DST suspended for Ramadan
  "Antarctica/Troll", // +00 / +02
  "Europe/Dublin", // negative DST
  "Europe/Berlin",
  "America/New_York",
  "Pacific/Tongatapu",
  "Asia/Pyongyang", // +09 -> +08:30 -> +09
  "UTC",
].filter((z) => ALL_ZONES.includes(z) || z === "UTC");

export const zone: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...ALL_ZONES), fc.constantFrom(...ODD_ZONES));

/** Days a window may start on: absent (every day) or any non-empty subset, in any order. */
export const days: fc.Arbitrary<DeliverySchedule["days"]> = fc.option(
  fc.subarray([...DAY_NAMES], { minLength: 1 }).chain((ds) => fc.shuffledSubarray(ds, { minLength: ds.length, maxLength: ds.length })),
  { nil: undefined },
);

/** quiet_start and quiet_end seconds, never equal (refused at validation), often a second apart. */
export const quietSeconds: fc.Arbitrary<[number, number]> = fc
  .oneof(
    fc.tuple(secondOfDay, secondOfDay),
    secondOfDay.map((s): [number, number] => [s, (s + 1) % 86_400]),
    secondOfDay.map((s): [number, number] => [(s + 1) % 86_400, s]),
    fc.constantFrom<[number, number]>([0, 86_399], [86_399, 0], [0, 1], [1, 0], [86_399, 86_398], [0, 43_200], [82_800, 25_200]),
  )
  .filter(([a, b]) => a !== b);

export function scheduleOf(
  timezone: string,
  startSec: number,
  endSec: number,
  withSeconds = false,
  d?: DeliverySchedule["days"],
): DeliverySchedule {
  return {
    timezone,
    quiet_start: wallTimeOf(startSec, withSeconds),
    quiet_end: wallTimeOf(endSec, withSeconds),
    ...(d === undefined ? {} : { days: d }),
  };
}

/** delivery_schedule as the API admits it (applies_to and bypass_event_types left out). */
export const deliverySchedule: fc.Arbitrary<DeliverySchedule> = fc
  .record({ zone, q: quietSeconds, withSeconds: fc.boolean(), days })
  .map(({ zone, q, withSeconds, days }) => scheduleOf(zone, q[0], q[1], withSeconds, days));

/** A schedule (retry or throttle) of `b` entries within `entry`. */
export const scheduleSeconds = (length: BoundName, entry: BoundName): fc.Arbitrary<number[]> =>
  fc.oneof(
    fc.array(bound(entry), { minLength: BOUNDS[length].min, maxLength: Math.min(BOUNDS[length].max, 12) }),
    fc.array(bound(entry), { minLength: BOUNDS[length].max, maxLength: BOUNDS[length].max }),
  );

export const retrySchedule = scheduleSeconds("retry_schedule_length", "retry_delay_seconds");
export const throttleSchedule = scheduleSeconds("throttle_schedule_length", "throttle_hold_seconds");

/** Every status code a server can send, and none. */
export const statusCode: fc.Arbitrary<number | null> = fc.oneof(
  fc.constantFrom(null, 100, 199, 200, 204, 299, 300, 301, 308, 399, 400, 401, 403, 404, 410, 429, 499, 500, 503, 599),
  fc.integer({ min: 100, max: 599 }),
);

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/** An instant in the three HTTP-date forms (IMF-fixdate, RFC 850, asctime). */
export function httpDates(ms: number): string[] {
  const d = new Date(ms);
  const dd = pad(d.getUTCDate());
  const mon = MONTHS[d.getUTCMonth()]!;
  const y = d.getUTCFullYear();
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  return [
    d.toUTCString(),
    `${LONG_WEEKDAYS[d.getUTCDay()]}, ${dd}-${mon}-${pad(y % 100)} ${time} GMT`,
    `${WEEKDAYS[d.getUTCDay()]} ${mon} ${String(d.getUTCDate()).padStart(2, " ")} ${time} ${y}`,
  ];
}

/** Any Retry-After header a receiver could send: delta-seconds of any length, HTTP-dates of any year, junk, or none. */
export const retryAfterHeader: fc.Arbitrary<string | null> = fc.oneof(
  fc.constant(null),
  fc.constantFrom("", " ", "0", "00", "1", " 5 ", "-1", "+5", "1.5", "1e3", "Infinity", "NaN", "0x10", "now", "soon", "Tue"),
  outsideCount.map(String),
  fc.stringMatching(/^\d{1,40}$/),
  fc.tuple(instantMs, fc.nat({ max: 2 })).map(([ms, i]) => httpDates(ms)[i]!),
  fc.constantFrom("Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Sat, 13 Sep +275760 00:00:00 GMT"),
  fc.string({ maxLength: 80 }),
);

/**
 * Asserts every number reachable in `v` (objects, arrays, Maps) is finite and every Date valid;
 * with `strings`, also that no text reads NaN, Infinity or undefined (a number gone wrong in a
 * message). Leave `strings` off where a text quotes what a receiver sent.
 */
export function assertAllFinite(v: unknown, path = "value", strings = true): void {
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error(`${path} is ${v}`);
  } else if (v instanceof Date) {
    if (!Number.isFinite(v.getTime())) throw new Error(`${path} is an invalid Date`);
  } else if (typeof v === "string") {
    if (strings && /\b(NaN|Infinity|undefined)\b/.test(v)) throw new Error(`${path} reads "${v}"`);
  } else if (Array.isArray(v)) {
    v.forEach((x, i) => assertAllFinite(x, `${path}[${i}]`, strings));
  } else if (v instanceof Map) {
    for (const [k, x] of v) assertAllFinite(x, `${path}.get(${String(k)})`, strings);
  } else if (v !== null && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) assertAllFinite(x, `${path}.${k}`, strings);
  }
}
