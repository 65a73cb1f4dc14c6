import type { Logger } from "pino";
import type { Db, Queryable } from "../db/db.js";
import { everyRound } from "./rounds.js";
import { MINUTE_MS, ROLLUP_SCHEDULE, rollupDue, type LastRollup, type RollupSchedule } from "../policy/rollup-schedule.js";
import { classifyHeld, heldGroupsOn, quietNow } from "../db/queries/stats.js";
import {
  addStatsMinutes,
  countAttempts,
  oldestAttemptSince,
  pruneStats,
  replaceBacklogSample,
  replaceStatsMinutes,
  rollupClock,
  setRollupReach,
  tryStatsRollupLock,
  xactBound,
  type RollupClock,
} from "../db/queries/rollups.js";
import { lookAtBacklogs } from "./backlog-watch.js";

// The dashboard's rollups (migrations/0010_stats.sql, 0017), run by the workers' janitor
// (policy/rollup-schedule.ts), by one worker at a time (advisory lock; the others skip their turn):
// - every few seconds, the attempts written since the last pass, found by the transaction that
//   wrote them, added to stats_minutes per destination and minute (each attempt counted once,
//   into the minute it started in, however late its result was written back);
// - a store's first passes (new, or upgraded from rollups by start time) count by start time,
//   recounting from a little before where the rollups reached, until they reach the present;
// - just after each minute ends, the held backlog per destination and hold reason, sampled into
//   backlog_samples; both tables pruned after STATS_RETENTION_HOURS; each destination's backlog
//   watch and the backlog alerts it makes (backlog-watch.ts).
// The stats endpoints count the attempts written since the last pass live.

/** Kept this long whatever SLUICE_RETENTION_HOURS says: the dashboard shows up to 24 h, and rollups are small. */
export const STATS_RETENTION_HOURS = 48;
/** Completed minutes recounted by a pass by start time, for attempts written after their minute ended. */
const LATE_MINUTES = 3;
/** Most minutes one pass by start time counts (catching up on first start): bounds one transaction. */
const MAX_PASS_MINUTES = 60;
/** A count spanning more transactions than this first finds where MAX_PASS_ATTEMPTS end (after a stop). */
const LONG_SPAN_XACTS = 20_000n;
/** Most attempts one count adds, about (after a stop): bounds one transaction. */
const MAX_PASS_ATTEMPTS = 200_000;
/** How far back a first pass, or one after a long stop, counts: the longest span the API shows. */
const BACKFILL_MINUTES = 24 * 60;
/** Most passes one tick runs while behind. */
const CATCH_UP_PASSES = 6;

const floorMinute = (ms: number) => Math.floor(ms / MINUTE_MS) * MINUTE_MS;

/** The minute of the oldest attempt since `earliest`, or `end` when there is none. */
async function firstMinute(q: Queryable, earliest: number, end: number): Promise<number> {
  const oldest = await oldestAttemptSince(q, new Date(earliest));
  return oldest === null ? end : Math.min(end, floorMinute(oldest.getTime()));
}

interface Counted {
  by: "start" | "xact";
  /** stats_minutes rows written or added to. */
  rows: number;
  /** More attempts are waiting than one pass counts. */
  more: boolean;
  /** By start time, the minutes recounted ([from, until); until null: to the present). */
  from: Date | null;
  until: Date | null;
}

/**
 * A pass by start time: minutes from a little before the rollups' end (or the oldest attempt of the
 * last day) replaced with their attempts' counts, an hour at most. The pass that reaches the
 * present counts the attempts of transactions below `clock.xmin` and records it: every later pass
 * counts by transaction from there.
 */
async function countByStart(q: Queryable, clock: RollupClock, end: number, earliest: number): Promise<Counted> {
  const { rolledUntil } = clock;
  const start = rolledUntil !== null ? rolledUntil.getTime() - LATE_MINUTES * MINUTE_MS : await firstMinute(q, earliest, end);
  const from = new Date(Math.max(earliest, start));
  const catchingUp = from.getTime() + MAX_PASS_MINUTES * MINUTE_MS < end;
  const until = catchingUp ? new Date(from.getTime() + MAX_PASS_MINUTES * MINUTE_MS) : null;
  const rows = await countAttempts(q, { by: "start", since: from, until, below: catchingUp ? null : clock.xmin }, null);
  await replaceStatsMinutes(q, from, until, rows);
  await setRollupReach(q, until ?? new Date(end), catchingUp ? null : clock.xmin);
  return { by: "start", rows: rows.length, more: catchingUp, from, until };
}

/** A pass by transaction: the attempts written since the last pass added to their minutes. */
async function countByXact(q: Queryable, clock: RollupClock, end: number, earliest: number): Promise<Counted> {
  const from = clock.countedBelow!;
  const bound = BigInt(clock.xmin) - BigInt(from) > LONG_SPAN_XACTS ? await xactBound(q, from, clock.xmin, MAX_PASS_ATTEMPTS) : null;
  const below = bound ?? clock.xmin;
  const rows = await countAttempts(q, { by: "xact", from, below, since: new Date(earliest) }, null);
  await addStatsMinutes(q, rows);
  await setRollupReach(q, new Date(end), below);
  return { by: "xact", rows: rows.length, more: bound !== null, from: null, until: null };
}

export interface RollupPass extends Counted {
  /** The minute's tasks, when the pass ran them: backlog sample rows and the minute they were sampled in, pruned rows, backlog alerts recorded. */
  minute: { held: number; sampledAt: Date; pruned: number; backlogAlerts: number } | null;
}

/**
 * One rollup pass (the janitor runs them; tests call it directly), or null when another process
 * holds the lock: a count, and with `minuteTasks`, the minute's tasks.
 */
export async function rollupStats(db: Db, { minuteTasks = true } = {}): Promise<RollupPass | null> {
  return db.tx(async (q) => {
    if (!(await tryStatsRollupLock(q))) return null;
    const clock = await rollupClock(q);
    const end = floorMinute(clock.now.getTime());
    const earliest = end - BACKFILL_MINUTES * MINUTE_MS;
    const counted = await (clock.countedBelow === null ? countByStart : countByXact)(q, clock, end, earliest);
    if (!minuteTasks) return { ...counted, minute: null };

    const quiet = await quietNow(q, null, clock.now.getTime());
    const groups = await heldGroupsOn(db.kind, q, quiet, null);
    const held = classifyHeld(groups);
    await replaceBacklogSample(q, new Date(end), held);
    const pruned = await pruneStats(q, STATS_RETENTION_HOURS);
    // Last: it may write destination rows, whose locks the claims and write-backs want too.
    const backlog = await lookAtBacklogs(q, groups, new Set(quiet), clock.now.getTime());
    return { ...counted, minute: { held: held.length, sampledAt: new Date(end), pruned, backlogAlerts: backlog.alerts } };
  });
}

/** How often the janitor asks whether a pass is due (policy/rollup-schedule.ts). */
const TICK_MS = 1_000;

/**
 * Runs rollupStats as policy/rollup-schedule.ts says (catching up in several passes when behind);
 * returns stop. Soon after start too, so that a restarted worker catches up at once.
 */
export function startStatsRollup(db: Db, log: Logger, schedule: RollupSchedule = ROLLUP_SCHEDULE): () => void {
  let last: LastRollup | null = null;
  return everyRound("stats rollup", log, { firstMs: 5_000, everyMs: TICK_MS }, async (stopped) => {
    const triedMs = Date.now();
    const due = rollupDue(triedMs, last, schedule);
    if (due === null) return;
    let rolledUntilMs = last?.rolledUntilMs ?? null;
    let behind = false;
    try {
      // Catching up (first start after an upgrade, a long stop) takes a few rounds rather than
      // one long burst of queries: CATCH_UP_PASSES passes a minute at most.
      for (let i = 0; i < CATCH_UP_PASSES && !stopped(); i++) {
        const pass = await rollupStats(db, { minuteTasks: due === "minute" && i === 0 });
        rolledUntilMs = pass?.minute?.sampledAt.getTime() ?? rolledUntilMs;
        behind = pass?.more ?? false;
        if (!behind) break;
      }
    } finally {
      // Failed or not, this was a try: the next one waits the schedule's gap.
      const minuteTriedMs = due === "minute" ? triedMs : last!.triedMs;
      last = { triedMs: minuteTriedMs, rolledUntilMs, behind, countedMs: triedMs };
    }
  });
}
