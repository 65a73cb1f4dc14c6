import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { ENGINE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import { randomUUID } from "node:crypto";
import type { Delivery, Destination, EventBatchAccepted, Page, ValidationFailed } from "../helpers/api-types.js";
import { claim } from "../../src/dispatch/claim.js";
import { ResultWriter } from "../../src/dispatch/result-writer.js";

// One destination's fault stays its own. A destination whose stored row the workers cannot plan
// with — its config outside what the API admits, or state that makes planning throw — is set
// aside (paused, with an alert and an error line) and every other destination of the same claims
// delivers. Planted in SQL, the way a row written before a bound existed, by hand, or by a bug
// would be: the API itself refuses such values (the last test).

const HEALTHY = 99;

for (const backend of ENGINE_BACKENDS) {
  describe(`a faulty destination is set aside, the others deliver (${backend})`, () => {
    let s: TestSluice;
    let rx: Receiver;
    const lines: Record<string, unknown>[] = [];
    before(async () => {
      const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
      // Small claims, so the faulty row shares each claim with healthy ones.
      s = await startSluice(backend, { log, env: { SLUICE_CLAIM_BATCH_SIZE: "10" } });
      rx = await startReceiver();
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    async function plantAndDeliver(plant: string, type: string): Promise<Destination> {
      const ids: string[] = [];
      for (let i = 0; i <= HEALTHY; i++) {
        const d = await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/${type}/${i}`,
          event_types: [`${type}.*`],
          rate_limit: { max_per_second: 50 },
        });
        assert.equal(d.status, 201);
        ids.push(d.body.id);
      }
      // The faulty one sorts among the others: its claim is shared with healthy destinations.
      const faulty = ids[HEALTHY >> 1]!;
      await s.running.db.query(`UPDATE destinations SET ${plant} WHERE id = $1`, [faulty]);
      rx.reset();
      const events = Array.from({ length: 3 }, (_, i) => ({ type: `${type}.created`, payload: { i } }));
      const published = await s.api<EventBatchAccepted>("POST", "/v1/events/batch", { events });
      assert.equal(published.status, 202);
      assert.deepEqual(
        published.body.events.map((e) => e.deliveries),
        [HEALTHY + 1, HEALTHY + 1, HEALTHY + 1],
      );
      // Every healthy destination gets all three; the faulty one none.
      await rx.waitForCount(3 * HEALTHY, 30_000);
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${faulty}`)).body.status === "paused", {
        timeoutMs: 10_000,
        message: () => JSON.stringify(lines.filter((l) => (l.level as number) >= 40).slice(0, 5)),
      });
      const faultyIndex = HEALTHY >> 1;
      assert.equal(rx.countByPath(`/${type}/${faultyIndex}`), 0, "the faulty destination was sent to");
      for (let i = 0; i <= HEALTHY; i++) if (i !== faultyIndex) assert.equal(rx.countByPath(`/${type}/${i}`), 3, `destination ${i}`);
      const d = (await s.api<Destination>("GET", `/v1/destinations/${faulty}`)).body;
      // Held, not lost: its three deliveries wait for a person.
      assert.equal(d.queued_events, 3);
      const alerts = await s.running.db.query<{ type: string; reason: string }>(
        "SELECT type, payload->>'reason' AS reason FROM alerts WHERE destination_id = $1",
        [faulty],
      );
      assert.deepEqual(
        alerts.map((a) => a.type),
        ["destination.paused"],
      );
      assert.equal(alerts[0]!.reason, d.pause_reason);
      const line = lines.find((l) => l.destination_id === faulty && l.msg === "destination set aside: paused until a person resumes it");
      assert.ok(line, "no error line for the destination set aside");
      assert.equal(line.level, 50);
      return d;
    }

    test("a stored rate of 1e-320 per second: invalid_config", async () => {
      const d = await plantAndDeliver(`rate_limit = '{"max_per_second": 1e-320}'`, "bad-rate");
      assert.match(
        d.pause_reason ?? "",
        /^invalid_config: rate_limit\.max_per_second is 1e-320; it must be between 0\.001 and 100000; correct it with PATCH/,
      );
      // Mended and resumed, it delivers what it held.
      rx.reset();
      assert.equal((await s.api("PATCH", `/v1/destinations/${d.id}`, { rate_limit: { max_per_second: 5 } })).status, 200);
      assert.equal((await s.api("POST", `/v1/destinations/${d.id}/resume`)).status, 200);
      await rx.waitForCount(3, 10_000);
    });

    test("state that makes planning throw: internal_error, with the stack in the log", async () => {
      // Adaptive pace whose stored latency is not a number: the concurrency it derives is NaN.
      const d = await plantAndDeliver(
        `adaptive = '{"enabled": true}', pace_state = '{"rate": 10, "concurrency": 2, "baselineMs": "slow", "probing": true}'`,
        "bad-pace",
      );
      assert.match(d.pause_reason ?? "", /^internal_error: planning its claim failed \(RangeError: .*\); Sluice's log has the details/);
      const line = lines.find((l) => l.destination_id === d.id && l.code === "internal_error");
      assert.match(String((line?.err as { stack?: string } | undefined)?.stack), /claim-plan/);
    });
  });
}

describe("the API refuses what once stopped every tenant", () => {
  let s: TestSluice;
  before(async () => {
    s = await startSluice("embedded", { worker: false, env: { SLUICE_MAX_DELIVERIES_PER_REQUEST: "1000" } });
  });
  after(async () => {
    await s?.stop();
  });

  test("a rate of 1e-320 per second answers 422 naming the range, and writes nothing", async () => {
    const r = await s.api<ValidationFailed>("POST", "/v1/destinations", {
      url: "https://example.com/hook",
      rate_limit: { max_per_second: 1e-320 },
    });
    assert.equal(r.status, 422);
    assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
    const detail = r.body.error.details.find((x) => x.field === "rate_limit.max_per_second");
    assert.ok(detail, JSON.stringify(r.body));
    assert.match(detail.message, /0\.001/);
    assert.match(detail.message, /100000/);
    const rows = await s.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM destinations");
    assert.equal(rows[0]!.n, 0);
  });

  test("events: deliver_at at most a year ahead, occurred_at at most a day, payloads at most 128 deep", async () => {
    const day = 86_400_000;
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    const nested = (depth: number) => JSON.parse("[".repeat(depth) + "]".repeat(depth)) as unknown;
    const refused: [Record<string, unknown>, string, RegExp][] = [
      [{ deliver_at: at(366 * day) }, "deliver_at", /more than 365 days ahead/],
      [{ occurred_at: at(25 * 3_600_000) }, "occurred_at", /more than 24 hours ahead/],
      [{ deliver_at: "0000-01-01T00:00:00Z" }, "deliver_at", /between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z/],
      [{ payload: nested(129) }, "payload", /more than 128 levels deep/],
    ];
    for (const [over, field, message] of refused) {
      const r = await s.api<ValidationFailed>("POST", "/v1/events", { type: "bounds.x", payload: {}, ...over });
      assert.equal(r.status, 422, JSON.stringify(over).slice(0, 80));
      const detail = r.body.error.details.find((d) => d.field === field);
      assert.match(detail?.message ?? JSON.stringify(r.body), message);
    }
    const events = await s.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM events");
    assert.equal(events[0]!.n, 0, "a refused publish wrote an event");
    for (const over of [{ deliver_at: at(364 * day) }, { occurred_at: at(23 * 3_600_000) }, { payload: nested(128) }]) {
      assert.equal((await s.api("POST", "/v1/events", { type: "bounds.x", payload: {}, ...over })).status, 202);
    }
  });

  test("one publish creates at most SLUICE_MAX_DELIVERIES_PER_REQUEST deliveries", async () => {
    for (const i of [1, 2]) {
      assert.equal((await s.api("POST", "/v1/destinations", { url: `https://example.com/${i}`, event_types: ["fan.*"] })).status, 201);
    }
    const batch = (n: number) => ({ events: Array.from({ length: n }, (_, i) => ({ type: "fan.out", payload: { i } })) });
    const over = await s.api<ValidationFailed>("POST", "/v1/events/batch", batch(501));
    assert.equal(over.status, 413);
    assert.equal(over.body.error.code, "SLUICE_EVENT_FANOUT_TOO_LARGE");
    assert.match(over.body.error.message, /would create 1002 deliveries .* at most 1000 .* smaller batches/);
    assert.equal((await s.api("POST", "/v1/events/batch", batch(500))).status, 202);
  });

  test("a destination whose stored config is out of bounds cannot be resumed until it is mended", async () => {
    const d = (await s.api<Destination>("POST", "/v1/destinations", { url: "https://example.com/mend", event_types: ["mend.*"] })).body;
    await s.running.db.query(`UPDATE destinations SET max_concurrency = 0 WHERE id = $1`, [d.id]);
    assert.equal((await s.api("POST", `/v1/destinations/${d.id}/pause`)).status, 200);
    // Read as stored, so its owner sees what to mend.
    const shown = await s.api<Destination>("GET", `/v1/destinations/${d.id}`);
    assert.equal(shown.status, 200);
    assert.equal(shown.body.max_concurrency, 0);
    const refused = await s.api<ValidationFailed>("POST", `/v1/destinations/${d.id}/resume`);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, "SLUICE_DESTINATION_CONFIG_INVALID");
    assert.match(refused.body.error.message, /max_concurrency is 0; it must be a whole number between 1 and 1000/);
    assert.equal((await s.api("PATCH", `/v1/destinations/${d.id}`, { max_concurrency: 3 })).status, 200);
    assert.equal((await s.api("POST", `/v1/destinations/${d.id}/resume`)).status, 200);
  });
});

for (const backend of ENGINE_BACKENDS) {
  describe(`a write-back the store refuses for one destination (${backend})`, () => {
    test("the other destinations' results land; that one is set aside, its attempts counted", async () => {
      const s = await startSluice(backend, { worker: false });
      try {
        const ids: string[] = [];
        for (const name of ["a", "b", "c"]) {
          const d = await s.api<Destination>("POST", "/v1/destinations", { url: `http://127.0.0.1:9/${name}`, event_types: ["wb.*"] });
          ids.push(d.body.id);
        }
        await s.api("POST", "/v1/events/batch", { events: [0, 1].map((i) => ({ type: "wb.x", payload: { i } })) });
        const opts = { capacity: 100, batchSize: 10, grantCap: 10, leaseMarginSeconds: 10, rateSendJitterMs: 0, shard: null };
        const claimed = await claim(s.running.db, { ...opts, leaseToken: randomUUID() });
        assert.equal(claimed.deliveries.length, 6);
        const faulty = ids[1]!;
        const done: string[] = [];
        const writer = new ResultWriter(s.running.db, pino({ level: "silent" }), {}, (x) => done.push(...x), sleep);
        for (const d of claimed.deliveries) {
          const dest = claimed.destinations.get(d.destination_id)!;
          writer.add({
            destinationId: d.destination_id,
            deliveryId: d.id,
            leaseToken: d.lease_token,
            attemptNo: d.attempts,
            failuresBefore: d.failures,
            retrySchedule: dest.retry_schedule_seconds,
            throttleSchedule: dest.throttle_schedule_seconds,
            startedAt: new Date(),
            publishedMs: d.created_ms,
            // Postgres text cannot hold NUL: the one value in this batch the store refuses.
            result: {
              statusCode: d.destination_id === faulty ? 500 : 200,
              errorClass: null,
              errorMessage: d.destination_id === faulty ? "bad\u0000byte" : null,
              retryAfter: null,
              responseBody: "",
              latencyMs: 5,
            },
          });
        }
        const left = await writer.flush(Date.now() + 20_000);
        assert.deepEqual(left, []);
        assert.equal(done.length, 6, "every result is written or given up on: no send slot stays taken");
        for (const id of ids) {
          const page = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${id}`)).body.data;
          if (id === faulty) {
            // Held while paused; the requests were made, so each counts as an attempt.
            assert.deepEqual(
              page.map((x) => [x.status, x.hold_reason, x.attempts]),
              [
                ["held", "paused", 1],
                ["held", "paused", 1],
              ],
            );
          } else {
            assert.deepEqual(
              page.map((x) => x.status),
              ["delivered", "delivered"],
            );
          }
        }
        const d = (await s.api<Destination>("GET", `/v1/destinations/${faulty}`)).body;
        assert.match(d.pause_reason ?? "", /^internal_error: recording its results failed/);
      } finally {
        await s.stop();
      }
    });
  });
}
