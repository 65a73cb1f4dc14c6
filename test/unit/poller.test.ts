import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { SLOW_ANSWER_FACTOR, startPoller, type Poller, type PollerOptions } from "../../ui/src/poller.js";

// The dashboard's polling (ui/src/poller.ts, under hooks.ts usePoll), with real timers.

/** A load that takes `ms` and counts how many run at once. */
function slowLoad(ms: number) {
  const s = { started: 0, inflight: 0, maxInflight: 0, starts: [] as number[] };
  const load = async (): Promise<number> => {
    const n = ++s.started;
    s.starts.push(performance.now());
    s.inflight++;
    s.maxInflight = Math.max(s.maxInflight, s.inflight);
    await sleep(ms);
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

/** Polls slowLoad(loadMs) with `opts`, collecting what it answers. */
function pollSlow(loadMs: number, opts: Omit<PollerOptions<number>, "load" | "onAnswer" | "onError">) {
  const { s, load } = slowLoad(loadMs);
  const c = collect<number>();
  return { s, c, p: startPoller({ load, ...opts, ...c }) };
}

/** Every load started at least `ms` after the one before. */
function assertGapsAtLeast(starts: readonly number[], ms: number): void {
  for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! - starts[i - 1]! >= ms, `gap ${i}: ${starts[i]! - starts[i - 1]!} ms`);
}

test("a load slower than the interval never overlaps the next, which waits SLOW_ANSWER_FACTOR times as long as it took", async () => {
  const { s, c, p } = pollSlow(30, { everyMs: 10 });
  await sleep(400);
  p.stop();
  assert.equal(s.maxInflight, 1);
  // 30 ms of load + 4 × 30 ms of pause each: 3 in 400 ms (a fixed-rate timer would have started ~40).
  assert.ok(s.started >= 2 && s.started <= 3, `${s.started} loads`);
  assertGapsAtLeast(s.starts, 30 * (1 + SLOW_ANSWER_FACTOR) - 2);
  assert.deepEqual(
    c.answers,
    c.answers.map((_, i) => i + 1),
  );
});

test("the wait after a slow answer is capped (an answer that hung until a timeout must not keep the page stale for minutes)", async () => {
  const { s, p } = pollSlow(40, { everyMs: 10, maxWaitMs: 50 });
  await sleep(400);
  p.stop();
  // 40 ms of load + min(50, 4 × 40) of wait: one every ~90 ms, not every 200.
  assert.ok(s.started >= 3, `${s.started} loads`);
  assertGapsAtLeast(s.starts, 40 + 50 - 2);
  assert.ok(s.starts[1]! - s.starts[0]! < 40 + 4 * 40, "capped");
});

test("quick answers come every everyMs", async () => {
  const { s, p } = pollSlow(1, { everyMs: 20 });
  await sleep(210);
  p.stop();
  // One load every ~21-25 ms (the timers' own delay): 7 to 10 in 210 ms, fewer on a busy machine.
  assert.ok(s.started >= 3 && s.started <= 11, `${s.started} loads`);
  assertGapsAtLeast(s.starts, 20);
});

test("reloads asked during a load are one load, right after it, and the answer in flight is dropped", async () => {
  const { s, c, p } = pollSlow(50, { everyMs: 10_000 });
  await sleep(10);
  p.reload();
  p.reload();
  p.reload();
  await sleep(130);
  assert.equal(s.started, 2);
  assert.equal(s.maxInflight, 1);
  // The first answer came while a reload was pending: only the reload's is shown.
  assert.deepEqual(c.answers, [2]);
  p.reload(); // idle: loads at once
  await sleep(70);
  assert.equal(s.started, 3);
  assert.deepEqual(c.answers, [2, 3]);
  p.stop();
});

test("stop drops the answer in flight and loads nothing more", async () => {
  const { s, c, p } = pollSlow(30, { everyMs: 5 });
  await sleep(10);
  p.stop();
  p.reload();
  await sleep(80);
  assert.equal(s.started, 1);
  assert.deepEqual(c.answers, []);
});

test("stopRepeating (after a 404) ends the timer's loads; a reload still loads once", async () => {
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
  });
  await sleep(60);
  assert.equal(calls, 1);
  assert.equal(c.errors.length, 1);
  p.reload();
  await sleep(60);
  assert.equal(calls, 2);
  p.stop();
});

test("a load that throws instead of rejecting is an error, and polling goes on", async () => {
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
  });
  await sleep(60);
  p.stop();
  assert.equal((c.errors[0] as Error).message, "boom");
  assert.ok(calls >= 3, `${calls} loads`);
});

test("no load comes due while hidden; the next comes once shown", async () => {
  let hidden = false;
  const { s, p } = pollSlow(1, { everyMs: 10, hidden: () => hidden });
  await sleep(5);
  hidden = true;
  const before = s.started;
  await sleep(80);
  assert.equal(s.started, before);
  hidden = false;
  await sleep(40);
  assert.ok(s.started > before);
  p.stop();
});

test("everyMs 0 loads once", async () => {
  const { s, c, p } = pollSlow(1, { everyMs: 0 });
  await sleep(50);
  assert.equal(s.started, 1);
  assert.deepEqual(c.answers, [1]);
  p.stop();
});
