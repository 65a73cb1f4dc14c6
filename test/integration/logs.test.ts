import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { DateTime } from "luxon";
import { pino } from "pino";
import { FEATURE_BACKENDS, startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import type { Destination, Tenant } from "../helpers/api-types.js";

// The log lines operators alert on (docs/logs.md), captured from a real Sluice: one per failed
// attempt, one per state transition — never one per claim — and never a payload or a secret.

interface Line {
  level: number;
  msg: string;
  [field: string]: unknown;
}

const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const PAYLOAD_MARKER = "payload-marker-7f3c9d";
const BODY_MARKER = "response-body-marker-51e0";
const NO_WAIT_RETRIES = Array.from({ length: 30 }, () => 0);

/** Local wall time `offsetS` seconds from now in UTC, as quiet_start/quiet_end take it. */
function wall(offsetS: number): string {
  return DateTime.now().plus({ seconds: offsetS }).toUTC().toFormat("HH:mm:ss");
}

for (const backend of FEATURE_BACKENDS) {
  describe(`log lines on ${backend} Postgres`, () => {
    const raw: string[] = [];
    let s: TestSluice;
    let rx: Receiver;
    let tenantId: string;
    before(async () => {
      const log = pino({ level: "debug" }, { write: (line: string) => void raw.push(line) });
      s = await startSluice(backend, { log });
      rx = await startReceiver();
      tenantId = (await s.api<Tenant>("GET", "/v1/tenant")).body.id;
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    const lines = (): Line[] => raw.map((l) => JSON.parse(l) as Line);
    const about = (destinationId: string, msg: string): Line[] =>
      lines().filter((l) => l.destination_id === destinationId && l.msg === msg);
    const dump = (destinationId: string) => () =>
      lines()
        .filter((l) => l.destination_id === destinationId)
        .map((l) => `${l.level} ${l.msg}`)
        .join("\n");

    test("a failed attempt, a 429 and a success each log what happened, without payloads, bodies or secrets", async () => {
      rx.reset();
      let n = 0;
      rx.respondWith(() => {
        n++;
        if (n === 1) return { status: 500, body: BODY_MARKER };
        if (n === 2) return { status: 429, headers: { "retry-after": "1" }, body: BODY_MARKER };
        return { status: 200, body: BODY_MARKER };
      });
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/flaky`,
          event_types: ["lg.*"],
          retry_schedule_seconds: [0, 0, 0],
        })
      ).body;
      const secret = d.secret ?? "";
      assert.match(secret, /^whsec_/);
      const ev = await s.api("POST", "/v1/events", { type: "lg.x", payload: { marker: PAYLOAD_MARKER } });
      assert.equal(ev.status, 202);
      await waitFor(() => about(d.id, "attempt delivered").length === 1, { message: dump(d.id) });
      assert.equal(rx.received.length, 3);

      const [failed, ...moreFailed] = about(d.id, "attempt failed");
      assert.ok(failed && moreFailed.length === 0, dump(d.id)());
      assert.equal(failed.level, INFO);
      assert.equal(failed.tenant_id, tenantId);
      assert.match(String(failed.delivery_id), /^dlv_/);
      assert.equal(failed.attempt, 1);
      assert.equal(failed.status_code, 500);
      assert.equal(typeof failed.latency_ms, "number");
      assert.equal(failed.next, "retry");
      assert.ok(!Number.isNaN(Date.parse(String(failed.retry_at))), JSON.stringify(failed));

      const [throttledAttempt] = about(d.id, "attempt throttled");
      assert.equal(throttledAttempt?.level, INFO);
      assert.equal(throttledAttempt.status_code, 429);
      assert.equal(throttledAttempt.attempt, 2);
      assert.equal(throttledAttempt.delivery_id, failed.delivery_id);

      const throttled = about(d.id, "destination throttled");
      assert.equal(throttled.length, 1, dump(d.id)());
      assert.equal(throttled[0]!.level, INFO);
      assert.equal(throttled[0]!.tenant_id, tenantId);
      assert.match(String(throttled[0]!.reason), /429.*Retry-After: 1 s/);
      const until = Date.parse(String(throttled[0]!.throttled_until));
      assert.ok(until > Date.now() - 60_000 && until <= Date.now() + 5_000, String(throttled[0]!.throttled_until));
      // The success went out after the hold ended.
      assert.ok(rx.received[2]!.receivedAt >= until - 50, `sent ${until - rx.received[2]!.receivedAt} ms inside the hold`);

      const [delivered] = about(d.id, "attempt delivered");
      assert.equal(delivered?.level, DEBUG);
      assert.equal(delivered.attempt, 3);

      // What the receiver was sent (payload, signature) and answered (body) never reaches a log.
      const signature = rx.received[0]!.headers["webhook-signature"]!;
      const all = raw.join("\n");
      for (const secretish of [PAYLOAD_MARKER, BODY_MARKER, secret, secret.slice("whsec_".length), signature]) {
        assert.ok(!all.includes(secretish), `a log line holds ${secretish}`);
      }
    });

    test("a rate-limited backlog logs entering and leaving the limit once each, not once per claim", async () => {
      rx.reset();
      rx.respondWith({ status: 200 });
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/shaped`,
          event_types: ["rl.*"],
          rate_limit: { max_per_second: 5, burst_capacity: 1 },
        })
      ).body;
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 10 }, (_, i) => ({ type: "rl.x", payload: { i } })) });
      await waitFor(() => rx.received.length === 10, { message: () => `received ${rx.received.length}` });
      await waitFor(() => about(d.id, "rate limit no longer holding").length > 0, { message: dump(d.id) });
      const entered = about(d.id, "destination rate-limited: backlog waiting for tokens");
      assert.equal(entered.length, 1, dump(d.id)());
      assert.equal(entered[0]!.level, INFO);
      assert.equal(entered[0]!.tenant_id, tenantId);
      assert.deepEqual(entered[0]!.rate_limit, { max_per_second: 5, burst_capacity: 1 });
      assert.equal(about(d.id, "rate limit no longer holding").length, 1, dump(d.id)());
      // Ten sends, about ten claims: the lines are per transition.
      assert.ok(lines().filter((l) => l.destination_id === d.id && l.level >= INFO).length <= 3, dump(d.id)());
    });

    test("quiet hours log the hold with its end, and the release", async () => {
      rx.reset();
      rx.respondWith({ status: 200 });
      // A backlog still draining (4/s) when the window opens 1-2 s from now; it lasts 2 s.
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/quiet`,
          event_types: ["qt.*"],
          rate_limit: { max_per_second: 4, burst_capacity: 1 },
          delivery_schedule: { timezone: "UTC", quiet_start: wall(2), quiet_end: wall(4) },
        })
      ).body;
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 20 }, (_, i) => ({ type: "qt.x", payload: { i } })) });
      await waitFor(() => rx.received.length === 20, {
        timeoutMs: 20_000,
        message: () => `received ${rx.received.length}\n${dump(d.id)()}`,
      });
      const held = about(d.id, "quiet hours: holding deliveries");
      const released = about(d.id, "quiet hours: releasing held deliveries");
      assert.equal(held.length, 1, dump(d.id)());
      assert.equal(released.length, 1, dump(d.id)());
      assert.equal(held[0]!.tenant_id, tenantId);
      const quietUntil = Date.parse(String(held[0]!.quiet_until));
      assert.ok(quietUntil > Number(held[0]!.time), JSON.stringify(held[0]));
      assert.ok(Number(released[0]!.time) >= quietUntil - 50, JSON.stringify(released[0]));
      // The backlog drained after the window, not inside it.
      assert.ok(rx.received.slice(-1)[0]!.receivedAt >= quietUntil - 50);
    });

    test("deliveries published into an open quiet window log the hold once at ingest and the release at its end", async () => {
      rx.reset();
      rx.respondWith({ status: 200 });
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/quiet2`,
          event_types: ["qu.*"],
          delivery_schedule: { timezone: "UTC", quiet_start: wall(-2), quiet_end: wall(3) },
        })
      ).body;
      assert.equal(d.status, "quiet");
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 2 }, (_, i) => ({ type: "qu.x", payload: { i } })) });
      await s.api("POST", "/v1/events", { type: "qu.x", payload: { i: 2 } });
      const held = about(d.id, "quiet hours: holding deliveries");
      assert.equal(held.length, 1, `one hold line for two publishes: ${dump(d.id)()}`);
      assert.equal(held[0]!.quiet_until, d.quiet_until);
      await waitFor(() => rx.received.length === 3, { message: () => `received ${rx.received.length}\n${dump(d.id)()}` });
      assert.equal(about(d.id, "quiet hours: holding deliveries").length, 1, "the claim at the window's end does not log the hold again");
      const released = about(d.id, "quiet hours: releasing held deliveries");
      assert.equal(released.length, 1, dump(d.id)());
      assert.equal(released[0]!.quiet_until, d.quiet_until);
    });

    test("an auto-pause warns with its reason; probes log failure and the resume", async () => {
      const flaky = await startReceiver({ status: 503 });
      try {
        const d = (
          await s.api<Destination>("POST", "/v1/destinations", {
            url: `${flaky.url}/503`,
            event_types: ["pr.*"],
            retry_schedule_seconds: NO_WAIT_RETRIES,
            probe_interval_seconds: 1,
          })
        ).body;
        await s.api("POST", "/v1/events", { type: "pr.x", payload: { marker: PAYLOAD_MARKER } });
        await waitFor(() => about(d.id, "destination paused").length > 0, { message: dump(d.id) });
        const [paused] = about(d.id, "destination paused");
        assert.equal(paused!.level, WARN);
        assert.equal(paused!.by, "health");
        assert.equal(paused!.cause, "transient");
        assert.equal(paused!.tenant_id, tenantId);
        assert.match(String(paused!.reason), /^auto: /);
        assert.equal(typeof paused!.code, "string");
        assert.ok(about(d.id, "attempt failed").every((l) => l.status_code === 503 && l.level === INFO));

        await waitFor(() => about(d.id, "probe failed: destination stays paused").length > 0, { message: dump(d.id) });
        const [probeFailed] = about(d.id, "probe failed: destination stays paused");
        assert.equal(probeFailed!.status_code, 503);
        assert.ok(Date.parse(String(probeFailed!.next_probe_at)) > Number(paused!.time), JSON.stringify(probeFailed));

        flaky.respondWith({ status: 200 });
        await waitFor(() => about(d.id, "probe succeeded: destination resumed on a ramp").length > 0, { message: dump(d.id) });
        const [resumed] = about(d.id, "probe succeeded: destination resumed on a ramp");
        assert.equal(resumed!.tenant_id, tenantId);
        assert.equal(resumed!.status_code, 200);
        assert.equal(about(d.id, "destination paused").length, 1, dump(d.id)());
        assert.ok(!raw.join("\n").includes(PAYLOAD_MARKER));
      } finally {
        await flaky.close();
      }
    });

    test("a manual pause and resume log who, why and how", async () => {
      const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/manual`, event_types: ["mn.*"] })).body;
      assert.equal((await s.api("POST", `/v1/destinations/${d.id}/pause`, { reason: "maintenance" })).status, 200);
      // A second pause changes nothing: no second line.
      assert.equal((await s.api("POST", `/v1/destinations/${d.id}/pause`, { reason: "maintenance" })).status, 200);
      const paused = about(d.id, "destination paused");
      assert.equal(paused.length, 1, dump(d.id)());
      assert.equal(paused[0]!.level, INFO);
      assert.equal(paused[0]!.by, "api");
      assert.equal(paused[0]!.reason, "manual: maintenance");
      assert.equal(paused[0]!.tenant_id, tenantId);

      assert.equal((await s.api("POST", `/v1/destinations/${d.id}/resume`, { replay: false })).status, 200);
      const resumed = about(d.id, "destination resumed");
      assert.equal(resumed.length, 1, dump(d.id)());
      assert.equal(resumed[0]!.level, INFO);
      assert.equal(resumed[0]!.by, "api");
      assert.equal(resumed[0]!.mode, "discard");
      assert.equal(resumed[0]!.discarded, 0);
      assert.equal(resumed[0]!.tenant_id, tenantId);
    });
  });
}
