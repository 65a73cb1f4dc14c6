import { randomUUID } from "node:crypto";
import { IDLE_RECHECK_MS, claim } from "../../src/dispatch/claim.js";
import { abandonClaims, finishDeliveries, type DeliveryUpdate } from "../../src/db/queries/results.js";
import { withRetry } from "../../src/db/db.js";
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ENGINE_BACKENDS, startSluice, useSluiceAndReceiver } from "../helpers/sluice.js";
import { startReceiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Delivery, Destination, Event, EventAccepted, Page } from "../helpers/api-types.js";
import { metrics } from "../../src/metrics.js";
import { pruneOnce } from "../../src/dispatch/janitor.js";
import { pruneEvents } from "../../src/db/queries/retention.js";

/** `id` with the time in it (src/ids.ts: prefix_ + 12 hex digits of ms) moved `hours` back. */
function agedId(id: string, hours: number): string {
  const [prefix, rest] = id.split("_") as [string, string];
  const ms = parseInt(rest.slice(0, 12), 16) - hours * 3_600_000;
  return `${prefix}_${ms.toString(16).padStart(12, "0")}${rest.slice(12)}`;
}

// Dispatcher behaviour on both stores: idle costs nothing, notifications wake it, ordered
// destinations are strict FIFO with a blocking head, retention prunes only what is finished.

const claimCount = async () =>
  (await metrics.claimDuration.get()).values.find((v) => v.metricName === "sluice_claim_duration_seconds_count")?.value ?? 0;

for (const backend of ENGINE_BACKENDS) {
  describe(`dispatcher on ${backend} Postgres`, () => {
    const ctx = useSluiceAndReceiver(backend);

    test("an idle engine sleeps (no claim loop) and a new event wakes it by notification", async () => {
      const { s, rx } = ctx;
      const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/idle`, event_types: ["idle.*"] })).body;
      await s.api("POST", "/v1/events", { type: "idle.a", payload: {} });
      await waitFor(() => rx.received.some((r) => r.path === "/idle"));
      // Let the last result, its re-claim and the one idle re-check (IDLE_RECHECK_MS later) settle.
      await new Promise((r) => setTimeout(r, IDLE_RECHECK_MS + 500));
      const before = await claimCount();
      await new Promise((r) => setTimeout(r, 1500));
      const idleClaims = (await claimCount()) - before;
      assert.ok(idleClaims <= 2, `${idleClaims} claims while idle for 1.5 s`);
      const n = rx.received.length;
      await s.api("POST", "/v1/events", { type: "idle.b", payload: {} });
      // The safety-net sleep is 30 s: arriving well inside 5 s proves the notification woke it.
      await waitFor(() => rx.received.length > n, { timeoutMs: 5000, message: "the new event did not wake the dispatcher" });
      void d;
    });

    test("ordered: one in flight, occurred_at order, a failing head blocks the rest until it succeeds", async () => {
      const { s } = ctx;
      let inflight = 0;
      let peak = 0;
      let first = true;
      const orx = await startReceiver(async () => {
        inflight++;
        peak = Math.max(peak, inflight);
        await new Promise((r) => setTimeout(r, 10));
        inflight--;
        if (first) {
          first = false;
          return { status: 500 };
        }
        return { status: 200 };
      });
      try {
        const d = (
          await s.api<Destination>("POST", "/v1/destinations", {
            url: `${orx.url}/o`,
            event_types: ["ord.none"],
            ordered: true,
            max_concurrency: 10,
            retry_schedule_seconds: [1],
          })
        ).body;
        const base = Date.parse("2026-01-01T00:00:00Z");
        // Published out of order; occurred_at decides.
        const order = [3, 0, 4, 1, 2];
        await s.api("POST", "/v1/events/batch", {
          events: order.map((i) => ({
            type: "ord.x",
            payload: { i },
            occurred_at: new Date(base + i * 1000).toISOString(),
            destination_ids: [d.id],
          })),
        });
        // While the failed head waits for its retry, everything behind it says why it waits.
        await waitFor(() => orx.received.length >= 1);
        const waiting = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&limit=10`)).body.data;
        assert.ok(waiting.filter((x) => x.hold_reason === "ordering").length >= 3, JSON.stringify(waiting.map((x) => x.hold_reason)));
        await waitFor(() => orx.received.length >= 6, { timeoutMs: 10_000, message: () => `got ${orx.received.length}` });
        const seen = orx.received.map((r) => (r.json as { data: { i: number } }).data.i);
        assert.deepEqual(seen, [0, 0, 1, 2, 3, 4], "the failing head is retried before anything after it");
        assert.equal(peak, 1);
      } finally {
        await orx.close();
      }
    });

    test("retention prunes finished deliveries, their attempts and events — never unfinished work", async () => {
      const { s, rx } = ctx;
      const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/ret`, event_types: ["ret.*"] })).body;
      const done = await s.api<EventAccepted>("POST", "/v1/events", { type: "ret.done", payload: {}, destination_ids: [d.id] });
      await waitFor(async () => (await s.api<Event>("GET", `/v1/events/${done.body.id}`)).body.deliveries![0]?.status === "delivered");
      await s.api("POST", `/v1/destinations/${d.id}/pause`, {});
      const waiting = await s.api<EventAccepted>("POST", "/v1/events", { type: "ret.waiting", payload: {}, destination_ids: [d.id] });
      const db = s.running.db;
      // Age everything of this destination past the retention window.
      await db.query(
        // (A constant time, not the column's less 200 hours: Citus refuses a STABLE function of a column in an UPDATE.)
        "UPDATE deliveries SET finished_at = now() - interval '200 hours', created_at = now() - interval '200 hours' WHERE destination_id = $1",
        [d.id],
      );
      await db.query("UPDATE attempts SET started_at = now() - interval '200 hours' WHERE destination_id = $1", [d.id]);
      // An event's age is in its id (retention reads it there): give both events ids made 200 hours
      // ago, and their deliveries with them.
      const aged = (id: string): string => agedId(id, 200);
      for (const id of [done.body.id, waiting.body.id]) {
        await db.query("UPDATE events SET id = $2 WHERE id = $1", [id, aged(id)]);
        await db.query("UPDATE deliveries SET event_id = $2 WHERE event_id = $1", [id, aged(id)]);
      }
      const r = await pruneOnce(db, 168);
      assert.ok(r && r.deliveries >= 1 && r.attempts >= 1);
      await pruneOnce(db, 168); // events go once their deliveries are gone
      assert.equal((await s.api("GET", `/v1/events/${aged(done.body.id)}`)).status, 404);
      const kept = await s.api<Event>("GET", `/v1/events/${aged(waiting.body.id)}`);
      assert.equal(kept.status, 200);
      assert.equal(kept.body.deliveries![0]!.status, "held");
    });

    test("retention's batches of events go on from where the last stopped, past the held ones", async () => {
      const { s, rx } = ctx;
      const db = s.running.db;
      const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/cursor`, event_types: ["cursor.*"] })).body;
      await s.api("POST", `/v1/destinations/${d.id}/pause`, {});
      const tenant = (await db.query<{ tenant_id: string }>("SELECT tenant_id FROM destinations WHERE id = $1", [d.id]))[0]!.tenant_id;
      // Three events made 200 hours ago, in id order: the first held by a waiting delivery.
      const at = (Date.now() - 200 * 3_600_000).toString(16).padStart(12, "0");
      const [held, first, second] = ["a", "b", "c"].map((k) => `evt_${at}${k.repeat(14)}`) as [string, string, string];
      for (const id of [held, first, second])
        await db.query("INSERT INTO events (id, tenant_id, type, payload, occurred_at) VALUES ($1, $2, 'cursor.x', '{}', now())", [
          id,
          tenant,
        ]);
      await db.query(
        `INSERT INTO deliveries (destination_id, id, event_id, tenant_id, status, occurred_at, next_attempt_at)
         VALUES ($1, 'dlv_cursor', $2, $3, 'queued', now(), now())`,
        [d.id, held, tenant],
      );
      const ids = async () =>
        (await db.query<{ id: string }>("SELECT id FROM events WHERE id = ANY($1) ORDER BY id", [[held, first, second]])).map((r) => r.id);
      // After `first`: only `second` goes, and it is the next batch's start.
      assert.deepEqual(await db.tx((q) => pruneEvents(q, 168, 10, first)), { n: 1, last: second });
      assert.deepEqual(await ids(), [held, first]);
      // A round from the start passes over the held event, and records where its batch stopped.
      const round = { eventsAfter: "" };
      await pruneOnce(db, 168, round);
      assert.deepEqual(await ids(), [held]);
      assert.equal(round.eventsAfter >= first, true);
      await db.query("DELETE FROM deliveries WHERE id = 'dlv_cursor'");
    });
  });
}

describe("notifications on a Postgres server", () => {
  const ctx = useSluiceAndReceiver("server");
  test("a dropped LISTEN connection is re-made: new events still wake the dispatcher at once", async () => {
    const { s, rx } = ctx;
    await s.api("POST", "/v1/destinations", { url: `${rx.url}/relisten`, event_types: ["relisten.*"] });
    await s.api("POST", "/v1/events", { type: "relisten.a", payload: {} });
    await waitFor(() => rx.received.length === 1);
    const killed = await s.running.db.query<{ ok: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
    );
    assert.ok(killed.length >= 1, "the listening session was found and terminated");
    await new Promise((r) => setTimeout(r, 2000)); // reconnect back-off starts at 500 ms; let the dispatcher fall asleep
    await s.api("POST", "/v1/events", { type: "relisten.b", payload: {} });
    // Without a listener, the next look would come only with the 30 s safety-net sleep.
    await waitFor(() => rx.received.length === 2, {
      timeoutMs: 5000,
      message: "the event did not wake the dispatcher after the listener dropped",
    });
  });
});

for (const backend of ENGINE_BACKENDS) {
  describe(`a claim whose commit went unconfirmed, on ${backend} Postgres`, () => {
    test("abandonClaims hands its leases back at once, as they were: waiting, the attempt not counted", async () => {
      const s = await startSluice(backend, { worker: false });
      try {
        const d = (
          await s.api<Destination>("POST", "/v1/destinations", { url: "http://127.0.0.1:9/never", event_types: ["unconfirmed.*"] })
        ).body;
        await s.api("POST", "/v1/events/batch", { events: [0, 1, 2].map((i) => ({ type: "unconfirmed.x", payload: { i } })) });
        const opts = { capacity: 10, batchSize: 10, grantCap: 10, leaseMarginSeconds: 10, rateSendJitterMs: 0, shard: null };
        // The claim commits; the worker is taken to have lost the answer (store gone mid-commit).
        const token = randomUUID();
        const lost = await claim(s.running.db, { ...opts, leaseToken: token });
        assert.equal(lost.deliveries.length, 3);
        const leased = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`)).body.data;
        assert.ok(
          leased.every((x) => x.status === "delivering"),
          JSON.stringify(leased),
        );

        assert.equal(await withRetry(s.running.db, (q) => abandonClaims(q, [randomUUID()])), 0, "another claim's token touches nothing");
        assert.equal(await withRetry(s.running.db, (q) => abandonClaims(q, [token])), 3);
        const back = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`)).body.data;
        assert.deepEqual(
          back.map((x) => [x.status, x.attempts]),
          [
            ["queued", 0],
            ["queued", 0],
            ["queued", 0],
          ],
        );
        // Claimable at once, not after the lease would have expired.
        const again = await claim(s.running.db, { ...opts, leaseToken: randomUUID() });
        assert.equal(again.deliveries.length, 3);
        assert.ok(again.deliveries.every((x) => x.attempts === 1));
      } finally {
        await s.stop();
      }
    });
  });
}

for (const backend of ENGINE_BACKENDS) {
  describe(`leases on ${backend} Postgres`, () => {
    test("a lease is a row of its own: the delivery row is not rewritten; an expired one is reclaimed, counted, and its late result refused", async () => {
      const s = await startSluice(backend, { worker: false });
      try {
        const db = s.running.db;
        const d = (await s.api<Destination>("POST", "/v1/destinations", { url: "http://127.0.0.1:9/never", event_types: ["lease.*"] }))
          .body;
        await s.api("POST", "/v1/events/batch", { events: [0, 1].map((i) => ({ type: "lease.x", payload: { i } })) });
        const versions = () =>
          db.query<{ id: string; v: string }>("SELECT id, xmin::text AS v FROM deliveries WHERE destination_id = $1 ORDER BY id", [d.id]);
        const before = await versions();
        const opts = { capacity: 10, batchSize: 10, grantCap: 10, leaseMarginSeconds: 10, rateSendJitterMs: 0, shard: null };
        const first = randomUUID();
        const got = await claim(db, { ...opts, leaseToken: first });
        assert.equal(got.deliveries.length, 2);
        assert.ok(got.deliveries.every((x) => x.attempts === 1 && x.lease_token === first));
        assert.deepEqual(await versions(), before, "leasing wrote no new version of a delivery row");
        const leases = await db.query<{ token: string }>("SELECT token::text AS token FROM leases WHERE destination_id = $1", [d.id]);
        assert.deepEqual(
          leases.map((l) => l.token),
          [first, first],
        );
        const shown = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&status=delivering`)).body.data;
        assert.deepEqual(
          shown.map((x) => [x.status, x.attempts]),
          [
            ["delivering", 1],
            ["delivering", 1],
          ],
        );
        assert.equal((await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&status=queued`)).body.data.length, 0);

        // The worker died: its leases expire, and the next claim of the destination takes them back.
        await db.query("UPDATE leases SET expires_at = now() - interval '1 second' WHERE destination_id = $1", [d.id]);
        await db.query("UPDATE destinations SET ready_at = now() WHERE id = $1", [d.id]);
        const second = randomUUID();
        const again = await claim(db, { ...opts, leaseToken: second });
        assert.equal(again.deliveries.length, 2);
        assert.ok(
          again.deliveries.every((x) => x.attempts === 2),
          "the lost attempt counts: its request may have been made",
        );
        const late = (x: { id: string }, leaseToken: string): DeliveryUpdate => ({
          destinationId: d.id,
          id: x.id,
          leaseToken,
          status: "delivered",
          delaySeconds: null,
          failed: false,
          error: null,
          statusCode: 200,
        });
        const refused = await withRetry(db, (q) =>
          finishDeliveries(
            q,
            again.deliveries.map((x) => late(x, first)),
            [],
            { citus: db.citus },
          ),
        );
        assert.equal(refused.size, 0, "a result under the expired lease does not land");
        const landed = await withRetry(db, (q) =>
          finishDeliveries(
            q,
            again.deliveries.map((x) => late(x, second)),
            [],
            { citus: db.citus },
          ),
        );
        assert.equal(landed.size, 2);
        const end = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`)).body.data;
        assert.deepEqual(
          end.map((x) => [x.status, x.attempts]),
          [
            ["delivered", 2],
            ["delivered", 2],
          ],
        );
        assert.equal((await db.query("SELECT 1 FROM leases WHERE destination_id = $1", [d.id])).length, 0, "no lease is left behind");
      } finally {
        await s.stop();
      }
    });

    test("a deleted destination's leftovers are discarded by the janitor; a live lease is left to finish", async () => {
      const s = await startSluice(backend, { worker: false });
      try {
        const db = s.running.db;
        const d = (await s.api<Destination>("POST", "/v1/destinations", { url: "http://127.0.0.1:9/never", event_types: ["left.*"] })).body;
        await s.api("POST", "/v1/events/batch", { events: [0, 1, 2].map((i) => ({ type: "left.x", payload: { i } })) });
        const opts = { capacity: 10, batchSize: 10, grantCap: 10, leaseMarginSeconds: 10, rateSendJitterMs: 0, shard: null };
        const token = randomUUID();
        const [expired, live, retried] = (await claim(db, { ...opts, leaseToken: token })).deliveries.map((x) => x.id);
        assert.ok(expired && live && retried);
        // Deleted while all three are in flight: nothing waiting to discard yet.
        assert.equal((await s.api("DELETE", `/v1/destinations/${d.id}`)).status, 204);
        // Then one worker dies (its lease expires) and one result schedules a retry.
        await db.query("UPDATE leases SET expires_at = now() - interval '1 second' WHERE delivery_id = $1", [expired]);
        const retry: DeliveryUpdate = {
          destinationId: d.id,
          id: retried,
          leaseToken: token,
          status: "retry_scheduled",
          delaySeconds: 60,
          failed: true,
          error: "HTTP 500",
          statusCode: 500,
        };
        assert.equal((await withRetry(db, (q) => finishDeliveries(q, [retry], [], { citus: db.citus }))).size, 1);
        const r = await pruneOnce(db, 168);
        assert.equal(r?.deletedDiscarded, 2);
        const rows = await db.query<{ id: string; status: string; attempts: number; leased: boolean }>(
          `SELECT x.id, x.status, x.attempts, EXISTS (SELECT 1 FROM leases l WHERE l.delivery_id = x.id) AS leased
             FROM deliveries x WHERE x.destination_id = $1`,
          [d.id],
        );
        const by = new Map(rows.map((x) => [x.id, x]));
        assert.deepEqual(by.get(expired), { id: expired, status: "discarded", attempts: 1, leased: false }, "its attempt counts");
        assert.deepEqual(by.get(retried), { id: retried, status: "discarded", attempts: 1, leased: false });
        assert.deepEqual(by.get(live), { id: live, status: "queued", attempts: 0, leased: true }, "still in flight: left to finish");
        assert.equal((await pruneOnce(db, 168))?.deletedDiscarded, 0);
      } finally {
        await s.stop();
      }
    });
  });
}
