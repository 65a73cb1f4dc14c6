// When to try a failed delivery again. Pure: the random source is passed in.

export const DEFAULT_RETRY_SCHEDULE_SECONDS: readonly number[] = [5, 30, 120, 600, 1800, 3600, 10800, 21600, 43200, 86400];

/** Each delay is spread over ±JITTER of itself so that retries of a burst do not arrive in lockstep. */
export const RETRY_JITTER = 0.2;

/**
 * Delay before the next attempt after `attemptsMade` attempts have failed, or null when the
 * schedule is spent (the delivery is then dead). `random` returns a number in [0, 1).
 */
export function retryDelaySeconds(schedule: readonly number[], attemptsMade: number, random: () => number = Math.random): number | null {
  const base = schedule[attemptsMade - 1];
  if (base === undefined || attemptsMade < 1) return null;
  const factor = 1 - RETRY_JITTER + 2 * RETRY_JITTER * random();
  return Math.max(0, base * factor);
}
