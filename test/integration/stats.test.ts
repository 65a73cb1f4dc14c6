import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BACKENDS, startSluice, type Backend, type TestSluice } from "../helpers/sluice.js";
import { CITUS_URL } from "../helpers/db.js";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { waitFor } from "../helpers/wait-for.js";
import { withTestStore } from "../helpers/db.js";
import type { ApiError, Delivery, Destination, Page, TenantCreated, ValidationFailed } from "../helpers/api-types.js";
import type { DestinationStats, Stats } from "../../src/schemas/stats.js";
import { rollupStats, type RollupPass } from "../../src/dispatch/stats-rollup.js";
import { xactBound } from "../../src/db/queries/rollups.js";
import { BOUNDS_MS, bucketOf, total } from "../../src/policy/latency-histogram.js";

// The dashboard's numbers (GET /v1/stats, GET /v1/destinations/{id}/stats) against a real Sluice
// delivering to a real receiver: counts per minute match what the receiver answered, 429s are
// rate_limited, latency percentiles exist and are ordered, arrivals per second add up to the
// attempts, token buckets show the configured burst, a paused destination's backlog is "paused",
// and the rollups agree with the live count and count each attempt once, however late it is written.

const ADMIN = "admin_stats";

type DestinationBody = Partial<Destination> & { url: string };

const sum = <T>(xs: readonly T[], f: (x: T) => number) => xs.reduce((n, x) => n + f(x), 0);

// In `npm run test:citus`, on a cell: there an attempt's xact is the coordinator's transaction
// id, and the rollups must read their xmin where that counter runs (rollups.ts rollupClock).
const STORES: Backend[] = CITUS_URL ? ["cell"] : BACKENDS;

for (const backend of STORES) {
  describe(`stats on ${backend} Postgres`, () => {
    let s: TestSluice;
    let rx: Receiver;
    before(async () => {
      s = await startSluice(backend, { env: { SLUICE_ADMIN_KEY: ADMIN } });
      rx = await startReceiver((req) => {
        if (req.path === "/fail") return { status: 500, body: "boom" };
        if (req.path === "/limited") return { status: 429, headers: { "retry-after": "3600" } };
        return { status: 200 };
      });
    });
    after(async () => {
      await rx?.close();
      await s?.stop();
    });

    const createDestination = async (path: string, body: Partial<DestinationBody> = {}) => {
      const r = await s.api<Destination>("POST", "/v1/destinations", { url: rx.url + path, event_types: ["unused"], ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const publish = async (d: Destination, n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await s.api("POST", "/v1/events", { type: "stats.test", payload: { i }, destination_ids: [d.id] });
        assert.equal(r.status, 202, JSON.stringify(r.body));
      }
    };
    const deliveries = async (d: Destination) =>
      (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}&limit=1000`)).body.data;
    const waitStatuses = (d: Destination, status: string, n: number) =>
      waitFor(async () => (await deliveries(d)).filter((x) => x.status === status).length === n, {
        message: () => `${d.id}: expected ${n} ${status}`,
      });
    const destStats = async (d: Destination, query = "") => {
      const r = await s.api<DestinationStats>("GET", `/v1/destinations/${d.id}/stats${query}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const overview = async (query = "") => {
      const r = await s.api<Stats>("GET", `/v1/stats${query}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body;
    };
    const received = (path: string) => rx.countByPath(path);
    // Passes until the rollups reach the current minute (a first pass backfills a day an hour at a
    // time), waiting out a pass the janitor may be running at the same moment (the lock).
    const rollUp = async (): Promise<RollupPass> => {
      const last: { pass: RollupPass | null } = { pass: null };
      await waitFor(async () => {
        last.pass = await rollupStats(s.running.db);
        return last.pass !== null && !last.pass.more;
      });
      return last.pass!;
    };

    let ok: Destination;
    let failing: Destination;
    let limited: Destination;

    test("delivered, failed and 429 per minute match what the receiver answered, with latency percentiles", async () => {
      ok = await createDestination("/ok");
      failing = await createDestination("/fail", { retry_schedule_seconds: [] });
      limited = await createDestination("/limited", { max_concurrency: 1 });
      await publish(ok, 5);
      await publish(failing, 3);
      await publish(limited, 1);
      await waitStatuses(ok, "delivered", 5);
      await waitStatuses(failing, "dead", 3);
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${limited.id}`)).body.status === "throttled");
      assert.equal(received("/ok"), 5);
      assert.equal(received("/fail"), 3);
      assert.equal(received("/limited"), 1);

      const a = await destStats(ok);
      assert.equal(a.outcomes.length, 60);
      assert.equal(
        sum(a.outcomes, (m) => m.delivered),
        received("/ok"),
      );
      assert.equal(
        sum(a.outcomes, (m) => m.failed + m.rate_limited),
        0,
      );
      assert.equal(a.delivered_last_hour, 5);
      assert.equal(a.failed_last_hour, 0);

      const f = await destStats(failing);
      assert.equal(
        sum(f.outcomes, (m) => m.failed),
        received("/fail"),
      );
      assert.equal(
        sum(f.outcomes, (m) => m.by_class["5xx"] ?? 0),
        3,
      );
      assert.equal(
        sum(f.outcomes, (m) => m.delivered + m.rate_limited + m.timeouts),
        0,
      );
      assert.equal(f.failed_last_hour, 3);

      const l = await destStats(limited);
      assert.equal(
        sum(l.outcomes, (m) => m.rate_limited),
        received("/limited"),
      );
      assert.equal(
        sum(l.outcomes, (m) => m.by_class["429"] ?? 0),
        1,
      );
      assert.equal(
        sum(l.outcomes, (m) => m.failed + m.delivered),
        0,
        "a 429 is not a failure",
      );
      assert.deepEqual(l.held, [{ reason: "throttled", n: 1, oldest_age_seconds: l.held[0]!.oldest_age_seconds }]);

      const o = await overview();
      assert.equal(o.bucket_seconds, 60);
      assert.equal(
        sum(o.series, (m) => m.delivered),
        5,
      );
      assert.equal(
        sum(o.series, (m) => m.failed),
        3,
      );
      assert.equal(
        sum(o.series, (m) => m.rate_limited),
        1,
      );
      const withDeliveries = o.series.filter((m) => m.delivered > 0);
      assert.ok(withDeliveries.length > 0);
      for (const m of o.series) {
        if (m.delivered === 0) {
          assert.equal(m.latency_p50_ms, null);
          continue;
        }
        const [p50, p95, p99] = [m.latency_p50_ms!, m.latency_p95_ms!, m.latency_p99_ms!];
        assert.ok(p50 !== null && p95 !== null && p99 !== null, JSON.stringify(m));
        // Local publish→delivery: well under 30 s, and ordered.
        assert.ok(p50 > 0 && p50 <= p95 && p95 <= p99 && p99 < 30_000, JSON.stringify(m));
      }
      const row = (d: Destination) => o.destinations.find((x) => x.id === d.id)!;
      assert.deepEqual(
        [row(ok), row(failing), row(limited)].map((x) => [x.delivered_last_hour, x.failed_last_hour]),
        [
          [5, 0],
          [0, 3],
          [0, 0],
        ],
      );
      assert.equal(row(ok).oldest_waiting_at, null, "nothing waits");
      assert.ok(row(limited).oldest_waiting_at, "the throttled delivery waits");
    });

    test("the series is one zero-filled point per minute, oldest first, ending at the current minute", async () => {
      const o = await overview("?minutes=5");
      assert.equal(o.series.length, 5);
      assert.equal(o.since, o.series[0]!.at);
      for (let i = 1; i < o.series.length; i++) assert.equal(Date.parse(o.series[i]!.at) - Date.parse(o.series[i - 1]!.at), 60_000);
      assert.equal(Date.parse(o.series[4]!.at), Math.floor(Date.parse(o.until) / 60_000) * 60_000);
    });

    test("arrivals per second add up to the attempts; the buckets show the configured burst", async () => {
      const shaped = await createDestination("/ok", { rate_limit: { max_per_second: 2, burst_capacity: 4 } });
      await publish(shaped, 8);
      await waitStatuses(shaped, "delivered", 8);
      const st = await destStats(shaped, "?rate_seconds=120");
      assert.equal(st.arrivals.length, 120);
      for (let i = 1; i < st.arrivals.length; i++) assert.equal(Date.parse(st.arrivals[i]!.at) - Date.parse(st.arrivals[i - 1]!.at), 1000);
      assert.equal(
        sum(st.arrivals, (x) => x.n),
        8,
      );
      // Never more in one second than the burst and a second's refill.
      assert.ok(Math.max(...st.arrivals.map((x) => x.n)) <= 4 + 2, JSON.stringify(st.arrivals.filter((x) => x.n)));
      assert.deepEqual(st.limit, { max_per_second: 2, max_per_minute: null, burst_capacity: 4, max_concurrency: 5 });
      assert.equal(st.buckets.minute, null);
      const b = st.buckets.second!;
      assert.equal(b.capacity, 4);
      assert.equal(b.refill_per_second, 2);
      assert.ok(b.grant_capacity <= b.capacity && b.grant_capacity >= 2, JSON.stringify(b));
      assert.ok(b.tokens >= 0 && b.tokens <= b.grant_capacity, JSON.stringify(b));

      const perMinute = await createDestination("/ok", { rate_limit: { max_per_minute: 120 } });
      const pm = await destStats(perMinute);
      assert.equal(pm.buckets.second, null);
      assert.equal(pm.buckets.minute!.capacity, 120);
      assert.equal(pm.buckets.minute!.refill_per_second, 2);
      assert.equal(pm.limit.burst_capacity, 120);
      assert.equal(
        sum(pm.arrivals, (x) => x.n),
        0,
      );

      const unlimited = await destStats(ok);
      assert.deepEqual(unlimited.buckets, { second: null, minute: null });
      assert.equal(
        sum(unlimited.arrivals, (x) => x.n),
        received("/ok") - 8,
      );
    });

    test("a paused destination's deliveries are held as 'paused', now and in the minute's backlog sample", async () => {
      const paused = await createDestination("/ok");
      assert.equal((await s.api("POST", `/v1/destinations/${paused.id}/pause`, {})).status, 200);
      const before = Date.now();
      await publish(paused, 3);
      const st = await destStats(paused);
      assert.equal(st.held.length, 1);
      assert.equal(st.held[0]!.reason, "paused");
      assert.equal(st.held[0]!.n, 3);
      assert.ok(st.held[0]!.oldest_age_seconds >= 0 && st.held[0]!.oldest_age_seconds < 60);
      assert.ok(Date.parse(st.oldest_waiting_at!) >= before - 1000, st.oldest_waiting_at!);

      const o = await overview();
      assert.deepEqual(
        o.held_now.map((h) => [h.reason, h.n]),
        [
          ["paused", 3],
          ["throttled", 1],
        ],
      );
      assert.ok(o.destinations.find((x) => x.id === paused.id)!.oldest_waiting_at);

      const pass = await rollUp();
      const sampled = (await overview("?minutes=5")).backlog.filter((b) => b.reason === "paused");
      // The janitor may have sampled them in the minute before too: every sample says 3, the last is this pass's.
      assert.ok(sampled.length >= 1 && sampled.every((b) => b.n === 3), JSON.stringify(sampled));
      assert.equal(sampled[sampled.length - 1]!.at, pass.minute!.sampledAt.toISOString());
    });

    test("rollup passes count each attempt once, into its start minute however late it is written, and agree with the live count", async () => {
      const d = await createDestination("/ok");
      await publish(d, 4);
      await waitStatuses(d, "delivered", 4);
      const failedToo = await createDestination("/fail", { retry_schedule_seconds: [] });
      await publish(failedToo, 2);
      await waitStatuses(failedToo, "dead", 2);
      const rows = () =>
        s.running.db.query<{
          destination_id: string;
          minute: Date;
          delivered: number;
          failed: number;
          rate_limited: number;
          timeouts: number;
          by_class: Record<string, number>;
          latency_hist: number[];
        }>(
          `SELECT destination_id, minute, delivered, failed, rate_limited, timeouts, by_class, latency_hist
             FROM stats_minutes WHERE destination_id = ANY($1::text[]) ORDER BY destination_id, minute`,
          [[d.id, failedToo.id]],
        );
      const delivered = async () => sum((await destStats(d, "?minutes=5")).outcomes, (m) => m.delivered);
      const failedLastHour = async () => (await overview("?minutes=5")).destinations.find((x) => x.id === failedToo.id)!.failed_last_hour;
      // Whatever the janitor has counted so far, the API adds the rest live: the same totals.
      assert.equal(await delivered(), 4);
      await rollUp();
      const first = await rows();
      await rollUp();
      assert.deepEqual(await rows(), first, "a pass with nothing new adds nothing");
      const of = (id: string, f: (r: (typeof first)[number]) => number) =>
        sum(
          first.filter((r) => r.destination_id === id),
          f,
        );
      assert.equal(
        of(d.id, (r) => r.delivered),
        4,
      );
      assert.equal(
        of(d.id, (r) => total(r.latency_hist)),
        4,
        "every delivery's latency is in the histogram",
      );
      assert.equal(
        of(failedToo.id, (r) => r.failed),
        2,
      );
      assert.equal(
        of(failedToo.id, (r) => r.by_class["5xx"] ?? 0),
        2,
      );
      // Read from the rollups, with nothing added live: no double count.
      assert.equal(await delivered(), 4);
      assert.equal(await failedLastHour(), 2);
      const o = await overview("?minutes=5");
      assert.ok(o.series.some((m) => m.latency_p50_ms !== null));

      // Proof the API reads counted minutes from stats_minutes (not attempts), and that a pass
      // adds only what is new rather than counting a minute again.
      await s.running.db.query("UPDATE stats_minutes SET delivered = delivered + 100 WHERE destination_id = $1", [d.id]);
      assert.equal(await delivered(), 104);
      await rollUp();
      assert.equal(await delivered(), 104);
      await s.running.db.query("UPDATE stats_minutes SET delivered = delivered - 100 WHERE destination_id = $1", [d.id]);

      // A result written back late: started two minutes ago, its transaction still open while a
      // pass runs (on a server, where passes and write-backs run side by side). The pass neither
      // counts it nor passes it by; the next one counts it into the minute it started in, once.
      const late = () =>
        `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome, error_class)
         VALUES ('${failedToo.id}', 'dlv_late_${backend}', 1, date_trunc('minute', now()) - interval '2 minutes', 5, 'failure', 'timeout')`;
      if (backend !== "embedded") {
        await s.running.db.tx(async (q) => {
          await q.query(late());
          const during = await rollupStats(s.running.db, { minuteTasks: false });
          assert.ok(during === null || during.by === "xact", JSON.stringify(during));
        });
      } else {
        await s.running.db.query(late());
      }
      assert.equal(await failedLastHour(), 3, "counted live before a pass");
      await rollUp();
      await rollUp();
      const minuteAgo = (await s.running.db.query<{ m: Date }>("SELECT date_trunc('minute', now()) - interval '2 minutes' AS m"))[0]!.m;
      const lateRow = (await rows()).find((r) => r.destination_id === failedToo.id && r.minute.getTime() === minuteAgo.getTime());
      assert.ok(lateRow, "the late attempt is in the minute it started in");
      assert.equal(lateRow.timeouts, 1);
      assert.equal(await failedLastHour(), 3, "counted once");
    });

    test("SQL width_bucket and bucketOf put every latency in the same bucket", async () => {
      const values = [0, 0.5, 1, 1.999, 2, 4.99, 5, 20, 99.9, 100, 1_000, 29_999, 30_000, 3_599_999, 3_600_000, 9e9];
      const rows = await s.running.db.query<{ x: number; b: number }>(
        "SELECT x, width_bucket(x, $2::float8[]) AS b FROM unnest($1::float8[]) AS x",
        [values, BOUNDS_MS],
      );
      assert.deepEqual(
        rows.map((r) => r.b),
        values.map(bucketOf),
      );
    });

    test("minutes and rate_seconds out of range are 422 naming the field; unknown or another tenant's destination is 404", async () => {
      for (const [path, field] of [
        ["/v1/stats?minutes=4", "query.minutes"],
        ["/v1/stats?minutes=1441", "query.minutes"],
        ["/v1/stats?minutes=soon", "query.minutes"],
        [`/v1/destinations/${ok.id}/stats?rate_seconds=3601`, "query.rate_seconds"],
        [`/v1/destinations/${ok.id}/stats?minutes=0`, "query.minutes"],
        ["/v1/stats?window=5", "query.window"],
      ] as const) {
        const r = await s.api<ValidationFailed>("GET", path);
        assert.equal(r.status, 422, path);
        assert.equal(r.body.error.code, "SLUICE_VALIDATION_FAILED");
        assert.deepEqual(
          r.body.error.details.map((x) => x.field),
          [field],
          path,
        );
        assert.ok(r.body.error.details[0]!.message.length > 0);
      }
      const missing = await s.api<ApiError>("GET", "/v1/destinations/dst_nope/stats");
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, "SLUICE_DESTINATION_NOT_FOUND");

      const other = await s.api<TenantCreated>("POST", "/v1/tenants", { name: "other" }, { key: ADMIN });
      assert.equal(other.status, 201);
      const theirs = await s.api<ApiError>("GET", `/v1/destinations/${ok.id}/stats`, undefined, { key: other.body.api_key });
      assert.equal(theirs.status, 404);
      const empty = await s.api<Stats>("GET", "/v1/stats", undefined, { key: other.body.api_key });
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body.destinations, []);
      assert.equal(
        sum(empty.body.series, (m) => m.delivered + m.failed + m.rate_limited),
        0,
      );
      assert.deepEqual(empty.body.held_now, []);
    });
  });
}

// A first pass (no rollups yet) counts by start time from the oldest attempt of the last day: a
// new store has nothing to catch up. Passes by start time go an hour at a time until they reach the
// present; the one that does counts the attempts of every ended transaction, and from there on
// passes count what each transaction wrote, once (as an upgraded store moves from start time).
test("first passes count by start time from the oldest attempt of the last day, then by transaction, each attempt once", async () => {
  await withTestStore("embedded", async (db) => {
    const pass = async () => (await rollupStats(db, { minuteTasks: false }))!;
    const empty = await pass();
    assert.equal(empty.by, "start");
    assert.equal(empty.more, false);
    assert.equal(empty.until, null, "it reached the present");
    assert.equal(empty.from!.getTime() % 60_000, 0);
    assert.ok(Date.now() - empty.from!.getTime() < 120_000, "nothing to count on a new store: it starts now");
    assert.equal((await pass()).by, "xact");

    // An upgraded store: rollups by start time up to now, and attempts written before 0017 (no xact).
    await db.query(
      "UPDATE stats_rollup_state SET counted_below = NULL, rolled_until = date_trunc('minute', now()) - interval '100 minutes'",
    );
    await db.query("INSERT INTO tenants (id, name) VALUES ('ten_old', 'old')");
    await db.query(
      `INSERT INTO destinations (id, tenant_id, url, secrets, timeout_seconds, max_concurrency, ordered, retry_schedule_seconds,
                                 throttle_schedule_seconds, probe_interval_seconds, replay_on_resume)
       VALUES ('dst_old', 'ten_old', 'http://x', '[]', 5, 1, false, '{60}', '{60}', 60, true)`,
    );
    const attempt = (id: string, ago: string) =>
      db.query(
        `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome, xact)
         VALUES ('dst_old', $1, 1, date_trunc('minute', now()) - $2::interval, 1, 'failure', NULL)`,
        [id, ago],
      );
    await attempt("dlv_old", "90 minutes");
    await attempt("dlv_recent", "1 minute");
    const first = await pass();
    assert.equal(first.by, "start");
    const from = (await db.query<{ m: Date }>("SELECT date_trunc('minute', now()) - interval '103 minutes' AS m"))[0]!.m;
    assert.equal(first.from!.getTime(), from.getTime(), "from three minutes before where the rollups reached");
    assert.equal(first.more, true, "an hour at a time");
    const second = await pass();
    assert.deepEqual([second.by, second.until, second.more], ["start", null, false]);
    // Written after the switch: counted by transaction.
    await db.query(
      `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome)
       VALUES ('dst_old', 'dlv_new', 1, now(), 1, 'failure')`,
    );
    assert.equal((await pass()).by, "xact");
    await pass();
    const failed = await db.query<{ n: number }>("SELECT sum(failed)::int AS n FROM stats_minutes WHERE destination_id = 'dst_old'");
    assert.equal(failed[0]!.n, 3);
  });
});

// A pass after a long stop bounds its work by transaction: the bound never splits one.
test("xactBound ends a long span after about `limit` attempts, at a transaction's first", async () => {
  await withTestStore("embedded", async (db) => {
    const xact = (n: number) =>
      db.tx(async (q) => {
        await q.query(
          `INSERT INTO attempts (destination_id, delivery_id, attempt_no, started_at, latency_ms, outcome)
           SELECT 'dst_b', 'dlv_' || g || '_' || $1, 1, now(), 1, 'success' FROM generate_series(1, $1::int) AS g`,
          [n],
        );
        return (await q.query<{ x: string }>("SELECT pg_current_xact_id()::text AS x"))[0]!.x;
      });
    const a = await xact(3);
    const b = await xact(2);
    const c = await xact(4);
    const below = (BigInt(c) + 1n).toString();
    assert.equal(await xactBound(db, a, below, 1), b, "the first transaction is taken whole");
    assert.equal(await xactBound(db, a, below, 3), b);
    assert.equal(await xactBound(db, a, below, 4), b);
    assert.equal(await xactBound(db, a, below, 5), c);
    assert.equal(await xactBound(db, a, below, 9), null, "fewer than the limit: no bound");
    assert.equal(await xactBound(db, b, below, 2), c);
  });
});
