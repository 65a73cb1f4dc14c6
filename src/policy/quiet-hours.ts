// Quiet hours: when a destination's `delivery_schedule` holds a delivery, and until when.
//
// Pure: every instant is passed in as epoch ms. Time-zone data comes from Luxon (IANAZone
// offsets, DateTime calendar fields); see docs/scheduling.md ("Daylight-saving time") for the DST semantics.
//
// A window is a contiguous interval of instants [start, end):
//   start = the first instant at which the local wall clock reads >= quiet_start on a start day;
//   end   = the first instant at which it reads >= quiet_end on the same local date (quiet_end >
//           quiet_start) or on the next one (quiet_end <= quiet_start, crossing midnight).
// "First instant the clock reads >= W" settles the DST edges: a wall time skipped by a spring-
// forward gap is reached at the transition instant, a wall time that occurs twice is reached at
// its first occurrence.
//
// Luxon's own local -> instant conversion is not used for that step. For a repeated wall time
// it picks the occurrence by guessing an offset: DateTime.fromObject uses the zone's offset at
// the *current real time* (Settings.now()), so the answer changes with the season the process
// runs in; set()/plus() use the offset of the DateTime being changed. For a skipped wall time it
// returns the wall time shifted forward by the gap (02:30 -> 03:30), not the transition instant.
// We walk the zone's offsets (IANAZone#offset) instead; see reachMs.

import { DateTime, IANAZone } from "luxon";
import { matchesEventType } from "./event-match.js";

import type { DeliverySchedule } from "../schemas/destinations.js";

export type { DeliverySchedule };

export interface QuietWindow {
  startMs: number;
  endMs: number;
}

/** A calendar date in the destination's zone. */
export interface LocalDate {
  year: number;
  month: number;
  day: number;
}

/** The days a quiet window may start on (`days`), Monday first. */
export const DAY_NAMES = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
const MS_PER_MINUTE = 60_000;
const MS_PER_HOUR = 3_600_000;
/** Farther from UTC than any zone's offset (UTC-12 .. UTC+14) plus slack. */
const OFFSET_BOUND_MS = 15 * MS_PER_HOUR;
/** Windows never chain longer than this; a safety net against a runaway loop. */
const MAX_CHAINED_WINDOWS = 400;

/** Does the schedule hold this event type at all (applies_to match and not bypassed)? */
export function scheduleApplies(s: DeliverySchedule, eventType: string): boolean {
  // Empty/absent applies_to means every type (including `destination.*`), so it must not go
  // through matchesEventType([]), which excludes the system types. Likewise an empty bypass
  // list bypasses nothing, whereas matchesEventType([], t) would match every ordinary type.
  const applies = s.applies_to && s.applies_to.length > 0 ? matchesEventType(s.applies_to, eventType) : true;
  if (!applies) return false;
  const bypassed = s.bypass_event_types && s.bypass_event_types.length > 0 ? matchesEventType(s.bypass_event_types, eventType) : false;
  return !bypassed;
}

/** The quiet window containing nowMs as [startMs, endMs) or null if none is open. */
export function currentQuietWindow(s: DeliverySchedule, nowMs: number): QuietWindow | null {
  const c = compile(s);
  if (!c) return null;
  const today = localDateOf(c.zone, nowMs);
  // Windows never overlap (a window ends, at the latest, where the next one starts), and starts
  // grow with the date, so only the latest window started at or before now can contain it. Its
  // start date is yesterday (cross-midnight) or today, by the date of the highest reading the
  // clock has shown so far, which a backward change across midnight can put one date ahead of
  // the current reading. Trying -2 .. +1 covers that with room to spare.
  for (let k = 1; k >= -2; k--) {
    const d = today.plus({ days: k });
    if (!c.days[d.weekday - 1]) continue;
    const startMs = reachMs(c.zone, d, c.startSec);
    if (startMs > nowMs) continue;
    const endMs = reachMs(c.zone, c.crossesMidnight ? d.plus({ days: 1 }) : d, c.endSec);
    return nowMs < endMs ? { startMs, endMs } : null;
  }
  return null;
}

/**
 * Start of the next window strictly after nowMs (the one after the current window if one is
 * open). Null only if days is empty (or quiet_start == quiet_end: no window at all). Windows left
 * empty by a DST gap (both ends in the same skipped hour) are not windows and are skipped.
 */
export function nextQuietStartMs(s: DeliverySchedule, nowMs: number): number | null {
  const c = compile(s);
  if (!c || !c.days.some(Boolean)) return null;
  const today = localDateOf(c.zone, nowMs);
  for (let k = -2; k <= 16; k++) {
    const d = today.plus({ days: k });
    if (!c.days[d.weekday - 1]) continue;
    const startMs = reachMs(c.zone, d, c.startSec);
    if (startMs <= nowMs) continue;
    const endMs = reachMs(c.zone, c.crossesMidnight ? d.plus({ days: 1 }) : d, c.endSec);
    if (endMs > startMs) return startMs;
  }
  // Only reachable if every start day in the next two weeks were skipped by the zone.
  return null;
}

/**
 * When a delivery of this type may go, given nowMs: nowMs if not held, else the end of the open
 * window. Windows that touch/overlap chain: the result is the first instant not inside any window.
 */
export function releaseAtMs(s: DeliverySchedule, eventType: string, nowMs: number): number {
  if (!scheduleApplies(s, eventType)) return nowMs;
  let t = nowMs;
  for (let i = 0; i < MAX_CHAINED_WINDOWS; i++) {
    const w = currentQuietWindow(s, t);
    if (!w) return t;
    t = w.endMs;
  }
  return t;
}

/** Seconds after local midnight for "HH:MM" or "HH:MM:SS"; throws RangeError on anything else. */
export function parseWallTime(t: string): number {
  const m = /^([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$/.exec(t);
  if (!m) throw new RangeError(`'${t}' is not a wall time HH:MM or HH:MM:SS (00:00 .. 23:59:59)`);
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + (m[3] === undefined ? 0 : Number(m[3]));
}

/**
 * The first instant (epoch ms) at which the wall clock of `timezone` reads at least `secondOfDay`
 * on `date`: the instant itself when that wall time occurs once, its first occurrence when it
 * occurs twice (fall back), the transition instant when it is skipped (spring forward).
 */
export function firstInstantAtWallTime(timezone: string, date: LocalDate, secondOfDay: number): number {
  const day = DateTime.utc(date.year, date.month, date.day);
  if (!day.isValid) throw new RangeError(`${date.year}-${date.month}-${date.day} is not a calendar date`);
  if (!Number.isInteger(secondOfDay) || secondOfDay < 0 || secondOfDay >= 86400)
    throw new RangeError(`${secondOfDay} is not a second of the day`);
  return reachMs(zoneOf(timezone), day, secondOfDay);
}

// ---------------------------------------------------------------------------------------------

interface Compiled {
  zone: IANAZone;
  startSec: number;
  endSec: number;
  crossesMidnight: boolean;
  /** Indexed by Luxon weekday - 1 (0 = Monday). */
  days: boolean[];
}

function compile(s: DeliverySchedule): Compiled | null {
  const zone = zoneOf(s.timezone);
  const startSec = parseWallTime(s.quiet_start);
  const endSec = parseWallTime(s.quiet_end);
  if (startSec === endSec) return null; // refused at validation; treated as "no window"
  const days = DAY_NAMES.map((n) => (s.days === undefined ? true : s.days.some((d) => d.toLowerCase() === n)));
  return { zone, startSec, endSec, crossesMidnight: endSec < startSec, days };
}

function zoneOf(name: string): IANAZone {
  const zone = IANAZone.create(name);
  if (!zone.isValid) throw new RangeError(`'${name}' is not an IANA time zone known to this runtime`);
  return zone;
}

/** The local calendar date at `ms`, as a UTC-midnight DateTime (a plain date to step through). */
function localDateOf(zone: IANAZone, ms: number): DateTime {
  const local = DateTime.fromMillis(ms, { zone });
  // An invalid DateTime has no weekday: every day would be skipped and NaN read as "no window".
  if (!local.isValid) throw new RangeError(`quiet hours: ${ms} is not an instant (epoch ms) a clock can read`);
  return DateTime.utc(local.year, local.month, local.day);
}

function offsetMs(zone: IANAZone, ms: number): number {
  return Math.round(zone.offset(ms) * MS_PER_MINUTE);
}

/**
 * min { t : wall(t) >= target }, where wall(t) = t + offset(t) and target is the wall time
 * `secondOfDay` on `date` (a UTC-midnight DateTime), both as "local ms".
 *
 * Walks the zone's constant-offset segments forward from an instant whose wall clock is surely
 * below the target. In a segment [s, e) with offset o the clock reads >= target from
 * max(s, target - o) on; if target - o is still in the segment that is the answer (the first
 * occurrence), otherwise the next transition T is found by bisection and the walk continues
 * from T, returning T itself if the clock jumps to or past the target there (a gap).
 * Assumes at most one offset change between probes that are under a day apart, true of every
 * zone in current tzdata.
 */
function reachMs(zone: IANAZone, date: DateTime, secondOfDay: number): number {
  const target = date.toMillis() + secondOfDay * 1000;
  // Whole, finite milliseconds keep the bisection below shrinking to a point: it ends by construction.
  if (!Number.isSafeInteger(target)) throw new RangeError(`time zone ${zone.name}: no instant for local time ${target} (ms)`);
  let segStart = target - OFFSET_BOUND_MS; // wall clock here and before is < target
  let o = offsetMs(zone, segStart);
  for (let i = 0; i < 16; i++) {
    const candidate = target - o;
    if (offsetMs(zone, candidate) === o) return candidate;
    // The offset changes in (segStart, candidate]: find the first instant it differs.
    let lo = segStart;
    let hi = candidate;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (offsetMs(zone, mid) === o) lo = mid;
      else hi = mid;
    }
    segStart = hi;
    o = offsetMs(zone, segStart);
    if (segStart + o >= target) return segStart; // the clock jumped over (or onto) the target
  }
  throw new Error(`time zone ${zone.name}: could not resolve local time ${new Date(target).toISOString().slice(0, 19)}`);
}
