// Polling for the dashboard's live views (hooks.ts usePoll), apart from Preact so that it can be
// tested in Node (test/unit/poller.test.ts).
//
// At most one load is in flight, and the next starts `everyMs` after the last one settled — or,
// after a slow answer, SLOW_ANSWER_FACTOR times as long as that answer took (src/policy/slow-answer.ts). A fixed-rate timer
// would start a new load every `everyMs` whatever the last one was doing: on a store where an
// answer takes longer than that (held counts over a long backlog, a busy embedded store), loads
// would pile up, each slowing the others. Now one open view keeps whatever answers it busy a fifth
// of the time at most (while answers take under MAX_WAIT_MS / SLOW_ANSWER_FACTOR).

import { nextAskAfterMs } from "../../src/policy/slow-answer.js";

/** The longest wait after a slow answer: one that hung until a timeout should not keep the page stale for minutes. */
export const MAX_WAIT_MS = 30_000;

export interface PollerOptions<T> {
  load: () => Promise<T>;
  /** Pause between one load's end and the next one's start (longer after a slow answer); 0: load once. */
  everyMs: number;
  onAnswer: (data: T) => void;
  onError: (err: unknown) => void;
  /** True while the page is hidden: a load that comes due then waits until it is shown. */
  hidden?: () => boolean;
  /** The longest wait after a slow answer (default MAX_WAIT_MS). */
  maxWaitMs?: number;
  /** Time and timers (default: the page's); the tests pass a virtual clock. */
  clock?: PollClock;
}

/** What the poller needs of time: a reading in ms and one-shot timers. */
export interface PollClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: PollClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

export interface Poller {
  /**
   * Loads now; with a load in flight, once more as soon as it settles (reloads asked meanwhile are
   * one), and the answer in flight is dropped.
   */
  reload(): void;
  /** No more loads by the timer (reload still loads): e.g. after a 404, which asking again will not change. */
  stopRepeating(): void;
  /** Nothing more: no loads, and the answer of one in flight is dropped. */
  stop(): void;
}

/** Starts polling: the first load starts at once. */
export function startPoller<T>(o: PollerOptions<T>): Poller {
  let stopped = false;
  let repeating = o.everyMs > 0;
  let inflight = false;
  let again = false;
  const clock = o.clock ?? realClock;
  let timer: unknown;
  /** How long the last load took (ms). */
  let tookMs = 0;

  const clearTimer = () => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  };
  const schedule = () => {
    clearTimer();
    if (!stopped && repeating) timer = clock.setTimeout(due, nextAskAfterMs(o.everyMs, tookMs, o.maxWaitMs ?? MAX_WAIT_MS));
  };
  const due = () => {
    timer = undefined;
    if (o.hidden?.()) schedule();
    else run();
  };
  const run = () => {
    if (stopped) return;
    if (inflight) {
      again = true;
      return;
    }
    clearTimer();
    inflight = true;
    const startedAt = clock.now();
    // A load that throws rather than rejecting is an error like any other.
    new Promise<T>((resolve) => resolve(o.load()))
      .then(
        // With a reload asked meanwhile, this answer may predate what the reload is for (an
        // action just taken): the reload's answer is shown instead.
        (data) => {
          if (!stopped && !again) o.onAnswer(data);
        },
        (err: unknown) => {
          if (!stopped && !again) o.onError(err);
        },
      )
      .finally(() => {
        inflight = false;
        tookMs = clock.now() - startedAt;
        if (stopped) return;
        if (again) {
          again = false;
          run();
        } else schedule();
      });
  };

  run();
  return {
    reload: run,
    stopRepeating() {
      repeating = false;
      clearTimer();
    },
    stop() {
      stopped = true;
      again = false;
      clearTimer();
    },
  };
}
