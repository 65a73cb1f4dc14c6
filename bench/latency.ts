// `npm run bench:latency`: publish → receive latency with nothing queued. One event at a time,
// `POST /v1/events` to one destination (round robin), then a pause after its answer: what is left
// is the path itself. The server store (durable Postgres, `sluice api` + N × `sluice worker`) and
// the embedded store (`sluice start` on PGlite), back to back. Stamps are sub-millisecond (each
// process's performance clock on the wall clock, procs.ts preciseNow); on the server the
// database's (events.created_at, attempts.started_at; 1 ms resolution) split the path into stages.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Agent, request } from "undici";
import { connect, withDatabase } from "./pg.js";
import { commonFlags, parseFlags, percentiles, preciseNow, runBench, sleep, waitQuiet, type Percentiles } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

const flags = () =>
  parseFlags("npm run bench:latency", {
    events: { def: 400, quick: 100, help: "measured events per store (after the warm-up)" },
    warmup: { def: 50, min: 0, help: "events published first and not counted" },
    destinations: { def: 10, help: "destinations, events round-robin over them" },
    "gap-ms": { def: 50, min: 0, help: "pause after each publish's answer before the next" },
    scenarios: { type: "str", arg: "LIST", def: "server,embedded", help: "the stores to measure: any of server,embedded" },
    ...commonFlags(300),
  });
type Flags = ReturnType<typeof flags>;

/** Publish → receive targets, ms. */
const TARGETS = { server: { p50: 3, p99: 10 }, embedded: { p50: 5, p99: 15 } };
type Store = keyof typeof TARGETS;

/** One measured event, Unix ms: sent and answered (bench), started (the worker, from attempts), arrived (receiver). */
type Sample = { eventId: string; sentAt: number; answeredAt: number; createdAt?: number; startedAt?: number; arrivedAt?: number };
const STAGES: [string, (s: Sample) => number | undefined][] = [
  ["client send → write starts (events.created_at)", (s) => s.createdAt! - s.sentAt],
  ["write start → 202 at the client", (s) => s.answeredAt - s.createdAt!],
  ["202 → attempt started_at (wake-up + claim)", (s) => s.startedAt! - s.answeredAt],
  ["started_at → receiver arrival", (s) => s.arrivedAt! - s.startedAt!],
];

/**
 * What one hop costs on this machine after the same idle pause, the floor under every hop of the
 * path: an HTTP POST answered at once by the receiver, and `SELECT 1` on a Postgres connection.
 */
async function idleHops(rcv: Receiver, databaseUrl: string | null, gapMs: number) {
  const times = async (hop: () => Promise<unknown>): Promise<Percentiles | null> => {
    const out: number[] = [];
    for (let i = 0; i < 105; i++) {
      await sleep(gapMs);
      const t = performance.now();
      await hop();
      if (i >= 5) out.push(performance.now() - t); // the first ones open the connection
    }
    return percentiles(out);
  };
  const agent = new Agent({ keepAliveTimeout: 60_000 });
  const httpMs = await times(async () => (await request(rcv.url("/floor"), { method: "POST", body: "{}", dispatcher: agent })).body.text());
  await agent.close();
  const db = databaseUrl ? await connect(databaseUrl) : null;
  const pgMs = db ? await times(() => db.query("SELECT 1")) : null;
  await db?.end();
  return { httpMs, pgMs };
}

async function runStore(store: Store, f: Flags, bench: ReturnType<typeof benchStart>, databaseUrl: string | null) {
  const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
  process.stderr.write(`\n▶ ${store} store (machine ${busyBeforePct}% busy)\n`);
  const dataDir = databaseUrl ? undefined : mkdtempSync(join(tmpdir(), "sluice-latency-pglite-"));
  const rcv = await Receiver.start(bench.log(`latency-${store}-receiver.log`));
  const cluster = new SluiceCluster({ databaseUrl, dataDir, logPrefix: bench.log(`latency-${store}`) });
  try {
    await cluster.start(databaseUrl ? f.workers : 0);
    const ids = await cluster.createDestinations(f.destinations, (i) => ({ url: rcv.destUrl(i), name: `latency-${i}` }));
    const idleHopMs = await idleHops(rcv, databaseUrl, f["gap-ms"]);
    const oneByOne = async (n: number, what: string): Promise<Sample[]> => {
      await rcv.reset(n);
      const samples: Sample[] = [];
      for (let seq = 0; seq < n; seq++) {
        const sentAt = preciseNow();
        const body = {
          type: "bench.latency",
          payload: { seq, dest: seq % ids.length, sent_at: sentAt },
          destination_ids: [ids[seq % ids.length]!],
        };
        const { id } = await cluster.must<{ id: string }>(202, "POST", "/v1/events", body);
        samples.push({ eventId: id, sentAt, answeredAt: preciseNow() });
        await sleep(f["gap-ms"]);
      }
      const deadline = Date.now() + f["timeout-s"] * 1000;
      await rcv.waitFor(
        (p) => p.unique >= n,
        deadline,
        (p) => `  ${what}: received ${fmt(p.unique)}/${fmt(n)}`,
        2000,
      );
      const { seq, at } = await rcv.take();
      seq.forEach((s, i) => (samples[s]!.arrivedAt = at[i]));
      return samples;
    };
    if (f.warmup > 0) await oneByOne(f.warmup, "warm-up");
    const samples = await oneByOne(f.events, "measured");
    const rep = await rcv.report();
    if (databaseUrl) await readStamps(databaseUrl, samples);
    return {
      store,
      busyBeforePct,
      idleHopMs,
      received: samples.filter((s) => s.arrivedAt !== undefined).length,
      duplicates: rep.duplicates,
      publishToReceiveMs: percentiles(samples.map((s) => s.arrivedAt! - s.sentAt)),
      publishRoundTripMs: percentiles(samples.map((s) => s.answeredAt - s.sentAt)),
      stages: databaseUrl ? STAGES.map(([name, of]) => ({ name, ms: percentiles(samples.map((s) => of(s) ?? NaN)) })) : null,
      engineMetrics: await cluster.engineMetrics().catch(() => null),
      samples,
    };
  } finally {
    await cluster.stop().catch(() => undefined);
    await rcv.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Each event's transaction start and its first attempt's start; the worker writes attempts back after the answer, so wait up to 10 s. */
async function readStamps(databaseUrl: string, samples: Sample[]): Promise<void> {
  const db = await connect(databaseUrl);
  const byId = new Map(samples.map((s) => [s.eventId, s]));
  for (
    const until = Date.now() + 10_000;
    [...byId.values()].some((s) => s.startedAt === undefined) && Date.now() < until;
    await sleep(200)
  ) {
    const r = await db.query<{ id: string; created_ms: number; started_ms: number | null }>(
      `SELECT e.id, extract(epoch FROM e.created_at)::float8 * 1000 AS created_ms,
              (SELECT extract(epoch FROM min(a.started_at))::float8 * 1000 FROM attempts a
                WHERE a.destination_id = d.destination_id AND a.delivery_id = d.id) AS started_ms
         FROM events e JOIN deliveries d ON d.event_id = e.id WHERE e.id = ANY($1::text[])`,
      [[...byId.keys()]],
    );
    for (const row of r.rows) Object.assign(byId.get(row.id)!, { createdAt: row.created_ms, startedAt: row.started_ms ?? undefined });
  }
  await db.end();
}

async function main(): Promise<void> {
  const f = flags();
  const stores = f.scenarios.split(",").map((s) => s.trim()) as Store[];
  for (const s of stores) if (!(s in TARGETS)) throw new Error(`unknown store '${s}' (server, embedded)`);
  const bench = benchStart("idle latency");
  const { out } = bench;
  out(
    `workload: ${fmt(f.destinations)} destinations (receiver answers at once), ${fmt(f.warmup)} events to warm up then ${fmt(f.events)} measured, ` +
      `one POST /v1/events at a time to one destination round-robin, ${f["gap-ms"]} ms after each answer`,
  );
  const pgs = stores.includes("server") ? await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]) : null;
  const ms = (n: number | undefined): string => fmt(n, 2);
  const results = [];
  for (const store of stores) {
    const r =
      store === "server"
        ? await withDatabase(pgs!.server.url, "sluice_latency", (url) => runStore(store, f, bench, url))
        : await runStore(store, f, bench, null);
    results.push(r);
    const [l, rtt, h] = [r.publishToReceiveMs, r.publishRoundTripMs, r.idleHopMs];
    out(
      `\n${r.store} store: ${fmt(r.received)}/${fmt(f.events)} received, ${r.duplicates} duplicates; machine ${r.busyBeforePct}% busy before`,
    );
    const rows = [
      ["ms", "p50", "p90", "p99", "max"],
      ...[["publish → receive", l] as const, ["publish round trip (sent → 202)", rtt] as const].map(([name, p]) => [
        name,
        ms(p?.p50),
        ms(p?.p90),
        ms(p?.p99),
        ms(p?.max),
      ]),
    ];
    for (const s of r.stages ?? []) rows.push([`  ${s.name}`, ms(s.ms?.p50), ms(s.ms?.p90), ms(s.ms?.p99), ms(s.ms?.max)]);
    out(table(rows));
    out(
      `one idle hop on this machine: HTTP POST answered at once p50 ${ms(h.httpMs?.p50)} / p99 ${ms(h.httpMs?.p99)} ms` +
        (h.pgMs ? `; Postgres SELECT 1 p50 ${ms(h.pgMs.p50)} / p99 ${ms(h.pgMs.p99)} ms` : ""),
    );
  }
  const verdict = results.map((r) => {
    const [l, t] = [r.publishToReceiveMs, TARGETS[r.store]];
    return `${r.store} p50 ${ms(l?.p50)} ms ${mark((l?.p50 ?? Infinity) <= t.p50)} (≤ ${t.p50}), p99 ${ms(l?.p99)} ms ${mark((l?.p99 ?? Infinity) <= t.p99)} (≤ ${t.p99})`;
  });
  out(`\ntargets, publish → receive: ${verdict.join("; ")}`);
  bench.finish("latency", { postgres: pgs?.settings ?? null, options: f, targets: TARGETS, results });
}

runBench(main);
