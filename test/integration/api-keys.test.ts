import { describe, test, before, after, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { BACKENDS, FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { openTestStore } from "../helpers/db.js";
import { waitFor } from "../helpers/wait-for.js";
import { apiError } from "../helpers/sdk.js";
import { Sluice, SluiceApiError } from "../../sdk/src/index.js";
import { loadMigrations, migrate } from "../../src/db/migrate.js";
import { findApiKey, listApiKeys } from "../../src/db/queries/api-keys.js";
import { ensureDefaultTenant } from "../../src/bootstrap.js";
import { KeyCache, type KeyOwner } from "../../src/api/key-cache.js";
import type { ValidationFailed } from "../helpers/api-types.js";

// Several API keys per tenant (issue 11), through the SDK: create (shown once), list (never the
// key), delete (stops working on the very next request, in this API process and in every other on
// the same store); the last key cannot be deleted; another tenant's key id is 404; keys made
// before the migration get ids and names.

const ADMIN_KEY = "admin_secret_for_api_keys";
/**
 * How long the auth cache keeps a key from its lookup (TTL_MS in src/api/key-cache.ts, pinned by
 * "the API key cache" tests below): a deleted key that is merely left to expire works this long.
 */
const KEY_CACHE_TTL_MS = 5_000;
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

for (const backend of FEATURE_BACKENDS) {
  describe(`API keys on ${backend} Postgres`, () => {
    let s: TestSluice;
    let sluice: Sluice;
    before(async () => {
      s = await startSluice(backend, { worker: false, env: { SLUICE_ADMIN_KEY: ADMIN_KEY } });
      sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
    });
    after(async () => s?.stop());

    /** A client of `on` (default: s) that calls with `key`. */
    const as = (key: string, on = s) => new Sluice({ baseUrl: on.url, apiKey: key });
    // Each test works in tenants of its own, so the keys it counts are its own.
    const newTenant = async (name: string, on = s) => {
      const t = await as(ADMIN_KEY, on).post("/v1/tenants", { body: { name } });
      return { id: t.id, key: t.api_key };
    };
    const createKey = (key: string, name: string, on = s) => as(key, on).post("/v1/api-keys", { body: { name } });
    const listKeys = (key: string, query: { limit?: number; cursor?: string } = {}, on = s) =>
      as(key, on).get("/v1/api-keys", { params: { query } });
    const deleteKey = (key: string, id: string) => as(key).delete("/v1/api-keys/{id}", { params: { path: { id } } });
    /** Whom `key` authenticates as: its tenant's id (GET /v1/tenant), else the error's status. */
    const whoIs = (key: string, on = s): Promise<string | number> =>
      as(key, on)
        .get("/v1/tenant")
        .then(
          (t) => t.id,
          (e: unknown) => {
            assert.ok(e instanceof SluiceApiError, String(e));
            return e.status;
          },
        );

    test("a created key is shown once, works at once and sees the same tenant's objects", async () => {
      const t = await newTenant("create");
      const d = await as(t.key).post("/v1/destinations", { body: { url: "http://127.0.0.1:9/hooks" } });

      const k = await createKey(t.key, "billing service");
      assert.match(k.id, /^key_[0-9a-f]{27}$/);
      assert.equal(k.name, "billing service");
      assert.match(k.key, /^sk_[A-Za-z0-9_-]{32}$/);
      assert.notEqual(k.key, t.key);
      assert.equal(k.prefix, k.key.slice(0, 8));
      assert.ok(Date.parse(k.created_at) > Date.now() - 60_000, k.created_at);
      assert.deepEqual(Object.keys(k).sort(), ["created_at", "id", "key", "name", "prefix"]);

      assert.equal(await whoIs(k.key), t.id);
      const seen = await as(k.key).get("/v1/destinations/{id}", { params: { path: { id: d.id } } });
      assert.equal(seen.id, d.id);
      // The old key keeps working beside it.
      assert.equal(await whoIs(t.key), t.id);
      // Another tenant's key still does not see it.
      assert.equal((await apiError(sluice.get("/v1/destinations/{id}", { params: { path: { id: d.id } } }))).status, 404);
    });

    test("the list shows names and prefixes, newest first and paged, never a key or its hash", async () => {
      const t = await newTenant("list");
      const a = await createKey(t.key, "a");
      const b = await createKey(t.key, "b");

      const page = await listKeys(t.key);
      const raw = JSON.stringify(page);
      for (const secret of [t.key, a.key, b.key]) {
        assert.ok(!raw.includes(secret), "the list holds a key");
        assert.ok(!raw.includes(sha256(secret)), "the list holds a key's hash");
      }
      assert.deepEqual(
        page.data.map((k) => k.name),
        ["b", "a", "initial"],
      );
      assert.equal(page.next_cursor, null);
      for (const k of page.data) assert.deepEqual(Object.keys(k).sort(), ["created_at", "id", "name", "prefix"]);
      assert.deepEqual(
        page.data.map((k) => k.prefix),
        [b.key.slice(0, 8), a.key.slice(0, 8), t.key.slice(0, 8)],
      );
      assert.deepEqual(
        page.data.slice(0, 2).map((k) => k.id),
        [b.id, a.id],
      );

      const first = await listKeys(t.key, { limit: 2 });
      assert.equal(first.data.length, 2);
      assert.ok(first.next_cursor);
      const second = await listKeys(t.key, { limit: 2, cursor: first.next_cursor });
      assert.deepEqual(
        second.data.map((k) => k.name),
        ["initial"],
      );
      assert.equal(second.next_cursor, null);
      const bad = await apiError(listKeys(t.key, { cursor: "nonsense" }));
      assert.equal(bad.status, 422);
      assert.equal(bad.fields[0]!.field, "query.cursor");

      // Another tenant lists only its own.
      const others = await listKeys(s.apiKey);
      const ids = new Set(others.data.map((k) => k.id));
      for (const k of page.data) assert.ok(!ids.has(k.id), `${k.id} listed for another tenant`);
    });

    test("a deleted key answers 401 on the very next request, even while it was cached", async () => {
      const t = await newTenant("delete");
      const k = await createKey(t.key, "to delete");
      // Used twice: the second answer came from the auth cache.
      assert.equal(await whoIs(k.key), t.id);
      assert.equal(await whoIs(k.key), t.id);

      // A 204: the SDK resolves to no body.
      assert.equal(await deleteKey(t.key, k.id), undefined);
      const after = await apiError(as(k.key).get("/v1/tenant"));
      assert.equal(after.status, 401);
      assert.equal(after.code, "SLUICE_AUTH_INVALID_KEY");
      assert.equal((await apiError(as(k.key).get("/v1/destinations"))).status, 401);
      assert.deepEqual(
        (await listKeys(t.key)).data.map((x) => x.name),
        ["initial"],
      );
      // Deleting it again: it is gone.
      assert.equal((await apiError(deleteKey(t.key, k.id))).status, 404);

      // A key may delete itself (while another remains); it stops working for its next request.
      const self = await createKey(t.key, "self");
      assert.equal(await whoIs(self.key), t.id);
      assert.equal(await deleteKey(self.key, self.id), undefined);
      assert.equal(await whoIs(self.key), 401);
      assert.equal(await whoIs(t.key), t.id);
    });

    test("deleting the tenant's last key is 409 and changes nothing", async () => {
      const t = await newTenant("last");
      const [only] = (await listKeys(t.key)).data;
      assert.ok(only);
      const refused = await apiError(deleteKey(t.key, only.id));
      assert.equal(refused.status, 409);
      assert.equal(refused.code, "SLUICE_API_KEY_LAST");
      assert.match(refused.message, /Create another key first \(POST \/v1\/api-keys\)/);
      assert.equal(await whoIs(t.key), t.id);
      assert.deepEqual((await listKeys(t.key)).data, [only]);

      // With a second key the first can go; then the second is the last one.
      const next = await createKey(t.key, "next");
      assert.equal(await deleteKey(next.key, only.id), undefined);
      assert.equal(await whoIs(t.key), 401);
      const again = await apiError(deleteKey(next.key, next.id));
      assert.equal(again.status, 409);
      assert.equal(again.code, "SLUICE_API_KEY_LAST");
      assert.equal(await whoIs(next.key), t.id);
    });

    test("two deletes at once of a tenant's last two keys leave one key", async () => {
      const t = await newTenant("race");
      const k = await createKey(t.key, "second");
      const [initial] = (await listKeys(t.key)).data.filter((x) => x.name === "initial");
      // Each ends as "deleted" (a 204) or as the status of its error.
      const outcome = async (call: Promise<unknown>) => {
        try {
          await call;
          return "deleted";
        } catch (e) {
          if (e instanceof SluiceApiError) return e.status;
          throw e;
        }
      };
      const [first, second] = await Promise.all([outcome(deleteKey(t.key, initial!.id)), outcome(deleteKey(k.key, k.id))]);
      assert.deepEqual(new Set([first, second]), new Set(["deleted", 409]));
      const left = await listKeys(first === "deleted" ? k.key : t.key);
      assert.equal(left.data.length, 1);
    });

    test("another tenant's key id is 404 and the key keeps working", async () => {
      const a = await newTenant("tenant a");
      const b = await newTenant("tenant b");
      const [aKey] = (await listKeys(a.key)).data;
      const r = await apiError(deleteKey(b.key, aKey!.id));
      assert.equal(r.status, 404);
      assert.equal(r.code, "SLUICE_API_KEY_NOT_FOUND");
      assert.match(r.message, /GET \/v1\/api-keys/);
      assert.equal(await whoIs(a.key), a.id);
      assert.equal((await listKeys(a.key)).data.length, 1);
      const unknown = await apiError(deleteKey(b.key, "key_nope"));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.code, "SLUICE_API_KEY_NOT_FOUND");
      // No Authorization header at all (null removes the client's).
      assert.equal((await apiError(sluice.get("/v1/api-keys", { headers: { authorization: null } }))).status, 401);
    });

    test("bad bodies are 422 with details and create nothing", async () => {
      const t = await newTenant("bodies");
      const refused = (e: SluiceApiError, what: string, field: string) => {
        assert.equal(e.status, 422, what);
        assert.equal(e.code, "SLUICE_VALIDATION_FAILED");
        assert.ok(
          e.fields.some((d) => d.field === field),
          `${what}: ${JSON.stringify(e.fields)}`,
        );
      };
      for (const name of ["", "x".repeat(201)]) {
        refused(await apiError(createKey(t.key, name)), JSON.stringify(name), "name");
      }
      // Bodies the SDK's types refuse to send (no name, a number for a name, an unknown field):
      // sent raw, since a client without types can send them.
      const untyped: [unknown, string][] = [
        [{}, "name"],
        [{ name: 5 }, "name"],
        [{ name: "ok", scopes: ["read"] }, "scopes"],
      ];
      for (const [body, field] of untyped) {
        const r = await s.api<ValidationFailed>("POST", "/v1/api-keys", body, { key: t.key });
        assert.equal(r.status, 422, JSON.stringify(body));
        assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
        assert.ok(
          r.body.error.details.some((d) => d.field === field),
          `${JSON.stringify(body)}: ${JSON.stringify(r.body.error.details)}`,
        );
      }
      // Not JSON at all: the SDK always sends JSON.
      const malformed = await s.api("POST", "/v1/api-keys", "{name:", { key: t.key });
      assert.equal(malformed.status, 400);
      assert.equal((await listKeys(t.key)).data.length, 1);
      assert.equal((await createKey(t.key, "x".repeat(200))).name.length, 200);
    });

    if (backend === "server") {
      test("a key deleted through one API process stops working in another on the same database", async () => {
        const s2 = await startSluice("server", { databaseUrl: s.databaseUrl, worker: false });
        try {
          const t = await newTenant("two processes");
          const k = await createKey(t.key, "shared");
          // Cached in both processes. s2 looks the key up after `cachedAt`, so its entry is good
          // until cachedAt + KEY_CACHE_TTL_MS at the earliest (this process's clock is s2's).
          const cachedAt = Date.now();
          for (const on of [s, s2, s, s2]) assert.equal(await whoIs(k.key, on), t.id);

          assert.equal(await deleteKey(t.key, k.id), undefined);
          assert.equal(await whoIs(k.key), 401, "the deleting process");
          // The other process drops it when the NOTIFY arrives (milliseconds). A 401 from s2 seen
          // before its cache entry could have expired can only come from that notification: left
          // to expire, the entry would answer t.id until then. So that instant, not a fixed second,
          // is the deadline: a loaded machine gets the whole TTL less the setup above, and a
          // process that missed the NOTIFY still fails.
          const expiresAt = cachedAt + KEY_CACHE_TTL_MS;
          let refusedAt = Infinity;
          await waitFor(
            async () => {
              const who = await whoIs(k.key, s2);
              if (who === 401) refusedAt = Math.min(refusedAt, Date.now());
              return who === 401;
            },
            {
              timeoutMs: Math.max(0, expiresAt - Date.now()),
              intervalMs: 5,
              message: "the second API process still accepts the deleted key as long as its cache entry lives",
            },
          );
          assert.ok(refusedAt < expiresAt, `refused ${refusedAt - expiresAt} ms after the cache entry could have expired`);
          assert.equal(await whoIs(t.key, s2), t.id);
        } finally {
          await s2.stop();
        }
      });
    }

    // Last: it deletes and restores the default key the other tests' `sluice` calls use.
    test("a deleted SLUICE_API_KEY is added again by the next start with it set", async () => {
      const spare = await createKey(s.apiKey, "spare");
      const env = await findApiKey(s.running.db, s.apiKey);
      assert.ok(env);
      assert.equal((await listKeys(s.apiKey)).data.find((k) => k.id === env.keyId)?.name, "SLUICE_API_KEY");
      assert.equal(await deleteKey(spare.key, env.keyId), undefined);
      assert.equal(await whoIs(s.apiKey), 401);
      // What every start does (src/app.ts): the key joins the default tenant again, under a new id.
      await ensureDefaultTenant(s.running.db, s.apiKey);
      assert.equal(await whoIs(s.apiKey), env.tenant.id);
      const back = await findApiKey(s.running.db, s.apiKey);
      assert.ok(back && back.keyId !== env.keyId);
      assert.equal((await listKeys(s.apiKey)).data.find((k) => k.id === back.keyId)?.name, "SLUICE_API_KEY");
    });
  });
}

for (const backend of BACKENDS) {
  describe(`API keys made before migration 0006, on ${backend} Postgres`, () => {
    test("get ids, names and a null prefix, and still authenticate", async () => {
      const store = await openTestStore(backend);
      try {
        const { db } = store;
        await migrate(
          db,
          loadMigrations().filter((m) => m.version < 6),
        );
        await db.exec(`
          INSERT INTO tenants (id, name, is_default) VALUES ('ten_a', 'default', true), ('ten_b', 'acme', false);
          INSERT INTO api_keys (key_hash, tenant_id, created_at) VALUES
            ('${sha256("sk_old_default_one")}', 'ten_a', '2025-01-01T00:00:00Z'),
            ('${sha256("sk_old_default_two")}', 'ten_a', '2025-01-01T00:00:00Z'),
            ('${sha256("sk_old_acme")}', 'ten_b', '2025-02-01T00:00:00.123Z');
        `);
        await migrate(db);

        const a = await listApiKeys(db, "ten_a", 100, null);
        assert.equal(a.length, 2);
        assert.notEqual(a[0]!.id, a[1]!.id);
        for (const k of a) {
          assert.match(k.id, /^key_[0-9a-f]{27}$/);
          // The id starts with created_at's milliseconds, like ids minted now.
          assert.equal(k.id.slice(4, 16), Date.parse("2025-01-01T00:00:00Z").toString(16).padStart(12, "0"));
          assert.equal(k.name, "default");
          assert.equal(k.prefix, null);
        }
        const [b] = await listApiKeys(db, "ten_b", 100, null);
        assert.equal(b!.name, "initial");
        assert.equal(b!.id.slice(4, 16), Date.parse("2025-02-01T00:00:00.123Z").toString(16).padStart(12, "0"));
        const owner = await findApiKey(db, "sk_old_acme");
        assert.ok(owner);
        assert.equal(owner.tenant.id, "ten_b");
        assert.equal(owner.keyId, b!.id);
      } finally {
        await store.close();
      }
    });
  });
}

// The auth cache itself, without a store: what it must never do is serve a deleted key.
describe("the API key cache", () => {
  const owner = (keyId: string): KeyOwner => ({
    keyId,
    tenant: { id: "ten_x", name: "x", alert_email: null, is_default: false, created_at: new Date(), updated_at: new Date() },
  });
  const counting = (answer: KeyOwner | null) => {
    const load = async () => {
      load.calls++;
      return answer;
    };
    load.calls = 0;
    return load;
  };

  test("answers a known key from memory, and looks again once it is forgotten", async () => {
    const cache = new KeyCache();
    const load = counting(owner("key_1"));
    await cache.lookup("h1", load);
    assert.equal((await cache.lookup("h1", load))?.keyId, "key_1");
    assert.equal(load.calls, 1);
    cache.forget("key_2");
    await cache.lookup("h1", load);
    assert.equal(load.calls, 1, "forgetting another key keeps this one");
    cache.forget("key_1");
    const gone = counting(null);
    assert.equal(await cache.lookup("h1", gone), null);
    assert.equal(gone.calls, 1);
  });

  test("a lookup under way while its key is deleted does not put it back", async () => {
    const cache = new KeyCache();
    let release: (o: KeyOwner) => void = () => undefined;
    const pending = cache.lookup("h1", () => new Promise<KeyOwner>((r) => (release = r)));
    cache.forget("key_1"); // the delete commits while the lookup still reads the old row
    release(owner("key_1"));
    assert.equal((await pending)?.keyId, "key_1"); // that request began before the delete
    const after = counting(null);
    assert.equal(await cache.lookup("h1", after), null);
    assert.equal(after.calls, 1, "the next request looked the key up again");
  });

  test("keeps a key for KEY_CACHE_TTL_MS from its lookup, then looks it up again", async (t: TestContext) => {
    // The two-process test above takes this lifetime as the longest a missed NOTIFY could hide.
    t.mock.timers.enable({ apis: ["Date"], now: 1_000_000 });
    const cache = new KeyCache();
    const load = counting(owner("key_1"));
    await cache.lookup("h1", load);
    t.mock.timers.tick(KEY_CACHE_TTL_MS - 1);
    await cache.lookup("h1", load);
    assert.equal(load.calls, 1, "still cached a millisecond before the TTL");
    t.mock.timers.tick(1);
    await cache.lookup("h1", load);
    assert.equal(load.calls, 2, "looked up again once the TTL has passed");
  });

  test("clear (a missed notification) drops every key", async () => {
    const cache = new KeyCache();
    const load = counting(owner("key_1"));
    await cache.lookup("h1", load);
    await cache.lookup("h2", load);
    cache.clear();
    await cache.lookup("h1", load);
    await cache.lookup("h2", load);
    assert.equal(load.calls, 4);
  });
});
