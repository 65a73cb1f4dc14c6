import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../../scripts/pg-server.mjs";
import { startReceiver, type Receiver } from "../helpers/receiver.js";
import { closedPort, spawnSluice, type SluiceProcess } from "../helpers/processes.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import type { ApiError, AttemptTimeline, Destination, EventBatchAccepted } from "../helpers/api-types.js";

// The store goes away under load (Postgres stopped as `pg_ctl -m immediate` does) and comes back.
// On a server of its own, so the crash touches no other test. What must hold: the process stays
// up; the API answers 503 SLUICE_STORE_UNAVAILABLE with Retry-After and /healthz says not ready;
// delivery resumes by itself within seconds of the store's return (RESUME_LIMIT_MS); nothing
// accepted is lost; and no destination's health is blamed for the outage.

// How soon after the store's return the shaped backlog must move again. The worker retries a
// failed claim at most 1 s apart (CLAIM_RETRY_MAX_MS, src/dispatch/dispatcher.ts) and re-makes its
// LISTEN connection at most 1 s apart (LISTEN_RETRY_MAX_MS, src/db/server-db.ts), which wakes every
// loop; so the first claim comes within about 1 s, and d0's next token within 50 ms of it. Five
// times that second leaves a loaded machine room for the reconnect, the claim and the request,
// and still fails a worker that does not come back by itself: one that stops, or waits for its
// 30 s idle sleep (maxIdleMs) or for leases to expire (40 s).
const RESUME_LIMIT_MS = 5 * 1_000;

describe("the store goes away under load", () => {
  let pgs: ThrowawayPostgres;
  let rx: Receiver;
  let proc: SluiceProcess | undefined;
  before(async () => {
    pgs = await startThrowawayPostgres({ crashSafe: true });
    rx = await startReceiver({ status: 200 });
  });
  after(async () => {
    proc?.kill("SIGKILL");
    await rx?.close();
    await pgs?.stop();
  });

  test("Sluice stays up, answers 503, resumes within seconds of the store's return, loses nothing and blames no destination", async () => {
    const key = "sk_outage_test";
    const port = await closedPort();
    const base = `http://127.0.0.1:${port}`;
    proc = spawnSluice("start", {
      DATABASE_URL: pgs.url,
      SLUICE_PORT: String(port),
      SLUICE_API_KEY: key,
      SLUICE_LOG_LEVEL: process.env.SLUICE_TEST_OUTAGE_LOG ?? "info",
    });
    const p = proc;
    /** `T`: the answer's body type, from test/helpers/api-types.ts. */
    const call = async <T = unknown>(method: string, path: string, body?: unknown) => {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as T };
    };
    await waitFor(async () => (await call("GET", "/healthz").catch(() => ({ status: 0 }))).status === 200, {
      timeoutMs: 30_000,
      message: () => `Sluice did not become ready: ${p.output()}`,
    });

    // Nine plain destinations, and one shaped to 20/s so that it holds a backlog through the
    // outage: its deliveries after the return prove claims resume by themselves, not by a publish.
    const dests: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await call<Destination>("POST", "/v1/destinations", {
        url: `${rx.url}/d${i}`,
        ...(i === 0 ? { rate_limit: { max_per_second: 20 } } : {}),
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      dests.push(r.body.id);
    }

    const accepted = new Map<string, string>(); // event id → its destination's path
    const byStatus = new Map<number, number>();
    const unavailable: { code: string | undefined; retryAfter: string | null }[] = [];
    let publishing = true;
    let n = 0;
    const publisher = (async () => {
      while (publishing) {
        const events = Array.from({ length: 10 }, () => {
          const i = n++ % dests.length;
          return { type: "outage.test", payload: { n }, destination_ids: [dests[i]!] };
        });
        const r = await call<EventBatchAccepted | ApiError>("POST", "/v1/events/batch", { events }).catch(() => ({
          status: 0,
          headers: new Headers(),
          body: null,
        }));
        byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
        if (r.status === 202) {
          (r.body as EventBatchAccepted).events.forEach((e, j) => accepted.set(e.id, `/d${dests.indexOf(events[j]!.destination_ids[0]!)}`));
        } else if (r.status === 503) {
          unavailable.push({ code: (r.body as ApiError | null)?.error?.code, retryAfter: r.headers.get("retry-after") });
        }
        await sleep(20);
      }
    })();

    await sleep(1500);
    await pgs.crash();
    const downAt = Date.now();
    await sleep(1000);
    // /healthz (not an OpenAPI operation) answers the error body with status "unavailable".
    const health = await call<ApiError & { status: "unavailable" }>("GET", "/healthz");
    assert.equal(health.status, 503, "/healthz answers 503 while the store is away");
    assert.equal(health.body.error.code, "SLUICE_STORE_UNAVAILABLE");
    await sleep(2500);
    assert.equal(p.proc.exitCode, null, `the process stays up through the outage: ${p.output()}`);
    await pgs.restart();
    const backAt = Date.now();
    const before = rx.received.length;
    await sleep(1500);
    publishing = false;
    await publisher;

    assert.ok(unavailable.length > 0, `some publishes fell in the outage (${[...byStatus].join(" ")})`);
    for (const u of unavailable) {
      assert.equal(u.code, "SLUICE_STORE_UNAVAILABLE");
      assert.ok(u.retryAfter !== null && Number(u.retryAfter) > 0, "503 carries Retry-After");
    }
    const others = [...byStatus.keys()].filter((s) => s !== 202 && s !== 503);
    assert.deepEqual(others, [], `only 202 and 503 answers (${[...byStatus].join(" ")}); output: ${p.output()}`);

    // Resumed by itself: the first arrival after the return, and the first for the shaped backlog.
    const sinceReturn = (path?: string) =>
      rx.received.slice(before).find((r) => r.receivedAt >= backAt && (path === undefined || r.path === path));
    await waitFor(() => sinceReturn("/d0") !== undefined, {
      timeoutMs: Math.max(0, backAt + RESUME_LIMIT_MS - Date.now()),
      message: () =>
        `deliveries resumed after the store came back (arrivals since: ${rx.received.length - before}, ` +
        `last at ${(rx.received.at(-1)?.receivedAt ?? 0) - backAt} ms from the return; publishes ${[...byStatus].join(" ")}); output: ${p.output()}`,
    });
    const firstAfter = sinceReturn();
    const firstShaped = sinceReturn("/d0");
    assert.ok(firstAfter && firstShaped);
    // Stamped on arrival, so a late look by this test does not count against Sluice.
    const resumeMs = firstShaped.receivedAt - backAt;
    assert.ok(
      resumeMs <= RESUME_LIMIT_MS,
      `the shaped backlog resumed ${resumeMs} ms after the store's return (limit ${RESUME_LIMIT_MS} ms)`,
    );

    // Nothing accepted is lost; duplicates could only come from a lease that expired (none did).
    await waitFor(
      () => {
        const ids = new Set(rx.received.map((r) => r.headers["webhook-id"]));
        return [...accepted.keys()].every((id) => ids.has(id));
        // Drained at full speed: d0's share (~1/10 of the events) at its 20/s takes ~5 s; a delivery
        // stuck behind a lease (e.g. a claim the store committed as it died) would take 40 s.
      },
      { timeoutMs: 15_000, message: () => `not every accepted event arrived: ${accepted.size} accepted, ${rx.received.length} received` },
    );
    const seen = new Map<string, string>();
    for (const r of rx.received) {
      const id = r.headers["webhook-id"]!;
      assert.ok(!seen.has(id), `event ${id} arrived twice`);
      seen.set(id, r.path);
      if (accepted.has(id)) assert.equal(r.path, accepted.get(id), "each event went to its destination");
    }

    // The outage is not the destinations' fault: no failed attempt, full health, nobody paused.
    await waitFor(
      async () => {
        const views = await Promise.all(dests.map((id) => call<Destination>("GET", `/v1/destinations/${id}`)));
        return views.every((v) => v.body.queued_events === 0);
      },
      { timeoutMs: 30_000, message: "deliveries still unfinished" },
    );
    for (const id of dests) {
      const d = (await call<Destination>("GET", `/v1/destinations/${id}`)).body;
      assert.deepEqual(d.health, { status: "healthy", score: 100, consecutive_failures: 0 }, `${id}: ${JSON.stringify(d)}`);
      assert.equal(d.paused_at, null);
      const attempts = (await call<AttemptTimeline>("GET", `/v1/destinations/${id}/attempts?limit=1000`)).body.data;
      assert.ok(
        attempts.every((a) => a.outcome === "success"),
        `${id}: ${JSON.stringify(attempts.find((a) => a.outcome !== "success"))}`,
      );
    }
    process.stderr.write(
      `# store outage: ${accepted.size} events accepted, ${unavailable.length} batches answered 503 over ${backAt - downAt} ms; shaped backlog resumed ${resumeMs} ms after the store's return\n`,
    );

    p.kill("SIGTERM");
    assert.equal(await p.exited, 0, `SIGTERM exits 0: ${p.output()}`);
  });
});
