// `npm run bench:profile`: where each delivery's time goes. Sluice as `npm run bench` runs it (api + 2 workers, 0 ms receiver,
// durable Postgres) on a smaller workload, with pg_stat_statements loaded: per delivery, each statement's calls, time, rows, WAL
// and buffers, row writes and HOT share per table, commits, WAL and the CPU of each process.
// `npm run bench:latency` (`--latency`): publish → receive latency with nothing queued. One event at a time, `POST /v1/events`
// to one destination (round robin), then a pause after its answer: what is left is the path itself. The server store (api + N
// workers) and the embedded store (`sluice start` on PGlite), back to back. Stamps are sub-millisecond (procs.ts preciseNow).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { connect, withDatabase } from "./pg.js";
import { commonFlags, CpuSampler, listFlag, parseFlags, percentiles, preciseNow, runBench, sleep, waitQuiet } from "./procs.js";
import type { Percentiles } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, listFigures, mark, table, type Bench } from "./report.js";
import { SluiceCluster } from "./sluice.js";

const LATENCY_FLAG = { type: "bool", help: "npm run bench:latency: idle publish → receive latency instead of the profile" } as const;

type Sizes = Record<"workers" | "destinations", number>;
type Sluice = { cluster: SluiceCluster; rcv: Receiver; ids: string[] };
/** One event published on its own, Unix ms: sent and answered (bench), arrived (receiver). */
type Sample = { sentAt: number; answeredAt: number; arrivedAt?: number };
/** A receiver and Sluice with `f.destinations` for `run`: api + `f.workers` workers on `url`, or (null) `sluice start` on PGlite. */
async function withSluice<T>(bench: Bench, name: string, url: string | null, f: Sizes, run: (s: Sluice) => Promise<T>): Promise<T> {
  const dataDir = url ? undefined : mkdtempSync(join(tmpdir(), "sluice-latency-pglite-"));
  const rcv = await Receiver.start(bench.log(`${name}-receiver.log`));
  const cluster = new SluiceCluster({ databaseUrl: url, dataDir, logPrefix: bench.log(name) });
  try {
    await cluster.start(url ? f.workers : 0);
    const ids = await cluster.createDestinations(f.destinations, (i) => ({ url: rcv.destUrl(i), name: `${name}-${i}` }));
    return await run({ cluster, rcv, ids });
  } finally {
    await cluster.stop().catch(() => undefined);
    await rcv.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

// Publishes `n` events round robin — in batches of 1,000, or (`gapMs`) one POST /v1/events at a
// time with that pause after each answer — and waits for them to arrive; one by one, the samples.
async function deliver(s: Sluice, n: number, what: string, timeoutS: number, gapMs?: number): Promise<Sample[]> {
  await s.rcv.reset(n);
  const event = (seq: number, sentAt: number) => ({
    type: "bench.event",
    payload: { seq, dest: seq % s.ids.length, sent_at: sentAt },
    destination_ids: [s.ids[seq % s.ids.length]!],
  });
  const samples: Sample[] = [];
  if (gapMs === undefined) await s.cluster.publishAll(n, (seq) => event(seq, Date.now()));
  for (let seq = 0; gapMs !== undefined && seq < n; seq++) {
    const sentAt = preciseNow();
    await s.cluster.must(202, "POST", "/v1/events", event(seq, sentAt));
    samples.push({ sentAt, answeredAt: preciseNow() });
    await sleep(gapMs);
  }
  const p = await s.rcv.waitFor(n, Date.now() + timeoutS * 1000, what);
  if (gapMs === undefined && p.unique < n) throw new Error(`${what}: only ${p.unique} of ${n} deliveries arrived within ${timeoutS} s`);
  if (gapMs === undefined) return samples;
  const { seq, at } = await s.rcv.take();
  seq.forEach((x, i) => (samples[x]!.arrivedAt = at[i]));
  return samples;
}

type Statement = { query: string } & Record<"calls" | "total_ms" | "mean_ms" | "rows" | "wal" | "hit" | "read" | "jit_ms", number>;
/** This database's statements since the reset, by total execution time (nested ones included: track=all). */
async function statements(db: pg.Client): Promise<Statement[]> {
  const res = await db.query<Statement>(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::float8, total_exec_time AS total_ms, mean_exec_time AS mean_ms, rows::float8,
            wal_bytes::float8 AS wal, shared_blks_hit::float8 AS hit, shared_blks_read::float8 AS read,
            jit_generation_time + jit_inlining_time + jit_optimization_time + jit_emission_time AS jit_ms
       FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT ILIKE '%pg_stat_statements%'
      ORDER BY total_exec_time DESC`,
  );
  return res.rows;
}

type Counters = { commits: number; wal: number };
/** The database's commits, and the WAL position in bytes. */
async function counters(db: pg.Client): Promise<Counters> {
  const sql = `SELECT xact_commit::float8 AS commits, (pg_current_wal_lsn() - '0/0')::float8 AS wal
                 FROM pg_stat_database WHERE datname = current_database()`;
  return (await db.query<Counters>(sql)).rows[0]!;
}

async function profile(): Promise<void> {
  const f = parseFlags("npm run bench:profile", {
    events: { def: 20_000, quick: 3000, help: "events (one delivery each)" },
    destinations: { def: 200, quick: 50, help: "destinations, events round-robin over them" },
    warmup: { def: 5000, quick: 1000, min: 0, help: "events delivered before the counters are reset (0 = none)" },
    ...commonFlags(600),
    quick: { type: "bool", help: "small smoke run: 50 destinations, 3,000 events" },
    latency: LATENCY_FLAG,
  });
  const bench = benchStart("profile");
  const { out } = bench;
  const pgs = await bench.postgres(!f["no-fsync"], true, f["pg-icu-locale"]);
  out(
    `workload: ${fmt(f.destinations)} destinations, ${fmt(f.events)} events (after ${fmt(f.warmup)} to warm up) in batches of 1,000, round-robin; ` +
      `sluice api + ${f.workers} × sluice worker; receiver answers at once`,
  );
  const result = await withDatabase(pgs.server.url, "sluice_profile", (url) =>
    withSluice(bench, "profile", url, f, async (s) => {
      const db = await connect(url);
      try {
        await db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        // Small runs are dominated by a cold start (JIT, pools, the first claims): warm up first. An idle backend flushes
        // its table and database counters up to 10 s later (PGSTAT_IDLE_INTERVAL): let the warm-up's land before the reset.
        if (f.warmup > 0) await deliver(s, f.warmup, "warm-up", f["timeout-s"]).then(() => sleep(11_000));
        const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
        await db.query("SELECT pg_stat_statements_reset(), pg_stat_reset()");
        const before = await counters(db);
        const pids = () => s.cluster.pids();
        const sampler = new CpuSampler({ system: "sluice", pids, postmaster: pgs.postmaster, receiver: s.rcv.pid }).begin();
        const startedAt = Date.now();
        await deliver(s, f.events, "load", f["timeout-s"]);
        const [wallMs, cpu, stmts, after] = [Date.now() - startedAt, sampler.end(), await statements(db), await counters(db)];
        await s.cluster.stop(); // Backends flush their table counters when idle or when they exit: stop Sluice before reading them.
        await sleep(1000);
        const tables = await db.query<{ table: string; indexes: number; ins: number; upd: number; del: number; hot: number }>(
          // A partitioned table (attempts) as one: its partitions' counters summed.
          `SELECT r.relname AS table, (SELECT count(*) FROM pg_index i WHERE i.indrelid = r.oid)::float8 AS indexes,
                  sum(n_tup_ins)::float8 AS ins, sum(n_tup_upd)::float8 AS upd, sum(n_tup_del)::float8 AS del, sum(n_tup_hot_upd)::float8 AS hot
             FROM pg_stat_user_tables s JOIN pg_class r ON r.oid = coalesce(pg_partition_root(s.relid), s.relid)
            GROUP BY r.oid, r.relname HAVING sum(n_tup_ins + n_tup_upd + n_tup_del) > 0 ORDER BY sum(n_tup_ins + n_tup_upd + n_tup_del) DESC`,
        );
        const [commits, walBytes] = [(await counters(db)).commits - before.commits, after.wal - before.wal];
        return { busyBeforePct, delivered: f.events, wallMs, cpu, statements: stmts, commits, walBytes, tables: tables.rows };
      } finally {
        await db.end().catch(() => undefined);
      }
    }),
  );

  const n = result.delivered;
  const per = (x: number, d = 2): string => fmt(x / n, d);
  const us = (k: string): string => fmt(((result.cpu[k]?.cpuSeconds ?? 0) * 1e6) / n, 1);
  const sum = (k: "calls" | "total_ms" | "jit_ms"): number => result.statements.reduce((t, x) => t + x[k], 0);
  out(`\ndelivered ${fmt(n)} in ${fmt(result.wallMs / 1000, 1)} s (${fmt(n / (result.wallMs / 1000))}/s, first publish → last arrival)`);
  const totals = [
    ["per delivery", "value"],
    ["commits (pg_stat_database xact_commit)", per(result.commits)],
    ["WAL bytes (pg_current_wal_lsn diff)", per(result.walBytes, 0)],
    ["statement calls (pg_stat_statements)", per(sum("calls"))],
    ["statement exec time µs (of it JIT compiling, jit_*_time)", `${per(sum("total_ms") * 1000, 1)} (${per(sum("jit_ms") * 1000, 1)})`],
    ["Postgres CPU µs (postmaster + children, /proc)", us("postgres")],
    ["Sluice CPU µs (api + workers, /proc)", us("sluice")],
    ["receiver CPU µs", us("receiver")],
    ["machine busy µs (all processes, kernel)", us("(machine busy)")],
  ];
  out(`\n${table(totals, true)}`);
  out(`\nCPU over the load (% of one core; 2 cores = 200 %): ${listFigures(result.cpu)}; machine busy before: ${result.busyBeforePct} %`);
  const query = (q: string): string => `\`${q.length > 90 ? `${q.slice(0, 89)}…` : q}\``.replaceAll("|", "\\|");
  const timeCells = (s: Statement): string[] => [query(s.query), per(s.calls, 3), fmt(s.mean_ms, 3), per(s.total_ms * 1000, 1)];
  const ioCells = (s: Statement): string[] => [per(s.rows), per(s.wal, 0), per(s.hit, 1), per(s.read)];
  const stmtRows = result.statements.slice(0, 15).map((s) => [...timeCells(s), ...ioCells(s)]);
  const head = ["statement (normalised)", "calls/dlv", "mean ms", "exec µs/dlv", "rows/dlv", "WAL B/dlv", "hit/dlv", "read/dlv"];
  out(`\ntop 15 statements by total execution time (pg_stat_statements, track=all), per delivery:\n${table([head, ...stmtRows], true)}`);
  const hotShare = (t: { upd: number; hot: number }): string => (t.upd > 0 ? `${fmt((100 * t.hot) / t.upd)} %` : "–");
  const tableRows = result.tables.map((t) => [t.table, fmt(t.indexes), ...[t.ins, t.upd, t.del, t.hot].map((x) => per(x, 3)), hotShare(t)]);
  const tHead = ["table", "indexes", "ins/dlv", "upd/dlv", "del/dlv", "HOT upd/dlv", "HOT %"];
  out(`\nrow writes per table (pg_stat_user_tables), per delivery:\n${table([tHead, ...tableRows], true)}`);
  bench.finish("profile", { postgres: pgs.settings, options: f, ...result });
}

const TARGETS = { server: { p50: 3, p99: 10 }, embedded: { p50: 5, p99: 15 } }; // Publish → receive targets, ms.

async function latency(): Promise<void> {
  const f = parseFlags("npm run bench:latency", {
    events: { def: 400, quick: 100, help: "measured events per store (after the warm-up)" },
    warmup: { def: 50, min: 0, help: "events published first and not counted" },
    destinations: { def: 10, help: "destinations, events round-robin over them" },
    "gap-ms": { def: 50, min: 0, help: "pause after each publish's answer before the next" },
    scenarios: { type: "str", arg: "LIST", def: "server,embedded", help: "the stores to measure: any of server,embedded" },
    ...commonFlags(300),
    latency: LATENCY_FLAG,
  });
  const [stores, bench] = [listFlag("scenarios", f.scenarios, ["server", "embedded"] as const), benchStart("idle latency")];
  const { out } = bench;
  out(
    `workload: ${fmt(f.destinations)} destinations (receiver answers at once), ${fmt(f.warmup)} events to warm up then ${fmt(f.events)} measured, ` +
      `one POST /v1/events at a time to one destination round-robin, ${f["gap-ms"]} ms after each answer`,
  );
  const pgs = stores.includes("server") ? await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]) : null;
  const ms = (x: number | undefined): string => fmt(x, 2);
  const all = (p: Percentiles | null): string => `${ms(p?.p50)} / ${ms(p?.p90)} / ${ms(p?.p99)} / ${ms(p?.max)} ms`;
  const results = [];
  for (const store of stores) {
    const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
    process.stderr.write(`\n▶ ${store} store (machine ${busyBeforePct}% busy)\n`);
    const measure = (url: string | null) =>
      withSluice(bench, `latency-${store}`, url, f, async (s) => {
        if (f.warmup > 0) await deliver(s, f.warmup, "warm-up", f["timeout-s"], f["gap-ms"]);
        const samples = await deliver(s, f.events, "measured", f["timeout-s"], f["gap-ms"]);
        return { samples, duplicates: (await s.rcv.report()).duplicates, engineMetrics: await s.cluster.engineMetrics().catch(() => null) };
      });
    const { samples, duplicates, engineMetrics } =
      store === "server" ? await withDatabase(pgs!.server.url, "sluice_latency", measure) : await measure(null);
    const publishToReceiveMs = percentiles(samples.map((x) => x.arrivedAt! - x.sentAt));
    const publishRoundTripMs = percentiles(samples.map((x) => x.answeredAt - x.sentAt));
    const received = samples.filter((x) => x.arrivedAt !== undefined).length;
    results.push({ store, busyBeforePct, received, duplicates, publishToReceiveMs, publishRoundTripMs, engineMetrics, samples });
    out(`\n${store} store: ${fmt(received)}/${fmt(f.events)} received, ${duplicates} duplicates; machine ${busyBeforePct}% busy before`);
    out(`p50 / p90 / p99 / max: publish → receive ${all(publishToReceiveMs)}; publish round trip (sent → 202) ${all(publishRoundTripMs)}`);
  }
  const verdict = results.map(({ store, publishToReceiveMs: l }) => {
    const t = TARGETS[store];
    return `${store} p50 ${ms(l?.p50)} ms ${mark((l?.p50 ?? Infinity) <= t.p50)} (≤ ${t.p50}), p99 ${ms(l?.p99)} ms ${mark((l?.p99 ?? Infinity) <= t.p99)} (≤ ${t.p99})`;
  });
  out(`\ntargets, publish → receive: ${verdict.join("; ")}`);
  bench.finish("latency", { postgres: pgs?.settings ?? null, options: f, targets: TARGETS, results });
}

runBench(process.argv.includes("--latency") ? latency : profile);
