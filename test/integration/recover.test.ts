import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ENGINE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { apiError } from "../helpers/sdk.js";
import { Sluice, type Destination, type EventInput, type paths, type Recovery, type SluiceApiError } from "../../sdk/src/index.js";
import type { ValidationFailed } from "../helpers/api-types.js";
import { RECOVERY_STATUSES } from "../../src/policy/statuses.js";

// Recovery over a time range (POST /v1/destinations/{id}/recover), through the SDK: dead and
// discarded deliveries whose events occurred in [since, until) are delivered again, in occurred_at
// order, with the same webhook-id; nothing outside the range or in other statuses moves; the work
// is paged (page size 2 here, so every recovery below spans several pages) and survives the
// process that accepted it.

type RecoverBody = paths["/v1/destinations/{id}/recover"]["post"]["requestBody"]["content"]["application/json"];
type DestinationBody = paths["/v1/destinations"]["post"]["requestBody"]["content"]["application/json"];

const PAGE_SIZE = "2";
const ENV = { SLUICE_RECOVERY_PAGE_SIZE: PAGE_SIZE, SLUICE_ADMIN_KEY: "admin_recover" };

// Event times an hour ago and after, by minute: far enough back that "now" is never inside a range.
const BASE = Date.now() - 3 * 3600_000;
const at = (minute: number) => new Date(BASE + minute * 60_000).toISOString();

test("the recoveries status CHECK lists exactly RECOVERY_STATUSES", () => {
  const sql = readFileSync(new URL("../../migrations/0007_recoveries.sql", import.meta.url), "utf8");
  const m = /ALTER TABLE recoveries ADD CONSTRAINT \w+\s+CHECK \(status IN \(([^)]*)\)\)/.exec(sql);
  assert.ok(m, "no CHECK on recoveries.status");
  assert.deepEqual(
    [...m[1]!.matchAll(/'([^']*)'/g)].map((x) => x[1]),
    [...RECOVERY_STATUSES],
  );
});

for (const backend of ENGINE_BACKENDS) {
  describe(`recovery on ${backend} Postgres`, () => {
    let s: TestSluice;
    let sluice: Sluice;
    let rx: Receiver;
    before(async () => {
      s = await startSluice(backend, { env: ENV });
      sluice = new Sluice({ baseUrl: s.url, apiKey: s.apiKey });
      rx = await startReceiver();
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    const createDestination = (path: string, body: Partial<DestinationBody> = {}) =>
      sluice.post("/v1/destinations", {
        body: { url: `${rx.url}${path}`, event_types: ["unused.type"], retry_schedule_seconds: [], ...body },
      });
    const publish = async (d: Destination, minute: number, extra: Partial<EventInput> = {}) =>
      (
        await sluice.publish({
          type: "rcv.test",
          payload: { minute },
          occurred_at: at(minute),
          destination_ids: [d.id],
          ...extra,
        })
      ).id;
    const deliveries = async (d: Destination) =>
      (await sluice.get("/v1/deliveries", { params: { query: { destination_id: d.id, limit: 1000 } } })).data;
    const byEvent = async (d: Destination) => new Map((await deliveries(d)).map((x) => [x.event_id, x]));
    const recover = async (d: Destination, body: RecoverBody) => {
      const accepted = await sluice.post("/v1/destinations/{id}/recover", { params: { path: { id: d.id } }, body });
      assert.match(accepted.id, /^rcv_/);
      return accepted;
    };
    const waitDone = async (d: Destination, id: string) => {
      let last: Recovery | undefined;
      await waitFor(
        async () => {
          last = await sluice.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { id: d.id, rid: id } } });
          return last.status === "done";
        },
        { message: () => `recovery not done: ${JSON.stringify(last)}` },
      );
      return last!;
    };
    const minutesOf = (from: number) => rx.received.slice(from).map((r) => (r.json as { data: { minute: number } }).data.minute);

    test("dead and discarded deliveries in the range are delivered again, in occurred_at order, with their webhook-id", async () => {
      const d = await createDestination("/ordered", { ordered: true });
      // Dead: the receiver fails and there is no retry. 11, 13, 15 are in [10, 20); 5 and 25 are not.
      rx.respondWith((req) => ({ status: req.path === "/ordered" ? 500 : 200 }));
      const dead = new Map<number, string>();
      for (const minute of [15, 5, 13, 25, 11]) dead.set(minute, await publish(d, minute));
      await waitFor(async () => (await deliveries(d)).filter((x) => x.status === "dead").length === 5);
      const firstIds = new Map(
        rx.received
          .filter((r) => r.path === "/ordered")
          .map((r) => [(r.json as { data: { minute: number } }).data.minute, r.headers["webhook-id"]]),
      );
      assert.deepEqual(
        [...firstIds.keys()].sort((a, b) => a - b),
        [5, 11, 13, 15, 25],
      );

      // Delivered (in range, but not a default status).
      rx.respondWith({ status: 200 });
      const delivered = await publish(d, 14);
      await waitFor(async () => (await byEvent(d)).get(delivered)?.status === "delivered");

      // Discarded: held while paused, then resumed without replay. 12 and 16 in range, 8 not.
      const paused = await sluice.post("/v1/destinations/{id}/pause", { params: { path: { id: d.id } }, body: {} });
      assert.equal(paused.status, "paused");
      const discarded = new Map<number, string>();
      for (const minute of [16, 8, 12]) discarded.set(minute, await publish(d, minute));
      const resumed = await sluice.post("/v1/destinations/{id}/resume", { params: { path: { id: d.id } }, body: { replay: false } });
      assert.equal(resumed.discarded, 3);

      // Waiting (scheduled an hour ahead) in the range: a recovery leaves it alone.
      const waiting = await publish(d, 17, { deliver_at: new Date(Date.now() + 3600_000).toISOString() });
      const waitingBefore = (await byEvent(d)).get(waiting)!;

      const from = rx.received.length;
      const accepted = await recover(d, { since: at(10), until: at(20) });
      assert.equal(accepted.deliveries, 5, "11, 12, 13, 15 and 16 match");
      const done = await waitDone(d, accepted.id);
      assert.equal(done.requeued, 5);
      assert.equal(done.deliveries, 5);
      assert.deepEqual(done.statuses, ["dead", "discarded"]);
      assert.equal(done.since, at(10));
      assert.equal(done.until, at(20));
      assert.ok(done.finished_at);

      await rx.waitForCount(from + 5);
      // The ordered destination shows the order: strictly by occurred_at, across three pages.
      assert.deepEqual(minutesOf(from), [11, 12, 13, 15, 16]);
      for (const r of rx.received.slice(from)) {
        const minute = (r.json as { data: { minute: number } }).data.minute;
        const eventId = dead.get(minute) ?? discarded.get(minute);
        assert.equal(r.headers["webhook-id"], eventId, `minute ${minute}: the event's id`);
        if (dead.has(minute)) assert.equal(r.headers["webhook-id"], firstIds.get(minute), `minute ${minute}: as on its first attempt`);
      }

      await waitFor(async () => {
        const all = await byEvent(d);
        // Received is not yet recorded: wait for every write-back, the discarded ones' too.
        return (
          [11, 13, 15].every((m) => all.get(dead.get(m)!)?.status === "delivered") &&
          [12, 16].every((m) => all.get(discarded.get(m)!)?.status === "delivered")
        );
      });
      const after = await byEvent(d);
      // Kept ids; attempts go on counting (a dead one's first attempt stays #1).
      for (const m of [11, 13, 15]) assert.equal(after.get(dead.get(m)!)!.attempts, 2, `dead ${m}`);
      for (const m of [12, 16]) {
        assert.equal(after.get(discarded.get(m)!)!.status, "delivered", `discarded ${m}`);
        assert.equal(after.get(discarded.get(m)!)!.attempts, 1);
      }
      // Untouched: outside the range, another status, still waiting.
      assert.equal(after.get(dead.get(5)!)!.status, "dead");
      assert.equal(after.get(dead.get(25)!)!.status, "dead");
      assert.equal(after.get(discarded.get(8)!)!.status, "discarded");
      assert.equal(after.get(delivered)!.status, "delivered");
      assert.equal(after.get(delivered)!.attempts, 1);
      assert.equal(after.get(waiting)!.hold_reason, "scheduled");
      assert.equal(after.get(waiting)!.next_attempt_at, waitingBefore.next_attempt_at);
      assert.equal(after.get(waiting)!.updated_at, waitingBefore.updated_at);
      assert.deepEqual(minutesOf(from), [11, 12, 13, 15, 16], "nothing else was sent");
    });

    test("statuses: [delivered] sends delivered ones again; an empty range completes with nothing", async () => {
      const d = await createDestination("/delivered");
      rx.respondWith({ status: 200 });
      const from = rx.received.length;
      for (const minute of [30, 31, 32, 33, 34, 35, 36]) await publish(d, minute);
      await waitFor(async () => (await deliveries(d)).filter((x) => x.status === "delivered").length === 7);
      await rx.waitForCount(from + 7);

      const again = rx.received.length;
      const accepted = await recover(d, { since: at(31), until: at(35), statuses: ["delivered"] });
      assert.equal(accepted.deliveries, 4);
      assert.equal((await waitDone(d, accepted.id)).requeued, 4);
      await rx.waitForCount(again + 4);
      assert.deepEqual(
        minutesOf(again).sort((a, b) => a - b),
        [31, 32, 33, 34],
      );

      const none = await recover(d, { since: at(0) }); // dead and discarded, up to now: there are none
      assert.equal(none.deliveries, 0);
      const done = await waitDone(d, none.id);
      assert.equal(done.requeued, 0);
      assert.ok(Date.parse(done.until) > Date.parse(at(36)), "until defaults to now");
    });

    test("bad input is refused and writes nothing; another tenant's destination is 404", async () => {
      const d = await createDestination("/bad");
      const count = async () => (await s.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM recoveries"))[0]!.n;
      const before = await count();
      const refused = (e: SluiceApiError, what: string, field: string) => {
        assert.equal(e.status, 422, `${what}: ${e.message}`);
        assert.equal(e.code, "SLUICE_VALIDATION_FAILED");
        assert.ok(
          e.fields.some((x) => x.field === field),
          `${what}: ${JSON.stringify(e.fields)}`,
        );
      };
      const bad = async (body: RecoverBody, field: string) =>
        refused(
          await apiError(sluice.post("/v1/destinations/{id}/recover", { params: { path: { id: d.id } }, body })),
          JSON.stringify(body),
          field,
        );
      // Bodies the SDK's types refuse to send (no since, a status outside the enum, an unknown
      // field): sent raw, since a client without types can send them.
      const badRaw = async (body: unknown, field: string) => {
        const r = await s.api<ValidationFailed>("POST", `/v1/destinations/${d.id}/recover`, body);
        assert.equal(r.status, 422, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
        assert.ok(
          r.body.error.details.some((x) => x.field === field),
          `${JSON.stringify(body)}: ${JSON.stringify(r.body.error.details)}`,
        );
      };
      await badRaw({}, "since");
      await badRaw({ until: at(20) }, "since");
      await bad({ since: "yesterday" }, "since");
      await bad({ since: at(20), until: at(10) }, "until");
      await bad({ since: at(20), until: at(20) }, "until");
      await bad({ since: new Date(Date.now() + 3600_000).toISOString() }, "until"); // until defaults to now
      await badRaw({ since: at(10), statuses: ["queued"] }, "statuses[0]");
      await bad({ since: at(10), statuses: [] }, "statuses");
      await bad({ since: at(10), statuses: ["dead", "dead"] }, "statuses");
      await badRaw({ since: at(10), colour: "red" }, "colour");

      const t = await new Sluice({ baseUrl: s.url, apiKey: "admin_recover" }).post("/v1/tenants", { body: { name: "other" } });
      const other = new Sluice({ baseUrl: s.url, apiKey: t.api_key });
      const theirs = await other.post("/v1/destinations", { body: { url: `${rx.url}/theirs`, event_types: ["unused.type"] } });
      const recoverOf = (id: string) => sluice.post("/v1/destinations/{id}/recover", { params: { path: { id } }, body: { since: at(0) } });
      const notMine = await apiError(recoverOf(theirs.id));
      assert.equal(notMine.status, 404);
      assert.equal(notMine.code, "SLUICE_DESTINATION_NOT_FOUND");
      assert.equal((await apiError(recoverOf("dst_nope"))).status, 404);
      assert.equal(await count(), before, "no recovery was recorded");

      // Reading: their recovery is 404 to us; an unknown one names the recovery.
      const r = await other.post("/v1/destinations/{id}/recover", { params: { path: { id: theirs.id } }, body: { since: at(0) } });
      assert.match(r.id, /^rcv_/);
      const recovery = (id: string, rid: string) => sluice.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { id, rid } } });
      const peek = await apiError(recovery(theirs.id, r.id));
      assert.equal(peek.status, 404);
      assert.equal(peek.code, "SLUICE_DESTINATION_NOT_FOUND");
      const unknown = await apiError(recovery(d.id, r.id));
      assert.equal(unknown.status, 404);
      assert.equal(unknown.code, "SLUICE_RECOVERY_NOT_FOUND");
    });
  });
}

describe("recovery on server Postgres, across processes", () => {
  let api: TestSluice;
  let sluice: Sluice;
  let worker: TestSluice | undefined;
  let rx: Receiver;
  before(async () => {
    // An API-only process accepts the recovery; no worker runs until the test starts one.
    api = await startSluice("server", { env: ENV, worker: false });
    sluice = new Sluice({ baseUrl: api.url, apiKey: api.apiKey });
    rx = await startReceiver();
  });
  after(async () => {
    await worker?.stop();
    await rx?.close();
    await api?.stop();
  });

  test("a recovery accepted by one process is carried out by a worker that starts later", async () => {
    const d = await sluice.post("/v1/destinations", { body: { url: `${rx.url}/later`, event_types: ["unused.type"] } });
    const path = { id: d.id };
    assert.equal((await sluice.post("/v1/destinations/{id}/pause", { params: { path }, body: {} })).status, "paused");
    for (const minute of [3, 1, 2]) {
      const ev = await sluice.publish({ type: "rcv.later", payload: { minute }, occurred_at: at(minute), destination_ids: [d.id] });
      assert.equal(ev.deliveries, 1);
    }
    assert.equal((await sluice.post("/v1/destinations/{id}/resume", { params: { path }, body: { replay: false } })).discarded, 3);

    const accepted = await sluice.post("/v1/destinations/{id}/recover", { params: { path }, body: { since: at(0) } });
    assert.equal(accepted.deliveries, 3);
    const recovery = () => sluice.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { ...path, rid: accepted.id } } });
    const pending = await recovery();
    assert.equal(pending.status, "running");
    assert.equal(pending.requeued, 0);
    assert.equal(pending.finished_at, null);

    worker = await startSluice("server", { env: ENV, api: false, databaseUrl: api.databaseUrl });
    await waitFor(async () => {
      const r = await recovery();
      return r.status === "done" && r.requeued === 3;
    });
    await rx.waitForCount(3);
    assert.deepEqual(rx.received.map((r) => (r.json as { data: { minute: number } }).data.minute).sort(), [1, 2, 3]);
  });

  test("two workers share a many-page recovery: every delivery is sent again exactly once", async () => {
    worker ??= await startSluice("server", { env: ENV, api: false, databaseUrl: api.databaseUrl });
    const second = await startSluice("server", { env: ENV, api: false, databaseUrl: api.databaseUrl });
    try {
      const d = await sluice.post("/v1/destinations", { body: { url: `${rx.url}/two`, event_types: ["unused.type"] } });
      const path = { id: d.id };
      await sluice.post("/v1/destinations/{id}/pause", { params: { path }, body: {} });
      const n = 40; // 20 pages of SLUICE_RECOVERY_PAGE_SIZE=2, for two workers to contend over
      await sluice.post("/v1/events/batch", {
        body: {
          events: Array.from({ length: n }, (_, i) => ({ type: "rcv.two", payload: { i }, occurred_at: at(10), destination_ids: [d.id] })),
        },
      });
      assert.equal((await sluice.post("/v1/destinations/{id}/resume", { params: { path }, body: { replay: false } })).discarded, n);

      const accepted = await sluice.post("/v1/destinations/{id}/recover", { params: { path }, body: { since: at(0) } });
      assert.equal(accepted.deliveries, n);
      await waitFor(async () => {
        const r = await sluice.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { ...path, rid: accepted.id } } });
        return r.status === "done";
      });
      const done = await sluice.get("/v1/destinations/{id}/recoveries/{rid}", { params: { path: { ...path, rid: accepted.id } } });
      assert.equal(done.requeued, n, "each delivery requeued once, never twice");
      const two = () => rx.received.filter((r) => r.path === "/two");
      await waitFor(() => two().length >= n);
      await new Promise((r) => setTimeout(r, 500)); // a page processed twice would send more
      assert.equal(two().length, n);
      assert.equal(new Set(two().map((r) => r.headers["webhook-id"])).size, n);
    } finally {
      await second.stop();
    }
  });
});
