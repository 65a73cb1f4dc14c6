// `npm run bench:profile`: where each delivery's time goes. Sluice as `npm run bench` runs it
// (api + 2 workers, 0 ms receiver, durable Postgres) on a smaller workload, with pg_stat_statements
// loaded: per delivery, each statement's calls, time, rows, WAL and buffers, row writes and HOT
// share per table, commits, WAL and the CPU of each process.
import type pg from "pg";
import { connect, withDatabase } from "./pg.js";
import { commonFlags, CpuSampler, cpuLine, parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

const flags = () =>
  parseFlags("npm run bench:profile", {
    events: { def: 20_000, quick: 3000, help: "events (one delivery each)" },
    destinations: { def: 200, quick: 50, help: "destinations, events round-robin over them" },
    warmup: { def: 5000, quick: 1000, min: 0, help: "events delivered before the counters are reset (0 = none)" },
    ...commonFlags(600),
    quick: { type: "bool", help: "small smoke run: 50 destinations, 3,000 events" },
  });

type Statement = {
  query: string;
  calls: number;
  total_ms: number;
  mean_ms: number;
  rows: number;
  wal: number;
  hit: number;
  read: number;
  jit_ms: number;
};

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

async function counters(db: pg.Client): Promise<{ commits: number; lsn: string }> {
  const r = await db.query<{ commits: number; lsn: string }>(
    "SELECT xact_commit::float8 AS commits, pg_current_wal_lsn()::text AS lsn FROM pg_stat_database WHERE datname = current_database()",
  );
  return r.rows[0]!;
}

async function main(): Promise<void> {
  const f = flags();
  const { events, destinations } = f;
  const bench = benchStart("profile");
  const { out } = bench;
  const pgs = await bench.postgres(!f["no-fsync"], true, f["pg-icu-locale"]);
  out(
    `workload: ${fmt(destinations)} destinations, ${fmt(events)} events (after ${fmt(f.warmup)} to warm up) in batches of 1,000, round-robin; ` +
      `sluice api + ${f.workers} × sluice worker; receiver answers at once`,
  );
  const result = await withDatabase(pgs.server.url, "sluice_profile", async (databaseUrl) => {
    const rcv = await Receiver.start(bench.log("profile-receiver.log"));
    const cluster = new SluiceCluster({ databaseUrl, logPrefix: bench.log("profile-sluice") });
    const db = await connect(databaseUrl);
    try {
      await cluster.start(f.workers);
      const ids = await cluster.createDestinations(destinations, (i) => ({ url: rcv.destUrl(i), name: `profile-${i}` }));
      await db.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      const load = async (n: number, what: string): Promise<void> => {
        await rcv.reset(n);
        process.stderr.write(`▶ ${what}: publishing ${fmt(n)} events\n`);
        const deadline = Date.now() + f["timeout-s"] * 1000;
        await cluster.publishAll(n, (seq) => ({
          type: "bench.event",
          payload: { seq, dest: seq % destinations, sent_at: Date.now() },
          destination_ids: [ids[seq % destinations]!],
        }));
        const p = await rcv.waitFor(
          (x) => x.unique >= n,
          deadline,
          (x) => `  ${what}: received ${fmt(x.unique)}/${fmt(n)}`,
          2000,
        );
        if (p.unique < n) throw new Error(`${what}: only ${p.unique} of ${n} deliveries arrived within ${f["timeout-s"]} s`);
      };
      // Small runs are dominated by a cold start (JIT, pools, the first claims): warm up first.
      if (f.warmup > 0) {
        await load(f.warmup, "warm-up");
        // An idle backend flushes its table and database counters up to 10 s later
        // (PGSTAT_IDLE_INTERVAL): let the warm-up's land before the reset, not after it.
        await sleep(11_000);
      }
      const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
      await db.query("SELECT pg_stat_statements_reset(), pg_stat_reset()");
      const before = await counters(db);
      const sampler = new CpuSampler({
        system: "sluice",
        pids: () => cluster.pids(),
        postmaster: pgs.postmaster,
        receiver: rcv.pid,
      }).begin();
      const startedAt = Date.now();
      await load(events, "load");
      const [wallMs, cpu] = [Date.now() - startedAt, sampler.end()];
      const stmts = await statements(db);
      const after = await counters(db);
      const walBytes = Number(
        (await db.query<{ n: number }>("SELECT pg_wal_lsn_diff($1, $2)::float8 AS n", [after.lsn, before.lsn])).rows[0]!.n,
      );
      // Backends flush their table counters when idle or when they exit: stop Sluice before reading them.
      await cluster.stop();
      await sleep(1000);
      const tables = await db.query<{ table: string; indexes: number; ins: number; upd: number; del: number; hot: number }>(
        `SELECT relname AS table, (SELECT count(*) FROM pg_index i WHERE i.indrelid = relid)::float8 AS indexes,
                n_tup_ins::float8 AS ins, n_tup_upd::float8 AS upd, n_tup_del::float8 AS del, n_tup_hot_upd::float8 AS hot
           FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC`,
      );
      const commits = (await counters(db)).commits - before.commits;
      return { busyBeforePct, delivered: events, wallMs, cpu, statements: stmts, commits, walBytes, tables: tables.rows };
    } finally {
      await db.end().catch(() => undefined);
      await cluster.stop().catch(() => undefined);
      await rcv.stop();
    }
  });

  const n = result.delivered;
  const per = (x: number, d = 2): string => fmt(x / n, d);
  const us = (k: string): string => fmt(((result.cpu[k]?.cpuSeconds ?? 0) * 1e6) / n, 1);
  const sum = (k: "calls" | "total_ms" | "jit_ms"): number => result.statements.reduce((s, x) => s + x[k], 0);
  out(`\ndelivered ${fmt(n)} in ${fmt(result.wallMs / 1000, 1)} s (${fmt(n / (result.wallMs / 1000))}/s, first publish → last arrival)`);
  const totals = [
    ["per delivery", "value"],
    ["commits (pg_stat_database xact_commit)", per(result.commits)],
    ["WAL bytes (pg_current_wal_lsn diff)", per(result.walBytes, 0)],
    ["statement calls (pg_stat_statements)", per(sum("calls"))],
    ["statement exec time µs", per(sum("total_ms") * 1000, 1)],
    ["JIT compiling µs (pg_stat_statements jit_*_time)", per(sum("jit_ms") * 1000, 1)],
    ["Postgres CPU µs (postmaster + children, /proc)", us("postgres")],
    ["Sluice CPU µs (api + workers, /proc)", us("sluice")],
    ["receiver CPU µs", us("receiver")],
    ["machine busy µs (all processes, kernel)", us("(machine busy)")],
  ];
  out(`\n${table(totals, true)}`);
  out(`\nCPU over the load (% of one core; 2 cores = 200 %): ${cpuLine(result.cpu)}; machine busy before: ${result.busyBeforePct} %`);
  const stmtRows = result.statements
    .slice(0, 15)
    .map((s) => [
      `\`${s.query.length > 90 ? `${s.query.slice(0, 89)}…` : s.query}\``.replaceAll("|", "\\|"),
      per(s.calls, 3),
      fmt(s.mean_ms, 3),
      per(s.total_ms * 1000, 1),
      per(s.rows),
      per(s.wal, 0),
      per(s.hit, 1),
      per(s.read),
    ]);
  const head = ["statement (normalised)", "calls/dlv", "mean ms", "exec µs/dlv", "rows/dlv", "WAL B/dlv", "hit/dlv", "read/dlv"];
  out(`\ntop 15 statements by total execution time (pg_stat_statements, track=all), per delivery:\n${table([head, ...stmtRows], true)}`);
  const tableRows = result.tables.map((t) => [
    t.table,
    fmt(t.indexes),
    per(t.ins, 3),
    per(t.upd, 3),
    per(t.del, 3),
    per(t.hot, 3),
    t.upd > 0 ? `${fmt((100 * t.hot) / t.upd)} %` : "–",
  ]);
  const tHead = ["table", "indexes", "ins/dlv", "upd/dlv", "del/dlv", "HOT upd/dlv", "HOT %"];
  out(`\nrow writes per table (pg_stat_user_tables), per delivery:\n${table([tHead, ...tableRows], true)}`);
  bench.finish("profile", { postgres: pgs.settings, options: f, ...result });
}

runBench(main);
