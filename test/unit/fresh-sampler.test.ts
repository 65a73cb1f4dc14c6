import { test } from "node:test";
import assert from "node:assert/strict";
import { freshSampler } from "../../src/metrics.js";
import { SLOW_ANSWER_FACTOR } from "../../src/policy/slow-answer.js";

// The database gauges' sampling (src/metrics.ts): a scrape samples at most every 5 s, and after a
// slow sample waits SLOW_ANSWER_FACTOR times as long as it took. On a virtual clock: each sample
// moves it on by the time it "takes".

function sampler(costMs: () => number, fail = () => false) {
  let t = 0;
  const started: number[] = [];
  const refresh = freshSampler(
    async () => {
      started.push(t);
      await Promise.resolve();
      t += costMs();
      if (fail()) throw new Error("store unavailable");
    },
    () => t,
  );
  return { refresh, started, at: (ms: number) => (t = ms) };
}

test("a quick sample is reused for 5 s", async () => {
  const s = sampler(() => 10);
  for (const ms of [0, 1000, 5009, 5010, 6000, 10_010]) {
    s.at(ms);
    await s.refresh();
  }
  // 0 → ended at 10; 5,010 is 5 s later → ended at 5,020; 10,010 is under 5 s after that.
  assert.deepEqual(s.started, [0, 5010]);
});

test("after a slow sample the next waits SLOW_ANSWER_FACTOR times as long as it took", async () => {
  const s = sampler(() => 2000);
  for (let ms = 0; ms <= 30_000; ms += 1000) {
    s.at(ms);
    await s.refresh();
  }
  // Each takes 2 s, then 8 s pass before the next: one every 10 s (with only the 5 s floor: every 7 s).
  assert.equal(SLOW_ANSWER_FACTOR, 4);
  assert.deepEqual(s.started, [0, 10_000, 20_000, 30_000]);
});

test("the wait after a slow sample is at most a minute", async () => {
  const s = sampler(() => 60_000);
  s.at(0);
  await s.refresh(); // ends at 60 s
  s.at(119_000);
  await s.refresh();
  s.at(120_000);
  await s.refresh();
  assert.deepEqual(s.started, [0, 120_000]);
});

test("asks during a sample wait on it; a failed sample counts (the gauges keep their values)", async () => {
  let failing = true;
  const s = sampler(
    () => 10,
    () => failing,
  );
  s.at(0);
  await Promise.all([s.refresh(), s.refresh(), s.refresh()]);
  assert.deepEqual(s.started, [0]);
  failing = false;
  s.at(1000);
  await s.refresh(); // within 5 s of the failed one: not asked again yet
  s.at(5010);
  await s.refresh();
  assert.deepEqual(s.started, [0, 5010]);
});
