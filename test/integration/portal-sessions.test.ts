import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import type {
  ApiError,
  Attempt,
  Delivery,
  Destination,
  Event,
  Page,
  Tenant,
  TenantCreated,
  ValidationFailed,
} from "../helpers/api-types.js";
import type { PortalSession, PortalSessionCreated } from "../../src/schemas/portal-sessions.js";
import type { Static } from "@sinclair/typebox";

// Consumer-portal sessions and admin tenant switching (issue 12): a portal link sees only its
// destinations (another one's objects answer 404, like unknown ids), reaches only the routes
// marked for portals, and read-only links change nothing; expiry and revocation end a link at
// once; bad bodies are 422 naming each field; the admin key acts for the tenant Sluice-Tenant
// names. Raw HTTP, not the SDK: these routes are newer than the generated SDK.

const ADMIN_KEY = "admin_secret_for_portal_sessions";
type Created = Static<typeof PortalSessionCreated>;
type Session = Static<typeof PortalSession>;

for (const backend of FEATURE_BACKENDS) {
  describe(`portal sessions on ${backend} Postgres`, () => {
    let s: TestSluice;
    let rx: Receiver;
    // Tenant 1 (the default key): destinations A and B; tenant 2: C.
    let a: Destination, b: Destination, c: Destination;
    let t2: TenantCreated;
    let evA: string, evB: string, evAB: string;
    let dlvA: Delivery, dlvB: Delivery;

    before(async () => {
      s = await startSluice(backend, { env: { SLUICE_ADMIN_KEY: ADMIN_KEY } });
      rx = await startReceiver({ status: 200 });
      a = (await s.api<Destination>("POST", "/v1/destinations", { name: "A", url: `${rx.url}/a` })).body;
      b = (await s.api<Destination>("POST", "/v1/destinations", { name: "B", url: `${rx.url}/b` })).body;
      t2 = (await s.api<TenantCreated>("POST", "/v1/tenants", { name: "other" }, { key: ADMIN_KEY })).body;
      c = (await s.api<Destination>("POST", "/v1/destinations", { name: "C", url: `${rx.url}/c` }, { key: t2.api_key })).body;
      const publish = async (ids: string[]) =>
        (await s.api<{ id: string }>("POST", "/v1/events", { type: "order.paid", payload: { ids }, destination_ids: ids })).body.id;
      evA = await publish([a.id]);
      evB = await publish([b.id]);
      evAB = await publish([a.id, b.id]);
      // Every delivery written back as delivered, so each has its attempt.
      await waitFor(async () => {
        const all = (await s.api<Page<Delivery>>("GET", "/v1/deliveries")).body.data;
        return all.length === 4 && all.every((d) => d.status === "delivered");
      });
      const ofA = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${a.id}`)).body.data;
      const ofB = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${b.id}`)).body.data;
      dlvA = ofA.find((d) => d.event_id === evA)!;
      dlvB = ofB.find((d) => d.event_id === evB)!;
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    const portal = async (body: unknown = {}, key?: string, headers?: Record<string, string>) => {
      const res = await s.api<Created>("POST", "/v1/portal-sessions", body, { key, headers });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    };
    const as = <T = unknown>(token: string, method: string, path: string, body?: unknown) => s.api<T>(method, path, body, { key: token });
    const codeOf = (res: { body: unknown }) => (res.body as ApiError).error.code;

    test("a link for A answers with its url, token and scope, and GET /v1/portal-session describes it", async () => {
      const p = await portal({ destination_ids: [a.id], theme: { accent: "#4f46e5", font_family: "'Inter', sans-serif" } });
      assert.match(p.id, /^pst_[0-9a-f]{27}$/);
      assert.match(p.token, /^sp_[A-Za-z0-9_-]{43}$/);
      // The request's own address (no SLUICE_PUBLIC_URL here), the token in the fragment only.
      assert.equal(p.url, `${s.url}/portal#token=${p.token}`);
      assert.deepEqual(p.destination_ids, [a.id]);
      assert.equal(p.read_only, false);
      assert.deepEqual(p.theme, { accent: "#4f46e5", font_family: "'Inter', sans-serif" });
      const ttl = (Date.parse(p.expires_at) - Date.now()) / 1000;
      assert.ok(ttl > 3500 && ttl <= 3600, `expires in ${ttl} s, not the default hour`);

      const me = await as<Session>(p.token, "GET", "/v1/portal-session");
      assert.equal(me.status, 200);
      const tenant = (await s.api<Tenant>("GET", "/v1/tenant")).body;
      assert.deepEqual(me.body, {
        id: p.id,
        tenant: { id: tenant.id, name: tenant.name },
        destination_ids: [a.id],
        read_only: false,
        expires_at: p.expires_at,
        theme: p.theme,
      });
      // Its tenant, without where the platform's alerts are mailed.
      await s.api("PATCH", "/v1/tenant", { alert_email: "ops@platform.test" });
      const t = await as<Tenant>(p.token, "GET", "/v1/tenant");
      assert.equal(t.status, 200);
      assert.equal(t.body.id, tenant.id);
      assert.equal(t.body.alert_email, null);
      await s.api("PATCH", "/v1/tenant", { alert_email: null });
    });

    test("a link for A sees A's destination, deliveries, attempts and events, and nothing of B's (404 as if unknown)", async () => {
      const { token } = await portal({ destination_ids: [a.id] });
      const list = await as<Page<Destination>>(token, "GET", "/v1/destinations");
      assert.deepEqual(
        list.body.data.map((d) => d.id),
        [a.id],
      );
      assert.equal((await as<Destination>(token, "GET", `/v1/destinations/${a.id}`)).body.id, a.id);
      const timeline = await as<{ data: Attempt[] }>(token, "GET", `/v1/destinations/${a.id}/attempts`);
      assert.equal(timeline.body.data.length, 2);

      for (const path of [`/v1/destinations/${b.id}`, `/v1/destinations/${b.id}/attempts`, `/v1/destinations/${b.id}/secret`]) {
        const res = await as(token, "GET", path);
        assert.equal(res.status, 404, path);
        assert.equal(codeOf(res), "SLUICE_DESTINATION_NOT_FOUND", path);
      }
      // Another tenant's destination: the same 404.
      assert.equal((await as(token, "GET", `/v1/destinations/${c.id}`)).status, 404);

      const deliveries = await as<Page<Delivery>>(token, "GET", "/v1/deliveries");
      assert.deepEqual(deliveries.body.data.map((d) => d.destination_id).sort(), [a.id, a.id]);
      const ofB = await as<Page<Delivery>>(token, "GET", `/v1/deliveries?destination_id=${b.id}`);
      assert.deepEqual(ofB.body, { data: [], next_cursor: null });
      assert.equal((await as<Delivery>(token, "GET", `/v1/deliveries/${dlvA.id}`)).body.id, dlvA.id);
      const attempts = await as<Page<Attempt>>(token, "GET", `/v1/deliveries/${dlvA.id}/attempts`);
      assert.equal(attempts.body.data.length, 1);
      assert.equal(attempts.body.data[0]!.status_code, 200);
      for (const [method, path] of [
        ["GET", `/v1/deliveries/${dlvB.id}`],
        ["GET", `/v1/deliveries/${dlvB.id}/attempts`],
        ["POST", `/v1/deliveries/${dlvB.id}/retry`],
      ] as const) {
        const res = await as(token, method, path);
        assert.equal(res.status, 404, path);
        assert.equal(codeOf(res), "SLUICE_DELIVERY_NOT_FOUND", path);
      }

      const events = await as<Page<Event>>(token, "GET", "/v1/events");
      assert.deepEqual(events.body.data.map((e) => e.id).sort(), [evA, evAB].sort());
      const onlyB = await as(token, "GET", `/v1/events/${evB}`);
      assert.equal(onlyB.status, 404);
      assert.equal(codeOf(onlyB), "SLUICE_EVENT_NOT_FOUND");
      // An event that went to both shows only the delivery to A.
      const both = await as<Event>(token, "GET", `/v1/events/${evAB}`);
      assert.deepEqual(
        both.body.deliveries!.map((d) => d.destination_id),
        [a.id],
      );
      // The tenant's key still sees both.
      assert.equal((await s.api<Event>("GET", `/v1/events/${evAB}`)).body.deliveries!.length, 2);
    });

    test("a link without destination_ids sees every destination of its tenant, and no other tenant's", async () => {
      const p = await portal();
      assert.equal(p.destination_ids, null);
      const list = await as<Page<Destination>>(p.token, "GET", "/v1/destinations");
      assert.deepEqual(list.body.data.map((d) => d.id).sort(), [a.id, b.id].sort());
      assert.equal((await as(p.token, "GET", `/v1/deliveries/${dlvB.id}`)).status, 200);
      assert.equal((await as(p.token, "GET", `/v1/destinations/${c.id}`)).status, 404);
    });

    test("a link cannot publish, create, delete, manage keys or make links: 403 SLUICE_PORTAL_FORBIDDEN, nothing written", async () => {
      const { token } = await portal({ destination_ids: [a.id] });
      const refused: [string, string, unknown][] = [
        ["POST", "/v1/events", { type: "x.y", payload: {} }],
        ["POST", "/v1/events", { not: "even valid" }], // refused before the body is judged
        ["POST", "/v1/events/batch", { events: [{ type: "x.y", payload: {} }] }],
        ["POST", "/v1/destinations", { url: `${rx.url}/new` }],
        ["DELETE", `/v1/destinations/${a.id}`, undefined],
        ["GET", "/v1/api-keys", undefined],
        ["POST", "/v1/api-keys", { name: "mine now" }],
        ["POST", "/v1/portal-sessions", {}],
        ["DELETE", "/v1/portal-sessions/pst_x", undefined],
        ["PATCH", "/v1/tenant", { name: "renamed" }],
      ];
      const sent = rx.received.length;
      for (const [method, path, body] of refused) {
        const res = await as<ApiError>(token, method, path, body);
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.body.error.code, "SLUICE_PORTAL_FORBIDDEN", `${method} ${path}`);
        assert.match(res.body.error.message, /^Portal links can only read their destinations/);
      }
      const msg = (await as<ApiError>(token, "DELETE", `/v1/destinations/${a.id}`)).body.error.message;
      assert.match(msg, /DELETE \/v1\/destinations\/:id needs the tenant's API key/);
      assert.equal((await s.api("GET", `/v1/destinations/${a.id}`)).status, 200);
      assert.equal((await s.api<Tenant>("GET", "/v1/tenant")).body.name === "renamed", false);
      const dests = (await s.api<Page<Destination>>("GET", "/v1/destinations")).body.data;
      assert.equal(dests.length, 2);
      assert.equal(rx.received.length, sent);
    });

    test("a read-only link reads but cannot pause, change, retry or read the secret (403 SLUICE_PORTAL_READ_ONLY)", async () => {
      const { token } = await portal({ destination_ids: [a.id], read_only: true });
      assert.equal((await as(token, "GET", `/v1/destinations/${a.id}`)).status, 200);
      assert.equal((await as(token, "GET", `/v1/deliveries/${dlvA.id}/attempts`)).status, 200);
      for (const [method, path, body] of [
        ["POST", `/v1/destinations/${a.id}/pause`, undefined],
        ["POST", `/v1/destinations/${a.id}/resume`, undefined],
        ["PATCH", `/v1/destinations/${a.id}`, { name: "changed" }],
        ["POST", `/v1/destinations/${a.id}/rotate-secret`, undefined],
        ["GET", `/v1/destinations/${a.id}/secret`, undefined],
        ["POST", `/v1/destinations/${a.id}/recover`, { since: new Date(Date.now() - 3600_000).toISOString() }],
        ["POST", `/v1/deliveries/${dlvA.id}/retry`, undefined],
      ] as const) {
        const res = await as<ApiError>(token, method, path, body);
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.body.error.code, "SLUICE_PORTAL_READ_ONLY", `${method} ${path}`);
      }
      const a2 = (await s.api<Destination>("GET", `/v1/destinations/${a.id}`)).body;
      assert.equal(a2.status, "active");
      assert.equal(a2.name, "A");
    });

    test("a link that is not read-only pauses, resumes and edits A, reads its secret, and still gets 404 for B", async () => {
      const { token } = await portal({ destination_ids: [a.id] });
      const paused = await as<Destination>(token, "POST", `/v1/destinations/${a.id}/pause`, { reason: "customer maintenance" });
      assert.equal(paused.status, 200);
      assert.equal(paused.body.status, "paused");
      assert.equal((await s.api<Destination>("GET", `/v1/destinations/${a.id}`)).body.pause_reason, "manual: customer maintenance");
      const resumed = await as<Destination>(token, "POST", `/v1/destinations/${a.id}/resume`);
      assert.equal(resumed.body.status, "active");
      const patched = await as<Destination>(token, "PATCH", `/v1/destinations/${a.id}`, { max_concurrency: 3 });
      assert.equal(patched.body.max_concurrency, 3);
      const secret = await as<{ secret: string }>(token, "GET", `/v1/destinations/${a.id}/secret`);
      assert.match(secret.body.secret, /^whsec_/);
      for (const path of [`/v1/destinations/${b.id}/pause`, `/v1/destinations/${b.id}/resume`]) {
        assert.equal((await as(token, "POST", path)).status, 404, path);
      }
      assert.equal((await as(token, "PATCH", `/v1/destinations/${b.id}`, { name: "mine" })).status, 404);
      assert.equal((await s.api<Destination>("GET", `/v1/destinations/${b.id}`)).body.status, "active");
    });

    test("an expired link answers 401 SLUICE_PORTAL_LINK_INVALID saying so", async () => {
      const p = await portal({ destination_ids: [a.id], ttl_seconds: 60 });
      assert.equal((await as(p.token, "GET", "/v1/destinations")).status, 200);
      await s.running.db.query("UPDATE portal_sessions SET expires_at = now() - interval '1 second' WHERE id = $1", [p.id]);
      const res = await as<ApiError>(p.token, "GET", "/v1/destinations");
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, "SLUICE_PORTAL_LINK_INVALID");
      assert.match(
        res.body.error.message,
        /^This portal link expired at \d{4}-\d\d-\d\dT[\d:.]+Z; ask whoever gave it to you for a new one\.$/,
      );
    });

    test("a revoked link stops at once; revoking an unknown or another tenant's session is 404", async () => {
      const p = await portal({ destination_ids: [a.id] });
      assert.equal((await as(p.token, "GET", "/v1/portal-session")).status, 200);
      const other = await s.api<ApiError>("DELETE", `/v1/portal-sessions/${p.id}`, undefined, { key: t2.api_key });
      assert.equal(other.status, 404);
      assert.equal(other.body.error.code, "SLUICE_PORTAL_SESSION_NOT_FOUND");
      assert.equal((await s.api("DELETE", `/v1/portal-sessions/${p.id}`)).status, 204);
      const res = await as<ApiError>(p.token, "GET", "/v1/destinations");
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, "SLUICE_PORTAL_LINK_INVALID");
      assert.match(res.body.error.message, /is not known: it was revoked/);
      assert.equal((await s.api("DELETE", `/v1/portal-sessions/${p.id}`)).status, 404);
      // A made-up sp_ token, and an API key-shaped one: each gets its own 401.
      assert.equal(codeOf(await as("sp_madeup", "GET", "/v1/destinations")), "SLUICE_PORTAL_LINK_INVALID");
      assert.equal(codeOf(await as("sk_madeup", "GET", "/v1/destinations")), "SLUICE_AUTH_INVALID_KEY");
    });

    test("bad bodies are 422 naming each field, and make no session", async () => {
      const count = async () => (await s.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM portal_sessions"))[0]!.n;
      const n = await count();
      const cases: [unknown, Record<string, RegExp>][] = [
        [
          { destination_ids: [a.id, "dst_nope", c.id] },
          {
            "destination_ids[1]": /'dst_nope' is not a destination of this tenant/,
            "destination_ids[2]": new RegExp(`'${c.id}' is not a destination of this tenant`),
          },
        ],
        [{ ttl_seconds: 59 }, { ttl_seconds: /^must be a whole number between 60 and 86400$/ }],
        [{ ttl_seconds: 86401 }, { ttl_seconds: /^must be a whole number between 60 and 86400$/ }],
        [{ destination_ids: [] }, { destination_ids: /^must have between 1 and 100 items$/ }],
        [{ destination_ids: [a.id, a.id] }, { destination_ids: /duplicate/ }],
        [{ read_only: "yes" }, { read_only: /^must be true or false$/ }],
        [
          { theme: { accent: "red", background: "#12345", text: "#fff", font_family: "x; } body { display: none" } },
          {
            "theme.accent": /must be a CSS colour #rgb or #rrggbb/,
            "theme.background": /CSS colour/,
            "theme.font_family": /font-family list/,
          },
        ],
        [{ theme: { colour: "#fff" } }, { "theme.colour": /is not a known field/ }],
      ];
      for (const [body, fields] of cases) {
        const res = await s.api<ValidationFailed>("POST", "/v1/portal-sessions", body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.equal(res.body.error.code, "SLUICE_VALIDATION_FAILED");
        const got = Object.fromEntries(res.body.error.details.map((d) => [d.field, d.message]));
        assert.deepEqual(Object.keys(got).sort(), Object.keys(fields).sort(), JSON.stringify(res.body));
        for (const [field, re] of Object.entries(fields)) assert.match(got[field]!, re, field);
      }
      assert.equal(await count(), n);
    });

    test("GET /v1/portal-session with an API key is 403 SLUICE_PORTAL_SESSION_REQUIRED", async () => {
      const res = await s.api<ApiError>("GET", "/v1/portal-session");
      assert.equal(res.status, 403);
      assert.equal(res.body.error.code, "SLUICE_PORTAL_SESSION_REQUIRED");
      assert.match(res.body.error.message, /send the portal token \(sp_…\) as the Bearer token/);
    });

    test("the admin key acts for the tenant Sluice-Tenant names; without it, a clear 400; an unknown tenant 404", async () => {
      const me = (await s.api<Tenant>("GET", "/v1/tenant")).body;
      const asAdmin = <T>(tenant: string | null, method: string, path: string, body?: unknown) =>
        s.api<T>(method, path, body, { key: ADMIN_KEY, headers: tenant === null ? {} : { "sluice-tenant": tenant } });
      const mine = await asAdmin<Page<Destination>>(me.id, "GET", "/v1/destinations");
      assert.deepEqual(mine.body.data.map((d) => d.id).sort(), [a.id, b.id].sort());
      const theirs = await asAdmin<Page<Destination>>(t2.id, "GET", "/v1/destinations");
      assert.deepEqual(
        theirs.body.data.map((d) => d.id),
        [c.id],
      );
      assert.equal((await asAdmin<Tenant>(t2.id, "GET", "/v1/tenant")).body.name, "other");

      const none = await asAdmin<ApiError>(null, "GET", "/v1/destinations");
      assert.equal(none.status, 400);
      assert.equal(none.body.error.code, "SLUICE_AUTH_TENANT_REQUIRED");
      assert.match(none.body.error.message, /send the header 'Sluice-Tenant: ten_…'/);
      const unknown = await asAdmin<ApiError>("ten_nope", "GET", "/v1/destinations");
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, "SLUICE_TENANT_NOT_FOUND");

      // The admin key may make the tenant's portal links (the dashboard does).
      const link = await portal({ destination_ids: [c.id] }, ADMIN_KEY, { "sluice-tenant": t2.id });
      const seen = await as<Page<Destination>>(link.token, "GET", "/v1/destinations");
      assert.deepEqual(
        seen.body.data.map((d) => d.id),
        [c.id],
      );

      // A tenant's key may name its own tenant, not another.
      assert.equal((await s.api("GET", "/v1/destinations", undefined, { headers: { "sluice-tenant": me.id } })).status, 200);
      const foreign = await s.api<ApiError>("GET", "/v1/destinations", undefined, { headers: { "sluice-tenant": t2.id } });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.body.error.code, "SLUICE_AUTH_ADMIN_REQUIRED");
    });

    test("GET /v1/tenants lists every tenant, paged, for the admin key only", async () => {
      const all = await s.api<Page<Tenant>>("GET", "/v1/tenants", undefined, { key: ADMIN_KEY });
      assert.equal(all.status, 200);
      const me = (await s.api<Tenant>("GET", "/v1/tenant")).body;
      assert.deepEqual(
        all.body.data.map((t) => t.id),
        [t2.id, me.id],
      );
      const first = await s.api<Page<Tenant>>("GET", "/v1/tenants?limit=1", undefined, { key: ADMIN_KEY });
      assert.deepEqual(
        first.body.data.map((t) => t.id),
        [t2.id],
      );
      const next = await s.api<Page<Tenant>>("GET", `/v1/tenants?limit=1&cursor=${first.body.next_cursor}`, undefined, { key: ADMIN_KEY });
      assert.deepEqual(
        next.body.data.map((t) => t.id),
        [me.id],
      );

      const byKey = await s.api<ApiError>("GET", "/v1/tenants");
      assert.equal(byKey.status, 403);
      assert.equal(byKey.body.error.code, "SLUICE_AUTH_ADMIN_REQUIRED");
      assert.match(byKey.body.error.message, /^GET \/v1\/tenants takes the admin key/);
      const { token } = await portal();
      assert.equal(codeOf(await as(token, "GET", "/v1/tenants")), "SLUICE_AUTH_ADMIN_REQUIRED");
      const unknown = await s.api<ApiError>("GET", "/v1/tenants", undefined, { key: "sk_nope" });
      assert.equal(unknown.status, 401);
      assert.match(unknown.body.error.message, /^This is not the admin key/);
      // POST /v1/tenants is as it was: any other key is 401.
      assert.equal((await s.api("POST", "/v1/tenants", { name: "x" })).status, 401);
    });

    test("SLUICE_PUBLIC_URL is the base of portal links; without SLUICE_ADMIN_KEY, GET /v1/tenants is 403 ADMIN_DISABLED", async () => {
      const other = await startSluice(backend, { worker: false, env: { SLUICE_PUBLIC_URL: "https://hooks.example.com/sluice/" } });
      try {
        const res = await other.api<Created>("POST", "/v1/portal-sessions");
        assert.equal(res.status, 201);
        assert.equal(res.body.url, `https://hooks.example.com/sluice/portal#token=${res.body.token}`);
        const tenants = await other.api<ApiError>("GET", "/v1/tenants");
        assert.equal(tenants.status, 403);
        assert.equal(tenants.body.error.code, "SLUICE_AUTH_ADMIN_DISABLED");
      } finally {
        await other.stop();
      }
    });

    test("every /v1 route is marked for portals or named here as tenant/admin-only, and portals are refused exactly where not marked", async () => {
      const routes = s.running.api!.routeAccess.filter((r) => r.url.startsWith("/v1/"));
      // Routes portals must not reach: publishing, creating and deleting, keys, tenants, links.
      const NOT_FOR_PORTALS = [
        "POST /v1/tenants",
        "GET /v1/tenants",
        "PATCH /v1/tenant",
        "POST /v1/api-keys",
        "GET /v1/api-keys",
        "DELETE /v1/api-keys/:id",
        "POST /v1/destinations",
        "DELETE /v1/destinations/:id",
        "POST /v1/events",
        "POST /v1/events/batch",
        "POST /v1/portal-sessions",
        "DELETE /v1/portal-sessions/:id",
      ];
      const FOR_PORTALS: Record<string, "read" | "write"> = {
        "GET /v1/tenant": "read",
        "GET /v1/portal-session": "read",
        "GET /v1/destinations": "read",
        "GET /v1/destinations/:id": "read",
        "GET /v1/destinations/:id/attempts": "read",
        "GET /v1/destinations/:id/recoveries/:rid": "read",
        "GET /v1/destinations/:id/secret": "write",
        "PATCH /v1/destinations/:id": "write",
        "POST /v1/destinations/:id/pause": "write",
        "POST /v1/destinations/:id/resume": "write",
        "POST /v1/destinations/:id/rotate-secret": "write",
        "POST /v1/destinations/:id/recover": "write",
        "GET /v1/deliveries": "read",
        "GET /v1/deliveries/:id": "read",
        "GET /v1/deliveries/:id/attempts": "read",
        "POST /v1/deliveries/:id/retry": "write",
        "GET /v1/events": "read",
        "GET /v1/events/:id": "read",
      };
      const registered = new Map(routes.map((r) => [`${r.method} ${r.url}`, r]));
      for (const name of [...NOT_FOR_PORTALS, ...Object.keys(FOR_PORTALS)])
        assert.ok(registered.has(name), `${name} is not a route any more`);
      for (const [name, r] of registered) {
        if (r.portal === null) assert.ok(NOT_FOR_PORTALS.includes(name), `${name}: mark it config.portal or add it to NOT_FOR_PORTALS`);
        else assert.ok(!NOT_FOR_PORTALS.includes(name), `${name} is marked for portals but listed as not for them`);
        if (name in FOR_PORTALS) assert.equal(r.portal, FOR_PORTALS[name], name);
      }

      // And the hook does what the marks say, for every route: a link scoped to A, so that the
      // routes it may reach answer 404 for the made-up ids and change nothing.
      const rw = (await portal({ destination_ids: [a.id] })).token;
      const ro = (await portal({ destination_ids: [a.id], read_only: true })).token;
      const states = JSON.stringify((await s.api<Page<Destination>>("GET", "/v1/destinations")).body.data.map((d) => [d.id, d.status]));
      for (const [name, r] of registered) {
        const path = r.url.replace(/:id/g, "dst_madeup").replace(/:rid/g, "rcv_madeup");
        const body = r.method === "GET" || r.method === "DELETE" ? undefined : {};
        for (const [token, readOnly] of [
          [rw, false],
          [ro, true],
        ] as const) {
          const res = await as<ApiError>(token, r.method, path, body);
          const code = res.status === 403 ? res.body.error.code : null;
          if (r.adminOnly) assert.ok(res.status === 401 || code === "SLUICE_AUTH_ADMIN_REQUIRED", `${name}: ${res.status}`);
          else if (r.portal === null) assert.equal(code, "SLUICE_PORTAL_FORBIDDEN", name);
          else if (r.portal === "write" && readOnly) assert.equal(code, "SLUICE_PORTAL_READ_ONLY", name);
          else
            assert.ok(code === null || !code.startsWith("SLUICE_PORTAL"), `${name} refused a ${readOnly ? "read-only " : ""}link: ${code}`);
        }
      }
      const statesAfter = JSON.stringify(
        (await s.api<Page<Destination>>("GET", "/v1/destinations")).body.data.map((d) => [d.id, d.status]),
      );
      assert.equal(statesAfter, states);
    });
  });
}
