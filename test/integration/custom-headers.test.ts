import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver, type ReceivedRequest } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { apiError } from "../helpers/sdk.js";
import { Sluice, type Destination, type paths } from "../../sdk/src/index.js";
import { createLogger } from "../../src/logger.js";
import { signatureHeader } from "../../src/delivery/sign.js";
import { HEADER_MASK } from "../../src/policy/custom-headers.js";

// Custom headers per destination, set through the SDK, against a real receiver: they go out on
// deliveries and probes beside Sluice's own (unchanged), reserved names and bad tokens are refused
// with 422 and write nothing, secret values are masked in every answer — a masked value sent back
// keeps the secret — and no secret value reaches a log line.

type DestinationBody = paths["/v1/destinations"]["post"]["requestBody"]["content"]["application/json"];
type DestinationChange = paths["/v1/destinations/{id}"]["patch"]["requestBody"]["content"]["application/json"];

const AUTH_SECRET = "Bearer auth-secret-4b1e93";
const KEY_SECRET = "key-secret-a07c55";
const NO_WAIT_RETRIES = Array.from({ length: 12 }, () => 0);
const RESERVED = [
  "webhook-id",
  "Webhook-Signature",
  "WEBHOOK-TIMESTAMP",
  "webhook-extra",
  "Content-Type",
  "content-length",
  "Host",
  "User-Agent",
  "Expect",
  "Connection",
  "Keep-Alive",
  "Proxy-Connection",
  "Transfer-Encoding",
  "TE",
  "Trailer",
  "Upgrade",
  "Proxy-Authenticate",
  "Proxy-Authorization",
];

const typeOf = (r: ReceivedRequest) => (r.json as { type?: string } | undefined)?.type;

for (const backend of FEATURE_BACKENDS) {
  describe(`custom headers on ${backend} Postgres`, () => {
    const raw: string[] = [];
    let s: TestSluice;
    let sluice: Sluice;
    let rx: Receiver;
    before(async () => {
      // The production logger (with its redaction), at debug: every line Sluice can write is captured.
      const log = createLogger(
        { logLevel: "debug", logFormat: "json" },
        { stream: { write: (l: string) => raw.push(l) } as never, isTTY: false },
      );
      s = await startSluice(backend, { log });
      sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
      rx = await startReceiver();
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    const create = (body: DestinationBody) => sluice.post("/v1/destinations", { body });
    const change = (id: string, body: DestinationChange) => sluice.patch("/v1/destinations/{id}", { params: { path: { id } }, body });
    const read = (id: string) => sluice.get("/v1/destinations/{id}", { params: { path: { id } } });
    const list = () => sluice.get("/v1/destinations", { params: { query: { limit: 1000 } } });

    async function publish(destinationId: string, type: string): Promise<string> {
      return (await sluice.publish({ type, payload: { n: 1 }, destination_ids: [destinationId] })).id;
    }

    async function destinationCount(): Promise<number> {
      return (await list()).data.length;
    }

    test("deliveries carry the custom headers; Sluice's own headers and signature are unchanged", async () => {
      rx.reset();
      rx.respondWith({ status: 200 });
      const plain = await create({ url: `${rx.url}/plain`, event_types: ["ch.none"] });
      const custom = await create({
        url: `${rx.url}/custom`,
        event_types: ["ch.none"],
        headers: { "X-Tenant": "acme", Authorization: AUTH_SECRET, "X-Api-Key": KEY_SECRET, "X-Empty": "" },
        secret_headers: ["x-api-key"],
      });
      assert.deepEqual(plain.headers, {});
      assert.deepEqual(plain.secret_headers, []);
      const eventId = await publish(custom.id, "ch.one");
      await publish(plain.id, "ch.one");
      await waitFor(() => rx.countByPath("/custom") === 1 && rx.countByPath("/plain") === 1);

      const got = rx.received.find((r) => r.path === "/custom")!;
      const control = rx.received.find((r) => r.path === "/plain")!;
      assert.equal(got.headers["x-tenant"], "acme");
      assert.equal(got.headers.authorization, AUTH_SECRET);
      assert.equal(got.headers["x-api-key"], KEY_SECRET);
      assert.equal(got.headers["x-empty"], "");
      assert.equal(control.headers["x-tenant"], undefined);
      assert.equal(control.headers.authorization, undefined);
      // Sluice's own: same content type and user agent as without custom headers, a signature
      // that verifies over the body with the destination's secret.
      assert.equal(got.headers["content-type"], "application/json");
      assert.equal(got.headers["user-agent"], control.headers["user-agent"]);
      assert.equal(got.headers["webhook-id"], eventId);
      const ts = Number(got.headers["webhook-timestamp"]);
      assert.ok(Number.isInteger(ts) && Math.abs(ts - Date.now() / 1000) < 60, got.headers["webhook-timestamp"]);
      assert.equal(got.headers["webhook-signature"], signatureHeader([custom.secret!], eventId, ts, got.body));
    });

    test("probes of a paused destination carry the custom headers too", async () => {
      const down = await startReceiver({ status: 503 });
      try {
        const d = await create({
          url: `${down.url}/down`,
          event_types: ["ch.none"],
          headers: { "X-Tenant": "probe-tenant", Authorization: AUTH_SECRET },
          retry_schedule_seconds: NO_WAIT_RETRIES,
          probe_interval_seconds: 1,
        });
        await sluice.post("/v1/events/batch", {
          body: { events: Array.from({ length: 2 }, (_, i) => ({ type: "ch.probe", payload: { i }, destination_ids: [d.id] })) },
        });
        await waitFor(() => down.received.some((r) => typeOf(r) === "webhook.probe"), {
          timeoutMs: 20_000,
          message: () => `received ${down.received.length}, none a probe`,
        });
        const probe = down.received.find((r) => typeOf(r) === "webhook.probe")!;
        assert.equal(probe.headers["x-tenant"], "probe-tenant");
        assert.equal(probe.headers.authorization, AUTH_SECRET);
        assert.ok(probe.headers["webhook-signature"]);
        assert.equal(probe.headers["content-type"], "application/json");
      } finally {
        await down.close();
      }
    });

    test("each reserved name and a bad token is refused with 422 naming the field; nothing is written", async () => {
      const before = await destinationCount();
      for (const name of [...RESERVED, "Bad Name", "X:Colon", "Ünïcode"]) {
        const e = await apiError(create({ url: `${rx.url}/r`, headers: { "X-Fine": "1", [name]: "v" } }));
        assert.equal(e.status, 422, `${name}: ${e.message}`);
        assert.equal(e.code, "SLUICE_VALIDATION_FAILED");
        assert.deepEqual(
          e.fields.map((d) => d.field),
          [`headers.${name}`],
          name,
        );
        assert.match(e.fields[0]!.message, /reserved|hop-by-hop|not a valid header name/, name);
        assert.ok(e.message.includes(`headers.${name}`), e.message);
      }
      // Two names that differ only in case.
      const dup = await apiError(create({ url: `${rx.url}/r`, headers: { "X-A": "1", "x-a": "2" } }));
      assert.equal(dup.status, 422);
      assert.match(dup.fields[0]!.message, /case-insensitive/);
      assert.equal(await destinationCount(), before, "a refused create wrote a destination");

      // A refused PATCH leaves the stored headers as they were.
      const d = await create({ url: `${rx.url}/keep`, event_types: ["ch.none"], headers: { "X-Keep": "1" } });
      for (const name of ["Host", "webhook-id", "Bad Name"]) {
        const e = await apiError(change(d.id, { headers: { [name]: "v" }, name: "renamed" }));
        assert.equal(e.status, 422, name);
        assert.deepEqual(
          e.fields.map((x) => x.field),
          [`headers.${name}`],
        );
      }
      const after = await read(d.id);
      assert.deepEqual(after.headers, { "X-Keep": "1" });
      assert.equal(after.name, "");
    });

    test("every answer masks authorization and secret_headers; GET → PATCH with the mask keeps the secret", async () => {
      rx.reset();
      rx.respondWith({ status: 200 });
      const d = await create({
        url: `${rx.url}/masked`,
        event_types: ["ch.none"],
        headers: { authorization: AUTH_SECRET, "X-Api-Key": KEY_SECRET, "X-Tenant": "acme" },
        secret_headers: ["X-API-KEY"],
      });
      const masked = { authorization: HEADER_MASK, "X-Api-Key": HEADER_MASK, "X-Tenant": "acme" };
      assert.deepEqual(d.headers, masked);
      assert.deepEqual(d.secret_headers, ["X-API-KEY"]);

      const answers: { what: string; text: string; headers: unknown }[] = [];
      const record = async (what: string, answer: Promise<Destination | { data: Destination[] }>) => {
        const body = await answer;
        const one = "data" in body ? body.data.find((x) => x.id === d.id) : body;
        answers.push({ what, text: JSON.stringify(body), headers: one?.headers });
        return body;
      };
      const path = { id: d.id };
      await record("get", read(d.id));
      await record("list", list());
      await record("pause", sluice.post("/v1/destinations/{id}/pause", { params: { path }, body: {} }));
      await record("resume", sluice.post("/v1/destinations/{id}/resume", { params: { path }, body: {} }));
      await record("patch", change(d.id, { name: "masked" }));
      for (const a of answers) {
        assert.deepEqual(a.headers, masked, a.what);
        for (const secret of [AUTH_SECRET, KEY_SECRET]) assert.ok(!a.text.includes(secret), `${a.what} shows a secret`);
      }

      // Edit the GET's headers (one value changed, the masked ones sent back as they were shown).
      const shown = await read(d.id);
      const edited = await change(d.id, { headers: { ...shown.headers, "X-Tenant": "acme-2" } });
      assert.deepEqual(edited.headers, { ...masked, "X-Tenant": "acme-2" });
      await publish(d.id, "ch.mask");
      await waitFor(() => rx.countByPath("/masked") === 1);
      const got = rx.received.find((r) => r.path === "/masked")!;
      assert.equal(got.headers.authorization, AUTH_SECRET, "the masked authorization was kept");
      assert.equal(got.headers["x-api-key"], KEY_SECRET, "the masked secret header was kept");
      assert.equal(got.headers["x-tenant"], "acme-2");

      // A mask for a header that was shown in clear, or is new, has no stored value behind it.
      for (const headers of [{ "X-Tenant": HEADER_MASK }, { "X-New-Secret": HEADER_MASK }] as Record<string, string>[]) {
        const e = await apiError(change(d.id, { headers }));
        assert.equal(e.status, 422, e.message);
        assert.deepEqual(
          e.fields.map((x) => x.field),
          [`headers.${Object.keys(headers)[0]}`],
        );
        assert.match(e.fields[0]!.message, /no stored secret value/);
      }
    });

    test("a PATCH changes a header live: the next delivery carries the new value, a dropped header is gone", async () => {
      rx.reset();
      rx.respondWith({ status: 200 });
      const d = await create({ url: `${rx.url}/live`, event_types: ["ch.none"], headers: { "X-Version": "1", "X-Old": "gone-soon" } });
      await publish(d.id, "ch.live");
      await waitFor(() => rx.countByPath("/live") === 1);
      const patched = await change(d.id, { headers: { "X-Version": "2" } });
      assert.deepEqual(patched.headers, { "X-Version": "2" });
      await publish(d.id, "ch.live");
      await waitFor(() => rx.countByPath("/live") === 2);
      const [first, second] = rx.received.filter((r) => r.path === "/live");
      assert.equal(first!.headers["x-version"], "1");
      assert.equal(first!.headers["x-old"], "gone-soon");
      assert.equal(second!.headers["x-version"], "2");
      assert.equal(second!.headers["x-old"], undefined, "PATCH headers replaces the whole map");
    });

    test("no secret value reaches a log line or a 422: create, a failing delivery and refused requests", async () => {
      const failing = await startReceiver({ status: 500, body: "nope" });
      try {
        const d = await create({
          url: `${failing.url}/fails`,
          event_types: ["ch.none"],
          headers: { Authorization: AUTH_SECRET, "X-Api-Key": KEY_SECRET },
          secret_headers: ["X-Api-Key"],
          retry_schedule_seconds: [0, 0],
        });
        await publish(d.id, "ch.log");
        await waitFor(() => raw.some((l) => l.includes(d.id) && l.includes('"attempt failed"')), {
          message: () => `no 'attempt failed' line for ${d.id}`,
        });
        assert.ok(failing.received.length >= 1);
        assert.equal(failing.received[0]!.headers.authorization, AUTH_SECRET);

        // Refused: a bad value for the secret header (CR/LF), beside a reserved name; and a bad
        // name whose value is a secret.
        const refusals = [
          await apiError(change(d.id, { headers: { Authorization: `${AUTH_SECRET}\r\nX-Injected: 1`, Host: KEY_SECRET } })),
          await apiError(create({ url: `${failing.url}/x`, headers: { "Bad Name": KEY_SECRET } })),
          await apiError(create({ url: `${failing.url}/x`, headers: { "X-Api-Key": `${KEY_SECRET}é` } })),
        ];
        for (const e of refusals) {
          // Everything the error document holds: its code, message and details.
          const text = JSON.stringify({ code: e.code, message: e.message, details: e.details });
          assert.equal(e.status, 422, text);
          for (const secret of [AUTH_SECRET, KEY_SECRET]) assert.ok(!text.includes(secret), `a 422 echoes a secret: ${text}`);
        }
        assert.deepEqual(
          refusals[0]!.fields.map((x) => x.field),
          ["headers.Authorization", "headers.Host"],
        );

        assert.ok(raw.length > 0);
        const all = raw.join("\n");
        for (const secret of [AUTH_SECRET, "auth-secret-4b1e93", KEY_SECRET]) {
          assert.ok(!all.includes(secret), `a log line holds ${secret}`);
        }
      } finally {
        await failing.close();
      }
    });
  });
}
