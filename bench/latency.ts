// `npm run bench:latency`: publish → receive latency with nothing queued. One event at a time,
// `POST /v1/events` to one destination (round robin), then a pause after its answer: what is left
// is the path itself. The server store (durable Postgres, `sluice api` + N × `sluice worker`) and
// the embedded store (`sluice start` on PGlite), back to back. Stamps are sub-millisecond (each
// process's performance clock on the wall clock, procs.ts preciseNow).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withDatabase } from "./pg.js";
import { commonFlags, parseFlags, percentiles, preciseNow, runBench, sleep, waitQuiet, type Percentiles } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark } from "./report.js";
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

/** One measured event, Unix ms: sent and answered (bench), arrived (receiver). */
type Sample = { sentAt: number; answeredAt: number; arrivedAt?: number };

async function runStore(store: Store, f: Flags, bench: ReturnType<typeof benchStart>, databaseUrl: string | null) {
  const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
  process.stderr.write(`\n▶ ${store} store (machine ${busyBeforePct}% busy)\n`);
  const dataDir = databaseUrl ? undefined : mkdtempSync(join(tmpdir(), "sluice-latency-pglite-"));
  const rcv = await Receiver.start(bench.log(`latency-${store}-receiver.log`));
  const cluster = new SluiceCluster({ databaseUrl, dataDir, logPrefix: bench.log(`latency-${store}`) });
  try {
    await cluster.start(databaseUrl ? f.workers : 0);
    const ids = await cluster.createDestinations(f.destinations, (i) => ({ url: rcv.destUrl(i), name: `latency-${i}` }));
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
        await cluster.must(202, "POST", "/v1/events", body);
        samples.push({ sentAt, answeredAt: preciseNow() });
        await sleep(f["gap-ms"]);
      }
      const line = (p: { unique: number }): string => `  ${what}: received ${fmt(p.unique)}/${fmt(n)}`;
      await rcv.waitFor((p) => p.unique >= n, Date.now() + f["timeout-s"] * 1000, line, 2000);
      const { seq, at } = await rcv.take();
      seq.forEach((s, i) => (samples[s]!.arrivedAt = at[i]));
      return samples;
    };
    if (f.warmup > 0) await oneByOne(f.warmup, "warm-up");
    const samples = await oneByOne(f.events, "measured");
    const rep = await rcv.report();
    return {
      store,
      busyBeforePct,
      received: samples.filter((s) => s.arrivedAt !== undefined).length,
      duplicates: rep.duplicates,
      publishToReceiveMs: percentiles(samples.map((s) => s.arrivedAt! - s.sentAt)),
      publishRoundTripMs: percentiles(samples.map((s) => s.answeredAt - s.sentAt)),
      engineMetrics: await cluster.engineMetrics().catch(() => null),
      samples,
    };
  } finally {
    await cluster.stop().catch(() => undefined);
    await rcv.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
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
  const all = (p: Percentiles | null): string => `${ms(p?.p50)} / ${ms(p?.p90)} / ${ms(p?.p99)} / ${ms(p?.max)} ms`;
  const results = [];
  for (const store of stores) {
    const r =
      store === "server"
        ? await withDatabase(pgs!.server.url, "sluice_latency", (url) => runStore(store, f, bench, url))
        : await runStore(store, f, bench, null);
    results.push(r);
    const [l, rtt] = [r.publishToReceiveMs, r.publishRoundTripMs];
    out(
      `\n${r.store} store: ${fmt(r.received)}/${fmt(f.events)} received, ${r.duplicates} duplicates; machine ${r.busyBeforePct}% busy before`,
    );
    out(`p50 / p90 / p99 / max: publish → receive ${all(l)}; publish round trip (sent → 202) ${all(rtt)}`);
  }
  const verdict = results.map((r) => {
    const [l, t] = [r.publishToReceiveMs, TARGETS[r.store]];
    return `${r.store} p50 ${ms(l?.p50)} ms ${mark((l?.p50 ?? Infinity) <= t.p50)} (≤ ${t.p50}), p99 ${ms(l?.p99)} ms ${mark((l?.p99 ?? Infinity) <= t.p99)} (≤ ${t.p99})`;
  });
  out(`\ntargets, publish → receive: ${verdict.join("; ")}`);
  bench.finish("latency", { postgres: pgs?.settings ?? null, options: f, targets: TARGETS, results });
}

runBench(main);
