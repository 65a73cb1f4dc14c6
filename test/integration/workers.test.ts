import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startSluice, type TestSluice } from "../helpers/sluice.js";
import { startReceiver, type Receiver, type ReceivedRequest } from "../helpers/receiver.js";
import { spawnSluice, type SluiceProcess } from "../helpers/processes.js";
import { waitFor, sleep } from "../helpers/wait-for.js";
import { worstWindow } from "../helpers/windows.js";
import type { Delivery, Destination, EventAccepted, EventBatchAccepted, Page } from "../helpers/api-types.js";

// Invariants that only show with several real worker processes on one Postgres server:
// 1. nothing accepted is lost, across a SIGKILL of a worker mid-run;
// 2. max_concurrency holds at the receiver across two worker processes.

describe("worker processes on a Postgres server", () => {
  let s: TestSluice;
  const procs: SluiceProcess[] = [];
  before(async () => {
    s = await startSluice("server", { worker: false });
  });
  after(async () => {
    for (const p of procs) p.kill("SIGKILL");
    await s?.stop();
  });
  const worker = (env: Record<string, string> = {}) => {
    const p = spawnSluice("worker", { DATABASE_URL: s.databaseUrl!, SLUICE_LEASE_MARGIN_SECONDS: "1", ...env });
    procs.push(p);
    return p;
  };

  async function publishRoundRobin(destIds: string[], n: number, type: string): Promise<string[]> {
    const ids: string[] = [];
    for (let off = 0; off < n; off += 500) {
      const events = Array.from({ length: Math.min(500, n - off) }, (_, i) => ({
        type,
        payload: { i: off + i },
        destination_ids: [destIds[(off + i) % destIds.length]!],
      }));
      const r = await s.api<EventBatchAccepted>("POST", "/v1/events/batch", { events });
      assert.equal(r.status, 202);
      ids.push(...r.body.events.map((e) => e.id));
    }
    return ids;
  }

  async function unfinished(destIds: string[]): Promise<number> {
    let n = 0;
    for (const id of destIds) n += (await s.api<Destination>("GET", `/v1/destinations/${id}`)).body.queued_events;
    return n;
  }

  test("invariant 1: a worker killed mid-run loses nothing; its leases come back by themselves", async () => {
    const rx: Receiver = await startReceiver({ status: 200, delayMs: 60 });
    try {
      const dests: string[] = [];
      for (let i = 0; i < 6; i++) {
        dests.push(
          (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/crash/${i}`, timeout_seconds: 2, max_concurrency: 4 }))
            .body.id,
        );
      }
      const events = await publishRoundRobin(dests, 600, "crash.test");
      const a = worker();
      await waitFor(() => rx.received.length >= 100, {
        timeoutMs: 30_000,
        message: () => `worker A delivered ${rx.received.length}; output: ${a.output()}`,
      });
      a.kill("SIGKILL");
      assert.equal(await a.exited, "SIGKILL");
      const atKill = rx.received.length;
      assert.ok(atKill < 600, "the kill happened mid-run");

      const b = worker();
      await waitFor(async () => (await unfinished(dests)) === 0, {
        timeoutMs: 60_000,
        message: () => `still unfinished after restart; output: ${b.output()}`,
      });
      const got = new Map<string, number>();
      for (const r of rx.received) got.set(r.headers["webhook-id"]!, (got.get(r.headers["webhook-id"]!) ?? 0) + 1);
      for (const id of events) assert.ok(got.has(id), `event ${id} never arrived`);
      const duplicates = rx.received.length - got.size;
      // Only requests in flight at the kill may arrive twice (invariant 6): at most the caps' sum.
      assert.ok(duplicates <= 6 * 4, `${duplicates} duplicates`);
      for (const id of dests) {
        const delivered = await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${id}&status=delivered&limit=1000`);
        assert.equal(delivered.body.data.length, 100);
      }

      b.kill("SIGTERM");
      assert.equal(await b.exited, 0, "SIGTERM exits 0");
    } finally {
      await rx.close();
    }
  });

  test("invariant 2: max_concurrency holds at the receiver across two worker processes", async () => {
    const { rx, peak } = await peakReceiver();
    try {
      // 24 destinations with caps 1–4: claims lock many rows each, which widens the window in
      // which a stale in-flight count could over-grant.
      const caps = Array.from({ length: 24 }, (_, i) => (i % 4) + 1);
      const dests: string[] = [];
      for (const [i, cap] of caps.entries()) {
        dests.push((await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/cap/${i}`, max_concurrency: cap })).body.id);
      }
      const w1 = worker({ SLUICE_GRANT_CAP: "2", SLUICE_CLAIM_BATCH: "24", SLUICE_CLAIM_LOOPS: "4" });
      const w2 = worker({ SLUICE_GRANT_CAP: "2", SLUICE_CLAIM_BATCH: "24", SLUICE_CLAIM_LOOPS: "4" });
      await publishRoundRobin(dests, 1200, "cap.test");
      await waitFor(async () => (await unfinished(dests)) === 0, {
        timeoutMs: 90_000,
        message: () => `unfinished; ${w1.output()} ${w2.output()}`,
      });
      assert.equal(rx.received.length, 1200);
      for (const [i, cap] of caps.entries()) {
        const p = peak.get(`/cap/${i}`) ?? 0;
        assert.ok(p <= cap, `destination ${i} with cap ${cap} saw ${p} in flight`);
      }
      assert.ok(
        caps.some((cap, i) => cap === 4 && peak.get(`/cap/${i}`) === 4),
        "a cap of 4 was reached, so the test could fail",
      );
      w1.kill("SIGTERM");
      w2.kill("SIGTERM");
      assert.equal(await w1.exited, 0);
      assert.equal(await w2.exited, 0);
    } finally {
      await rx.close();
    }
  });
  /** A receiver that records the peak of requests in flight per path (= per destination). */
  async function peakReceiver(): Promise<{ rx: Receiver; peak: Map<string, number> }> {
    const current = new Map<string, number>();
    const peak = new Map<string, number>();
    const rx = await startReceiver(async (req: ReceivedRequest) => {
      const n = (current.get(req.path) ?? 0) + 1;
      current.set(req.path, n);
      peak.set(req.path, Math.max(peak.get(req.path) ?? 0, n));
      await sleep(25 + Math.random() * 25);
      current.set(req.path, (current.get(req.path) ?? 1) - 1);
      return { status: 200 };
    });
    return { rx, peak };
  }

  /** Publishes `batch` events round-robin every `everyMs` until stopped; returns the accepted ids. */
  function keepPublishing(destIds: string[], type: string, batch = 20, everyMs = 50): { stop(): Promise<string[]> } {
    const ids: string[] = [];
    let on = true;
    let n = 0;
    const done = (async () => {
      while (on) {
        const events = Array.from({ length: batch }, () => ({ type, payload: { n }, destination_ids: [destIds[n++ % destIds.length]!] }));
        const r = await s.api<EventBatchAccepted>("POST", "/v1/events/batch", { events });
        assert.equal(r.status, 202);
        ids.push(...r.body.events.map((e) => e.id));
        await sleep(everyMs);
      }
    })();
    return {
      async stop() {
        on = false;
        await done;
        return ids;
      },
    };
  }

  function countArrivals(rx: Receiver): Map<string, number> {
    const got = new Map<string, number>();
    for (const r of rx.received) got.set(r.headers["webhook-id"]!, (got.get(r.headers["webhook-id"]!) ?? 0) + 1);
    return got;
  }

  test("SIGKILL of a worker three times in a row under load: caps hold at the receiver, nothing is lost", async () => {
    const { rx, peak } = await peakReceiver();
    try {
      const caps = [1, 2, 3, 4, 2, 3];
      const dests: string[] = [];
      for (const [i, cap] of caps.entries()) {
        dests.push(
          (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/kill/${i}`, timeout_seconds: 2, max_concurrency: cap }))
            .body.id,
        );
      }
      const steady = worker();
      const load = keepPublishing(dests, "kill.test");
      let victim = worker();
      for (let k = 0; k < 3; k++) {
        const before = rx.received.length;
        // Kill only while the victim is busy: some of its requests are in flight, their leases held.
        await waitFor(() => rx.received.length >= before + 40, {
          timeoutMs: 30_000,
          message: () => `no progress before kill ${k + 1}: ${victim.output()}`,
        });
        victim.kill("SIGKILL");
        assert.equal(await victim.exited, "SIGKILL");
        victim = worker();
      }
      const events = await load.stop();
      await waitFor(async () => (await unfinished(dests)) === 0, {
        timeoutMs: 60_000,
        message: () => `unfinished after the kills: ${steady.output()} ${victim.output()}`,
      });

      const got = countArrivals(rx);
      for (const id of events) assert.ok(got.has(id), `event ${id} never arrived`);
      // Only requests in flight at a kill may arrive twice (invariant 6): per kill, at most the caps' sum.
      const duplicates = rx.received.length - got.size;
      assert.ok(duplicates <= 3 * caps.reduce((a, b) => a + b, 0), `${duplicates} duplicates`);
      // A killed worker's leases keep counting until they expire: no cap is exceeded meanwhile.
      for (const [i, cap] of caps.entries()) {
        const p = peak.get(`/kill/${i}`) ?? 0;
        assert.ok(p <= cap, `destination ${i} with cap ${cap} saw ${p} in flight`);
      }
      assert.ok(
        caps.some((cap, i) => cap > 1 && peak.get(`/kill/${i}`) === cap),
        "some cap above 1 was reached, so the test could fail",
      );
      steady.kill("SIGTERM");
      victim.kill("SIGTERM");
      assert.equal(await steady.exited, 0);
      assert.equal(await victim.exited, 0);
    } finally {
      await rx.close();
    }
  });

  test("SIGTERM under load: exit 0, in-flight requests finish and are recorded, nothing lost, no duplicates", async () => {
    const { rx, peak } = await peakReceiver();
    try {
      const dests: string[] = [];
      for (let i = 0; i < 4; i++)
        dests.push((await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/term/${i}`, max_concurrency: 3 })).body.id);
      const load = keepPublishing(dests, "term.test");
      const a = worker();
      await waitFor(() => rx.received.length >= 60, { timeoutMs: 30_000, message: () => a.output() });
      a.kill("SIGTERM");
      assert.equal(await a.exited, 0, `SIGTERM exits 0: ${a.output()}`);
      const atStop = rx.received.length;
      await sleep(300);
      assert.equal(rx.received.length, atStop, "a stopped worker sends nothing more");
      const b = worker();
      const events = await load.stop();
      await waitFor(async () => (await unfinished(dests)) === 0, { timeoutMs: 60_000, message: () => `unfinished: ${b.output()}` });
      const got = countArrivals(rx);
      for (const id of events) assert.ok(got.has(id), `event ${id} never arrived`);
      // The grace let every in-flight request finish and its result be written: none is sent again.
      assert.equal(rx.received.length - got.size, 0, "duplicates after a graceful stop");
      for (const [i] of dests.entries()) assert.ok((peak.get(`/term/${i}`) ?? 0) <= 3);
      b.kill("SIGTERM");
      assert.equal(await b.exited, 0);
    } finally {
      await rx.close();
    }
  });
});

describe("graceful shutdown", () => {
  test("SIGTERM with requests still hanging after the grace releases their leases; another worker delivers them", async () => {
    const s = await startSluice("server", { worker: false });
    let hang = true;
    const rx = await startReceiver(() => (hang ? { status: 200, hang: true } : { status: 200 }));
    const procs: SluiceProcess[] = [];
    try {
      const d = (await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/g`, timeout_seconds: 60, max_concurrency: 3 }))
        .body;
      const spawnW = () => {
        const p = spawnSluice("worker", { DATABASE_URL: s.databaseUrl!, SLUICE_SHUTDOWN_GRACE_SECONDS: "1" });
        procs.push(p);
        return p;
      };
      const a = spawnW();
      await s.api("POST", "/v1/events/batch", { events: [0, 1, 2].map((i) => ({ type: "g.x", payload: { i }, destination_ids: [d.id] })) });
      await waitFor(() => rx.received.length === 3, { message: () => a.output() });
      a.kill("SIGTERM");
      assert.equal(await a.exited, 0);
      const list = (await s.api<Page<Delivery>>("GET", `/v1/deliveries?destination_id=${d.id}`)).body.data;
      assert.deepEqual(
        list.map((x) => x.status),
        ["queued", "queued", "queued"],
        "released, not left leased for 90 s",
      );
      hang = false;
      spawnW();
      await waitFor(async () => (await s.api<Destination>("GET", `/v1/destinations/${d.id}`)).body.queued_events === 0, {
        timeoutMs: 20_000,
      });
    } finally {
      for (const p of procs) p.kill("SIGKILL");
      await rx.close();
      await s.stop();
    }
  });
});

describe("separate api and worker processes", () => {
  test("`sluice api` and `sluice worker` against one DATABASE_URL deliver an event end to end", async () => {
    const { createTestDatabase } = await import("../helpers/db.js");
    const tdb = await createTestDatabase();
    const rx = await startReceiver();
    const env = { DATABASE_URL: tdb.url, SLUICE_API_KEY: "sk_split_test", SLUICE_PORT: "0", SLUICE_LOG_LEVEL: "info" };
    const api = spawnSluice("api", env);
    const worker = spawnSluice("worker", env);
    try {
      let url = "";
      await waitFor(
        () => {
          const m = /"url":"(http:\/\/[^"]+)"/.exec(api.output());
          if (m) url = m[1]!;
          return url !== "";
        },
        { message: () => `api never became ready: ${api.output()}` },
      );
      const call = async <T = unknown>(method: string, path: string, body?: unknown) => {
        const res = await fetch(url + path, {
          method,
          headers: { authorization: "Bearer sk_split_test", "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as T };
      };
      assert.equal((await fetch(url + "/healthz")).status, 200);
      await call("POST", "/v1/destinations", { url: `${rx.url}/split` });
      const ev = await call<EventAccepted>("POST", "/v1/events", { type: "split.x", payload: { ok: true } });
      assert.equal(ev.status, 202);
      await rx.waitForCount(1, 15_000);
      assert.equal(rx.received[0]!.headers["webhook-id"], ev.body.id);
      api.kill("SIGTERM");
      worker.kill("SIGTERM");
      assert.equal(await api.exited, 0);
      assert.equal(await worker.exited, 0);
    } finally {
      api.kill("SIGKILL");
      worker.kill("SIGKILL");
      await rx.close();
      await tdb.drop();
    }
  });
});

describe("rate limits across worker processes", () => {
  test("two workers share one destination's token bucket: no window over the limit at the receiver", async () => {
    const s = await startSluice("server", { worker: false });
    const rx = await startReceiver({ status: 200, delayMs: 5 });
    const procs = [0, 1].map(() => spawnSluice("worker", { DATABASE_URL: s.databaseUrl!, SLUICE_CLAIM_BATCH: "1" }));
    try {
      const d = (
        await s.api<Destination>("POST", "/v1/destinations", {
          url: `${rx.url}/shared`,
          max_concurrency: 20,
          rate_limit: { max_per_second: 20, burst_capacity: 10 },
        })
      ).body;
      await s.api("POST", "/v1/events/batch", {
        events: Array.from({ length: 70 }, (_, i) => ({ type: "sh.x", payload: { i }, destination_ids: [d.id] })),
      });
      await waitFor(() => rx.received.length === 70, { timeoutMs: 20_000, message: () => `received ${rx.received.length}` });
      const bad = worstWindow(
        rx.received.map((r) => r.receivedAt),
        20,
        10,
        500,
      );
      assert.equal(bad, null, JSON.stringify(bad));
    } finally {
      for (const p of procs) p.kill("SIGKILL");
      await rx.close();
      await s.stop();
    }
  });
});

describe("sharded workers", () => {
  test("`sluice worker --shard 0/2` serves only its slice; `--shard 1/2` serves the rest", async () => {
    const s = await startSluice("server", { worker: false });
    const rx = await startReceiver();
    const procs: SluiceProcess[] = [];
    try {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await s.api<Destination>("POST", "/v1/destinations", { url: `${rx.url}/shard/${i}` })).body.id);
      const slice = new Map(
        (
          await s.running.db.query<{ id: string; slice: number }>(
            "SELECT id, abs(hashtext(id)) % 2 AS slice FROM destinations WHERE id = ANY($1)",
            [ids],
          )
        ).map((r) => [r.id, r.slice]),
      );
      assert.ok([...slice.values()].includes(0) && [...slice.values()].includes(1), "both slices have destinations");
      await s.api("POST", "/v1/events/batch", { events: ids.map((id) => ({ type: "shard.x", payload: {}, destination_ids: [id] })) });
      procs.push(spawnSluice("worker", { DATABASE_URL: s.databaseUrl! }, ["--shard", "0/2"]));
      const zero = ids.filter((id) => slice.get(id) === 0).length;
      await waitFor(() => rx.received.length === zero, { message: () => `slice 0 got ${rx.received.length} of ${zero}` });
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(rx.received.length, zero, "nothing of slice 1 was sent by the slice-0 worker");
      procs.push(spawnSluice("worker", { DATABASE_URL: s.databaseUrl! }, ["--shard", "1/2"]));
      await waitFor(() => rx.received.length === ids.length);
    } finally {
      for (const p of procs) p.kill("SIGKILL");
      await rx.close();
      await s.stop();
    }
  });
});
