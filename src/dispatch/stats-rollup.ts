import type { Logger } from "pino";
import type { Db, Queryable } from "../db/db.js";
import { everyRound } from "./rounds.js";
import { MINUTE_MS, ROLLUP_SCHEDULE, rollupDue, type LastRollup, type RollupSchedule } from "../policy/rollup-schedule.js";
import { classifyHeld, heldGroups, quietNow } from "../db/queries/stats.js";
import {
  countAttempts,
  oldestAttemptSince,
  pruneStats,
  replaceBacklogSample,
  replaceStatsMinutes,
  rollupClock,
  setRolledUntil,
  tryStatsRollupLock,
} from "../db/queries/rollups.js";
import { lookAtBacklogs } from "./backlog-watch.js";

// The dashboard's rollups (migrations/0010_stats.sql), run by the workers' janitor once a minute,
// just after the minute ends (policy/rollup-schedule.ts), by one worker at a time (advisory lock;
// the others skip their turn):
// - attempts counted per destination and minute into stats_minutes, recomputing the last
//   LATE_MINUTES completed minutes on every pass: an attempt row is written when its request
//   ends, up to a timeout (60 s at most) after the start it is counted by;
// - the held backlog per destination and hold reason, sampled into backlog_samples;
// - both pruned after STATS_RETENTION_HOURS;
// - each destination's backlog watch and the backlog alerts it makes (backlog-watch.ts).
// The minutes after the last pass are counted live by the stats endpoints.

/** Kept this long whatever SLUICE_RETENTION_HOURS says: the dashboard shows up to 24 h, and rollups are small. */
export const STATS_RETENTION_HOURS = 48;
/** Completed minutes recomputed on every pass, for attempts written after their minute ended. */
export const LATE_MINUTES = 3;
/** Most minutes one pass rolls up (catching up after a stop, or on first start): bounds one transaction. */
const MAX_PASS_MINUTES = 60;
/** How far back a first pass, or one after a long stop, starts: the longest span the API shows. */
const BACKFILL_MINUTES = 24 * 60;
/** Most passes one tick runs while behind. */
const CATCH_UP_PASSES = 6;

const floorMinute = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** The minute of the oldest attempt since `earliest`, or `end` when there is none. */
async function firstMinute(q: Queryable, earliest: number, end: number): Promise<number> {
  const oldest = await oldestAttemptSince(q, new Date(earliest));
  return oldest === null ? end : Math.min(end, floorMinute(oldest.getTime()));
}

export interface RollupPass {
  /** The minutes recomputed: [from, until). */
  from: Date;
  until: Date;
  /** stats_minutes rows written; backlog sample rows, and the minute they were sampled in. */
  rows: number;
  held: number;
  sampledAt: Date;
  pruned: number;
  /** Backlog alerts recorded (backlog-watch.ts). */
  backlogAlerts: number;
  /** The rollups are still behind the current minute: run another pass. */
  more: boolean;
}

/**
 * One rollup pass (the janitor calls it every minute; tests call it directly), or null when
 * another process holds the lock. Idempotent: a second pass in the same minute writes the same rows.
 */
export async function rollupStats(db: Db): Promise<RollupPass | null> {
  return db.tx(async (q) => {
    if (!(await tryStatsRollupLock(q))) return null;
    const { now, rolledUntil } = await rollupClock(q);
    const end = floorMinute(now.getTime());
    const earliest = end - BACKFILL_MINUTES * MINUTE_MS;
    // The first pass starts at the oldest attempt of the last day, not a day back: on a new store
    // that is now, and the stats endpoints stop counting every attempt of the hour live within
    // seconds instead of after four minutes of catching up over empty hours.
    const start = rolledUntil !== null ? rolledUntil.getTime() - LATE_MINUTES * MINUTE_MS : await firstMinute(q, earliest, end);
    const from = Math.max(earliest, start);
    const until = Math.min(end, from + MAX_PASS_MINUTES * MINUTE_MS);
    const rows = await countAttempts(q, new Date(from), new Date(until), null);
    await replaceStatsMinutes(q, new Date(from), new Date(until), rows);
    await setRolledUntil(q, new Date(until));

    const quiet = await quietNow(q, null, now.getTime());
    const groups = await heldGroups(q, quiet, null);
    const held = classifyHeld(groups);
    await replaceBacklogSample(q, new Date(end), held);
    const pruned = await pruneStats(q, STATS_RETENTION_HOURS);
    // Last: it may write destination rows, whose locks the claims and write-backs want too.
    const backlog = await lookAtBacklogs(q, groups, new Set(quiet), now.getTime());
    return {
      from: new Date(from),
      until: new Date(until),
      rows: rows.length,
      held: held.length,
      sampledAt: new Date(end),
      pruned,
      backlogAlerts: backlog.alerts,
      more: until < end,
    };
  });
}

/** How often the janitor asks whether a pass is due (policy/rollup-schedule.ts). */
const TICK_MS = 2_000;

/**
 * Runs rollupStats soon after each minute ends (catching up in several passes when behind);
 * returns stop. Soon after start too, so that a restarted worker catches up at once.
 */
export function startStatsRollup(db: Db, log: Logger, schedule: RollupSchedule = ROLLUP_SCHEDULE): () => void {
  let last: LastRollup | null = null;
  return everyRound("stats rollup", log, { firstMs: 5_000, everyMs: TICK_MS }, async (stopped) => {
    const triedMs = Date.now();
    if (!rollupDue(triedMs, last, schedule)) return;
    let rolledUntilMs = last?.rolledUntilMs ?? null;
    let behind = false;
    try {
      // Catching up (first start after an upgrade, a long stop) takes a few rounds rather than
      // one long burst of queries: CATCH_UP_PASSES hours of attempts a minute at most.
      for (let i = 0; i < CATCH_UP_PASSES && !stopped(); i++) {
        const pass = await rollupStats(db);
        rolledUntilMs = pass?.until.getTime() ?? rolledUntilMs;
        behind = pass?.more ?? false;
        if (!behind) break;
      }
    } finally {
      // Failed or not, this was a try: the next one waits the schedule's gap.
      last = { triedMs, rolledUntilMs, behind };
    }
  });
}
