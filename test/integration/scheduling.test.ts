import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { DateTime } from "luxon";
import { ENGINE_BACKENDS, useSluiceAndReceiver, type TestSluice } from "../helpers/sluice.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import { worstWindow } from "../helpers/windows.js";
import type { ApiError, Delivery, Destination, Page } from "../helpers/api-types.js";

// Quiet hours and scheduled delivery against a real receiver, with windows a few seconds long.

/** Local wall time `offsetS` seconds from now in `zone`, as quiet_start/quiet_end take it. */
function wall(zone: string, offsetS: number): string {
  return DateTime.now().plus({ seconds: offsetS }).setZone(zone).toFormat("HH:mm:ss");
}

for (const backend of ENGINE_BACKENDS) {
  describe(`quiet hours on ${backend} Postgres`, () => {
    const ctx = useSluiceAndReceiver(backend);

    test("a quiet window holds deliveries, costs no claims, then drains in occurred_at order at the shaped rate", async () => {
      const { s, rx } = ctx;
      rx.reset();
      const zone = "Asia/Kolkata"; // +05:30: a half-hour offset, so minutes and seconds matter
      // Whole seconds: the window ends 5-6 s from when wall() reads the clock, between `asked` and `answered`.
      const asked = Date.now();
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/quiet`,
          event_types: ["q.*"],
          max_concurrency: 1,
          rate_limit: { max_per_second: 5, burst_capacity: 2 },
          delivery_schedule: { timezone: zone, quiet_start: wall(zone, -2), quiet_end: wall(zone, 6) },
        })
      ).body;
      const answered = Date.now();
      assert.equal(d.status, "quiet", JSON.stringify(d));
      const quietUntil = Date.parse(d.quiet_until ?? "");
      // quiet_end truncated to its second: (read + 5 s, read + 6 s] for a read between the two
      // instants. Taken from them rather than from a clock read after the answer, which a slow
      // answer moves.
      assert.ok(quietUntil > asked + 5000 && quietUntil <= answered + 6000, `${d.quiet_until}: asked at ${new Date(asked).toISOString()}`);
      // The next window is tomorrow's, about a day after this one started.
      const nextStart = Date.parse(d.next_quiet_at ?? "");
      assert.ok(Math.abs(nextStart - (quietUntil - 8000 + 86_400_000)) < 2000, String(d.next_quiet_at));

      // Published out of order: occurred_at decides the drain order, not publish or retry order.
      const base = Date.now() - 60_000;
      const order = [7, 2, 11, 0, 5, 9, 1, 10, 3, 8, 4, 6];
      const pub = await s.api("POST", "/v1/events/batch", {
        events: order.map((i) => ({ type: "q.x", payload: { i }, occurred_at: new Date(base + i * 1000).toISOString() })),
      });
      assert.equal(pub.status, 202);
      await waitFor(
        async () => {
          const held = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&status=held&limit=100`)).body.data;
          return held.length === 12 && held.every((x) => x.hold_reason === "quiet_hours");
        },
        { timeoutMs: 3000, message: "deliveries show hold_reason quiet_hours" },
      );
      // Costs nothing until the window ends: the destination's ready_at is the window's end.
      await waitFor(
        async () => {
          const [row] = await s.running.db.query<{ ready_at: Date | null }>("SELECT ready_at FROM destinations WHERE id = $1", [d.id]);
          return row?.ready_at?.getTime() === quietUntil;
        },
        { timeoutMs: 3000, message: "ready_at = the window's end" },
      );
      const metrics = (await s.api<string>("GET", "/metrics", undefined, { key: null })).body;
      assert.match(metrics, /sluice_held\{reason="quiet_hours"\} 12/);

      await waitFor(() => rx.received.length === 12, { timeoutMs: 15_000, message: () => `received ${rx.received.length}` });
      const first = Math.min(...rx.received.map((r) => r.receivedAt));
      assert.ok(first >= quietUntil - 50, `first arrival ${quietUntil - first} ms before the window ended`);
      assert.deepEqual(
        rx.received.map((r) => (r.json as { data: { i: number } }).data.i),
        [...Array(12).keys()],
      );
      // At the shaped rate, not in one flood.
      assert.equal(
        worstWindow(
          rx.received.map((r) => r.receivedAt),
          5,
          2,
          500,
        ),
        null,
      );
      const span = Math.max(...rx.received.map((r) => r.receivedAt)) - first;
      assert.ok(span >= 1200, `12 sends at 5/s with a burst of 2 took only ${span} ms`);
      const after = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      assert.equal(after.status, "active");
      assert.equal(after.quiet_until, null);
    });
  });
}

describe("quiet hours: bypass and applies_to", () => {
  const ctx = useSluiceAndReceiver("server");

  test("bypass types and types the window does not cover go at once; covered ones wait; PATCH re-decides", async () => {
    const { s, rx } = ctx;
    rx.reset();
    const zone = "America/New_York";
    const d = (
      await s.api<Destination>("POST", "/v1/destinations", {
        url: `${rx.url}/bypass`,
        event_types: ["*"],
        delivery_schedule: {
          timezone: zone,
          quiet_start: wall(zone, -60),
          quiet_end: wall(zone, 3600),
          applies_to: ["marketing.*", "payment.*"],
          bypass_event_types: ["payment.failed"],
        },
      })
    ).body;
    assert.equal(d.status, "quiet");
    await s.api("POST", "/v1/events/batch", {
      events: [
        { type: "marketing.digest", payload: { n: 1 } },
        { type: "payment.failed", payload: { n: 2 } },
        { type: "order.created", payload: { n: 3 } },
        { type: "payment.succeeded", payload: { n: 4 } },
      ],
    });
    await waitFor(() => rx.received.length >= 2, { timeoutMs: 5000 });
    await sleep(700);
    assert.deepEqual(rx.received.map((r) => (r.json as { type: string }).type).sort(), ["order.created", "payment.failed"]);
    const held = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&status=held`)).body.data;
    assert.equal(held.length, 2);
    assert.ok(held.every((x) => x.hold_reason === "quiet_hours"));

    // Dropping payment.* from applies_to releases the held payment at once; marketing still waits.
    const patched = await s.api("PATCH", `/v1/destinations/${d.id}`, {
      delivery_schedule: { ...d.delivery_schedule, applies_to: ["marketing.*"] },
    });
    assert.equal(patched.status, 200);
    await waitFor(() => rx.received.length === 3, { timeoutMs: 5000 });
    assert.equal((rx.received[2]!.json as { type: string }).type, "payment.succeeded");
    // Removing the schedule releases the rest.
    await s.api("PATCH", `/v1/destinations/${d.id}`, { delivery_schedule: null });
    await waitFor(() => rx.received.length === 4, { timeoutMs: 5000 });
  });

  test("an unknown zone or a malformed time is refused with 422 and writes nothing", async () => {
    const { s } = ctx;
    const before = (await s.api<Page<Destination>>("GET", "/v1/destinations?limit=100")).body.data.length;
    for (const schedule of [
      { timezone: "Mars/Olympus_Mons", quiet_start: "22:00", quiet_end: "06:00" },
      { timezone: "Europe/Berlin", quiet_start: "25:00", quiet_end: "06:00" },
      { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "6am" },
    ]) {
      const r = await s.api<ApiError>("POST", "/v1/destinations", { url: "http://127.0.0.1:1/x", delivery_schedule: schedule });
      assert.equal(r.status, 422, JSON.stringify(r.body));
      assert.match(JSON.stringify(r.body), /delivery_schedule/);
    }
    assert.equal((await s.api<Page<Destination>>("GET", "/v1/destinations?limit=100")).body.data.length, before);
  });
});

// "At once" after deliver_at: the worker sleeps until the destination's ready_at, which is the
// deliver_at, then claims and sends: tens of milliseconds late, hundreds on a loaded machine. 3 s
// leaves room for that and still fails a worker that misses the time and is woken only by its
// 30 s idle sleep.
const LATE_MS = 3_000;

describe("scheduled delivery", () => {
  const ctx = useSluiceAndReceiver("server");

  test("deliver_at holds an event's deliveries until then, then they go at once", async () => {
    const { s, rx } = ctx;
    rx.reset();
    const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/sched`, event_types: ["s.*"] })).body;
    // Far enough ahead that the publish and the two looks below come before it on a loaded machine.
    const at = Date.now() + 3000;
    const pub = await s.api("POST", "/v1/events", { type: "s.x", payload: {}, deliver_at: new Date(at).toISOString() });
    assert.equal(pub.status, 202);
    const [dl] = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`)).body.data;
    assert.equal(dl?.status, "held");
    assert.equal(dl?.hold_reason, "scheduled");
    const metrics = (await s.api<string>("GET", "/metrics", undefined, { key: null })).body;
    assert.match(metrics, /sluice_held\{reason="scheduled"\} 1/);
    await waitFor(() => rx.received.length === 1, { timeoutMs: Math.max(0, at + LATE_MS - Date.now()) });
    assert.ok(rx.received[0]!.receivedAt >= at - 20, `arrived ${at - rx.received[0]!.receivedAt} ms early`);
    assert.ok(rx.received[0]!.receivedAt < at + LATE_MS, `arrived ${rx.received[0]!.receivedAt - at} ms late (limit ${LATE_MS} ms)`);
  });
});

describe("held destinations cost nothing (invariant 3)", () => {
  const ctx = useSluiceAndReceiver("server");

  test("a quiet and a paused destination with backlogs are never looked at, and a neighbour is served at once", async () => {
    const { s, rx } = ctx;
    rx.reset();
    const zone = "Pacific/Chatham"; // +12:45/+13:45
    const quiet = (
      await s.api<Destination>("POST", "/v1/destinations", {
        url: `${rx.url}/q`,
        event_types: ["c.*"],
        delivery_schedule: { timezone: zone, quiet_start: wall(zone, -60), quiet_end: wall(zone, 3600) },
      })
    ).body;
    const paused = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/p`, event_types: ["c.*"] })).body;
    await s.api("POST", `/v1/destinations/${paused.id}/pause`, {});
    await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 500 }, (_, i) => ({ type: "c.x", payload: { i } })) });
    // Both backlogs settle with no ready_at a worker could reach before the window ends.
    await waitFor(
      async () => {
        const rows = await s.running.db.query<{ id: string; ready_at: Date | null }>(
          "SELECT id, ready_at FROM destinations WHERE id = ANY($1)",
          [[quiet.id, paused.id]],
        );
        const q = rows.find((r) => r.id === quiet.id)!;
        const p = rows.find((r) => r.id === paused.id)!;
        return (
          p.ready_at === null &&
          q.ready_at !== null &&
          q.ready_at.getTime() === Date.parse((await s.api<Destination>("GET", `/v1/destinations/${quiet.id}`)).body.quiet_until ?? "")
        );
      },
      { timeoutMs: 3000, message: "held destinations keep a ready_at no worker reaches" },
    );
    // More held events do not wake the held destinations: their ready_at stays out of any claim's reach.
    const readyBefore = await readyAts(s, [quiet.id, paused.id]);
    await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 100 }, (_, i) => ({ type: "c.x", payload: { i } })) });
    await sleep(300);
    assert.deepEqual(await readyAts(s, [quiet.id, paused.id]), readyBefore);
    assert.ok(readyBefore[0] === null || readyBefore[0]! > Date.now() + 60_000);
    assert.ok(readyBefore[1] === null || readyBefore[1]! > Date.now() + 60_000);
    await s.api("POST", "/v1/destinations", { url: `${rx.url}/a`, event_types: ["n.*"], max_concurrency: 20 });
    await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 200 }, (_, i) => ({ type: "n.x", payload: { i } })) });
    await waitFor(() => rx.countByPath("/a") === 200, { timeoutMs: 5000, message: () => `neighbour got ${rx.countByPath("/a")}` });
    assert.equal(rx.countByPath("/q") + rx.countByPath("/p"), 0);
    const q = (await s.api<Destination>("GET", `/v1/destinations/${quiet.id}`)).body;
    const p = (await s.api<Destination>("GET", `/v1/destinations/${paused.id}`)).body;
    assert.equal(q.queued_events, 600);
    assert.equal(p.queued_events, 600);
  });
});

async function readyAts(s: TestSluice, ids: string[]): Promise<(number | null)[]> {
  const rows = await s.running.db.query<{ ready_at: Date | null }>("SELECT ready_at FROM destinations WHERE id = ANY($1) ORDER BY id", [
    ids,
  ]);
  return rows.map((r) => r.ready_at?.getTime() ?? null);
}
