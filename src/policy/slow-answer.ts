// How long a repeated read waits before asking again, after an answer that took `tookMs`: the
// dashboard's polling (ui/src/poller.ts) and the database gauges of /metrics (src/metrics.ts).
// Some answers grow with the store (the held counts read every waiting delivery), and asking
// again on a fixed beat would keep the store busy most of the time once an answer takes about as
// long as the beat. Waiting SLOW_ANSWER_FACTOR times as long as the answer took keeps one asker's
// share of the store under 1 / (1 + SLOW_ANSWER_FACTOR), a fifth, until the cap is reached.

/** After an answer that took `t`, the next ask waits at least this many times `t`. */
export const SLOW_ANSWER_FACTOR = 4;

/** The wait before the next ask: `everyMs`, or SLOW_ANSWER_FACTOR × `tookMs` when longer, but never past `maxMs` (the cap only shortens a slow answer's wait, never `everyMs`). */
export function nextAskAfterMs(everyMs: number, tookMs: number, maxMs: number): number {
  return Math.max(everyMs, Math.min(maxMs, SLOW_ANSWER_FACTOR * tookMs));
}
