// Backlog alerts: a destination's waiting deliveries rising for too long, or its oldest waiting
// too old for any hold that explains it. Pure: the previous watch and this minute's facts in,
// the new watch and the transitions out. The stats rollup samples once a minute and applies it.
//
// - growing: for `backlog_alert_minutes` the backlog has not once come back down to the level it
//   started from, and ends well above it (GROWTH_MIN deliveries and GROWTH_SHARE of that level
//   more): arrivals outpace deliveries. A steady or draining backlog is not growing. Paused
//   destinations and open quiet windows grow by design: the count starts again when they end.
// - stale: the oldest waiting delivery (not counting ones scheduled for later) is older than
//   `backlog_alert_age_minutes`, or than twice the longest hold that explains the wait (the quiet
//   window's length, the throttle's hold, the backlog at the destination's pace) when that is longer.
// - recovered: once neither holds any more, after either did. One alert per transition.

import { currentQuietWindow, nextQuietStartMs, type DeliverySchedule } from "./quiet-hours.js";

export interface BacklogWatch {
  /** The current run: since when the backlog has stayed above `floor`, its level when the run began. */
  runSinceMs: number;
  floor: number;
  growing: boolean;
  stale: boolean;
}

export interface BacklogFacts {
  nowMs: number;
  /** Waiting deliveries, less those scheduled for later (deliver_at still ahead). */
  waiting: number;
  /** Age of the oldest of them, in seconds (null: none). */
  oldestAgeS: number | null;
  paused: boolean;
  /** A quiet window is open now. */
  quiet: boolean;
  /** The longest hold that explains a wait now (expectedHoldSeconds). */
  expectedHoldS: number;
}

export interface BacklogAlertConfig {
  /** backlog_alert_minutes: null turns the growing alert off. */
  growMinutes: number | null;
  /** backlog_alert_age_minutes: null turns the stale alert off. */
  ageMinutes: number | null;
}

export type BacklogAlertType = "destination.backlog_growing" | "destination.backlog_stale" | "destination.backlog_recovered";

export interface BacklogTransition {
  type: BacklogAlertType;
  reason: string;
}

export const GROWTH_MIN = 50;
export const GROWTH_SHARE = 0.1;

export function watchBacklog(
  prev: BacklogWatch | null,
  f: BacklogFacts,
  cfg: BacklogAlertConfig,
): { watch: BacklogWatch | null; transitions: BacklogTransition[] } {
  const was = { growing: prev?.growing ?? false, stale: prev?.stale ?? false };
  // By design: hold the findings as they are, and start the count again from here.
  if (f.paused || f.quiet) return { watch: stored({ runSinceMs: f.nowMs, floor: f.waiting, ...was }, f.waiting), transitions: [] };

  // A run ends when the backlog is back down at (or below) where it began.
  // A first look starts one at the level it finds: a burst published at once is not growth.
  const run = prev === null || f.waiting <= prev.floor ? { runSinceMs: f.nowMs, floor: f.waiting } : prev;
  const grownBy = f.waiting - run.floor;
  const longEnough = cfg.growMinutes !== null && f.nowMs - run.runSinceMs >= cfg.growMinutes * 60_000;
  // Once growing it stays so until the run ends: a backlog that stops rising but never drains is still one.
  const growingNow = cfg.growMinutes !== null && ((was.growing && run === prev) || (longEnough && grownBy >= growthNeeded(run.floor)));
  const limitS = staleLimitSeconds(f.expectedHoldS, cfg.ageMinutes);
  const staleNow = limitS !== null && f.oldestAgeS !== null && f.oldestAgeS > limitS;

  // An episode runs from the first finding until neither holds; each kind is told once in it.
  const transitions: BacklogTransition[] = [];
  if ((was.growing || was.stale) && !growingNow && !staleNow) {
    transitions.push({
      type: "destination.backlog_recovered",
      reason: `${f.waiting} deliveries waiting${f.oldestAgeS === null ? "" : `, the oldest ${minutesOf(f.oldestAgeS)} old`}: no longer ${
        was.growing && was.stale ? "growing or stale" : was.growing ? "growing" : "stale"
      }`,
    });
    return { watch: stored({ ...run, growing: false, stale: false }, f.waiting), transitions };
  }
  if (growingNow && !was.growing) {
    const minutes = Math.round((f.nowMs - run.runSinceMs) / 60_000);
    transitions.push({
      type: "destination.backlog_growing",
      reason: `${f.waiting} deliveries waiting, up from ${run.floor} ${minutes} min ago, and never back down to that since`,
    });
  }
  if (staleNow && !was.stale) {
    transitions.push({
      type: "destination.backlog_stale",
      reason: `the oldest waiting delivery is ${minutesOf(f.oldestAgeS!)} old, over the limit of ${minutesOf(limitS)}${
        limitS > (cfg.ageMinutes ?? 0) * 60
          ? ` (twice the ${minutesOf(f.expectedHoldS)} its holds explain)`
          : " (backlog_alert_age_minutes)"
      }`,
    });
  }
  return { watch: stored({ ...run, growing: was.growing || growingNow, stale: was.stale || staleNow }, f.waiting), transitions };
}

/** How much above its starting level a backlog must end to count as growing. */
export function growthNeeded(floor: number): number {
  return Math.max(GROWTH_MIN, Math.ceil(floor * GROWTH_SHARE));
}

/** The oldest waiting delivery's age above which the backlog is stale; null: never (the alert is off). */
export function staleLimitSeconds(expectedHoldS: number, ageMinutes: number | null): number | null {
  if (ageMinutes === null) return null;
  return Math.max(ageMinutes * 60, 2 * expectedHoldS);
}

/**
 * The longest hold that explains a wait now, in seconds: the quiet window's length (the open one,
 * else the next), the throttle hold in force, and the backlog at the destination's pace.
 */
export function expectedHoldSeconds(h: {
  nowMs: number;
  schedule: DeliverySchedule | null;
  throttledUntilMs: number | null;
  /** The throttle schedule's hold for the current run of 429s. */
  throttleHoldS: number;
  waiting: number;
  ratePerSecond: number | null;
}): number {
  let hold = 0;
  if (h.schedule) {
    const next = nextQuietStartMs(h.schedule, h.nowMs);
    const w = currentQuietWindow(h.schedule, h.nowMs) ?? (next === null ? null : currentQuietWindow(h.schedule, next));
    if (w) hold = Math.max(hold, (w.endMs - w.startMs) / 1000);
  }
  if (h.throttledUntilMs !== null && h.throttledUntilMs > h.nowMs) {
    hold = Math.max(hold, (h.throttledUntilMs - h.nowMs) / 1000, h.throttleHoldS);
  }
  if (h.ratePerSecond !== null && h.ratePerSecond > 0) hold = Math.max(hold, h.waiting / h.ratePerSecond);
  return hold;
}

/** Nothing worth keeping — no backlog and no alert standing — is stored as null (the next look starts a run). */
function stored(w: BacklogWatch, waiting: number): BacklogWatch | null {
  return waiting === 0 && !w.growing && !w.stale ? null : w;
}

function minutesOf(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  return `${Math.round((seconds / 3600) * 10) / 10} h`;
}
