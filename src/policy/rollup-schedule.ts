// When the workers' janitor rolls the dashboard's stats up (dispatch/stats-rollup.ts). Pure: the
// clock and the last pass in, yes or no out; the janitor asks every few seconds.
//
// The stats endpoints count the attempts after the rollups' end live, and the rollups end at a
// whole minute. Run once a minute at any phase, as they were, that left one to two minutes of
// attempts to count on every call (90 s on average); run just after each minute ends, it leaves
// up to one (30 s on average). At ~6,000 deliveries/s a `GET /v1/stats` counting 300,000
// attempts took ~0.5 s of a server and ~1.3 s of the embedded store's one session, and the
// dashboard's overview asks every 5 s (docs/benchmarks.md, session 29).

export const MINUTE_MS = 60_000;

export interface RollupSchedule {
  /** How long after a minute ends its pass runs: attempts started in it are still being written back. */
  settleMs: number;
  /** Least time between two passes, whatever the clocks say (a pass recounts the last minutes). */
  minGapMs: number;
}

export const ROLLUP_SCHEDULE: RollupSchedule = { settleMs: 2_000, minGapMs: 10_000 };

/** The last pass this process tried: when, where the rollups then ended, whether they were still behind. */
export interface LastRollup {
  triedMs: number;
  /** Where this process last saw the rollups end; null until one of its passes has run (another held the lock). */
  rolledUntilMs: number | null;
  behind: boolean;
}

/**
 * Whether a pass is due at `nowMs`: the first one (`last` null: since this process started), or
 * a minute has ended since the rollups' end and `settleMs` gone by — but never within `minGapMs`
 * of the last try (a store whose clock is behind this one's ends its pass a minute short; the next
 * try waits), and a minute after a round that left them behind (catching up after a stop goes a
 * few passes a minute, not in one long burst).
 */
export function rollupDue(nowMs: number, last: LastRollup | null, schedule: RollupSchedule = ROLLUP_SCHEDULE): boolean {
  if (last === null) return true;
  const since = nowMs - last.triedMs;
  if (since < (last.behind ? MINUTE_MS : schedule.minGapMs)) return false;
  return last.rolledUntilMs === null || last.behind || nowMs - schedule.settleMs >= last.rolledUntilMs + MINUTE_MS;
}
