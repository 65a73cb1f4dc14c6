import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { onServer } from "../helpers/db.js";
import { apiError } from "../helpers/sdk.js";
import { Sluice, type Event, type paths } from "../../sdk/src/index.js";
import type { ValidationFailed } from "../helpers/api-types.js";
import type pg from "pg";
import { eventSearchStatements, PREFIX_WALK_ROWS } from "../../src/db/queries/events.js";
import { rowsRead, type PlanNode } from "../helpers/plans.js";

// Finding events (GET /v1/events), through the SDK: by exact type or type prefix, by occurred_at
// range, newest first, paged without duplicates or gaps (ties in occurred_at, microseconds), per
// tenant; and on a Postgres server, the plan of each kind of search uses the indexes of
// migrations/0007.

type Search = NonNullable<paths["/v1/events"]["get"]["parameters"]["query"]>;

for (const backend of BACKENDS) {
  describe(`finding events on ${backend} Postgres`, () => {
    let s: TestSluice;
    let sluice: Sluice;
    before(async () => {
      s = await startSluice(backend, { worker: false, env: { SLUICE_ADMIN_KEY: "admin_events" } });
      sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
    });
    after(async () => s?.stop());

    /** The default tenant's client, or one with another tenant's key. */
    const as = (key?: string) => (key ? new Sluice({ baseUrl: s.url, apiKey: key }) : sluice);
    const publish = async (type: string, occurredAt: string, key?: string) =>
      (await as(key).publish({ type, payload: { type, occurredAt }, occurred_at: occurredAt })).id;
    const list = (query: Search, key?: string) => as(key).get("/v1/events", { params: { query } });
    /** Every page of a search, following next_cursor. */
    const all = async (query: Search, limit: number) => {
      const pages: Event[][] = [];
      let cursor: string | null = null;
      do {
        const p = await list({ ...query, limit, ...(cursor ? { cursor } : {}) });
        pages.push(p.data);
        cursor = p.next_cursor;
        assert.ok(pages.length < 100, "paging does not end");
      } while (cursor);
      return pages;
    };
    const minute = (m: number) => new Date(Date.UTC(2021, 0, 1, 0, m)).toISOString();

    test("type: exact, or a prefix ending in *; newest first; each item is the event without deliveries", async () => {
      const ids: Record<string, string> = {};
      const types = ["t1.order.created", "t1.order.paid", "t1.order.refund.done", "t1.orders.x", "t1.order", "t1.invoice.paid"];
      for (const [i, type] of types.entries()) ids[type] = await publish(type, minute(i));

      const exact = await list({ type: "t1.order.paid" });
      assert.deepEqual(
        exact.data.map((e) => e.id),
        [ids["t1.order.paid"]],
      );
      const e = exact.data[0]!;
      assert.equal(e.type, "t1.order.paid");
      assert.deepEqual(e.payload, { type: "t1.order.paid", occurredAt: minute(1) });
      assert.equal(e.occurred_at, minute(1));
      assert.equal(e.deliver_at, null);
      assert.ok(e.created_at);
      assert.equal("deliveries" in e, false);

      const prefix = await list({ type: "t1.order.*" });
      assert.deepEqual(
        prefix.data.map((x) => x.type),
        ["t1.order.refund.done", "t1.order.paid", "t1.order.created"],
        "newest first; not t1.orders.x nor t1.order",
      );
      assert.deepEqual(
        (await list({ type: "t1.*" })).data.map((x) => x.type),
        [...types].reverse(),
      );
      assert.deepEqual(
        (await list({ type: "t1.order*" })).data.map((x) => x.type),
        ["t1.order", "t1.orders.x", "t1.order.refund.done", "t1.order.paid", "t1.order.created"],
      );
      assert.equal((await list({ type: "t1.nothing" })).data.length, 0);
      assert.equal((await list({ type: "t1.order.paid" })).next_cursor, null);
    });

    test("since is inclusive, until exclusive", async () => {
      for (let m = 0; m < 6; m++) await publish("t2.tick", minute(m));
      const got = await list({ type: "t2.tick", since: minute(1), until: minute(4) });
      assert.deepEqual(
        got.data.map((e) => e.occurred_at),
        [minute(3), minute(2), minute(1)],
      );
      assert.equal((await list({ type: "t2.tick", since: minute(5) })).data.length, 1);
      assert.equal((await list({ type: "t2.tick", until: minute(1) })).data.length, 1);
    });

    test("paging: every event once, in order, across pages, with ties and microseconds", async () => {
      const published: string[] = [];
      // occurred_at left to the store: now(), to the microsecond. One batch shares it (ties,
      // ordered by id); single events differ from each other by microseconds, which a cursor
      // that kept only milliseconds would skip or repeat.
      const batch = await sluice.post("/v1/events/batch", {
        body: { events: Array.from({ length: 9 }, (_, i) => ({ type: "t3.page", payload: { i } })) },
      });
      published.push(...batch.events.map((e) => e.id));
      for (let i = 0; i < 9; i++) published.push((await sluice.publish({ type: "t3.page", payload: { i } })).id);
      for (let i = 0; i < 7; i++) published.push(await publish("t3.page", minute(100 + i)));

      const whole = (await list({ type: "t3.page", limit: 1000 })).data;
      assert.equal(whole.length, 25);
      const pages = await all({ type: "t3.page" }, 7);
      assert.deepEqual(
        pages.map((p) => p.length),
        [7, 7, 7, 4],
      );
      const paged = pages.flat().map((e) => e.id);
      assert.equal(new Set(paged).size, 25, "no duplicates");
      assert.deepEqual(
        paged,
        whole.map((e) => e.id),
        "the same order as one page",
      );
      assert.deepEqual([...paged].sort(), [...published].sort(), "no gaps");
      // Newest first: by occurred_at, then id.
      for (let i = 1; i < whole.length; i++) {
        const [a, b] = [whole[i - 1]!, whole[i]!];
        assert.ok(a.occurred_at > b.occurred_at || (a.occurred_at === b.occurred_at && a.id > b.id), `${a.id} before ${b.id}`);
      }
      // A page that ends exactly at the last event: the next one is empty and ends the list.
      const five = await all({ type: "t3.page" }, 5);
      assert.deepEqual(
        five.map((p) => p.length),
        [5, 5, 5, 5, 5, 0],
      );
    });

    test("a type prefix behind more newer events of other types than the first statement walks: every event once, in order, across pages", async () => {
      const at = (m: number, s = 0) => new Date(Date.UTC(2022, 0, 1, 0, m, s)).toISOString();
      const batch = async (events: { type: string; occurred_at: string }[]) =>
        (await sluice.post("/v1/events/batch", { body: { events: events.map((e) => ({ ...e, payload: {} })) } })).events.map((e) => e.id);
      // Old matching events of three types, then more non-matching ones than one walk reads, then
      // a few matching ones newer than all: the first page comes from the walk, the rest type by type.
      const old = await batch(Array.from({ length: 25 }, (_, i) => ({ type: `t5.${"abc"[i % 3]}`, occurred_at: at(i) })));
      for (let off = 0; off < PREFIX_WALK_ROWS + 200; off += 1000)
        await batch(
          Array.from({ length: Math.min(1000, PREFIX_WALK_ROWS + 200 - off) }, (_, i) => ({
            type: "t5x.noise",
            occurred_at: at(100, off + i),
          })),
        );
      const recent = await batch(Array.from({ length: 10 }, (_, i) => ({ type: "t5.d", occurred_at: at(500 + i) })));

      const newestFirst = (ids: string[]) => [...ids].reverse();
      const expected = [...newestFirst(recent), ...newestFirst(old)];
      const whole = (await list({ type: "t5.*", limit: 1000 })).data.map((e) => e.id);
      assert.deepEqual(whole, expected, "one page: every matching event, newest first");
      const pages = await all({ type: "t5.*" }, 7);
      assert.deepEqual(
        pages.map((p) => p.length),
        [7, 7, 7, 7, 7, 0],
      );
      assert.deepEqual(
        pages.flat().map((e) => e.id),
        expected,
        "pages: the same events in the same order",
      );
      assert.deepEqual(
        (await all({ type: "t5.*", since: at(10), until: at(505) }, 4)).flat().map((e) => e.id),
        [...newestFirst(recent.slice(0, 5)), ...newestFirst(old.slice(10))],
        "with a time range",
      );
    });

    test("a key sees only its own tenant's events", async () => {
      const t = await as("admin_events").post("/v1/tenants", { body: { name: "other" } });
      const theirs = await publish("t4.secret", minute(1), t.api_key);
      const mine = await publish("t4.secret", minute(2));
      assert.deepEqual(
        (await list({ type: "t4.secret" })).data.map((e) => e.id),
        [mine],
      );
      assert.deepEqual(
        (await list({ type: "t4.secret" }, t.api_key)).data.map((e) => e.id),
        [theirs],
      );
      const everything = await all({ type: "t4.*" }, 1000);
      assert.ok(!everything.flat().some((e) => e.id === theirs));
    });

    test("a bad cursor, type, time or limit is 422 naming the parameter", async () => {
      const bad = async (query: Search, field: string) => {
        const e = await apiError(list(query));
        assert.equal(e.status, 422, `${JSON.stringify(query)}: ${e.message}`);
        assert.equal(e.code, "SLUICE_VALIDATION_FAILED");
        assert.ok(
          e.fields.some((d) => d.field === field),
          `${JSON.stringify(query)}: ${JSON.stringify(e.fields)}`,
        );
      };
      await bad({ cursor: "nope" }, "query.cursor");
      await bad({ cursor: Buffer.from("dlv_0000000000000000000000000000").toString("base64url") }, "query.cursor");
      await bad(
        { cursor: Buffer.from("2021-02-30T00:00:00.000000Z evt_000000000000000000000000000").toString("base64url") },
        "query.cursor",
      );
      await bad({ type: "order.**" }, "query.type");
      await bad({ type: "order created" }, "query.type");
      await bad({ type: "" }, "query.type");
      await bad({ since: "yesterday" }, "query.since");
      await bad({ since: minute(5), until: minute(4) }, "query.until");
      await bad({ since: minute(5), until: minute(5) }, "query.until");
      await bad({ limit: 0 }, "query.limit");
      // A parameter the SDK's types do not have: sent raw, as a client without types can.
      const unknown = await s.api<ValidationFailed>("GET", "/v1/events?colour=red");
      assert.equal(unknown.status, 422, JSON.stringify(unknown.body));
      assert.equal(unknown.body.error.code, "SLUICE_VALIDATION_FAILED");
      assert.ok(
        unknown.body.error.details.some((d) => d.field === "query.colour"),
        JSON.stringify(unknown.body.error.details),
      );
      // No Authorization header at all (null removes the client's).
      const none = await apiError(sluice.get("/v1/events", { headers: { authorization: null } }));
      assert.equal(none.status, 401);
    });

    if (backend === "server") {
      test("each kind of search is an index scan on events, not a sequential scan", async () => {
        const me = await sluice.get("/v1/tenant");
        await onServer(s.databaseUrl!, async (c) => {
          // Enough rows, over two tenants and many types, that the planner weighs its choices.
          await c.query(
            `INSERT INTO events (id, tenant_id, type, payload, occurred_at)
             SELECT 'evt_' || lpad(to_hex(i), 27, '0'), CASE WHEN i % 4 = 0 THEN 'ten_other' ELSE $1 END,
                    'bulk' || (i % 50) || '.kind' || (i % 7), '{}'::json, timestamptz '2020-01-01' + make_interval(secs => i)
               FROM generate_series(1, 6000) AS i`,
            [me.id],
          );
          await c.query("ANALYZE events");
          const cursor = { at: "2020-01-01T00:30:00.000000Z", id: "evt_000000000000000000000000708" };
          const searches = {
            all: eventSearchStatements(me.id, {}, 100, null),
            "all, next page": eventSearchStatements(me.id, {}, 100, cursor),
            "time range": eventSearchStatements(
              me.id,
              { since: new Date("2020-01-01T00:10:00Z"), until: new Date("2020-01-01T00:20:00Z") },
              100,
              null,
            ),
            "exact type": eventSearchStatements(me.id, { type: "bulk7.kind0" }, 100, null),
            "exact type, next page": eventSearchStatements(me.id, { type: "bulk7.kind0" }, 100, cursor),
            "type prefix": eventSearchStatements(me.id, { type: "bulk7.*" }, 100, null),
          };
          for (const [name, statements] of Object.entries(searches))
            for (const st of statements) {
              const plan = (await c.query<{ "QUERY PLAN": string }>(`EXPLAIN ${st.sql}`, st.params)).rows
                .map((r) => r["QUERY PLAN"])
                .join("\n");
              assert.doesNotMatch(plan, /Seq Scan on events/, `${name}:\n${plan}`);
              assert.match(
                plan,
                /Index (Only )?Scan( Backward)? using events_tenant_|Bitmap Index Scan on events_tenant_/,
                `${name}:\n${plan}`,
              );
            }
          assert.equal(searches["type prefix"].length, 2, "a prefix search: the walk, then type by type");

          // A prefix whose 2,000 events (5 types) are older than 20,000 of another type: one walk
          // newest first, which the planner picks for so common a prefix, reads all 20,000 before
          // the first match. The two statements read at most the walk's rows and the newest page
          // of each of the 5 types.
          await c.query(
            `INSERT INTO events (id, tenant_id, type, payload, occurred_at)
             SELECT 'evt_r' || lpad(to_hex(i), 26, '0'), $1, CASE WHEN i <= 2000 THEN 'rare.kind' || (i % 5) ELSE 'noise' END, '{}'::json,
                    timestamptz '2021-01-01' + make_interval(secs => i)
               FROM generate_series(1, 22000) AS i`,
            [me.id],
          );
          await c.query("ANALYZE events");
          let read = 0;
          for (const st of eventSearchStatements(me.id, { type: "rare.*" }, 100, null)) read += await rowsReadFrom(c, "events", st);
          assert.ok(read <= PREFIX_WALK_ROWS + 5 * 100 + 100 + 50, `${read} rows of events read`);
        });
      });
    }
  });
}

/** Rows the statement read from `table` (returned or filtered out, over every loop), by EXPLAIN ANALYZE. */
async function rowsReadFrom(c: pg.Client, table: string, st: { sql: string; params: unknown[] }): Promise<number> {
  const res = await c.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${st.sql}`, st.params);
  return rowsRead(res.rows[0]!["QUERY PLAN"][0].Plan, table);
}
