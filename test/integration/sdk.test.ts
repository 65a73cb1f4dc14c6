import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Sluice, verifyWebhook, WebhookVerificationError, type Destination, type Delivery } from "../../sdk/src/index.js";
import { FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { apiError } from "../helpers/sdk.js";

// The SDK (sdk/) against a real Sluice: typed calls, typed errors, idempotent publishing, paging,
// and the receiver-side signature check on what Sluice really sent.

for (const backend of FEATURE_BACKENDS) {
  describe(`SDK on ${backend} Postgres`, () => {
    let s: TestSluice;
    let rx: Receiver;
    let sluice: Sluice;
    before(async () => {
      s = await startSluice(backend);
      rx = await startReceiver();
      sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    test("creates, reads and changes a destination with typed answers", async () => {
      const created: Destination = await sluice.post("/v1/destinations", { body: { url: `${rx.url}/a`, event_types: ["sdk.none"] } });
      assert.match(created.id, /^dst_/);
      assert.match(created.secret ?? "", /^whsec_/);
      const read = await sluice.get("/v1/destinations/{id}", { params: { path: { id: created.id } } });
      assert.equal(read.status, "active");
      assert.equal(read.secret, undefined, "the secret is shown on create only");
      const changed = await sluice.patch("/v1/destinations/{id}", { params: { path: { id: created.id } }, body: { max_concurrency: 3 } });
      assert.equal(changed.max_concurrency, 3);
      await sluice.delete("/v1/destinations/{id}", { params: { path: { id: created.id } } });
    });

    test("error answers throw SluiceApiError with the stable code and the fields", async () => {
      const missing = await apiError(sluice.get("/v1/destinations/{id}", { params: { path: { id: "dst_nope" } } }));
      assert.equal(missing.status, 404);
      assert.equal(missing.code, "SLUICE_DESTINATION_NOT_FOUND");
      const invalid = await apiError(sluice.post("/v1/destinations", { body: { url: "ftp://x", max_concurrency: 0 } }));
      assert.equal(invalid.code, "SLUICE_VALIDATION_FAILED");
      assert.deepEqual(invalid.fields.map((f) => f.field).sort(), ["max_concurrency", "url"]);
      const wrongKey = new Sluice({ baseUrl: s.url, apiKey: "sk_wrong" });
      assert.equal((await apiError(wrongKey.get("/v1/tenant"))).code, "SLUICE_AUTH_INVALID_KEY");
    });

    test("publish with an Idempotency-Key answers a repeat with the first result; the receiver verifies the signature", async () => {
      const d = await sluice.post("/v1/destinations", { body: { url: `${rx.url}/signed`, event_types: ["sdk.signed"] } });
      const first = await sluice.publish({ type: "sdk.signed", payload: { n: 1 } }, { idempotencyKey: `k-${backend}` });
      const again = await sluice.publish({ type: "sdk.signed", payload: { n: 1 } }, { idempotencyKey: `k-${backend}` });
      assert.equal(again.id, first.id);
      assert.equal(first.deliveries, 1);
      await waitFor(() => rx.received.some((r) => r.path === "/signed"));
      const req = rx.received.find((r) => r.path === "/signed")!;
      const msg = verifyWebhook<{ n: number }>({ secret: d.secret!, body: req.body, headers: req.headers });
      assert.equal(msg.id, first.id);
      assert.equal(msg.type, "sdk.signed");
      assert.equal(msg.data.n, 1);
      assert.throws(
        () =>
          verifyWebhook({
            secret: "whsec_" + Buffer.from("another secret, 32 bytes long!!!").toString("base64"),
            body: req.body,
            headers: req.headers,
          }),
        WebhookVerificationError,
      );
      assert.throws(() => verifyWebhook({ secret: d.secret!, body: req.body + " ", headers: req.headers }), WebhookVerificationError);
    });

    test("paginate walks every page of a list", async () => {
      const d = await sluice.post("/v1/destinations", { body: { url: `${rx.url}/paged`, event_types: ["sdk.paged"] } });
      const published = await sluice.post("/v1/events/batch", {
        body: { events: Array.from({ length: 7 }, (_, i) => ({ type: "sdk.paged", payload: { i } })) },
      });
      const seen: Delivery[] = [];
      for await (const delivery of sluice.paginate("/v1/deliveries", { params: { query: { destination_id: d.id, limit: 2 } } })) {
        seen.push(delivery);
      }
      assert.equal(seen.length, 7);
      assert.equal(new Set(seen.map((x) => x.id)).size, 7);
      assert.deepEqual(new Set(seen.map((x) => x.event_id)), new Set(published.events.map((e) => e.id)));
    });

    test("API keys: create, list (never the key), revoke (refused at once)", async () => {
      const created = await sluice.post("/v1/api-keys", { body: { name: `sdk-${backend}` } });
      const second = new Sluice({ baseUrl: s.url, apiKey: created.key });
      assert.equal((await second.get("/v1/tenant")).id, (await sluice.get("/v1/tenant")).id);
      const listed = [];
      for await (const k of sluice.paginate("/v1/api-keys")) listed.push(k);
      const mine = listed.find((k) => k.id === created.id);
      assert.ok(mine && !("key" in mine));
      await sluice.delete("/v1/api-keys/{id}", { params: { path: { id: created.id } } });
      assert.equal((await apiError(second.get("/v1/tenant"))).status, 401);
    });

    test("custom headers reach the receiver and read back masked; recover re-sends dead deliveries with the same webhook-id", async () => {
      let fail = true;
      const rx2 = await startReceiver(() => ({ status: fail ? 500 : 200 }));
      try {
        const d = await sluice.post("/v1/destinations", {
          body: {
            url: `${rx2.url}/h`,
            event_types: ["sdk.recover"],
            retry_schedule_seconds: [],
            headers: { Authorization: "Bearer receiver-token", "X-Tenant": "acme" },
          },
        });
        assert.deepEqual(d.headers, { Authorization: "••••••", "X-Tenant": "acme" });
        const ev = await sluice.publish({ type: "sdk.recover", payload: { n: 1 } });
        await waitFor(
          async () => (await sluice.get("/v1/deliveries", { params: { query: { event_id: ev.id } } })).data[0]?.status === "dead",
        );
        assert.equal(rx2.received[0]?.headers.authorization, "Bearer receiver-token");
        fail = false;
        const since = new Date(Date.now() - 60_000).toISOString();
        const rec = await sluice.post("/v1/destinations/{id}/recover", { params: { path: { id: d.id } }, body: { since } });
        assert.equal(rec.deliveries, 1);
        await waitFor(() => rx2.received.length === 2);
        assert.equal(rx2.received[1]!.headers["webhook-id"], rx2.received[0].headers["webhook-id"]);
        await waitFor(
          async () =>
            (await sluice.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { id: d.id, rid: rec.id } } })).status === "done",
        );
      } finally {
        await rx2.close();
      }
    });

    test("events search by type prefix and time, newest first, across pages", async () => {
      const t0 = Date.now();
      const at = (s: number) => new Date(t0 - s * 1000).toISOString();
      await sluice.post("/v1/events/batch", {
        body: {
          events: [
            { type: "sdkfind.order.created", payload: {}, occurred_at: at(30) },
            { type: "sdkfind.order.paid", payload: {}, occurred_at: at(20) },
            { type: "sdkfind.user.created", payload: {}, occurred_at: at(10) },
          ],
        },
      });
      const found = [];
      for await (const e of sluice.paginate("/v1/events", { params: { query: { type: "sdkfind.order.*", since: at(60), limit: 1 } } }))
        found.push(e.type);
      assert.deepEqual(found, ["sdkfind.order.paid", "sdkfind.order.created"]);
      const windowed = await sluice.get("/v1/events", { params: { query: { type: "sdkfind.*", since: at(25), until: at(5) } } });
      assert.deepEqual(
        windowed.data.map((e) => e.type),
        ["sdkfind.user.created", "sdkfind.order.paid"],
      );
    });
  });
}
