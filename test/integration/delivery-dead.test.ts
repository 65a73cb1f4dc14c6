import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ENGINE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startMailCatcher } from "../helpers/smtp.js";
import { startReceiver, type Receiver, type ReceivedRequest } from "../helpers/receiver.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import { apiError } from "../helpers/sdk.js";
import { Sluice, type Delivery, type Destination } from "../../sdk/src/index.js";
import { deathAlerts, recordAlerts } from "../../src/alerts/alerts.js";
import { pruneOnce } from "../../src/dispatch/janitor.js";
import type { DeliveryDeadPayload } from "../../src/db/queries/alerts.js";
import { EMAIL_STATES, SYSTEM_EVENT_TYPES } from "../../src/policy/statuses.js";

// delivery.dead against real receivers, driven through the SDK: a delivery whose retries are spent
// is published once into the tenant's stream, only to destinations that name it; a delivery of
// Sluice's own events that dies does not cascade; a death is recorded once however often its
// write-back runs, and a retry that dies again is a new death; the deaths of a destination are
// e-mailed as one hourly digest.

interface DeadEvent {
  type: string;
  timestamp: string;
  data: DeliveryDeadPayload;
}

/** The delivery.dead events `rx` received about deliveries to `destinationId`. */
function deadEvents(rx: Receiver, destinationId: string): { body: DeadEvent; req: ReceivedRequest }[] {
  return rx.received
    .map((req) => ({ req, body: req.json as DeadEvent }))
    .filter(({ body }) => body?.type === "delivery.dead" && body.data.destination_id === destinationId);
}

/** The values of a `CHECK (column IN (...))` constraint as the database holds it. */
async function checkValues(s: TestSluice, name: string): Promise<string[]> {
  const [row] = await s.running.db.query<{ def: string }>("SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = $1", [
    name,
  ]);
  assert.ok(row, `no constraint ${name}`);
  return [...row.def.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
}

for (const backend of ENGINE_BACKENDS) {
  describe(`delivery.dead on ${backend} Postgres`, () => {
    let s: TestSluice;
    let sluice: Sluice;
    let bad: Receiver; // answers 500 to everything
    let watchers: Receiver; // answers 200; each watcher destination has its own path
    const w = {} as Record<"exact" | "prefix" | "all" | "star" | "destinations", Destination>;
    const to = (name: keyof typeof w) => watchers.received.filter((r) => r.path === `/${name}`);

    before(async () => {
      s = await startSluice(backend);
      sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
      bad = await startReceiver({ status: 500 });
      watchers = await startReceiver();
      const subscriptions = { exact: ["delivery.dead"], prefix: ["delivery.*"], all: [], star: ["*"], destinations: ["destination.*"] };
      for (const [name, event_types] of Object.entries(subscriptions)) {
        w[name as keyof typeof w] = await sluice.post("/v1/destinations", { body: { url: `${watchers.url}/${name}`, event_types } });
      }
    });
    after(async () => {
      await bad?.close();
      await watchers?.close();
      await s?.stop();
    });

    /** A destination on the 500 receiver whose deliveries die at their first failure. */
    async function dying(name: string, event_types: string[]): Promise<Destination> {
      return sluice.post("/v1/destinations", { body: { url: `${bad.url}/${name}`, name, event_types, retry_schedule_seconds: [] } });
    }

    async function deliveriesOf(destinationId: string, status: Delivery["status"]): Promise<Delivery[]> {
      return (await sluice.get("/v1/deliveries", { params: { query: { destination_id: destinationId, status, limit: 100 } } })).data;
    }
    const event = (id: string) => sluice.get("/v1/events/{id}", { params: { path: { id } } });

    test("a delivery whose retries are spent publishes one delivery.dead, only to destinations that name it", async () => {
      const d = await dying("orders-prod", ["dd1.*"]);
      const occurredAt = "2026-01-02T03:04:05.000Z";
      const pub = await sluice.publish({ type: "dd1.created", payload: { n: 1 }, occurred_at: occurredAt });
      assert.equal(pub.deliveries, 3, "to d and to the two catch-all watchers");
      const mine = async () => (await event(pub.id)).deliveries!.find((x) => x.destination_id === d.id)!;
      await waitFor(async () => (await mine()).status === "dead");
      const dead = await mine();

      await waitFor(() => deadEvents(watchers, d.id).length >= 2, {
        message: () =>
          `delivery.dead events received: ${deadEvents(watchers, d.id)
            .map((e) => e.req.path)
            .join()}`,
      });
      const [got] = deadEvents(watchers, d.id);
      const { died_at, ...rest } = got!.body.data;
      assert.deepEqual(rest, {
        delivery_id: dead.id,
        destination_id: d.id,
        destination_name: "orders-prod",
        event_id: pub.id,
        event_type: "dd1.created",
        occurred_at: occurredAt,
        attempts: 1,
        last_error: "HTTP 500",
        last_status_code: 500,
      });
      assert.ok(Date.now() - Date.parse(died_at) < 60_000, died_at);
      // The event is stamped with the death, not with when the outbox published it.
      assert.equal(got!.body.timestamp, died_at);

      // The event's own deliveries say where it went: exactly the two destinations naming it —
      // not the catch-all [] one, not ["*"], not the one subscribed to destination.* only.
      const eventId = got!.req.headers["webhook-id"]!;
      const ev = await event(eventId);
      assert.equal(ev.type, "delivery.dead");
      assert.deepEqual(ev.deliveries!.map((x) => x.destination_id).sort(), [w.exact.id, w.prefix.id].sort());
      // One alert, one event: each subscriber got it once.
      const rows = await s.running.db.query<{ event_id: string }>("SELECT event_id FROM alerts WHERE delivery_id = $1", [dead.id]);
      assert.deepEqual(
        rows.map((r) => r.event_id),
        [eventId],
      );
      await waitFor(
        async () =>
          ev.deliveries!.length ===
          (await sluice.get("/v1/deliveries", { params: { query: { event_id: eventId, status: "delivered" } } })).data.length,
      );
      assert.deepEqual(
        deadEvents(watchers, d.id)
          .map((e) => e.req.path)
          .sort(),
        ["/exact", "/prefix"],
      );
      for (const name of ["all", "star", "destinations"] as const) {
        assert.ok(!to(name).some((r) => (r.json as { type: string }).type === "delivery.dead"), `${name} received a delivery.dead`);
      }
      // The catch-all did receive the failed event itself: it is an ordinary one.
      assert.ok(to("all").some((r) => (r.json as { type: string }).type === "dd1.created"));
    });

    test("a dying delivery of delivery.dead or destination.* events publishes no delivery.dead: no cascade", async () => {
      // Subscribed to Sluice's own events, and unable to take any of them.
      const fw = await dying("broken-watcher", ["delivery.dead", "destination.*"]);
      const f = await dying("dd2-prod", ["dd2.*"]);
      const other = await sluice.post("/v1/destinations", { body: { url: `${watchers.url}/other`, event_types: ["dd2-none.*"] } });
      await sluice.publish({ type: "dd2.x", payload: {} });
      // destination.paused and destination.resumed too, from a manual pause and resume.
      const path = { id: other.id };
      assert.equal((await sluice.post("/v1/destinations/{id}/pause", { params: { path }, body: {} })).status, "paused");
      assert.notEqual((await sluice.post("/v1/destinations/{id}/resume", { params: { path }, body: {} })).status, "paused");

      // f's delivery died (one delivery.dead), then the watcher's deliveries of that event and of
      // both destination.* events died too.
      const deadTypes = async () => {
        const fwDead = await deliveriesOf(fw.id, "dead");
        return Promise.all(fwDead.map(async (x) => (await event(x.event_id)).type));
      };
      await waitFor(async () => (await deadTypes()).length === 3, { timeoutMs: 20_000, message: () => "fw's deliveries did not all die" });
      assert.deepEqual((await deadTypes()).sort(), ["delivery.dead", "destination.paused", "destination.resumed"]);
      // Recorded with the death or never: none was.
      const cascade = await s.running.db.query("SELECT id FROM alerts WHERE type = 'delivery.dead' AND destination_id = $1", [fw.id]);
      assert.deepEqual(cascade, []);
      // The one about f did go out, to the healthy watcher.
      await waitFor(() => deadEvents(watchers, f.id).some((e) => e.req.path === "/exact"));
      assert.equal(deadEvents(watchers, fw.id).length, 0);
    });

    test("a dead delivery retried by id that dies again is a new death: a second delivery.dead", async () => {
      const d = await dying("retry-prod", ["dd3.*"]);
      const pub = await sluice.publish({ type: "dd3.x", payload: {} });
      await waitFor(async () => (await deliveriesOf(d.id, "dead")).length === 1);
      await waitFor(() => deadEvents(watchers, d.id).filter((e) => e.req.path === "/exact").length === 1);
      const [dead] = await deliveriesOf(d.id, "dead");
      const path = { id: dead!.id };
      await sluice.post("/v1/deliveries/{id}/retry", { params: { path } });
      await waitFor(async () => (await sluice.get("/v1/deliveries/{id}", { params: { path } })).attempts === 2);
      await waitFor(async () => (await sluice.get("/v1/deliveries/{id}", { params: { path } })).status === "dead");
      await waitFor(() => deadEvents(watchers, d.id).filter((e) => e.req.path === "/exact").length === 2);
      const seen = deadEvents(watchers, d.id)
        .filter((e) => e.req.path === "/exact")
        .map((e) => e.body.data);
      assert.deepEqual(
        seen.map((p) => [p.delivery_id, p.event_id, p.attempts]),
        [
          [dead!.id, pub.id, 1],
          [dead!.id, pub.id, 2],
        ],
      );
      // Two events, not one event twice.
      const ids = new Set(deadEvents(watchers, d.id).map((e) => e.req.headers["webhook-id"]));
      assert.equal(ids.size, 2);
    });

    test("a write-back run again after its commit (a lost answer, a second worker) records the death once", async () => {
      const d = await dying("twice-prod", ["dd4.*"]);
      await sluice.publish({ type: "dd4.x", payload: {} });
      await waitFor(async () => (await deliveriesOf(d.id, "dead")).length === 1);
      const [dead] = await deliveriesOf(d.id, "dead");
      const count = async () =>
        (await s.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM alerts WHERE delivery_id = $1", [dead!.id]))[0]!.n;
      assert.equal(await count(), 1);
      // What the write-back records for this death, recorded again as its retry would.
      const again = await s.running.db.tx(async (q) => recordAlerts(q, await deathAlerts(q, [{ destinationId: d.id, id: dead!.id }])));
      assert.equal(again, 0);
      assert.equal(await count(), 1);
    });

    test("tenants cannot publish delivery.dead; their own delivery.* types are theirs", async () => {
      const refused = await apiError(sluice.publish({ type: "delivery.dead", payload: {} }));
      assert.equal(refused.status, 422);
      assert.equal(refused.code, "SLUICE_VALIDATION_FAILED");
      assert.match(refused.message, /delivery\.dead/);
      const batch = await apiError(
        sluice.post("/v1/events/batch", {
          body: {
            events: [
              { type: "x.ok", payload: {} },
              { type: "delivery.dead", payload: {} },
            ],
          },
        }),
      );
      assert.equal(batch.status, 422);
      // An ordinary type that merely starts with delivery. goes where ordinary types go.
      const own = await sluice.publish({ type: "delivery.shipped", payload: {} });
      const ev = await event(own.id);
      assert.deepEqual(ev.deliveries!.map((x) => x.destination_id).sort(), [w.prefix.id, w.all.id, w.star.id].sort());
    });

    test("the database's CHECKs list the types and states named in statuses.ts", async () => {
      assert.deepEqual(await checkValues(s, "alerts_type_check"), [...SYSTEM_EVENT_TYPES]);
      assert.deepEqual(await checkValues(s, "alert_digests_state_check"), [...EMAIL_STATES]);
    });
  });
}

describe("delivery.dead e-mail digest", () => {
  test("the deaths of a destination within the hour arrive as one digest; later ones in the next hour's", async () => {
    const catcher = await startMailCatcher();
    const mails = catcher.mails;
    const s = await startSluice("server", { env: { SLUICE_SMTP_URL: catcher.url } });
    const sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
    const bad = await startReceiver({ status: 500 });
    const db = s.running.db;
    try {
      assert.equal((await sluice.patch("/v1/tenant", { body: { alert_email: "ops@example.com" } })).alert_email, "ops@example.com");
      const mk = (name: string, type: string) =>
        sluice.post("/v1/destinations", { body: { url: `${bad.url}/${name}`, name, event_types: [type], retry_schedule_seconds: [] } });
      const billing = await mk("billing-prod", "mail1.*");
      const crm = await mk("crm-prod", "mail2.*");
      const deadOf = async (id: string) =>
        (await sluice.get("/v1/deliveries", { params: { query: { destination_id: id, status: "dead", limit: 100 } } })).data;
      // The first deaths wait out the gathering pause (30 s): pretend it passed.
      const gathered = (id: string) =>
        db.query("UPDATE alerts SET created_at = created_at - interval '1 minute' WHERE destination_id = $1 AND digest_hour IS NULL", [id]);

      const pub = await sluice.post("/v1/events/batch", {
        body: { events: [...Array.from({ length: 3 }, (_, i) => ({ type: "mail1.x", payload: { i } })), { type: "mail2.x", payload: {} }] },
      });
      assert.equal(pub.events.length, 4);
      await waitFor(async () => (await deadOf(billing.id)).length === 3 && (await deadOf(crm.id)).length === 1);
      assert.equal(mails.length, 0, "a digest went before its gathering pause");
      await gathered(billing.id);
      await gathered(crm.id);
      await waitFor(() => mails.length >= 2, { message: () => `${mails.length} mails` });

      // One per destination, each listing its deaths.
      const billingMail = mails.find((m) => /billing-prod/.test(m.text))!;
      const crmMail = mails.find((m) => /crm-prod/.test(m.text))!;
      assert.ok(billingMail && crmMail, mails.map((m) => m.text).join("\n----\n"));
      assert.equal(billingMail.to, "ops@example.com");
      assert.match(billingMail.text, /Subject: \[Sluice\] 3 deliveries to billing-prod died/);
      for (const d of await deadOf(billing.id)) {
        assert.ok(billingMail.text.includes(d.id), `${d.id} missing from the digest`);
        assert.ok(!crmMail.text.includes(d.id));
      }
      assert.match(billingMail.text, /mail1\.x/);
      assert.match(billingMail.text, /HTTP 500/);
      assert.match(crmMail.text, /Subject: \[Sluice\] 1 delivery to crm-prod died/);
      assert.ok(crmMail.text.includes((await deadOf(crm.id))[0]!.id));

      const sent = async (id: string) =>
        (await db.query<{ state: string }>("SELECT state FROM alert_digests WHERE destination_id = $1", [id])).map((r) => r.state);
      await waitFor(async () => (await sent(billing.id)).join() === "sent");

      // Another death of billing within the hour: it waits for the next hour's digest.
      const [digest] = await db.query<{ this_hour: boolean }>(
        "SELECT hour = date_trunc('hour', now(), 'UTC') AS this_hour FROM alert_digests WHERE destination_id = $1",
        [billing.id],
      );
      await sluice.publish({ type: "mail1.y", payload: {} });
      await waitFor(async () => (await deadOf(billing.id)).length === 4);
      await gathered(billing.id);
      await sleep(2500); // a second e-mail this hour would have gone by now (the alert poll is 2 s)
      const [still] = await db.query<{ this_hour: boolean }>(
        "SELECT date_trunc('hour', now(), 'UTC') = max(hour) AS this_hour FROM alert_digests WHERE destination_id = $1",
        [billing.id],
      );
      // (Unless the clock hour turned during the test: then the next digest may rightly be out.)
      if (digest!.this_hour && still!.this_hour) assert.equal(mails.length, 2, "a second digest in the same hour");

      // The hour passes (the digest's hour moved back one).
      await db.query("UPDATE alert_digests SET hour = hour - interval '1 hour' WHERE destination_id = $1", [billing.id]);
      await waitFor(() => mails.length >= 3, { message: () => `${mails.length} mails` });
      const next = mails[2]!;
      const fourth = (await deadOf(billing.id)).find((d) => !billingMail.text.includes(d.id))!;
      assert.match(next.text, /Subject: \[Sluice\] 1 delivery to billing-prod died/);
      assert.ok(next.text.includes(fourth.id));
      assert.match(next.text, /mail1\.y/);

      // The SMTP server has it before the digest is recorded as sent.
      const states = async () =>
        (await db.query<{ email_state: string }>("SELECT email_state FROM alerts WHERE type = 'delivery.dead'")).map((r) => r.email_state);
      await waitFor(async () => (await states()).every((x) => x === "sent"), { message: () => "alerts not all sent" });
      assert.equal((await states()).length, 5);
      const digests = await db.query<{ state: string; deaths: number }>(
        "SELECT state, deaths FROM alert_digests WHERE destination_id = $1 ORDER BY hour",
        [billing.id],
      );
      assert.deepEqual(digests, [
        { state: "sent", deaths: 3 },
        { state: "sent", deaths: 1 },
      ]);

      // Settled alerts and digests go with retention (the last death, recent, stays).
      await sluice.publish({ type: "mail2.y", payload: {} });
      await waitFor(async () => (await deadOf(crm.id)).length === 2);
      await db.query("UPDATE alerts SET created_at = created_at - interval '200 hours' WHERE email_state = 'sent'");
      await db.query("UPDATE alert_digests SET hour = hour - interval '200 hours'");
      const pruned = await pruneOnce(db, 168);
      assert.equal(pruned?.alerts, 5);
      const left = await db.query<{ email_state: string }>("SELECT email_state FROM alerts WHERE type = 'delivery.dead'");
      assert.deepEqual(left, [{ email_state: "pending" }]);
      assert.deepEqual(await db.query("SELECT hour FROM alert_digests"), []);
    } finally {
      await bad.close();
      await s.stop();
      await catcher.close();
    }
  });
});
