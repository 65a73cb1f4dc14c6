import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { worstWindow } from "../helpers/windows.js";

// Burst shaping counted at the receiver: no window exceeds burst + rate × length.

for (const backend of BACKENDS) {
  describe(`rate limits on ${backend} Postgres`, () => {
    let s: TestSluice;
    let rx: Receiver;
    before(async () => {
      s = await startSluice(backend);
      rx = await startReceiver();
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    test("a backlog drains at the configured rate, shows rate_limited, and no window exceeds the bucket", async () => {
      const d = (await s.api("POST", "/v1/destinations", {
        url: `${rx.url}/rl`, event_types: ["rl.*"], max_concurrency: 50, rate_limit: { max_per_second: 10, burst_capacity: 5 },
      })).body;
      const pub = await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 30 }, (_, i) => ({ type: "rl.x", payload: { i } })) });
      assert.equal(pub.status, 202);
      await waitFor(async () => (await s.api("GET", `/v1/destinations/${d.id}`)).body.status === "rate_limited", { timeoutMs: 5000 });
      const held = (await s.api("GET", `/v1/deliveries?destination_id=${d.id}&status=held&limit=100`)).body.data;
      assert.ok(held.length > 0 && held.every((x: { hold_reason: string }) => x.hold_reason === "rate_limited"), JSON.stringify(held.slice(0, 2)));
      await waitFor(() => rx.received.length === 30, { timeoutMs: 15_000, message: () => `received ${rx.received.length}` });
      const times = rx.received.map((r) => r.receivedAt);
      const bad = worstWindow(times, 10, 5, 250);
      assert.equal(bad, null, JSON.stringify(bad));
      // 30 sends with a burst of 5 at 10/s span at least 2.5 s (less the arrival jitter); a
      // dispatcher that ignored the bucket would take milliseconds.
      const span = Math.max(...times) - Math.min(...times);
      assert.ok(span >= 2000, `all 30 arrived within ${span} ms`);
      await waitFor(async () => (await s.api("GET", `/v1/destinations/${d.id}`)).body.status === "active");
    });

    test("PATCH rate_limit takes effect live", async () => {
      rx.reset();
      const d = (await s.api("POST", "/v1/destinations", {
        url: `${rx.url}/live`, event_types: ["live.*"], max_concurrency: 50, rate_limit: { max_per_second: 1, burst_capacity: 1 },
      })).body;
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 20 }, (_, i) => ({ type: "live.x", payload: { i } })) });
      await waitFor(() => rx.received.length >= 1);
      const patched = await s.api("PATCH", `/v1/destinations/${d.id}`, { rate_limit: null });
      assert.equal(patched.status, 200);
      // At 1/s the rest would need 19 s; unlimited, they go at once.
      await waitFor(() => rx.received.length === 20, { timeoutMs: 5000, message: () => `received ${rx.received.length}` });
    });
  });
}
