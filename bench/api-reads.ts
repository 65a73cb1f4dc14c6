// `npm run bench:api-reads`: how long the API's reads take on a store that has worked for a while,
// on the embedded store and on a server side by side. Per store, fresh: destinations created
// through the API (one in 20 pointing at a closed port, so that it fails, retries and is paused
// by its health; one in 40 paused through the API, so that its backlog waits), idle ones beside
// them, then events published in batches of 1,000 (one delivery each, round-robin) while
// `sluice start` (embedded) or `sluice api` + N × `sluice worker` (server) deliver them; then, once
// delivery is quiet and the janitor has had a round, every read is timed `reps` times (median and
// slowest) through HTTP, as a dashboard or a client calls it. The ratio column is embedded ÷ server;
// on the server, pg_stat_statements also tells how long Postgres spent JIT-compiling each read.
// Prints a table; writes bench/results/api-reads-<time>.json.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { connect, jitMsSinceReset, withDatabase } from "./pg.js";
import { clusterFlags, parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

type Store = "embedded" | "server";
type Read = { name: string; path: string };
type Timing = {
  name: string;
  path: string;
  medianMs: number;
  maxMs: number;
  status: number;
  /** The server store: Postgres's time JIT-compiling, per call (pg_stat_statements). */
  jitMs?: number;
};
type Seeded = { seedS: number; perS: number; statsCallsMs: number[]; deliveries: Record<string, number>; timings: Timing[] };

const flags = () =>
  parseFlags("npm run bench:api-reads", {
    destinations: { def: 1000, quick: 100, min: 40, help: "destinations that get events" },
    idle: { def: 4000, quick: 400, min: 0, help: "destinations beside them that get none" },
    events: { def: 300_000, quick: 30_000, help: "events, one delivery each, round-robin over the destinations" },
    reps: { def: 9, quick: 5, help: "times each read is timed (median and slowest reported)" },
    "poll-stats": {
      def: 0,
      min: 0,
      help: "while seeding, a client asks GET /v1/stats?minutes=60 every this many seconds, as the dashboard's overview does (0: none)",
    },
    backlog: {
      def: 0,
      min: 0,
      help: "after seeding, this many more events to one paused destination: a long backlog, as a pause builds (0: none)",
    },
    stores: { type: "str", arg: "LIST", def: "embedded,server", help: "which stores, comma-separated (embedded, server)" },
    ...clusterFlags(900),
    quick: { type: "bool", help: "small: 100 destinations, 30,000 events" },
  });

/** Events published but not yet sent may pile up to this many before publishing waits. */
const AHEAD = 30_000;

async function main(): Promise<void> {
  const f = flags();
  const stores = f.stores.split(",").map((s) => s.trim()) as Store[];
  if (stores.length === 0 || stores.some((s) => s !== "embedded" && s !== "server"))
    throw new Error(`--stores takes embedded and/or server, comma-separated, not '${f.stores}'`);
  const bench = benchStart("api-reads");
  const { out } = bench;
  out(
    `workload: ${fmt(f.destinations)} destinations (1 in 20 failing: a closed port; 1 in 40 paused through the API) + ${fmt(f.idle)} idle; ` +
      `${fmt(f.events)} events in batches of 1,000, round-robin; ` +
      (f.backlog > 0 ? `then ${fmt(f.backlog)} more to one paused destination; ` : "") +
      `then each read ${f.reps} times, one at a time, once delivery is quiet.`,
  );
  // pg_stat_statements: to tell which reads Postgres JIT-compiles.
  const pg = stores.includes("server") ? await bench.postgres(!f["no-fsync"], true) : null;
  const receiver = await Receiver.start(bench.log("api-reads-receiver.log"));
  const results: Partial<Record<Store, Seeded>> = {};
  for (const store of stores) {
    process.stderr.write(`\n▶ ${store} store\n`);
    const dataDir = store === "embedded" ? mkdtempSync(join(tmpdir(), "sluice-api-reads-pglite-")) : undefined;
    const run = (databaseUrl: string | null) => oneStore({ f, store, databaseUrl, dataDir, receiver, log: bench.log });
    try {
      results[store] = store === "server" && pg ? await withDatabase(pg.server.url, "api_reads", run) : await run(null);
    } finally {
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }
  }
  await receiver.stop();

  const names = (results[stores[0]!]?.timings ?? []).map((t) => t.name);
  const cell = (store: Store, name: string): string => {
    const t = results[store]?.timings.find((x) => x.name === name);
    return t ? (t.status === 200 ? `${fmt(t.medianMs, 1)} (${fmt(t.maxMs, 1)})` : `HTTP ${t.status}`) : "–";
  };
  const both = stores.length === 2;
  const ratioOf = (name: string): string => {
    const [e, s] = (["embedded", "server"] as const).map((k) => results[k]?.timings.find((x) => x.name === name)?.medianMs);
    return e && s ? `${fmt(e / s, 2)}×` : "–";
  };
  out("");
  for (const s of stores) {
    const r = results[s];
    out(`${s}: seeded in ${fmt(r?.seedS, 0)} s (${fmt(r?.perS)} deliveries/s, first publish → last arrival); ${describe(r?.deliveries)}`);
    const calls = r?.statsCallsMs ?? [];
    if (calls.length > 0)
      out(
        `  GET /v1/stats every ${f["poll-stats"]} s while seeding: ${calls.length} calls, mean ${fmt(calls.reduce((a, b) => a + b, 0) / calls.length, 0)} ms, ` +
          `slowest ${fmt(Math.max(...calls), 0)} ms`,
      );
  }
  out(`ms per read, median (slowest) of ${f.reps}; one tenant holds every row`);
  out(
    table(
      [
        ["read", ...stores, ...(both ? ["embedded ÷ server"] : []), ...(results.server ? ["server: JIT ms per call"] : [])],
        ...names.map((n) => [
          n,
          ...stores.map((s) => cell(s, n)),
          ...(both ? [ratioOf(n)] : []),
          ...(results.server ? [fmt(results.server.timings.find((x) => x.name === n)?.jitMs, 1)] : []),
        ]),
      ],
      true,
    ),
  );
  bench.finish(`api-reads-${new Date().toISOString().replace(/[:.]/g, "-")}`, {
    postgres: pg?.settings ?? null,
    results,
    options: f,
  });
}

const describe = (d: Record<string, number> | undefined): string =>
  d
    ? Object.entries(d)
        .map(([k, n]) => `${k} ${fmt(n)}`)
        .join(", ")
    : "?";

async function oneStore(o: {
  f: ReturnType<typeof flags>;
  store: Store;
  databaseUrl: string | null;
  dataDir: string | undefined;
  receiver: Receiver;
  log: (name: string) => string;
}): Promise<Seeded> {
  const { f, store, receiver } = o;
  const cluster = new SluiceCluster({ databaseUrl: o.databaseUrl, dataDir: o.dataDir, logPrefix: o.log(`api-reads-${store}`) });
  const db = o.databaseUrl ? await connect(o.databaseUrl) : null;
  try {
    await cluster.startApi(store === "embedded" ? "start" : "api");
    if (store === "server") await cluster.startWorkers(f.workers, true);
    const seedStart = Date.now();
    // A closed port: connection refused at once, so these fail, retry and get paused by their health.
    const failing = (i: number) => i % 20 === 19;
    const ids = await cluster.createDestinations(f.destinations, (i) => ({
      url: failing(i) ? "http://127.0.0.1:9/refused" : receiver.destUrl(i),
    }));
    const pausedByUs = (i: number) => i % 40 === 20;
    const paused = ids.filter((_, i) => pausedByUs(i));
    for (const id of paused) await cluster.must(200, "POST", `/v1/destinations/${id}/pause`, { reason: "bench" });
    await cluster.createDestinations(f.idle, (i) => ({ url: receiver.destUrl(i) }));
    // Event i goes to destination i mod destinations.
    const deliverable = (i: number) => !failing(i % f.destinations) && !pausedByUs(i % f.destinations);
    let expected = 0;
    for (let i = 0; i < f.events; i++) if (deliverable(i)) expected++;
    await receiver.reset(expected);
    const deadline = Date.now() + f["timeout-s"] * 1000;
    const poller = f["poll-stats"] > 0 ? pollStats(cluster, f["poll-stats"] * 1000) : null;
    let firstBatchAt = "";
    let numbered = 0; // deliverable events published so far
    for (let off = 0; off < f.events; off += 1000) {
      const n = Math.min(1000, f.events - off);
      const batch = Array.from({ length: n }, (_, k) => {
        const i = off + k;
        // The receiver counts a delivery by its payload's seq: one per delivery that can arrive.
        const payload = deliverable(i) ? { seq: numbered++ } : { n: i };
        return { type: `t.${i % f.destinations}`, payload, destination_ids: [ids[i % f.destinations]!] };
      });
      await cluster.publishBatch(batch);
      if (off === 0) firstBatchAt = new Date().toISOString();
      await receiver.waitFor((p) => numbered - p.unique < AHEAD, deadline);
      if (off % 50_000 === 0) process.stderr.write(`  published ${fmt(off + n)} of ${fmt(f.events)}\n`);
    }
    const p = await receiver.waitFor(
      (x) => x.unique >= expected,
      deadline,
      (x) => `  received ${fmt(x.unique)} of ${fmt(expected)}`,
    );
    const statsCallsMs = (await poller?.stop()) ?? [];
    if (p.unique < expected)
      throw new Error(`${store}: ${fmt(p.unique)} of ${fmt(expected)} deliveries arrived within ${f["timeout-s"]} s`);
    const seedS = (Date.now() - seedStart) / 1000;
    const perS = expected / ((Date.now() - Date.parse(firstBatchAt)) / 1000);
    for (let off = 0; off < f.backlog; off += 1000) {
      const n = Math.min(1000, f.backlog - off);
      await cluster.publishBatch(
        Array.from({ length: n }, (_, k) => ({ type: "t.backlog", payload: { n: off + k }, destination_ids: [paused[0]!] })),
      );
      if ((off + n) % 50_000 === 0 || off + n === f.backlog)
        process.stderr.write(`  backlog: published ${fmt(off + n)} of ${fmt(f.backlog)}\n`);
    }
    // Statistics as the store keeps them once it has settled: on the embedded store the janitor's
    // rounds come every 5 s; on a server autovacuum's once a minute.
    await sleep(7000);
    if (o.databaseUrl) process.stderr.write(`  autovacuum analyzed the tables after ${fmt(await analyzed(o.databaseUrl), 0)} s more\n`);
    if (f["wait-quiet-s"] > 0) await waitQuiet(f["wait-quiet-s"] * 1000);
    const reads = await readsOf(cluster, { ids, paused, failing, firstBatchAt });
    const timings: Timing[] = [];
    await db?.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    for (const r of reads) {
      const times: number[] = [];
      let status = 0;
      await db?.query("SELECT pg_stat_statements_reset()");
      for (let i = 0; i < f.reps; i++) {
        const t = performance.now();
        status = (await cluster.call("GET", r.path)).status;
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      const jitMs = db ? (await jitMsSinceReset(db)) / f.reps : undefined;
      timings.push({ ...r, status, medianMs: times[Math.floor(times.length / 2)]!, maxMs: times[times.length - 1]!, jitMs });
    }
    return { seedS, perS, statsCallsMs, deliveries: await counts(cluster), timings };
  } finally {
    await db?.end();
    await cluster.stop();
  }
}

/** Asks GET /v1/stats?minutes=60 every `everyMs` until stopped; stop() returns each call's time. */
function pollStats(cluster: SluiceCluster, everyMs: number): { stop: () => Promise<number[]> } {
  const times: number[] = [];
  let on = true;
  const loop = (async () => {
    while (on) {
      await sleep(everyMs);
      if (!on) break;
      const t = performance.now();
      await cluster.must(200, "GET", "/v1/stats?minutes=60");
      times.push(performance.now() - t);
    }
  })();
  return {
    stop: async () => {
      on = false;
      await loop;
      return times;
    },
  };
}

/** Waits (up to 3 min) until autovacuum has analyzed every table it is due to (its rule: 50 + 10 % changed); seconds waited. */
async function analyzed(databaseUrl: string): Promise<number> {
  const db = await connect(databaseUrl);
  const started = Date.now();
  try {
    for (const deadline = started + 180_000; Date.now() < deadline; await sleep(1000)) {
      const due = await db.query(
        "SELECT relname FROM pg_stat_user_tables WHERE n_mod_since_analyze > 50 + 0.1 * n_live_tup AND n_live_tup > 1000",
      );
      if (due.rows.length === 0) break;
    }
  } finally {
    await db.end();
  }
  return (Date.now() - started) / 1000;
}

/** What the store holds, as the stats count it: delivered and failed in the last hour, waiting now. */
async function counts(cluster: SluiceCluster): Promise<Record<string, number>> {
  type Stats = { destinations: { delivered_last_hour: number; failed_last_hour: number }[]; held_now: { n: number }[] };
  const stats = await cluster.must<Stats>(200, "GET", "/v1/stats?minutes=60");
  return {
    "delivered (last hour)": stats.destinations.reduce((n, d) => n + d.delivered_last_hour, 0),
    "failed attempts (last hour)": stats.destinations.reduce((n, d) => n + d.failed_last_hour, 0),
    waiting: stats.held_now.reduce((n, h) => n + h.n, 0),
  };
}

/** The reads, with ids of a busy, a failing (and paused by its health), a paused and an idle destination, and of old and new events. */
async function readsOf(
  cluster: SluiceCluster,
  o: { ids: string[]; paused: string[]; failing: (i: number) => boolean; firstBatchAt: string },
): Promise<Read[]> {
  const { ids, paused, failing } = o;
  const busy = ids[0]!;
  const failed = ids.find((_, i) => failing(i))!;
  const held = paused[0]!;
  const page = <T>(path: string) => cluster.must<{ data: T[]; next_cursor: string | null }>(200, "GET", path);
  const destinations = await page<{ id: string }>("/v1/destinations?limit=100");
  const idle = (await page<{ id: string }>("/v1/destinations?limit=1")).data[0]!.id; // the newest: created last, an idle one
  const events = await page<{ id: string }>("/v1/events?limit=100");
  const newest = events.data[0]!;
  // The newest of those published before the first batch was answered: one of the first batch.
  const oldest = (await page<{ id: string }>(`/v1/events?limit=1&until=${encodeURIComponent(o.firstBatchAt)}`)).data[0] ?? newest;
  const deliveries = await page<{ id: string }>("/v1/deliveries?limit=100");
  const retried = (await page<{ id: string }>(`/v1/deliveries?destination_id=${failed}&limit=1`)).data[0]?.id ?? deliveries.data[0]!.id;
  const hourAgo = new Date(Date.now() - 3600_000).toISOString();
  const now = new Date().toISOString();
  const c = (s: string | null) => encodeURIComponent(s ?? "");
  return [
    { name: "destinations, first page", path: "/v1/destinations?limit=100" },
    { name: "destinations, second page", path: `/v1/destinations?limit=100&cursor=${c(destinations.next_cursor)}` },
    { name: "destination (busy)", path: `/v1/destinations/${busy}` },
    { name: "destination (failing)", path: `/v1/destinations/${failed}` },
    { name: "destination (idle)", path: `/v1/destinations/${idle}` },
    { name: "attempt timeline (busy)", path: `/v1/destinations/${busy}/attempts?limit=100` },
    { name: "attempt timeline (failing)", path: `/v1/destinations/${failed}/attempts?limit=100` },
    { name: "events, first page", path: "/v1/events?limit=100" },
    { name: "events, second page", path: `/v1/events?limit=100&cursor=${c(events.next_cursor)}` },
    { name: "events of a type", path: "/v1/events?limit=100&type=t.7" },
    { name: "events of a type prefix", path: "/v1/events?limit=100&type=t.1*" },
    { name: "events of a type none has", path: "/v1/events?limit=100&type=bench.none" },
    { name: "events of the last hour", path: `/v1/events?limit=100&since=${c(hourAgo)}&until=${c(now)}` },
    { name: "event (newest)", path: `/v1/events/${newest.id}` },
    { name: "event (oldest)", path: `/v1/events/${oldest.id}` },
    { name: "deliveries, first page", path: "/v1/deliveries?limit=100" },
    { name: "deliveries, second page", path: `/v1/deliveries?limit=100&cursor=${c(deliveries.next_cursor)}` },
    { name: "deliveries of a destination (busy)", path: `/v1/deliveries?limit=100&destination_id=${busy}` },
    { name: "deliveries of a destination (paused)", path: `/v1/deliveries?limit=100&destination_id=${held}` },
    { name: "deliveries of a destination (idle)", path: `/v1/deliveries?limit=100&destination_id=${idle}` },
    { name: "deliveries of an event", path: `/v1/deliveries?limit=100&event_id=${newest.id}` },
    { name: "deliveries, status delivered", path: "/v1/deliveries?limit=100&status=delivered" },
    { name: "deliveries, status queued", path: "/v1/deliveries?limit=100&status=queued" },
    { name: "deliveries, status dead (none)", path: "/v1/deliveries?limit=100&status=dead" },
    { name: "deliveries, status discarded (none)", path: "/v1/deliveries?limit=100&status=discarded" },
    { name: "deliveries, status delivering (none)", path: "/v1/deliveries?limit=100&status=delivering" },
    { name: "deliveries of a destination, queued", path: `/v1/deliveries?limit=100&destination_id=${held}&status=queued` },
    { name: "delivery", path: `/v1/deliveries/${retried}` },
    { name: "delivery's attempts", path: `/v1/deliveries/${retried}/attempts` },
    { name: "stats, every destination", path: "/v1/stats?minutes=60" },
    { name: "stats, one destination", path: `/v1/destinations/${busy}/stats?minutes=60` },
  ];
}

runBench(main);
