import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Webhook } from "standardwebhooks";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { startMailCatcher } from "../helpers/smtp.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import { pruneOnce } from "../../src/dispatch/janitor.js";
import type { AttemptTimeline, Delivery, Destination, Event, EventAccepted, EventBatchAccepted, Page } from "../helpers/api-types.js";

// Destination health against real receivers: auto-pause, held backlog, probes with a ramp,
// resume with and without replay, and alerts (webhooks about webhooks, and e-mail).

const NO_WAIT_RETRIES = Array.from({ length: 30 }, () => 0);

describe("destination health", () => {
  let s: TestSluice;
  let rx: Receiver;
  before(async () => {
    s = await startSluice("server");
    rx = await startReceiver();
  });
  after(async () => {
    await rx?.close();
    await s?.stop();
  });

  test("10 consecutive 500s pause the destination and stop all traffic; new events are held", async () => {
    const bad = await startReceiver({ status: 500 });
    try {
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${bad.url}/500`,
          event_types: ["h1.*"],
          retry_schedule_seconds: NO_WAIT_RETRIES,
          probe_interval_seconds: 3600,
        })
      ).body;
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 4 }, (_, i) => ({ type: "h1.x", payload: { i } })) });
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.status === "paused", {
        timeoutMs: 10_000,
      });
      const paused = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      assert.match(paused.pause_reason ?? "", /^auto: (1\d consecutive failures \(last: HTTP 500\)|health score)/);
      assert.equal(paused.health.status, "unhealthy");
      assert.ok(paused.health.consecutive_failures >= 10);
      const hits = bad.received.length;
      assert.ok(hits >= 10 && hits <= 15, `${hits} requests (at most the cap in flight after the 10th)`);
      // Held, not dropped: more events wait, and queued_events grows.
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 3 }, (_, i) => ({ type: "h1.y", payload: { i } })) });
      await sleep(1000);
      assert.equal(bad.received.length, hits, "a paused destination received traffic");
      const after = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      assert.equal(after.queued_events, 7);
      const held = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&limit=100`)).body.data;
      assert.ok(
        held.every((x) => x.status === "held" && x.hold_reason === "paused"),
        JSON.stringify(held[0]),
      );
      // The attempt timeline names each attempt's class.
      const timeline = (await s.api<AttemptTimeline>("GET", `/v1/destinations/${d.id}/attempts?limit=5`)).body.data;
      assert.equal(timeline.length, 5);
      assert.ok(
        timeline.every((a) => a.class === "server_error" && a.status_code === 500),
        JSON.stringify(timeline[0]),
      );

      // Past paused_retention_hours the held deliveries are discarded, with the reason.
      await s.running.db.query("UPDATE destinations SET paused_at = now() - interval '73 hours' WHERE id = $1", [d.id]);
      await s.running.db.query("UPDATE deliveries SET created_at = now() - interval '73 hours' WHERE destination_id = $1", [d.id]);
      const pruned = await pruneOnce(s.running.db, 168);
      assert.equal(pruned?.pausedDiscarded, 7);
      const gone = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&limit=100`)).body.data;
      assert.ok(
        gone.every((x) => x.status === "discarded" && /paused/.test(x.last_error ?? "")),
        JSON.stringify(gone[0]),
      );
    } finally {
      await bad.close();
    }
  });

  test("a probe brings a recovered 503 destination back, on a ramp from concurrency 1", async () => {
    const flaky = await startReceiver({ status: 503 });
    try {
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${flaky.url}/503`,
          event_types: ["h2.*"],
          retry_schedule_seconds: NO_WAIT_RETRIES,
          probe_interval_seconds: 1,
          max_concurrency: 5,
        })
      ).body;
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 2 }, (_, i) => ({ type: "h2.x", payload: { i } })) });
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.status === "paused", {
        timeoutMs: 10_000,
      });
      const paused = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      assert.ok(paused.next_probe_at, "a transient pause shows when the next probe goes");
      // A config change while paused keeps the probe schedule.
      assert.equal((await s.api("PATCH", `/v1/destinations/${d.id}`, { timeout_seconds: 5 })).status, 200);
      // Still down: the probe fails and another follows about a second later.
      const n0 = flaky.received.length;
      await waitFor(() => flaky.received.slice(n0).filter((r) => (r.json as { type: string }).type === "webhook.probe").length >= 2, {
        timeoutMs: 6000,
      });
      assert.equal((await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.status, "paused");
      // Recovered, slowly answering: a backlog of 20 must not flood it.
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 20 }, (_, i) => ({ type: "h2.y", payload: { i } })) });
      flaky.respondWith({ status: 200, delayMs: 150 });
      const n1 = flaky.received.length;
      await waitFor(() => flaky.received.length >= n1 + 23, { timeoutMs: 20_000, message: () => `received ${flaky.received.length - n1}` });
      const after = flaky.received.slice(n1);
      const probe = after.findIndex((r) => (r.json as { type: string }).type === "webhook.probe");
      assert.ok(probe >= 0);
      // The probe is signed like any delivery, with empty data.
      assert.deepEqual((after[probe]!.json as { data: unknown }).data, {});
      assert.ok(after[probe]!.headers["webhook-signature"]);
      const deliveries = after.slice(probe + 1).filter((r) => (r.json as { type: string }).type !== "webhook.probe");
      assert.equal(deliveries[0]!.inflightAtArrival, 1, "the first delivery after the probe went alone");
      const firstFour = deliveries.slice(0, 3).map((r) => r.inflightAtArrival);
      assert.ok(Math.max(...firstFour) <= 3, `ramp: ${firstFour.join(",")}`);
      assert.ok(Math.max(...deliveries.map((r) => r.inflightAtArrival)) <= 5);
      await waitFor(
        async () => {
          const v = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
          return v.status === "active" && v.health.status === "healthy" && v.ramp_limit === null && v.queued_events === 0;
        },
        { timeoutMs: 10_000 },
      );
    } finally {
      await flaky.close();
    }
  });

  test("a 404-paused destination is never probed", async () => {
    const missing = await startReceiver({ status: 404 });
    try {
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${missing.url}/404`,
          event_types: ["h3.*"],
          retry_schedule_seconds: NO_WAIT_RETRIES,
          probe_interval_seconds: 1,
          max_concurrency: 1,
        })
      ).body;
      await s.api("POST", "/v1/events", { type: "h3.x", payload: {} });
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.status === "paused", {
        timeoutMs: 10_000,
      });
      const paused = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      assert.match(paused.pause_reason ?? "", /3 consecutive HTTP 401\/403\/404 answers .*check the URL/);
      assert.equal(paused.next_probe_at, null);
      const n = missing.received.length;
      assert.equal(n, 3);
      await sleep(3500); // three probe intervals
      assert.equal(missing.received.length, n, "a 404-paused destination was probed");
    } finally {
      await missing.close();
    }
  });

  test("resume with replay delivers the backlog in order; without replay discards it (still retryable)", async () => {
    rx.reset();
    const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/resume`, event_types: ["h4.*"], max_concurrency: 1 }))
      .body;
    assert.equal(
      (await s.api<Destination>("POST", `/v1/destinations/${d.id}/pause`, { reason: "maintenance" })).body.pause_reason,
      "manual: maintenance",
    );
    const base = Date.now() - 10_000;
    await s.api("POST", "/v1/events/batch", {
      events: [3, 1, 4, 0, 2].map((i) => ({ type: "h4.x", payload: { i }, occurred_at: new Date(base + i * 100).toISOString() })),
    });
    await sleep(500);
    assert.equal(rx.received.length, 0);
    const resumed = await s.api("POST", `/v1/destinations/${d.id}/resume`, { replay: true });
    assert.equal(resumed.status, 200);
    await waitFor(() => rx.received.length === 5);
    assert.deepEqual(
      rx.received.map((r) => (r.json as { data: { i: number } }).data.i),
      [0, 1, 2, 3, 4],
    );

    await s.api("POST", `/v1/destinations/${d.id}/pause`, {});
    const pub = (
      await s.api<EventBatchAccepted>("POST", "/v1/events/batch", {
        events: Array.from({ length: 3 }, (_, i) => ({ type: "h4.y", payload: { i } })),
      })
    ).body;
    const dropped = await s.api<Destination>("POST", `/v1/destinations/${d.id}/resume`, { replay: false });
    assert.equal(dropped.body.discarded, 3);
    const evt = (await s.api<Event>("GET", `/v1/events/${pub.events[0]!.id}`)).body;
    assert.equal(evt.deliveries![0]!.status, "discarded");
    assert.match(evt.deliveries![0]!.last_error ?? "", /resumed without replay/);
    await sleep(500);
    assert.equal(rx.received.length, 5);
    assert.equal((await s.api("POST", `/v1/deliveries/${evt.deliveries![0]!.id}/retry`)).status, 202);
    await waitFor(() => rx.received.length === 6);
  });

  test("429s never degrade health", async () => {
    let n = 0;
    const limited = await startReceiver(() => (++n <= 3 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 }));
    try {
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", { url: `${limited.url}/429`, event_types: ["h5.*"], max_concurrency: 1 })
      ).body;
      await s.api("POST", "/v1/events/batch", { events: Array.from({ length: 3 }, (_, i) => ({ type: "h5.x", payload: { i } })) });
      await waitFor(() => limited.received.length >= 6, { timeoutMs: 10_000 });
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.queued_events === 0);
      const v = (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      assert.deepEqual(v.health, { status: "healthy", score: 100, consecutive_failures: 0 });
    } finally {
      await limited.close();
    }
  });
});

describe("health alerts", () => {
  test("exactly one alert per transition reaches a subscribed destination and the SMTP server", async () => {
    const catcher = await startMailCatcher();
    const mails = catcher.mails;
    // A minimum sample of 4 lets a short test step through degraded before it pauses.
    const s = await startSluice("server", { env: { SLUICE_SMTP_URL: catcher.url, SLUICE_HEALTH_MIN_SAMPLES: "4" } });
    const watcher = await startReceiver();
    let n = 0;
    const failing = await startReceiver(() => ({ status: ++n <= 2 ? 200 : 500 }));
    try {
      assert.equal((await s.api("PATCH", "/v1/tenant", { alert_email: "ops@example.com" })).status, 200);
      const w = (await s.api<Destination>("POST", "/v1/destinations", { url: `${watcher.url}/alerts`, event_types: ["destination.*"] }))
        .body;
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${failing.url}/f`,
          name: "billing-prod",
          event_types: ["h6.*"],
          max_concurrency: 1,
          retry_schedule_seconds: NO_WAIT_RETRIES,
          probe_interval_seconds: 3600,
        })
      ).body;
      // One at a time: each result is its own health step (200, 200, then 500s).
      for (let i = 0; i < 3; i++) {
        const pub = await s.api<EventAccepted>("POST", "/v1/events", { type: "h6.x", payload: { i } });
        assert.equal(pub.body.deliveries, 1, JSON.stringify(pub.body));
        await waitFor(() => failing.received.length >= i + 1).catch(async (err) => {
          const dest = await s.running.db.query(
            "SELECT ready_at, now() AS now, paused_at, health_window, consecutive_failures, throttled_until FROM destinations WHERE id = $1",
            [d.id],
          );
          const dls = await s.running.db.query(
            `SELECT status, attempts, failures, next_attempt_at, last_error,
                    (SELECT l.expires_at FROM leases l WHERE l.destination_id = x.destination_id AND l.delivery_id = x.id) AS lease_expires_at
               FROM deliveries x WHERE destination_id = $1`,
            [d.id],
          );
          throw new Error(
            `${(err as Error).message} at i=${i}, received ${failing.received.length}: ${JSON.stringify(dest)} ${JSON.stringify(dls)}`,
          );
        });
      }
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.status === "paused", {
        timeoutMs: 10_000,
      });
      await s.api("POST", `/v1/destinations/${d.id}/resume`, { replay: false });
      const types = () => watcher.received.map((r) => (r.json as { type: string }).type);
      await waitFor(() => watcher.received.length >= 3 && mails.length >= 3, {
        timeoutMs: 10_000,
        message: () => `alerts ${types().join(",")} mails ${mails.length}`,
      });
      await sleep(2500); // a duplicate would have arrived by now (the alert poll is 2 s)
      assert.deepEqual(types(), ["destination.degraded", "destination.paused", "destination.resumed"]);
      const paused = watcher.received[1]!;
      const body = paused.json as { data: { destination_id: string; reason: string; health: { status: string } } };
      assert.equal(body.data.destination_id, d.id);
      assert.match(body.data.reason, /^auto: /);
      // Signed like any delivery, with the watcher's own secret.
      new Webhook(w.secret!).verify(paused.body, paused.headers);
      assert.equal(mails.length, 3);
      assert.ok(mails.every((m) => m.to === "ops@example.com"));
      assert.match(mails[1]!.text, /billing-prod/);
      assert.match(mails[1]!.text, /paused/);
    } finally {
      await failing.close();
      await watcher.close();
      await s.stop();
      await catcher.close();
    }
  });
});
