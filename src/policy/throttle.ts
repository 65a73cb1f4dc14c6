// How long a destination waits after a 429.

export const DEFAULT_THROTTLE_SCHEDULE_SECONDS: readonly number[] = [60, 300, 900, 3600, 21600];

/**
 * Seconds the whole destination holds after its `consecutive`-th 429 in a row (1-based):
 * `Retry-After` when given and usable, else the schedule by count, its last entry repeating.
 */
export function throttleHoldSeconds(schedule: readonly number[], consecutive: number, retryAfterSeconds: number | null): number {
  if (retryAfterSeconds !== null && retryAfterSeconds > 0) return retryAfterSeconds;
  const i = Math.min(Math.max(consecutive, 1), schedule.length) - 1;
  return schedule[i] ?? DEFAULT_THROTTLE_SCHEDULE_SECONDS[0]!;
}
