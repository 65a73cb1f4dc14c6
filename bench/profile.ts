// `npm run bench:profile`: where each delivery's time goes. Sluice as `npm run bench` runs it
// (api + 2 workers, 0 ms receiver, durable Postgres) on a smaller workload, with pg_stat_statements
// loaded: per delivery, each statement's calls, time, rows, WAL and buffers, row writes and HOT
// share per table, commits, WAL and CPU; and each Sluice process's hottest functions from a V8 CPU
// profile, and its time by where the code lives. `--embedded`: `sluice start` on PGlite, CPU only.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type pg from "pg";
import { connect, withDatabase } from "./pg.js";
import { commonFlags, CpuSampler, cpuLine, parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, table } from "./report.js";
import { REPO, SluiceCluster } from "./sluice.js";

const flags = () =>
  parseFlags("npm run bench:profile", {
    events: { def: 20_000, quick: 3000, help: "events (one delivery each)" },
    destinations: { def: 200, quick: 50, help: "destinations, events round-robin over them" },
    warmup: { def: 5000, quick: 1000, min: 0, help: "events delivered before the counters are reset (0 = none)" },
    "no-cpu-prof": { type: "bool", help: "run Sluice without --cpu-prof (its overhead stays out of the CPU figures)" },
    "keep-cpu-prof": { type: "bool", help: "keep the .cpuprofile files (their folder is printed) instead of deleting them" },
    embedded: { type: "bool", help: "profile `sluice start` on the embedded store (PGlite in the one process): CPU and its profile only" },
    ...commonFlags(600),
    quick: { type: "bool", help: "small smoke run: 50 destinations, 3,000 events" },
  });

/** Monotonic clock in µs: the clock V8 stamps CPU profiles with, so samples can be cut to the load. */
const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** This database's statements since the reset, by total execution time (nested ones included: track=all). */
async function statements(db: pg.Client) {
  const res = await db.query<{
    query: string;
    calls: number;
    total_ms: number;
    mean_ms: number;
    rows: number;
    wal_bytes: number;
    hit: number;
    read: number;
    jit_ms: number;
  }>(
    `SELECT regexp_replace(query, '\\s+', ' ', 'g') AS query, calls::float8, total_exec_time AS total_ms, mean_exec_time AS mean_ms, rows::float8,
            wal_bytes::float8, shared_blks_hit::float8 AS hit, shared_blks_read::float8 AS read,
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

// ---- CPU profiles ----------------------------------------------------------------------------

type CpuProfile = {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
};

/** Which part of the process a frame belongs to: its package, Sluice's own code, Node, or the VM. */
function areaOf(fn: string, url: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (url.startsWith("wasm://")) return "Postgres in WebAssembly (PGlite)";
  if (pkg) return `package ${pkg}`;
  if (url.includes("/dist/") || url.includes("/src/")) return "Sluice";
  if (url.startsWith("node:")) return "Node (JavaScript)";
  if (fn === "(garbage collector)") return "garbage collector";
  return fn === "(program)" ? "(program: V8 and native, unattributed)" : "native (syscalls, built-ins)";
}

/** Self time per function and per area of the samples between `fromUs` and `toUs` (all of them if none fall there). */
function summariseProfile(process: string, file: string, fromUs: number, toUs: number) {
  const prof = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const frames = new Map(prof.nodes.map((n) => [n.id, n.callFrame]));
  const collect = (windowed: boolean) => {
    const byFn = new Map<string, { fn: string; where: string; area: string; us: number }>();
    let t = prof.startTime;
    prof.samples.forEach((id, i) => {
      t += prof.timeDeltas[i] ?? 0;
      const f = frames.get(id);
      if ((windowed && (t < fromUs || t > toUs)) || !f || f.functionName === "(idle)") return;
      const path = f.url.replace(/^file:\/\//, "");
      const short = path.includes("node_modules/")
        ? path.slice(path.lastIndexOf("node_modules/") + 13)
        : path.startsWith(REPO)
          ? relative(REPO, path)
          : path;
      // Line 0: not known (code compiled by a loader reports it for a whole module); the file alone says more.
      const where = f.lineNumber === 0 || !short ? short : `${short}:${f.lineNumber + 1}`;
      const fn = f.functionName || "(anonymous)";
      const a = byFn.get(`${fn} ${where}`) ?? { fn, where, area: areaOf(fn, f.url), us: 0 };
      a.us += prof.timeDeltas[i] ?? 0;
      byFn.set(`${fn} ${where}`, a);
    });
    return [...byFn.values()];
  };
  const inLoad = collect(true);
  const all = inLoad.length > 0 ? inLoad : collect(false); // the clocks did not line up: the whole life of the process
  const totalUs = Math.max(
    1,
    all.reduce((n, a) => n + a.us, 0),
  );
  const areas = new Map<string, number>();
  for (const a of all) areas.set(a.area, (areas.get(a.area) ?? 0) + a.us);
  return {
    process,
    sampledMs: totalUs / 1000,
    windowed: inLoad.length > 0,
    top: all
      .sort((a, b) => b.us - a.us)
      .slice(0, 15)
      .map((a) => ({ fn: a.fn, where: a.where, selfMs: a.us / 1000, pct: (100 * a.us) / totalUs })),
    areas: [...areas].sort((a, b) => b[1] - a[1]).map(([area, us]) => ({ area, pct: (100 * us) / totalUs })),
  };
}

// ---- the run ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const f = flags();
  const { events, destinations, embedded } = f;
  const cpuProf = !f["no-cpu-prof"];
  const bench = benchStart("profile");
  const { out } = bench;
  const pgs = embedded ? null : await bench.postgres(!f["no-fsync"], true, f["pg-icu-locale"]);
  out(
    `workload: ${fmt(destinations)} destinations, ${fmt(events)} events (after ${fmt(f.warmup)} to warm up) in batches of 1,000, round-robin; ` +
      `${embedded ? "sluice start on the embedded store (PGlite)" : `sluice api + ${f.workers} × sluice worker`}; ` +
      `receiver answers at once; CPU profiles ${cpuProf ? "on (--cpu-prof; adds a little Sluice CPU)" : "off"}`,
  );
  const profDir = mkdtempSync(join(tmpdir(), "sluice-cpuprof-"));
  const dataDir = pgs ? undefined : mkdtempSync(join(tmpdir(), "sluice-profile-pglite-"));
  const inStore = <T>(run: (url: string | null) => Promise<T>): Promise<T> =>
    pgs ? withDatabase(pgs.server.url, "sluice_profile", run) : run(null);
  const result = await inStore(async (databaseUrl) => {
    const rcv = await Receiver.start(bench.log("profile-receiver.log"));
    const nodeArgs = cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
    const cluster = new SluiceCluster({ databaseUrl, dataDir, logPrefix: bench.log("profile-sluice"), nodeArgs });
    const db = databaseUrl ? await connect(databaseUrl) : null;
    try {
      await cluster.start(db ? f.workers : 0);
      const ids = await cluster.createDestinations(destinations, (i) => ({ url: rcv.destUrl(i), name: `profile-${i}` }));
      const procs = cluster.pids().map((pid, i) => ({ name: !db ? "start" : i === 0 ? "api" : `worker${i - 1}`, pid }));
      await db?.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
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
      await db?.query("SELECT pg_stat_statements_reset(), pg_stat_reset()");
      const before = db ? await counters(db) : null;
      const system = { system: "sluice", pids: () => cluster.pids(), postmaster: pgs?.postmaster ?? (() => null), receiver: rcv.pid };
      const sampler = new CpuSampler({ ...system, bench: "bench (publisher)" }).begin();
      const [fromUs, startedAt] = [monoUs(), Date.now()];
      await load(events, "load");
      const [toUs, wallMs, cpu] = [monoUs(), Date.now() - startedAt, sampler.end()];
      const stmts = db ? await statements(db) : [];
      const after = db ? await counters(db) : null;
      const walBytes = after
        ? Number((await db!.query<{ n: number }>("SELECT pg_wal_lsn_diff($1, $2)::float8 AS n", [after.lsn, before!.lsn])).rows[0]!.n)
        : null;
      // Backends flush their table counters when idle or when they exit: stop Sluice (which also
      // writes its CPU profiles) before reading them.
      await cluster.stop();
      await sleep(1000);
      const tables = !db
        ? []
        : (
            await db.query<{ table: string; indexes: number; ins: number; upd: number; del: number; hot: number }>(
              `SELECT relname AS table, (SELECT count(*) FROM pg_index i WHERE i.indrelid = relid)::float8 AS indexes,
                      n_tup_ins::float8 AS ins, n_tup_upd::float8 AS upd, n_tup_del::float8 AS del, n_tup_hot_upd::float8 AS hot
                 FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC`,
            )
          ).rows;
      const commits = db && before ? (await counters(db)).commits - before.commits : null;
      const files = cpuProf ? readdirSync(profDir).filter((x) => x.endsWith(".cpuprofile")) : [];
      // Each process's main-thread profile: CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile.
      const profiles = procs.flatMap(({ name, pid }) => {
        const file = files.find((x) => x.split(".")[3] === String(pid) && x.split(".")[4] === "0");
        return file ? [summariseProfile(name, join(profDir, file), fromUs, toUs)] : [];
      });
      return { busyBeforePct, delivered: events, wallMs, cpu, statements: stmts, commits, walBytes, tables, profiles };
    } finally {
      await db?.end().catch(() => undefined);
      await cluster.stop().catch(() => undefined);
      await rcv.stop();
    }
  });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (f["keep-cpu-prof"]) out(`CPU profiles kept in ${profDir} (open them in Chrome DevTools or speedscope)`);
  else rmSync(profDir, { recursive: true, force: true });

  const n = result.delivered;
  const per = (x: number, d = 2): string => fmt(x / n, d);
  const us = (k: string): string => fmt(((result.cpu[k]?.cpuSeconds ?? 0) * 1e6) / n, 1);
  const sum = (k: "calls" | "total_ms" | "jit_ms"): number => result.statements.reduce((s, x) => s + x[k], 0);
  out(`\ndelivered ${fmt(n)} in ${fmt(result.wallMs / 1000, 1)} s (${fmt(n / (result.wallMs / 1000))}/s, first publish → last arrival)`);
  const totals = [
    ["per delivery", "value"],
    ...(pgs
      ? [
          ["commits (pg_stat_database xact_commit)", per(result.commits ?? 0)],
          ["WAL bytes (pg_current_wal_lsn diff)", per(result.walBytes ?? 0, 0)],
          ["statement calls (pg_stat_statements)", per(sum("calls"))],
          ["statement exec time µs", per(sum("total_ms") * 1000, 1)],
          ["JIT compiling µs (pg_stat_statements jit_*_time)", per(sum("jit_ms") * 1000, 1)],
          ["Postgres CPU µs (postmaster + children, /proc)", us("postgres")],
        ]
      : []),
    [pgs ? "Sluice CPU µs (api + workers, /proc)" : "Sluice CPU µs (sluice start with PGlite in it, /proc)", us("sluice")],
    ["receiver CPU µs", us("receiver")],
    ["machine busy µs (all processes, kernel)", us("(machine busy)")],
  ];
  out(`\n${table(totals, true)}`);
  out(`\nCPU over the load (% of one core; 2 cores = 200 %): ${cpuLine(result.cpu)}; machine busy before: ${result.busyBeforePct} %`);
  if (pgs) {
    const stmtRows = result.statements
      .slice(0, 15)
      .map((s) => [
        `\`${s.query.length > 90 ? `${s.query.slice(0, 89)}…` : s.query}\``.replaceAll("|", "\\|"),
        per(s.calls, 3),
        fmt(s.mean_ms, 3),
        per(s.total_ms * 1000, 1),
        per(s.rows),
        per(s.wal_bytes, 0),
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
  }
  for (const p of result.profiles) {
    const top = p.top.map((h) => [`\`${h.fn}\``, h.where, fmt(h.selfMs), fmt(h.pct, 1)]);
    out(
      `\nCPU profile of sluice ${p.process}: top 15 functions by self time, ${fmt(p.sampledMs)} ms sampled ` +
        `${p.windowed ? "during the load" : "over the whole process life (the clocks did not line up)"}:\n` +
        `${table([["function", "where", "self ms", "self %"], ...top], true)}\nby where the code lives: ` +
        p.areas
          .filter((a) => a.pct >= 0.5)
          .map((a) => `${a.area} ${fmt(a.pct, 1)} %`)
          .join(", "),
    );
  }
  bench.finish("profile", { postgres: pgs?.settings ?? null, options: f, ...result });
}

runBench(main);
