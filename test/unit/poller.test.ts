import { test } from "node:test";
import assert from "node:assert/strict";
import { startPoller, type PollClock, type Poller, type PollerOptions } from "../../ui/src/poller.js";
import { SLOW_ANSWER_FACTOR } from "../../src/policy/slow-answer.js";

// The dashboard's polling (ui/src/poller.ts, under hooks.ts usePoll), on a virtual clock: the
// poller's timers and the loads' own durations run on it, so every start time is exact and no test
// depends on how busy the machine is.

/** Lets every promise reaction already queued run (setImmediate runs after the microtask queue drains). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Virtual time: timers fire only as advance() passes them, in order, each one's promise work settled before the next. */
class VirtualClock implements PollClock {
  private t = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();
  now = (): number => this.t;
  setTimeout = (fn: () => void, ms: number): number => {
    this.timers.set(++this.seq, { at: this.t + Math.max(0, ms), fn });
    return this.seq;
  };
  clearTimeout = (handle: unknown): void => {
    this.timers.delete(handle as number);
  };
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }
  /** Moves time on by `ms`, firing the timers due on the way (one set for the same instant, in the order set). */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    await settle();
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
      await settle();
    }
    this.t = end;
  }
}

/** A load that takes `ms` of virtual time and counts how many run at once. */
function slowLoad(clock: VirtualClock, ms: number) {
  const s = { started: 0, inflight: 0, maxInflight: 0, starts: [] as number[] };
  const load = async (): Promise<number> => {
    const n = ++s.started;
    s.starts.push(clock.now());
    s.inflight++;
    s.maxInflight = Math.max(s.maxInflight, s.inflight);
    await clock.sleep(ms);
    s.inflight--;
    return n;
  };
  return { s, load };
}

function collect<T>(): { answers: T[]; errors: unknown[]; onAnswer: (d: T) => void; onError: (e: unknown) => void } {
  const answers: T[] = [];
  const errors: unknown[] = [];
  return { answers, errors, onAnswer: (d) => answers.push(d), onError: (e) => errors.push(e) };
}

/** Polls slowLoad(loadMs) with `opts` on a fresh virtual clock, collecting what it answers. */
function pollSlow(loadMs: number, opts: Omit<PollerOptions<number>, "load" | "onAnswer" | "onError" | "clock">) {
  const clock = new VirtualClock();
  const { s, load } = slowLoad(clock, loadMs);
  const c = collect<number>();
  return { clock, s, c, p: startPoller({ load, ...opts, ...c, clock }) };
}

/** 0, step, 2 × step, … up to and including `until`. */
const every = (step: number, until: number): number[] => Array.from({ length: Math.floor(until / step) + 1 }, (_, i) => i * step);

test("a load slower than the interval never overlaps the next, which waits SLOW_ANSWER_FACTOR times as long as it took", async () => {
  const { clock, s, c, p } = pollSlow(30, { everyMs: 10 });
  await clock.advance(400);
  p.stop();
  assert.equal(s.maxInflight, 1);
  // 30 ms of load + 4 × 30 ms of pause: one start every 150 ms (a fixed-rate timer would have started 40).
  assert.deepEqual(s.starts, every(30 * (1 + SLOW_ANSWER_FACTOR), 400));
  assert.deepEqual(c.answers, [1, 2, 3]);
});

test("the wait after a slow answer is capped (an answer that hung until a timeout must not keep the page stale for minutes)", async () => {
  const { clock, s, p } = pollSlow(40, { everyMs: 10, maxWaitMs: 50 });
  await clock.advance(400);
  p.stop();
  // 40 ms of load + min(50, 4 × 40) of wait: one every 90 ms, not every 200.
  assert.deepEqual(s.starts, every(40 + 50, 400));
});

test("quick answers come every everyMs", async () => {
  const { clock, s, p } = pollSlow(1, { everyMs: 20 });
  await clock.advance(210);
  p.stop();
  // 1 ms of load + max(20, 4 × 1) of wait.
  assert.deepEqual(s.starts, every(21, 210));
});

test("reloads asked during a load are one load, right after it, and the answer in flight is dropped", async () => {
  const { clock, s, c, p } = pollSlow(50, { everyMs: 10_000 });
  await clock.advance(10);
  p.reload();
  p.reload();
  p.reload();
  await clock.advance(130);
  assert.deepEqual(s.starts, [0, 50]);
  assert.equal(s.maxInflight, 1);
  // The first answer came while a reload was pending: only the reload's is shown.
  assert.deepEqual(c.answers, [2]);
  p.reload(); // idle: loads at once
  await clock.advance(70);
  assert.deepEqual(s.starts, [0, 50, 140]);
  assert.deepEqual(c.answers, [2, 3]);
  p.stop();
});

test("stop drops the answer in flight and loads nothing more", async () => {
  const { clock, s, c, p } = pollSlow(30, { everyMs: 5 });
  await clock.advance(10);
  p.stop();
  p.reload();
  await clock.advance(80);
  assert.equal(s.started, 1);
  assert.deepEqual(c.answers, []);
});

test("stopRepeating (after a 404) ends the timer's loads; a reload still loads once", async () => {
  const clock = new VirtualClock();
  let calls = 0;
  const c = collect<number>();
  let p: Poller | null = null;
  p = startPoller({
    load: () => {
      calls++;
      return Promise.reject(Object.assign(new Error("not found"), { status: 404 }));
    },
    everyMs: 5,
    onAnswer: c.onAnswer,
    onError: (e) => {
      c.onError(e);
      if ((e as { status?: number }).status === 404) p!.stopRepeating();
    },
    clock,
  });
  await clock.advance(60);
  assert.equal(calls, 1);
  assert.equal(c.errors.length, 1);
  p.reload();
  await clock.advance(60);
  assert.equal(calls, 2);
  p.stop();
});

test("a load that throws instead of rejecting is an error, and polling goes on", async () => {
  const clock = new VirtualClock();
  let calls = 0;
  const c = collect<number>();
  const p = startPoller({
    load: () => {
      calls++;
      if (calls === 1) throw new Error("boom");
      return Promise.resolve(calls);
    },
    everyMs: 5,
    ...c,
    clock,
  });
  await clock.advance(60);
  p.stop();
  assert.equal((c.errors[0] as Error).message, "boom");
  assert.equal(calls, 60 / 5 + 1);
  assert.deepEqual(
    c.answers,
    every(1, 11).map((i) => i + 2),
  );
});

test("no load comes due while hidden; the next comes once shown", async () => {
  let hidden = false;
  const { clock, s, p } = pollSlow(1, { everyMs: 10, hidden: () => hidden });
  await clock.advance(5);
  hidden = true;
  await clock.advance(80);
  assert.deepEqual(s.starts, [0]);
  hidden = false;
  await clock.advance(40);
  // The timer kept coming due every 10 ms while hidden, and loaded at the first after being shown.
  assert.deepEqual(s.starts, [0, 91, 102, 113, 124]);
  p.stop();
});

test("everyMs 0 loads once", async () => {
  const { clock, s, c, p } = pollSlow(1, { everyMs: 0 });
  await clock.advance(50);
  assert.equal(s.started, 1);
  assert.deepEqual(c.answers, [1]);
  p.stop();
});
