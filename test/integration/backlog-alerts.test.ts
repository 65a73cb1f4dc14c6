import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startSluice } from "../helpers/sluice.js";
import { startMailCatcher } from "../helpers/smtp.js";
import { startReceiver } from "../helpers/receiver.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import { rollupStats, type RollupPass } from "../../src/dispatch/stats-rollup.js";
import type { Destination } from "../helpers/api-types.js";
import type { Db } from "../../src/db/db.js";

// Backlog alerts end to end: the minute's rollup pass finds them (called directly here, as the
// janitor does once a minute), the outbox publishes them into the tenant's stream and mails them.
// Time is moved by editing the watch and the deliveries' publish times in the store: the
// policy's timing is proved with a fake clock in test/unit/backlog-alerts.test.ts.

/** One rollup pass with the minute's tasks; the janitor's own pass may hold the lock for a moment. */
async function look(db: Db): Promise<NonNullable<RollupPass["minute"]>> {
  for (;;) {
    const pass = await rollupStats(db);
    if (pass?.minute) return pass.minute;
    await sleep(50);
  }
}

describe("backlog alerts on server Postgres", () => {
  test("growing, stale and recovered: each fires once, into the tenant's stream and by e-mail, and shows on the destination", async () => {
    const catcher = await startMailCatcher();
    const s = await startSluice("server", { env: { SLUICE_SMTP_URL: catcher.url } });
    const watcher = await startReceiver();
    // The destination's endpoint takes one request and sits on it until the test lets it go:
    // everything else waits behind its concurrency cap of 1.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const slow = await startReceiver(async () => {
      await gate;
      return { status: 200 };
    });
    try {
      assert.equal((await s.api("PATCH", "/v1/tenant", { alert_email: "ops@example.com" })).status, 200);
      await s.api("POST", "/v1/destinations", { url: `${watcher.url}/alerts`, event_types: ["destination.*"] });
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${slow.url}/slow`,
          name: "ledger",
          event_types: ["bk.*"],
          max_concurrency: 1,
          timeout_seconds: 60,
        })
      ).body;
      assert.deepEqual([d.backlog_alert_minutes, d.backlog_alert_age_minutes, d.backlog_alerts], [30, 60, []]);
      const publish = async (n: number) =>
        assert.equal(
          (await s.api("POST", "/v1/events/batch", { events: Array.from({ length: n }, (_, i) => ({ type: "bk.x", payload: { i } })) }))
            .status,
          202,
        );
      const view = async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body;
      const watch = async () =>
        (
          await s.running.db.query<{ w: { runSinceMs: number; floor: number } | null }>(
            "SELECT watch AS w FROM backlog_watches WHERE destination_id = $1",
            [d.id],
          )
        )[0]!.w;

      await publish(100);
      await waitFor(() => slow.inflight === 1);
      await look(s.running.db);
      const first = await watch();
      assert.equal(first?.floor, 99, "the first look starts a run at the backlog it finds (one is in flight)");

      // 31 minutes pass with the backlog never back down to 99, and it ends 100 higher.
      await s.running.db.query(
        "UPDATE backlog_watches SET watch = jsonb_set(watch, '{runSinceMs}', to_jsonb(($1::float8))) WHERE destination_id = $2",
        [first.runSinceMs - 31 * 60_000, d.id],
      );
      await publish(100);
      assert.equal((await look(s.running.db)).backlogAlerts, 1);
      assert.equal((await look(s.running.db)).backlogAlerts, 0, "one alert per transition, however often the rollup looks");
      assert.deepEqual((await view()).backlog_alerts, ["growing"]);

      // Its oldest waiting delivery is two hours old now: over backlog_alert_age_minutes (60).
      await s.running.db.query("UPDATE deliveries SET created_at = now() - interval '2 hours' WHERE destination_id = $1", [d.id]);
      assert.equal((await look(s.running.db)).backlogAlerts, 1);
      assert.equal((await look(s.running.db)).backlogAlerts, 0);
      assert.deepEqual((await view()).backlog_alerts, ["growing", "stale"]);
      const metrics = (await s.api<string>("GET", "/metrics", undefined, { key: null })).body;
      assert.match(metrics, /^sluice_backlog_alerts\{state="growing"\} 1$/m);
      assert.match(metrics, /^sluice_backlog_alerts\{state="stale"\} 1$/m);
      assert.match(metrics, /^sluice_alerts_total\{type="destination.backlog_stale"\} 1$/m);

      // The endpoint answers again: the backlog drains, and the next look says so, once.
      open();
      await waitFor(async () => (await view()).queued_events === 0, { timeoutMs: 20_000 });
      assert.equal((await look(s.running.db)).backlogAlerts, 1);
      assert.equal((await look(s.running.db)).backlogAlerts, 0);
      assert.deepEqual((await view()).backlog_alerts, []);

      const types = () => watcher.received.map((r) => (r.json as { type: string }).type);
      await waitFor(() => watcher.received.length >= 3 && catcher.mails.length >= 3, {
        timeoutMs: 10_000,
        message: () => `alerts ${types().join(",")} mails ${catcher.mails.length}`,
      });
      await sleep(2500); // a duplicate would have arrived by now (the alert poll is 2 s)
      assert.deepEqual(types(), ["destination.backlog_growing", "destination.backlog_stale", "destination.backlog_recovered"]);
      const growing = watcher.received[0]!.json as { data: { destination_id: string; reason: string; queued_events: number } };
      assert.equal(growing.data.destination_id, d.id);
      assert.match(growing.data.reason, /^199 deliveries waiting, up from 99 31 min ago/);
      const stale = watcher.received[1]!.json as { data: { reason: string; oldest_waiting_age_seconds: number } };
      assert.match(stale.data.reason, /oldest waiting delivery is 2 h old, over the limit of 60 min/);
      assert.ok(stale.data.oldest_waiting_age_seconds >= 7200);
      // One mail each, in order: the subject line is in the message as sent.
      const subjects = [
        "The backlog for ledger keeps growing",
        "Deliveries to ledger are waiting too long",
        "The backlog for ledger has recovered",
      ];
      assert.equal(catcher.mails.length, 3);
      subjects.forEach((subject, i) => assert.ok(catcher.mails[i]!.text.includes(`Subject: [Sluice] ${subject}`), catcher.mails[i]!.text));
      assert.match(catcher.mails[0]!.text, /GET \/v1\/destinations\/\{id\}\/stats/);
    } finally {
      open?.();
      await slow.close();
      await watcher.close();
      await s.stop();
      await catcher.close();
    }
  });

  test("backlog alert settings: null turns one off; out-of-range values are refused and write nothing", async () => {
    const s = await startSluice("embedded", { worker: false });
    try {
      const bad = await s.api<{ error: { code: string; details: { field: string }[] } }>("POST", "/v1/destinations", {
        url: "https://example.com/h",
        backlog_alert_minutes: 0,
      });
      assert.equal(bad.status, 422);
      assert.equal(bad.body.error.details[0]!.field, "backlog_alert_minutes");
      const d = (await s.api<Destination>("POST", "/v1/destinations", { url: "https://example.com/h", backlog_alert_age_minutes: null }))
        .body;
      assert.deepEqual([d.backlog_alert_minutes, d.backlog_alert_age_minutes], [30, null]);
      const list = (await s.api<{ data: Destination[] }>("GET", "/v1/destinations")).body.data;
      assert.equal(list.length, 1);
    } finally {
      await s.stop();
    }
  });
});
