import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ENGINE_BACKENDS, useSluiceAndReceiver } from "../helpers/sluice.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Delivery, Destination, Page } from "../helpers/api-types.js";

// `Retry-After: 0`, or an HTTP-date that is not in the future, means "now": the destination
// waits only the ~1 s floor, the throttle schedule (60 s, 300 s, …) never starts, and the reason
// says what came. Without the fix each of these tests would wait at least 60 s and time out.

const RETRY_NOW_HEADERS: Record<string, () => string> = {
  "Retry-After: 0": () => "0",
  "a past HTTP-date": () => new Date(Date.now() - 3_600_000).toUTCString(),
};

for (const backend of ENGINE_BACKENDS) {
  describe(`Retry-After meaning "now" on ${backend} Postgres`, () => {
    const ctx = useSluiceAndReceiver(backend);

    for (const [label, header] of Object.entries(RETRY_NOW_HEADERS)) {
      test(`${label}: three 429s in a row each hold about a second, never escalate, then deliver`, async () => {
        const { s, rx } = ctx;
        rx.reset();
        const path = `/now-${label.replace(/\W+/g, "-")}`;
        let answered = 0;
        rx.respondWith(() => (++answered <= 3 ? { status: 429, headers: { "retry-after": header() } } : { status: 200 }));
        const type = `ra${Math.random().toString(36).slice(2, 8)}`;
        const d = (
          await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}${path}`, event_types: [`${type}.*`], max_concurrency: 1 })
        ).body;
        assert.equal((await s.api("POST", "/v1/events", { type: `${type}.x`, payload: { label } })).status, 202);

        // The view that shows the hold is the one read: each hold lasts about a second, and a
        // second look on a loaded machine can fall between two holds or after the last.
        let held: Destination | undefined;
        await waitFor(
          async () => {
            const v = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
            if (v.status === "throttled") held = v;
            return held !== undefined;
          },
          { timeoutMs: 5000 },
        );
        assert.ok(held);
        const reason = held.throttle_reason ?? "";
        assert.match(reason, /retry now/, reason);
        assert.match(reason, label.includes("date") ? /date .* not in the future/ : /Retry-After: 0/);
        const holdMs = Date.parse(held.throttled_until ?? "") - Date.now();
        assert.ok(holdMs <= 1500, `held ${holdMs} ms, expected the ~1 s floor`);

        // 3 × ~1 s holds, then the delivery; the schedule's first step alone would be 60 s.
        await waitFor(() => rx.countByPath(path) === 4, { timeoutMs: 10_000, message: () => `received ${rx.countByPath(path)}` });
        const times = rx.received.filter((r) => r.path === path).map((r) => r.receivedAt);
        for (let i = 1; i < times.length; i++) {
          const gap = times[i]! - times[i - 1]!;
          // The floor is kept: no tight loop against a receiver that says "now" (less timer slack).
          assert.ok(gap >= 900, `request ${i + 1} came ${gap} ms after the previous one`);
        }
        await waitFor(async () => {
          const v = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
          return v.status === "active" && v.queued_events === 0;
        });
        const deliveries = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&limit=10`)).body.data;
        assert.equal(deliveries.length, 1);
        assert.equal(deliveries[0]!.status, "delivered");
        assert.equal(deliveries[0]!.attempts, 4); // every 429 recorded as an attempt
      });
    }
  });
}
