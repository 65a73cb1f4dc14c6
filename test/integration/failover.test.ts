import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startReplicatedPair, sqlAt, type ReplicatedPair } from "../../scripts/pg-failover.mjs";
import { openDb, type Db } from "../../src/db/db.js";
import { StoreUnavailableError } from "../../src/errors.js";
import { auditRate } from "../../src/cli/audit.js";
import { startReceiver, type Receiver, type ReceivedRequest } from "../helpers/receiver.js";
import { closedPort, spawnSluice, type SluiceProcess } from "../helpers/processes.js";
import { sleep, waitFor } from "../helpers/wait-for.js";
import { worstWindow } from "../helpers/windows.js";
import type { ApiError, Destination, EventBatchAccepted } from "../helpers/api-types.js";

// Sluice through two Postgres failovers without a restart: a primary with a synchronous standby
// (scripts/pg-failover.mjs) and DATABASE_URL naming both, target_session_attrs=read-write. Under
// steady publishing, the primary crashes and the standby is promoted; then the old primary comes
// back as a standby and a planned switchover (a clean stop, then promotion) moves the store back.
// One `sluice api` and one `sluice worker` run throughout. What must hold: nothing answered 202 is
// lost; no delivery repeats but the one whose worker died holding its lease; publishes and
// deliveries resume by themselves after each promotion; and a concurrency cap, a lease, a token
// bucket and a 429 throttle set before the crash still hold after it, since they live in the
// replicated tables. The figures go to docs/benchmarks.md ("Failover").

const KEY = "sk_failover_test";
// How the rate-limited destination is shaped, and the receiver-side jitter its audit allows (as in
// shaping.test.ts: a loaded machine displaces arrivals from their send times).
const RATE = { max_per_second: 10, burst_capacity: 5 };
const RATE_JITTER_MS = 500;
// The dying worker's lease: L's timeout plus its SLUICE_LEASE_MARGIN_SECONDS. Long enough to
// outlive the crash and the promotion, which come a few seconds after it is taken.
const LEASE_TIMEOUT_SECONDS = 20;
const LEASE_MARGIN_SECONDS = 1;
const THROTTLE_SECONDS = 10;
// Timer slack for "not before": the lease and the throttle end by the database's clock, the
// receiver stamps by this process's, and a claim runs a little before its requests go out.
const SLACK_MS = 300;
// A worker hears of new work through LISTEN; without it, only its 30 s idle poll would find it.
const WAKE_LIMIT_MS = 5_000;

interface Published {
  at: number;
  status: number;
  code?: string;
}

describe("Postgres failover under load", () => {
  let pair: ReplicatedPair;
  let rx: Receiver;
  let rxCap: Receiver;
  const procs: SluiceProcess[] = [];
  before(async () => {
    pair = await startReplicatedPair();
    await sqlAt(pair.primary.port, "CREATE DATABASE sluice");
    // One receiver for the plain, throttled, rate-limited and leased destinations (by path); the
    // capped one has its own, so its in-flight count is its alone.
    const firstOf = new Set<string>();
    rx = await startReceiver((r) => {
      const first = !firstOf.has(r.path);
      firstOf.add(r.path);
      if (r.path === "/leased" && first) return { status: 200, hang: true };
      if (r.path === "/throttled" && first) return { status: 429, headers: { "retry-after": String(THROTTLE_SECONDS) } };
      return { status: 200 };
    });
    rxCap = await startReceiver({ status: 200, delayMs: 100 });
  });
  after(async () => {
    for (const p of procs) p.kill("SIGKILL");
    await rx?.close();
    await rxCap?.close();
    await pair?.stop();
  });

  test("a database one host lacks makes that host unsuitable for now; one every host lacks is said at once", async () => {
    // A standby that has not replayed a CREATE DATABASE yet lacks it for a moment: with another
    // host down, the store is unavailable (retried), not misconfigured.
    const down = await closedPort();
    const partly = `postgres://postgres@127.0.0.1:${down},127.0.0.1:${pair.primary.port}/no_such_db?target_session_attrs=read-write`;
    await assert.rejects(openDb({ databaseUrl: partly, poolSize: 1 }), StoreUnavailableError);
    // Both hosts up and neither has it: the missing database, at once, as for one host.
    await assert.rejects(openDb({ databaseUrl: pair.url("no_such_db"), poolSize: 1 }), (err: { code?: string }) => err.code === "3D000");
  });

  test("a write refused as read-only drops that connection, and the next finds the host that takes writes", async () => {
    const db = await openDb({ databaseUrl: pair.url("sluice"), poolSize: 1 });
    const setReadOnly = async (on: boolean) => {
      await sqlAt(pair.primary.port, `ALTER SYSTEM SET default_transaction_read_only = ${on ? "on" : "off"}`);
      await sqlAt(pair.primary.port, "SELECT pg_reload_conf()");
    };
    try {
      await db.exec("CREATE TABLE ro_probe (x int)");
      const pid = async () => (await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid"))[0]!.pid;
      const before = await pid();
      // As a switchover that fences the old primary first would: the open session turns read-only.
      await setReadOnly(true);
      const readOnly = async () => (await db.query<{ ro: string }>("SELECT current_setting('default_transaction_read_only') AS ro"))[0]?.ro;
      await waitFor(async () => (await readOnly()) === "on", { timeoutMs: 5_000 });
      const refused = await db.tx((q) => q.query("INSERT INTO ro_probe VALUES (1)")).catch((err: unknown) => err);
      assert.ok(refused instanceof StoreUnavailableError, `a read-only refusal is the store being away: ${String(refused)}`);
      assert.equal((refused.cause as { code?: string }).code, "25006");
      // No host takes writes now (the other is a standby): still unavailable, never a wrong write.
      await assert.rejects(db.query("INSERT INTO ro_probe VALUES (2)"), StoreUnavailableError);
      await setReadOnly(false);
      await db.query("INSERT INTO ro_probe VALUES (3)");
      assert.notEqual(await pid(), before, "the connection that was refused was closed, not reused");
      assert.deepEqual(await db.query("SELECT x FROM ro_probe"), [{ x: 3 }]);
      await db.exec("DROP TABLE ro_probe");
    } finally {
      await setReadOnly(false).catch(() => undefined);
      await db.close();
    }
  });

  test("nothing acknowledged is lost, deliveries resume by themselves, and caps, leases, buckets and throttles hold", async (t) => {
    const url = pair.url("sluice");
    const port = await closedPort();
    const base = `http://127.0.0.1:${port}`;
    const env = { DATABASE_URL: url, SLUICE_API_KEY: KEY, SLUICE_LOG_LEVEL: process.env.SLUICE_TEST_FAILOVER_LOG ?? "warn" };
    const call = async <T = unknown>(method: string, path: string, body?: unknown) => {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    };
    const output = () => procs.map((p, i) => `--- process ${i}:\n${p.output().slice(-3000)}`).join("\n");
    const api = spawnSluice("api", { ...env, SLUICE_PORT: String(port) });
    // A second worker that takes the leased destination's first delivery and dies holding it.
    const doomed = spawnSluice("worker", { ...env, SLUICE_LEASE_MARGIN_SECONDS: String(LEASE_MARGIN_SECONDS) });
    procs.push(api, doomed);
    await waitFor(async () => (await call("GET", "/healthz").catch(() => ({ status: 0 }))).status === 200, {
      timeoutMs: 30_000,
      message: () => `the API did not become ready: ${output()}`,
    });
    const destination = async (body: Record<string, unknown>) => {
      const r = await call<Destination>("POST", "/v1/destinations", body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id;
    };
    const view = async (id: string) => (await call<Destination>("GET", `/v1/destinations/${id}`)).body;

    // The lease: taken on the first primary by a worker that then dies, so only its expiry frees it.
    const leased = await destination({ url: `${rx.url}/leased`, max_concurrency: 1, timeout_seconds: LEASE_TIMEOUT_SECONDS });
    const accepted = new Map<string, { path: string; at: number }>(); // event id → its destination's path, and when it was accepted
    const publishTo = async (ids: string[]) => {
      const r = await call<EventBatchAccepted>("POST", "/v1/events/batch", {
        events: ids.map((id) => ({ type: "failover.test", payload: {}, destination_ids: [id] })),
      });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      return r.body.events.map((e) => e.id);
    };
    const [leasedFirst] = await publishTo([leased]);
    accepted.set(leasedFirst!, { path: "/leased", at: Date.now() });
    await waitFor(() => rx.countByPath("/leased") === 1, { timeoutMs: 30_000, message: () => `the doomed worker never sent: ${output()}` });
    doomed.kill("SIGKILL");
    const inspect: Db = await openDb({ databaseUrl: url, poolSize: 1 });
    t.after(() => inspect.close());
    const [lease] = await inspect.query<{ expires_at: Date }>("SELECT expires_at FROM leases");
    assert.ok(lease, "the dead worker's lease is in the store");
    const leaseEndsAt = lease.expires_at.getTime();

    const plain = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => destination({ url: `${rx.url}/p${i}` })));
    const capped = await destination({ url: `${rxCap.url}/capped`, max_concurrency: 2 });
    const shaped = await destination({ url: `${rx.url}/shaped`, rate_limit: RATE, max_concurrency: 50 });
    const throttled = await destination({ url: `${rx.url}/throttled` });
    const paths = new Map<string, string>([
      ...plain.map((id, i) => [id, `/p${i}`] as [string, string]),
      [capped, "/capped"],
      [shaped, "/shaped"],
      [throttled, "/throttled"],
      [leased, "/leased"],
    ]);

    const worker = spawnSluice("worker", env);
    procs.push(worker);
    // The throttle: a 429 with Retry-After, recorded on the first primary before it crashes.
    const [throttledFirst] = await publishTo([throttled]);
    accepted.set(throttledFirst!, { path: "/throttled", at: Date.now() });
    let throttleEndsAt = 0;
    await waitFor(
      async () => {
        const v = await view(throttled);
        if (v.status === "throttled") throttleEndsAt = Date.parse(v.throttled_until ?? "");
        return throttleEndsAt > 0;
      },
      { timeoutMs: 30_000, message: () => `the throttled destination was never throttled: ${output()}` },
    );

    // Publish steadily: every plain and the capped destination each batch, the others less often
    // (the throttled and leased ones queue until their hold ends; the shaped one below its rate, so
    // that it queues only while the store is away).
    const published: Published[] = [];
    let publishing = true;
    let batchNo = 0;
    const publisher = (async () => {
      while (publishing) {
        const n = batchNo++;
        const targets = [...plain, capped, ...(n % 4 === 0 ? [shaped, leased] : []), ...(n % 2 === 0 ? [throttled] : [])];
        const events = targets.map((id) => ({ type: "failover.test", payload: { n }, destination_ids: [id] }));
        const r = await call<EventBatchAccepted | ApiError>("POST", "/v1/events/batch", { events }).catch(() => ({
          status: 0,
          body: null,
        }));
        const entry: Published = { at: Date.now(), status: r.status };
        if (r.status === 202) {
          (r.body as EventBatchAccepted).events.forEach((e, j) => accepted.set(e.id, { path: paths.get(targets[j]!)!, at: entry.at }));
        } else entry.code = (r.body as ApiError | null)?.error?.code;
        published.push(entry);
        await sleep(40);
      }
    })();

    // Unplanned: the primary's processes die; a second later (an operator's or a script's
    // detection) the standby is promoted.
    await sleep(2_000);
    const crashAt = Date.now();
    await pair.crashPrimary();
    await sleep(1_000);
    await pair.promoteStandby();
    const promotedAt = Date.now();
    await sleep(3_000);

    // Planned: the old primary returns as a synchronous standby; then the primary is stopped
    // cleanly and the standby promoted at once.
    await pair.rejoin();
    await sleep(1_000);
    const stopAt = Date.now();
    await pair.stopPrimary();
    await pair.promoteStandby();
    const switchedAt = Date.now();
    await sleep(3_000);
    publishing = false;
    await publisher;

    // Drained: every event answered 202 arrives (the leased one twice: once to the dead worker).
    const ids = () => new Set([...rx.received, ...rxCap.received].map((r) => r.headers["webhook-id"]));
    await waitFor(
      () => {
        const seen = ids();
        return [...accepted.keys()].every((id) => seen.has(id));
      },
      {
        timeoutMs: Math.max(30_000, leaseEndsAt + 30_000 - Date.now()),
        message: () => {
          const seen = ids();
          const missing = [...accepted].filter(([id]) => !seen.has(id));
          return `${missing.length} of ${accepted.size} accepted events never arrived, e.g. ${JSON.stringify(missing.slice(0, 5))}: ${output()}`;
        },
      },
    );
    const arrivals = [...rx.received, ...rxCap.received];
    const byId = new Map<string, ReceivedRequest[]>();
    for (const r of arrivals) {
      const id = r.headers["webhook-id"]!;
      byId.set(id, [...(byId.get(id) ?? []), r]);
      if (accepted.has(id)) assert.equal(r.path, accepted.get(id)!.path, "each event went to its own destination");
    }
    const lost = [...accepted.keys()].filter((id) => !byId.has(id));
    // A repeat is a second request answered 2xx: the leased destination's first (left hanging)
    // and the throttled one's first (answered 429) were meant to be sent again.
    const unanswered = new Set([leasedFirst, throttledFirst]);
    const repeated = [...byId].filter(([id, rs]) => rs.length > (unanswered.has(id) ? 2 : 1));

    // Only 202 and 503 SLUICE_STORE_UNAVAILABLE were answered, and only around the two switches.
    const others = published.filter((p) => p.status !== 202 && !(p.status === 503 && p.code === "SLUICE_STORE_UNAVAILABLE"));
    assert.deepEqual(others.slice(0, 5), [], `other answers: ${JSON.stringify(others.slice(0, 5))}`);
    // Each switch's figures: events are counted by when they were accepted, the first switch's
    // until the second begins.
    const scenario = (downAt: number, upAt: number, until: number) => {
      const inPhase = (at: number) => at >= (downAt === crashAt ? 0 : downAt) && at < until;
      const first202 = published.find((p) => p.status === 202 && p.at > upAt);
      const firstDelivery = arrivals.filter((r) => r.receivedAt > upAt).sort((a, b) => a.receivedAt - b.receivedAt)[0];
      assert.ok(first202 && firstDelivery, "publishing and delivery resumed");
      return {
        accepted: [...accepted.values()].filter((a) => inPhase(a.at)).length,
        lost: lost.filter((id) => inPhase(accepted.get(id)!.at)).length,
        repeats: repeated.filter(([id]) => inPhase(accepted.get(id)?.at ?? 0)).length,
        down: (upAt - downAt) / 1000,
        refused: published.filter((p) => p.status === 503 && p.at >= downAt && p.at < until).length,
        to202: (first202.at - upAt) / 1000,
        toDelivery: (firstDelivery.receivedAt - upAt) / 1000,
      };
    };
    const unplanned = scenario(crashAt, promotedAt, stopAt);
    const planned = scenario(stopAt, switchedAt, Infinity);
    assert.deepEqual(lost, [], "every event answered 202 was delivered");
    // Each worker's lease (timeout + the 30 s default margin) outlasts these outages, and a worker
    // that lives writes its results once the store is back; so no delivery is sent twice but the
    // one whose worker died (at-least-once's one cause of repeats, invariant 6).
    assert.deepEqual(
      repeated.map(([id, rs]) => `${id} at ${rs.map((r) => r.receivedAt - crashAt).join(", ")} ms after the crash`),
      [],
      "no delivery was sent twice",
    );

    // The cap: never more than 2 in flight to the capped destination, and it did run 2 at once.
    assert.ok(rxCap.maxInflight <= 2, `the capped destination saw ${rxCap.maxInflight} requests at once`);
    assert.equal(rxCap.maxInflight, 2, "the cap was reached, so it could have been exceeded");
    // The lease, taken on the first primary, kept the leased destination (max_concurrency 1) from
    // sending until it expired on the second, and then its delivery went out again.
    const leasedArrivals = rx.received.filter((r) => r.path === "/leased");
    const [held, resent] = leasedArrivals;
    assert.ok(held && resent && resent.headers["webhook-id"] === leasedFirst, "the leased delivery went out again after its lease");
    assert.ok(leaseEndsAt > promotedAt, "the lease outlived the failover (else this checks nothing)");
    assert.ok(resent.receivedAt >= leaseEndsAt - SLACK_MS, `sent again ${leaseEndsAt - resent.receivedAt} ms before its lease ended`);
    // The throttle: nothing reached the throttled destination before its Retry-After ran out.
    const afterThrottle = rx.received.filter((r) => r.path === "/throttled").slice(1);
    assert.ok(throttleEndsAt > promotedAt, "the throttle outlived the failover (else this checks nothing)");
    assert.ok(
      afterThrottle.every((r) => r.receivedAt >= throttleEndsAt - SLACK_MS),
      `a request came ${throttleEndsAt - Math.min(...afterThrottle.map((r) => r.receivedAt))} ms before the throttle ended`,
    );
    // The bucket: no window over burst + rate × length, at the receiver and in the recorded attempts.
    const shapedTimes = rx.received.filter((r) => r.path === "/shaped").map((r) => r.receivedAt);
    assert.equal(worstWindow(shapedTimes, RATE.max_per_second, RATE.burst_capacity, RATE_JITTER_MS), null);
    const auditLines: string[] = [];
    const audit = await auditRate(
      inspect,
      { destinationId: shaped, since: new Date(crashAt - 60_000), all: true, jitterMs: RATE_JITTER_MS },
      (l) => auditLines.push(l),
    );
    assert.equal(audit, 0, auditLines.join("\n"));

    // LISTEN followed the store: an event published now, with every worker idle, is claimed at once.
    await waitFor(async () => (await Promise.all([...paths.keys()].map(view))).every((v) => v.queued_events === 0), {
      timeoutMs: 30_000,
      message: "deliveries still unfinished",
    });
    await sleep(1_000);
    const wakeFrom = Date.now();
    const [late] = await publishTo([plain[0]!]);
    await waitFor(() => ids().has(late), {
      timeoutMs: WAKE_LIMIT_MS,
      message: "the idle worker was not woken by the new primary's NOTIFY",
    });
    const wakeMs = rx.received.find((r) => r.headers["webhook-id"] === late)!.receivedAt - wakeFrom;

    for (const p of [api, worker]) assert.equal(p.proc.exitCode, null, `no restart: ${output()}`);
    const row = (name: string, s: typeof unplanned) =>
      `| ${name} | ${s.accepted} | ${s.lost} | ${s.repeats} | ${s.down.toFixed(1)} | ${s.refused} | ${s.to202.toFixed(2)} | ${s.toDelivery.toFixed(2)} |`;
    const table = [
      "| switch | answered 202 | lost | repeats | promoted after (s) | publishes answered 503 | promotion → first 202 (s) | promotion → first delivery (s) |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
      row("unplanned", unplanned),
      row("planned", planned),
      `an idle worker woke ${wakeMs} ms after a publish on the new primary; the leased delivery went out again ${resent.receivedAt - leaseEndsAt} ms after its lease ended`,
    ];
    for (const line of table) t.diagnostic(line);

    api.kill("SIGTERM");
    worker.kill("SIGTERM");
    assert.equal(await api.exited, 0, `the API exits cleanly: ${output()}`);
    assert.equal(await worker.exited, 0, `the worker exits cleanly: ${output()}`);
  });
});
