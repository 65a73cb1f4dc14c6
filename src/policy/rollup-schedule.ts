// When the workers' janitor rolls the dashboard's stats up (dispatch/stats-rollup.ts). Pure: the
// clock and the last pass in, what is due out; the janitor asks every few seconds.
//
// Two kinds of pass. A count adds the attempts written since the last pass to their minutes; it
// costs what those attempts cost to count, so it runs every few seconds, and the stats endpoints
// count only the attempts written since it live (at ~6,000 deliveries/s, a minute of them took
// ~1.3 s of the embedded store's one session per `GET /v1/stats`; CHANGELOG.md). The
// minute's tasks (the held backlog's sample, pruning, the backlog watch) run with a count just
// after each minute ends.

export const MINUTE_MS = 60_000;

export interface RollupSchedule {
  /** How long after a minute ends its tasks run. */
  settleMs: number;
  /** Least time between two tries of the minute's tasks, whatever the clocks say. */
  minGapMs: number;
  /** Least time between two counts. */
  countEveryMs: number;
}

export const ROLLUP_SCHEDULE: RollupSchedule = { settleMs: 2_000, minGapMs: 10_000, countEveryMs: 5_000 };

/** The passes this process last tried. */
export interface LastRollup {
  /** When it last tried the minute's tasks. */
  triedMs: number;
  /** The minute whose end they last ran after; null until one of its passes has run (another held the lock). */
  rolledUntilMs: number | null;
  /** Its last round counted as much as a pass may and left attempts for the next (catching up after a stop). */
  behind: boolean;
  /** When it last tried any pass. */
  countedMs: number;
}

export type RollupDue = "minute" | "count" | null;

/**
 * What is due at `nowMs`: the minute's tasks (and a count) on the first try (`last` null: since
 * this process started), or once a minute has ended since they last ran and `settleMs` gone by —
 * but never within `minGapMs` of their last try (a store whose clock is behind this one's samples
 * a minute short; the next try waits). Else a count, `countEveryMs` after the last pass. Nothing
 * within a minute of a round that left the counts behind (catching up after a stop goes a few
 * passes a minute, not in one long burst).
 */
export function rollupDue(nowMs: number, last: LastRollup | null, schedule: RollupSchedule = ROLLUP_SCHEDULE): RollupDue {
  if (last === null) return "minute";
  if (last.behind) return nowMs - last.countedMs >= MINUTE_MS ? "minute" : null;
  const minuteEnded = last.rolledUntilMs === null || nowMs - schedule.settleMs >= last.rolledUntilMs + MINUTE_MS;
  if (nowMs - last.triedMs >= schedule.minGapMs && minuteEnded) return "minute";
  return nowMs - last.countedMs >= schedule.countEveryMs ? "count" : null;
}
