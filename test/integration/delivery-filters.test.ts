import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import type { Delivery, Page } from "../helpers/api-types.js";

// A status filter pages over the stored statuses and keeps the deliveries that read as the
// status asked for: a stored `queued` may read as `held`. A paused destination's backlog newer
// than a queued delivery elsewhere filled every page of `?status=queued` with rows that were then
// dropped: empty pages, each with a next_cursor, until the backlog was passed. A page now reads
// on past them, up to ten pages' worth of rows, and its cursor is where it stopped.

for (const backend of FEATURE_BACKENDS) {
  describe(`delivery status filters beside a held backlog (${backend})`, () => {
    let s: TestSluice;
    let due: string;
    before(async () => {
      s = await startSluice(backend, { worker: false }); // nothing is claimed: what is due stays queued
      const dest = async () => (await s.api<{ id: string }>("POST", "/v1/destinations", { url: "http://127.0.0.1:9/x" })).body.id;
      const active = await dest();
      const paused = await dest();
      assert.equal((await s.api("POST", `/v1/destinations/${paused}/pause`, { reason: "test" })).status, 200);
      const publish = async (events: unknown[]) =>
        (await s.api<{ events: { id: string }[] }>("POST", "/v1/events/batch", { events })).body.events.map((e) => e.id);
      due = (await publish([{ type: "t", payload: {}, destination_ids: [active] }]))[0]!;
      // Newer: a scheduled first attempt on the active destination, and the paused one's backlog.
      await publish([{ type: "t", payload: {}, destination_ids: [active], deliver_at: new Date(Date.now() + 3600_000).toISOString() }]);
      await publish(Array.from({ length: 150 }, (_, i) => ({ type: "t", payload: { i }, destination_ids: [paused] })));
    });
    after(async () => s?.stop());

    test("the first page of queued holds the queued delivery, past the held ones", async () => {
      const page = (await s.api<Page<Delivery>>("GET", "/v1/deliveries?status=queued&limit=100")).body;
      assert.deepEqual(
        page.data.map((d) => [d.event_id, d.status]),
        [[due, "queued"]],
      );
    });

    test("paging with a small limit goes through everything once, whatever a page's reading stopped at", async () => {
      const all = async (status: string, limit: number) => {
        const seen: string[] = [];
        let calls = 0;
        for (let cursor = ""; ;) {
          const page = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?status=${status}&limit=${limit}&cursor=${cursor}`)).body;
          calls++;
          assert.ok(page.data.length <= limit);
          assert.ok(page.data.every((d) => d.status === status));
          seen.push(...page.data.map((d) => d.id));
          if (page.next_cursor === null) break;
          cursor = page.next_cursor;
        }
        return { seen, calls };
      };
      // limit 1 reads at most 10 rows a call: 151 waiting deliveries take 16 calls to pass.
      const queued = await all("queued", 1);
      assert.equal(queued.seen.length, 1);
      assert.ok(queued.calls >= 15 && queued.calls <= 17, String(queued.calls));
      const held = await all("held", 7);
      assert.equal(held.seen.length, 151);
      assert.equal(new Set(held.seen).size, 151);
    });

    test("held still lists every held one, and no queued one", async () => {
      const page = (await s.api<Page<Delivery>>("GET", "/v1/deliveries?status=held&limit=200")).body;
      assert.equal(page.data.length, 151);
      assert.ok(page.data.every((d) => d.status === "held" && d.event_id !== due));
    });
  });
}
