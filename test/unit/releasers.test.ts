import { test } from "node:test";
import assert from "node:assert/strict";
import { Releasers } from "../../src/releasers.js";

// Start and stop by one list (src/releasers.ts): intake first, then last-in, first-out.

test("intake stops first, then each component before whatever it was started on", async () => {
  const order: string[] = [];
  const r = new Releasers();
  r.push("store", () => void order.push("store"));
  r.push("sender", async () => void order.push("sender"));
  r.pushIntake("api", () => void order.push("api"));
  r.push("dispatcher", () => void order.push("dispatcher"));
  await r.releaseAll(() => assert.fail("no release throws here"));
  assert.deepEqual(order, ["api", "dispatcher", "sender", "store"]);
});

test("a release that throws is reported, the others still run, and a second stop runs nothing again", async () => {
  const order: string[] = [];
  const failed: string[] = [];
  const r = new Releasers();
  r.push("store", () => void order.push("store"));
  r.push("broken", () => {
    throw new Error("boom");
  });
  r.push("janitor", () => void order.push("janitor"));
  const first = r.releaseAll((name) => failed.push(name));
  const second = r.releaseAll((name) => failed.push(`again ${name}`));
  await Promise.all([first, second]);
  assert.equal(first, second);
  assert.deepEqual(order, ["janitor", "store"]);
  assert.deepEqual(failed, ["broken"]);
});
