import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { FEATURE_BACKENDS, startSluice, type ApiAnswer, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import type {
  ApiError,
  Attempt,
  Delivery,
  Destination,
  DestinationSecret,
  Event,
  EventAccepted,
  EventBatchAccepted,
  Page,
  Tenant,
  TenantCreated,
  ValidationFailed,
} from "../helpers/api-types.js";

// The whole HTTP contract (shared/API.md), on the embedded store and on a Postgres server.

for (const backend of FEATURE_BACKENDS) {
  describe(`API on ${backend} Postgres`, () => {
    let s: TestSluice;
    let rx: Receiver;
    before(async () => {
      s = await startSluice(backend, { env: { SLUICE_ADMIN_KEY: "admin_secret", SLUICE_MAX_PAYLOAD_BYTES: "2048" } });
      rx = await startReceiver();
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    const newDestination = async (body: Record<string, unknown> = {}) => {
      // A catch-all ([]) destination would receive every other test's events: default to a type nobody publishes.
      const r = await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/hooks`, event_types: ["unused.type"], ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const countDestinations = async () => (await s.api<Page<Destination>>("GET", "/v1/destinations?limit=1000")).body.data.length;

    test("readiness, OpenAPI and metrics need no key", async () => {
      assert.equal((await s.api("GET", "/healthz", undefined, { key: null })).status, 200);
      const spec = await s.api<{ paths: Record<string, unknown> }>("GET", "/openapi.json", undefined, { key: null });
      assert.equal(spec.status, 200);
      assert.ok(spec.body.paths["/v1/destinations"]);
      assert.ok(spec.body.paths["/v1/events/batch"]);
      const m = await s.api<string>("GET", "/metrics", undefined, { key: null });
      assert.equal(m.status, 200);
      assert.match(m.body, /sluice_attempts_total/);
    });

    test("a missing or unknown key is 401 with a stable code", async () => {
      const none = await s.api<ApiError>("GET", "/v1/destinations", undefined, { key: null });
      assert.equal(none.status, 401);
      assert.equal(none.body.error.code, "SLUICE_AUTH_INVALID_KEY");
      const wrong = await s.api("GET", "/v1/destinations", undefined, { key: "nope" });
      assert.equal(wrong.status, 401);
    });

    test("tenants: admin creates, each key sees only its own objects", async () => {
      assert.equal((await s.api("POST", "/v1/tenants", { name: "x" })).status, 401); // tenant key is not admin
      const bad = await s.api<ValidationFailed>(
        "POST",
        "/v1/tenants",
        { name: "acme", alert_email: "not-an-email" },
        { key: "admin_secret" },
      );
      assert.equal(bad.status, 422);
      assert.equal(bad.body.error.details[0]!.field, "alert_email");
      const t = await s.api<TenantCreated>("POST", "/v1/tenants", { name: "acme", alert_email: "ops@acme.test" }, { key: "admin_secret" });
      assert.equal(t.status, 201);
      assert.match(t.body.id, /^ten_/);
      const other = t.body.api_key;
      const me = await s.api<Tenant>("GET", "/v1/tenant", undefined, { key: other });
      assert.equal(me.body.name, "acme");
      const patched = await s.api<Tenant>("PATCH", "/v1/tenant", { name: "acme2" }, { key: other });
      assert.equal(patched.body.name, "acme2");
      assert.equal(patched.body.alert_email, "ops@acme.test");

      const mine = await newDestination();
      const seen = await s.api<ApiError>("GET", `/v1/destinations/${mine.id}`, undefined, { key: other });
      assert.equal(seen.status, 404);
      assert.equal(seen.body.error.code, "SLUICE_DESTINATION_NOT_FOUND");
      const pub = await s.api("POST", "/v1/events", { type: "a.b", payload: {}, destination_ids: [mine.id] }, { key: other });
      assert.equal(pub.status, 422);
    });

    test("destinations: create with defaults, secret returned once, read, patch, delete", async () => {
      const d = await newDestination({ name: "orders", event_types: ["order.*"] });
      const plain = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/plain` })).body;
      assert.deepEqual(plain.event_types, []);
      assert.equal(plain.name, "");
      await s.api("DELETE", `/v1/destinations/${plain.id}`);
      assert.match(d.id, /^dst_/);
      assert.match(d.secret ?? "", /^whsec_/);
      assert.equal(d.timeout_seconds, 15);
      assert.equal(d.max_concurrency, 5);
      assert.equal(d.ordered, false);
      assert.deepEqual(d.retry_schedule_seconds, [5, 30, 120, 600, 1800, 3600, 10800, 21600, 43200, 86400]);
      assert.deepEqual(d.throttle_schedule_seconds, [60, 300, 900, 3600, 21600]);
      assert.equal(d.status, "active");
      assert.deepEqual(d.health, { status: "healthy", score: 100, consecutive_failures: 0 });

      const got = await s.api<Destination>("GET", `/v1/destinations/${d.id}`);
      assert.equal(got.body.url, d.url);
      assert.equal(got.body.secret, undefined);
      assert.equal((await s.api<DestinationSecret>("GET", `/v1/destinations/${d.id}/secret`)).body.secret, d.secret);

      const p = await s.api<Destination>("PATCH", `/v1/destinations/${d.id}`, {
        max_concurrency: 20,
        rate_limit: { max_per_second: 10, burst_capacity: 20 },
        delivery_schedule: {
          timezone: "Europe/Berlin",
          quiet_start: "22:00",
          quiet_end: "06:30:15",
          days: ["mon", "fri"],
          bypass_event_types: ["payment.failed"],
        },
      });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      assert.equal(p.body.max_concurrency, 20);
      assert.equal(p.body.name, "orders");
      assert.deepEqual(p.body.rate_limit, { max_per_second: 10, burst_capacity: 20 });
      assert.equal(p.body.delivery_schedule?.quiet_end, "06:30:15");

      assert.equal((await s.api("DELETE", `/v1/destinations/${d.id}`)).status, 204);
      assert.equal((await s.api("GET", `/v1/destinations/${d.id}`)).status, 404);
      assert.equal((await s.api("DELETE", `/v1/destinations/${d.id}`)).status, 404);
    });

    test("destinations: every bad field is named in one 422 and nothing is written", async () => {
      const before = await countDestinations();
      const cases: [Record<string, unknown>, string][] = [
        [{ url: "ftp://example.com" }, "url"],
        [{ url: "not a url" }, "url"],
        [{ url: "https://user:pw@example.com" }, "url"],
        [{ timeout_seconds: 0 }, "timeout_seconds"],
        [{ timeout_seconds: 61 }, "timeout_seconds"],
        [{ timeout_seconds: "5" }, "timeout_seconds"],
        [{ max_concurrency: 1001 }, "max_concurrency"],
        [{ ordered: "yes" }, "ordered"],
        [{ colour: "red" }, "colour"],
        [{ rate_limit: {} }, "rate_limit"],
        [{ rate_limit: { max_per_second: -1 } }, "rate_limit.max_per_second"],
        [{ rate_limit: { max_per_second: 5, burst_capacity: 0 } }, "rate_limit.burst_capacity"],
        [{ delivery_schedule: { timezone: "Mars/Olympus", quiet_start: "22:00", quiet_end: "06:00" } }, "delivery_schedule.timezone"],
        [{ delivery_schedule: { timezone: "Europe/Berlin", quiet_start: "24:00", quiet_end: "06:00" } }, "delivery_schedule.quiet_start"],
        [{ delivery_schedule: { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "6:00" } }, "delivery_schedule.quiet_end"],
        [{ delivery_schedule: { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "22:00:00" } }, "delivery_schedule.quiet_end"],
        [
          { delivery_schedule: { timezone: "Europe/Berlin", quiet_start: "22:00", quiet_end: "06:00", days: ["funday"] } },
          "delivery_schedule.days[0]",
        ],
        [{ delivery_schedule: { quiet_start: "22:00", quiet_end: "06:00" } }, "delivery_schedule.timezone"],
        [{ retry_schedule_seconds: [5, -1] }, "retry_schedule_seconds[1]"],
        [{ throttle_schedule_seconds: [] }, "throttle_schedule_seconds"],
        [{ probe_interval_seconds: 0 }, "probe_interval_seconds"],
        [{ event_types: ["has space"] }, "event_types[0]"],
        [{ secret: "plain" }, "secret"],
      ];
      for (const [body, field] of cases) {
        const r = await s.api<ValidationFailed>("POST", "/v1/destinations", { url: `${rx.url}/x`, ...body });
        assert.equal(r.status, 422, `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
        const fields = r.body.error.details.map((d) => d.field);
        assert.ok(fields.includes(field), `${JSON.stringify(body)}: expected ${field} in ${JSON.stringify(fields)}`);
        assert.ok(r.body.error.message.length > 10);
      }
      const several = await s.api<ValidationFailed>("POST", "/v1/destinations", { url: "ftp://x", timeout_seconds: 0, max_concurrency: 0 });
      assert.equal(several.body.error.details.length, 3);
      assert.equal(await countDestinations(), before);
    });

    test("patch: invalid values are refused and change nothing", async () => {
      const d = await newDestination({ max_concurrency: 3 });
      const r = await s.api("PATCH", `/v1/destinations/${d.id}`, { max_concurrency: 0, url: "https://ok.example" });
      assert.equal(r.status, 422);
      const zone = await s.api("PATCH", `/v1/destinations/${d.id}`, {
        delivery_schedule: { timezone: "Nowhere/City", quiet_start: "01:00", quiet_end: "02:00" },
      });
      assert.equal(zone.status, 422);
      const empty = await s.api("PATCH", `/v1/destinations/${d.id}`, {});
      assert.equal(empty.status, 422);
      const got = await s.api<Destination>("GET", `/v1/destinations/${d.id}`);
      assert.equal(got.body.max_concurrency, 3);
      assert.equal(got.body.url, d.url);
      assert.equal(got.body.delivery_schedule, null);
    });

    test("malformed JSON is 400, an unknown route 404, all with the error shape", async () => {
      const r = await s.api<ApiError>("POST", "/v1/destinations", '{"url": ');
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, "SLUICE_REQUEST_MALFORMED_JSON");
      const nf = await s.api<ApiError>("GET", "/v1/nothing-here");
      assert.equal(nf.status, 404);
      assert.ok(nf.body.error.code);
    });

    test("list pagination walks every destination exactly once", async () => {
      const made = new Set<string>();
      for (let i = 0; i < 5; i++) made.add((await newDestination({ name: `page-${i}` })).id);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        // Annotated, not s.api<…>(): the URL reads `cursor`, which this answer sets (a circular inference).
        const r: ApiAnswer<Page<Destination>> = await s.api("GET", `/v1/destinations?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
        seen.push(...r.body.data.map((d) => d.id));
        cursor = r.body.next_cursor;
      } while (cursor);
      assert.equal(new Set(seen).size, seen.length);
      for (const id of made) assert.ok(seen.includes(id));
      assert.equal((await s.api("GET", "/v1/destinations?cursor=garbage")).status, 422);
      assert.equal((await s.api("GET", "/v1/destinations?limit=0")).status, 422);
      assert.equal((await s.api("GET", "/v1/destinations?limit=abc")).status, 422);
    });

    test("events fan out by event_types; destination.* needs naming; destination_ids target directly", async () => {
      const tag = `t${Date.now()}`;
      const orders = await newDestination({ event_types: [`${tag}.order.*`] });
      const exact = await newDestination({ event_types: [`${tag}.invoice.paid`] });
      const system = await newDestination({ event_types: ["destination.*"] });
      const r = await s.api<EventAccepted>("POST", "/v1/events", { type: `${tag}.order.created`, payload: { n: 1 } });
      assert.equal(r.status, 202);
      assert.match(r.body.id, /^evt_/);
      const ev = await s.api<Event>("GET", `/v1/events/${r.body.id}`);
      const targets = ev.body.deliveries!.map((d) => d.destination_id);
      assert.ok(targets.includes(orders.id));
      assert.ok(!targets.includes(exact.id));
      assert.ok(!targets.includes(system.id));
      assert.equal(r.body.deliveries, targets.length);
      assert.deepEqual(ev.body.payload, { n: 1 });

      const direct = await s.api<EventAccepted>("POST", "/v1/events", {
        type: "other.thing",
        payload: [1, 2],
        destination_ids: [exact.id],
      });
      assert.equal(direct.body.deliveries, 1);
      const reserved = await s.api("POST", "/v1/events", { type: "destination.paused", payload: {} });
      assert.equal(reserved.status, 422);
      const unknown = await s.api<ValidationFailed>("POST", "/v1/events", { type: "a.b", payload: {}, destination_ids: ["dst_nope"] });
      assert.equal(unknown.status, 422);
      assert.equal(unknown.body.error.details[0]!.field, "destination_ids");
    });

    test("routing follows every change to the tenant's destinations at once (the in-memory routing table)", async () => {
      const tag = `r${Date.now()}`;
      const fanout = async () => {
        const r = await s.api<EventAccepted>("POST", "/v1/events", { type: `${tag}.x`, payload: {} });
        return new Set((await s.api<Event>("GET", `/v1/events/${r.body.id}`)).body.deliveries!.map((d) => d.destination_id));
      };
      const a = await newDestination({ event_types: [`${tag}.*`] });
      assert.deepEqual(await fanout(), new Set([a.id]));
      const b = await newDestination({ event_types: [`${tag}.x`] }); // created after the table was read
      assert.deepEqual(await fanout(), new Set([a.id, b.id]));
      await s.api("PATCH", `/v1/destinations/${a.id}`, { event_types: ["elsewhere.*"] });
      assert.deepEqual(await fanout(), new Set([b.id]));
      await s.api("DELETE", `/v1/destinations/${b.id}`);
      assert.deepEqual(await fanout(), new Set());
      const direct = await s.api("POST", "/v1/events", { type: "z.z", payload: {}, destination_ids: [b.id] });
      assert.equal(direct.status, 422, "a deleted destination is no longer a target");
    });

    test("events: bad input is refused whole (413 for a big payload, 422 otherwise)", async () => {
      const big = await s.api<ApiError>("POST", "/v1/events", { type: "a.b", payload: { blob: "x".repeat(3000) } });
      assert.equal(big.status, 413);
      assert.ok(big.body.error.code);
      for (const body of [
        { payload: {} },
        { type: "a.b" },
        { type: "", payload: {} },
        { type: "a b", payload: {} },
        { type: "a.b", payload: {}, deliver_at: "tomorrow" },
        { type: "a.b", payload: {}, extra: 1 },
      ]) {
        const r = await s.api("POST", "/v1/events", body);
        assert.equal(r.status, 422, JSON.stringify(body));
      }
      const d = await newDestination();
      const batch = await s.api<ValidationFailed>("POST", "/v1/events/batch", {
        events: [
          { type: "ok.one", payload: {}, destination_ids: [d.id] },
          { type: "bad type", payload: {} },
        ],
      });
      assert.equal(batch.status, 422);
      assert.equal(batch.body.error.details[0]!.field, "events[1].type");
      const list = await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`);
      assert.equal(list.body.data.length, 0, "a refused batch writes nothing");
      const bigInBatch = await s.api("POST", "/v1/events/batch", {
        events: [
          { type: "ok.one", payload: {}, destination_ids: [d.id] },
          { type: "ok.two", payload: "y".repeat(3000), destination_ids: [d.id] },
        ],
      });
      assert.equal(bigInBatch.status, 413);
      assert.equal((await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`)).body.data.length, 0);
    });

    test("batch publish and Idempotency-Key", async () => {
      const d = await newDestination({ event_types: ["idem.*"] });
      const events = Array.from({ length: 30 }, (_, i) => ({ type: "idem.x", payload: { i } }));
      const b = await s.api<EventBatchAccepted>("POST", "/v1/events/batch", { events });
      assert.equal(b.status, 202);
      assert.equal(b.body.events.length, 30);
      assert.ok(b.body.events.every((e) => e.deliveries === 1));

      const key = `k-${Math.random()}`;
      const body = { type: "idem.once", payload: { v: 1 }, destination_ids: [d.id] };
      const [a1, a2] = await Promise.all([
        s.api<EventAccepted>("POST", "/v1/events", body, { headers: { "idempotency-key": key } }),
        s.api<EventAccepted>("POST", "/v1/events", body, { headers: { "idempotency-key": key } }),
      ]);
      assert.equal(a1.status, 202);
      assert.equal(a2.status, 202);
      assert.deepEqual(a1.body, a2.body, "concurrent repeats get the first answer");
      const a3 = await s.api<EventAccepted>("POST", "/v1/events", body, { headers: { "idempotency-key": key } });
      assert.deepEqual(a3.body, a1.body);
      const clash = await s.api<ApiError>("POST", "/v1/events", { ...body, payload: { v: 2 } }, { headers: { "idempotency-key": key } });
      assert.equal(clash.status, 409);
      assert.equal(clash.body.error.code, "SLUICE_IDEMPOTENCY_KEY_REUSED");
      const onlyOne = await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&limit=1000`);
      const onceEvents = new Set(onlyOne.body.data.map((x) => x.event_id));
      assert.equal(onceEvents.size, 31, "30 batch events + exactly one idempotent event");
      // A key is kept 24 hours: older, it takes a new request (and answer) as if it were new.
      await s.running.db.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [key]);
      const later = await s.api<EventAccepted>(
        "POST",
        "/v1/events",
        { ...body, payload: { v: 3 } },
        { headers: { "idempotency-key": key } },
      );
      assert.equal(later.status, 202);
      assert.notEqual(later.body.id, a1.body.id, "a new event");
      const again = await s.api<EventAccepted>(
        "POST",
        "/v1/events",
        { ...body, payload: { v: 3 } },
        { headers: { "idempotency-key": key } },
      );
      assert.deepEqual(again.body, later.body, "the key now answers with the new request's result");
    });

    test("a delivery arrives signed per Standard Webhooks and is recorded", async () => {
      rx.reset();
      const d = await newDestination({ event_types: ["signed.*"] });
      const pub = await s.api<EventAccepted>("POST", "/v1/events", {
        type: "signed.hello",
        payload: { hello: "world", n: 1.5 },
        occurred_at: "2026-01-02T03:04:05.678Z",
      });
      await waitFor(async () => (await s.api<Event>("GET", `/v1/events/${pub.body.id}`)).body.deliveries![0]?.status === "delivered", {
        message: "delivery not delivered",
      });
      const got = rx.received.find((r) => r.headers["webhook-id"] === pub.body.id)!;
      assert.ok(got);
      assert.equal(got.headers["content-type"], "application/json");
      assert.match(got.headers["user-agent"]!, /Sluice/);
      assert.deepEqual(got.json, { type: "signed.hello", timestamp: "2026-01-02T03:04:05.678Z", data: { hello: "world", n: 1.5 } });
      new Webhook(d.secret!).verify(got.body, got.headers); // throws if the signature is wrong
      const dl = (await s.api<Event>("GET", `/v1/events/${pub.body.id}`)).body.deliveries![0]!;
      const attempts = await s.api<Page<Attempt>>("GET", `/v1/deliveries/${dl.id}/attempts`);
      assert.equal(attempts.body.data.length, 1);
      assert.equal(attempts.body.data[0]!.status_code, 200);
      assert.equal(attempts.body.data[0]!.outcome, "success");
      assert.equal(typeof attempts.body.data[0]!.latency_ms, "number");
    });

    test("a rotated secret signs with old and new until the grace ends", async () => {
      rx.reset();
      const d = await newDestination({ event_types: ["rot.*"] });
      const rot = await s.api<DestinationSecret>("POST", `/v1/destinations/${d.id}/rotate-secret`, {});
      assert.equal(rot.status, 200);
      const pub = await s.api<EventAccepted>("POST", "/v1/events", { type: "rot.x", payload: {} });
      await waitFor(() => rx.received.some((r) => r.headers["webhook-id"] === pub.body.id));
      const got = rx.received.find((r) => r.headers["webhook-id"] === pub.body.id)!;
      assert.equal(got.headers["webhook-signature"]!.split(" ").length, 2);
      new Webhook(d.secret!).verify(got.body, got.headers);
      new Webhook(rot.body.secret).verify(got.body, got.headers);
    });

    test("a failing delivery retries, dies when the schedule is spent, and can be retried by id", async () => {
      const fail = await startReceiver({ status: 500, body: "boom" });
      try {
        const d = (
          await s.api<Destination>("POST", "/v1/destinations", {
            url: `${fail.url}/x`,
            retry_schedule_seconds: [0],
            event_types: ["die.*"],
          })
        ).body;
        const pub = await s.api<EventAccepted>("POST", "/v1/events", { type: "die.now", payload: {} });
        const dlvId = await (async () => {
          let id = "";
          await waitFor(
            async () => {
              const dl = (await s.api<Event>("GET", `/v1/events/${pub.body.id}`)).body.deliveries![0]!;
              id = dl.id;
              return dl.status === "dead";
            },
            { message: "delivery never died" },
          );
          return id;
        })();
        assert.equal(fail.received.length, 2, "first attempt + one retry");
        const dead = (await s.api<Delivery>("GET", `/v1/deliveries/${dlvId}`)).body;
        assert.equal(dead.attempts, 2);
        assert.match(dead.last_error ?? "", /500/);
        const attempts = (await s.api<Page<Attempt>>("GET", `/v1/deliveries/${dlvId}/attempts`)).body.data;
        assert.deepEqual(
          attempts.map((a) => a.error_class),
          ["http_5xx", "http_5xx"],
        );
        assert.equal(attempts[0]!.response_body, "boom");
        const deadList = await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&status=dead`);
        assert.equal(deadList.body.data.length, 1);

        fail.respondWith({ status: 200 });
        const retry = await s.api("POST", `/v1/deliveries/${dlvId}/retry`);
        assert.equal(retry.status, 202);
        await waitFor(async () => (await s.api<Delivery>("GET", `/v1/deliveries/${dlvId}`)).body.status === "delivered");
        const again = await s.api("POST", `/v1/deliveries/${dlvId}/retry`);
        assert.equal(again.status, 409);
      } finally {
        await fail.close();
      }
    });

    test("deliver_at holds a delivery (scheduled) until its time", async () => {
      rx.reset();
      const d = await newDestination({ event_types: ["later.*"] });
      // Far enough ahead that the publish and the look below come before it on a loaded machine.
      const at = new Date(Date.now() + 3000);
      const pub = await s.api<EventAccepted>("POST", "/v1/events", { type: "later.x", payload: {}, deliver_at: at.toISOString() });
      const held = (await s.api<Event>("GET", `/v1/events/${pub.body.id}`)).body.deliveries![0]!;
      assert.equal(held.status, "held");
      assert.equal(held.hold_reason, "scheduled");
      await waitFor(() => rx.received.some((r) => r.headers["webhook-id"] === pub.body.id), { timeoutMs: 10_000 });
      const got = rx.received.find((r) => r.headers["webhook-id"] === pub.body.id)!;
      assert.ok(got.receivedAt >= at.getTime(), `arrived ${at.getTime() - got.receivedAt} ms early`);
      void d;
    });

    test("429 holds the whole destination (throttled), spends no retry, then delivers", async () => {
      let answered429 = 0;
      // A 3 s hold: the look that sees it, the publish into it and the look at that delivery must
      // all come inside it, four round trips that a loaded machine can stretch past a second.
      const limited = await startReceiver(() => (answered429++ < 1 ? { status: 429, headers: { "retry-after": "3" } } : { status: 200 }));
      try {
        const d = (
          await s.api<Destination>("POST", "/v1/destinations", {
            url: `${limited.url}/x`,
            retry_schedule_seconds: [],
            max_concurrency: 1,
            event_types: ["thr.*"],
          })
        ).body;
        const first = await s.api<EventAccepted>("POST", "/v1/events", { type: "thr.a", payload: {} });
        await waitFor(() => limited.received.length >= 1);
        await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.status === "throttled", {
          timeoutMs: 3000,
        });
        const dest = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
        assert.ok(dest.throttled_until);
        assert.match(dest.throttle_reason ?? "", /429/);
        const second = await s.api<EventAccepted>("POST", "/v1/events", { type: "thr.b", payload: {} });
        const heldRow = (await s.api<Event>("GET", `/v1/events/${second.body.id}`)).body.deliveries![0]!;
        assert.equal(heldRow.hold_reason, "throttled");
        await waitFor(
          async () => {
            const a = (await s.api<Event>("GET", `/v1/events/${first.body.id}`)).body.deliveries![0]!;
            const b = (await s.api<Event>("GET", `/v1/events/${second.body.id}`)).body.deliveries![0]!;
            return a.status === "delivered" && b.status === "delivered";
          },
          { timeoutMs: 10_000, message: "throttled deliveries never went out" },
        );
        const holdEnd = Date.parse(dest.throttled_until);
        const during = limited.received.slice(1).filter((r) => r.receivedAt < holdEnd - 50);
        assert.equal(during.length, 0, "nothing arrives inside the hold");
      } finally {
        await limited.close();
      }
    });

    test("pause holds deliveries; resume without replay discards them", async () => {
      rx.reset();
      const d = await newDestination({ event_types: ["pz.*"] });
      const p = await s.api<Destination>("POST", `/v1/destinations/${d.id}/pause`, { reason: "maintenance" });
      assert.equal(p.status, 200);
      assert.equal(p.body.status, "paused");
      const ev = await s.api<EventAccepted>("POST", "/v1/events", { type: "pz.a", payload: {} });
      const held = (await s.api<Event>("GET", `/v1/events/${ev.body.id}`)).body.deliveries![0]!;
      assert.equal(held.hold_reason, "paused");
      assert.equal((await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.queued_events, 1);
      const r = await s.api<Destination>("POST", `/v1/destinations/${d.id}/resume`, { replay: false });
      assert.equal(r.body.status, "active");
      const after = (await s.api<Delivery>("GET", `/v1/deliveries/${held.id}`)).body;
      assert.equal(after.status, "discarded");
      assert.equal(rx.received.filter((x) => x.headers["webhook-id"] === ev.body.id).length, 0);
    });
  });
}
