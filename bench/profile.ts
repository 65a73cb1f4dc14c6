// `npm run bench:profile`: where each delivery's time goes. Sluice as `npm run bench` runs it
// (api + 2 workers, 0 ms receiver, durable Postgres) on a smaller workload, with pg_stat_statements
// loaded: per statement, per table, commits, WAL and CPU per delivery, and the hottest functions of
// each Sluice process from a V8 CPU profile. Prints tables; writes bench/results/profile-<time>.json.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type pg from "pg";
import { connect, JIT_MS_SQL, withDatabase } from "./pg.js";
import { CpuSampler, machineBusyPct, parseFlags, runBench, sleep, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, table } from "./report.js";
import { REPO, SluiceCluster } from "./sluice.js";

const flags = () =>
  parseFlags("npm run bench:profile", {
    events: { def: 20_000, quick: 3000, help: "events (one delivery each)" },
    destinations: { def: 200, quick: 50, help: "destinations, events round-robin over them" },
    workers: { def: 2, help: "sluice worker processes beside one sluice api" },
    warmup: { def: 5000, quick: 1000, min: 0, help: "events delivered before the counters are reset (0 = none)" },
    quick: { type: "bool", help: "small smoke run: 50 destinations, 3,000 events" },
    "no-cpu-prof": { type: "bool", help: "run the Sluice processes without --cpu-prof (its overhead stays out of the CPU figures)" },
    "timeout-s": { def: 600, help: "for the deliveries to arrive" },
    "wait-quiet-s": { def: 60, min: 0, help: "before the run, wait up to N s for other processes to leave the CPU (0 = don't)" },
    "no-fsync": { type: "bool", help: "Postgres with fsync=off (default: durable)" },
    "keep-cpu-prof": { type: "bool", help: "keep the .cpuprofile files (their folder is printed) instead of deleting them" },
    embedded: {
      type: "bool",
      help: "profile `sluice start` on the embedded store (PGlite in the one process): CPU and its profile, no statement or table figures",
    },
    "pg-icu-locale": {
      type: "str",
      arg: "LOCALE",
      help: "initdb the throwaway Postgres with this ICU locale as its default collation (e.g. en-US, as most servers are); default C",
    },
  });

/** Monotonic clock in µs: the clock V8 stamps CPU profiles with, so samples can be cut to the load. */
const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

type Statement = {
  query: string;
  calls: number;
  total_ms: number;
  mean_ms: number;
  rows: number;
  wal_bytes: number;
  blks_hit: number;
  blks_read: number;
  /** ms spent JIT-compiling (0 on a Postgres without the columns, before 15). */
  jit_ms: number;
};

/** This database's statements since the reset, by total execution time (nested ones included: track=all). */
async function statements(db: pg.Client): Promise<Statement[]> {
  const res = await db.query<Record<keyof Statement, string | number>>(
    `SELECT query, calls::float8 AS calls, total_exec_time AS total_ms, mean_exec_time AS mean_ms, rows::float8 AS rows,
            wal_bytes::float8 AS wal_bytes, shared_blks_hit::float8 AS blks_hit, shared_blks_read::float8 AS blks_read,
            ${JIT_MS_SQL} AS jit_ms
       FROM pg_stat_statements s
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT ILIKE '%pg_stat_statements%'
      ORDER BY total_exec_time DESC`,
  );
  return res.rows.map((r) => ({
    query: String(r.query).replace(/\s+/g, " ").trim(),
    calls: Number(r.calls),
    total_ms: Number(r.total_ms),
    mean_ms: Number(r.mean_ms),
    rows: Number(r.rows),
    wal_bytes: Number(r.wal_bytes),
    blks_hit: Number(r.blks_hit),
    blks_read: Number(r.blks_read),
    jit_ms: Number(r.jit_ms),
  }));
}

type TableRow = { table: string; ins: number; upd: number; del: number; hot_upd: number; indexes: number; n_live: number };

async function tables(db: pg.Client): Promise<TableRow[]> {
  const res = await db.query<Record<keyof TableRow, string | number>>(
    `SELECT t.relname AS table, t.n_tup_ins::float8 AS ins, t.n_tup_upd::float8 AS upd, t.n_tup_del::float8 AS del,
            t.n_tup_hot_upd::float8 AS hot_upd, t.n_live_tup::float8 AS n_live,
            (SELECT count(*) FROM pg_index i WHERE i.indrelid = t.relid)::float8 AS indexes
       FROM pg_stat_user_tables t
      ORDER BY t.n_tup_ins + t.n_tup_upd + t.n_tup_del DESC, t.relname`,
  );
  return res.rows.map((r) => ({
    table: String(r.table),
    ins: Number(r.ins),
    upd: Number(r.upd),
    del: Number(r.del),
    hot_upd: Number(r.hot_upd),
    indexes: Number(r.indexes),
    n_live: Number(r.n_live),
  }));
}

async function counters(db: pg.Client): Promise<{ commits: number; rollbacks: number; lsn: string }> {
  const r = await db.query<{ commits: string; rollbacks: string; lsn: string }>(
    `SELECT xact_commit AS commits, xact_rollback AS rollbacks, pg_current_wal_lsn()::text AS lsn
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  const row = r.rows[0]!;
  return { commits: Number(row.commits), rollbacks: Number(row.rollbacks), lsn: row.lsn };
}

async function walBytesBetween(db: pg.Client, from: string, to: string): Promise<number> {
  return Number((await db.query<{ n: string }>("SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8 AS n", [to, from])).rows[0]!.n);
}

// ---- CPU profiles ----------------------------------------------------------------------------

type CpuProfile = {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
};
type HotFunction = { fn: string; where: string; selfMs: number; pct: number };
type ProcessProfile = {
  process: string;
  file: string;
  sampledMs: number;
  windowed: boolean;
  top: HotFunction[];
  /** Self time by where the code lives (see areaOf). */
  areas: { area: string; selfMs: number; pct: number }[];
};

/** Which part of the process a frame belongs to: its package, Sluice's own code, Node, or the VM. */
function areaOf(fn: string, url: string): string {
  if (url.startsWith("wasm://")) return "Postgres in WebAssembly (PGlite)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return `package ${rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.includes("/dist/") || url.includes("/src/")) return "Sluice";
  if (url.startsWith("node:")) return "Node (JavaScript)";
  if (fn === "(garbage collector)") return "garbage collector";
  if (fn === "(program)") return "(program: V8 and native, unattributed)";
  return "native (syscalls, built-ins)";
}

/** Where a frame's code lives, short: a path in the repo, or `pkg/file` in node_modules; with its line when known. */
function shortUrl(url: string, line: number): string {
  if (!url) return "";
  const path = url.replace(/^file:\/\//, "");
  const nm = path.lastIndexOf("node_modules/");
  const short = nm >= 0 ? path.slice(nm + "node_modules/".length) : path.startsWith(REPO) ? relative(REPO, path) : path;
  // Line 0: not known (code compiled by a loader reports it for a whole module); the file alone says more.
  return line === 0 ? short : `${short}:${line + 1}`;
}

/** Self time per function (name + url:line) of the samples between `fromUs` and `toUs` (all of them if none fall there). */
function summariseProfile(name: string, file: string, fromUs: number, toUs: number, top: number): ProcessProfile {
  const prof = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const frames = new Map(prof.nodes.map((n) => [n.id, n.callFrame]));
  const collect = (windowed: boolean): Map<string, { fn: string; where: string; url: string; us: number }> => {
    const agg = new Map<string, { fn: string; where: string; url: string; us: number }>();
    let t = prof.startTime;
    prof.samples.forEach((id, i) => {
      const dt = prof.timeDeltas[i] ?? 0;
      t += dt;
      if (windowed && (t < fromUs || t > toUs)) return;
      const f = frames.get(id);
      if (!f || f.functionName === "(idle)") return;
      const where = shortUrl(f.url, f.lineNumber);
      const fn = f.functionName || "(anonymous)";
      const key = `${fn} ${where}`;
      const a = agg.get(key) ?? { fn, where, url: f.url, us: 0 };
      a.us += dt;
      agg.set(key, a);
    });
    return agg;
  };
  let windowed = true;
  let agg = collect(true);
  if (agg.size === 0) {
    windowed = false; // the clocks did not line up: the whole life of the process, start-up included
    agg = collect(false);
  }
  const totalUs = [...agg.values()].reduce((n, a) => n + a.us, 0);
  const areas = new Map<string, number>();
  for (const a of agg.values()) {
    const area = areaOf(a.fn, a.url);
    areas.set(area, (areas.get(area) ?? 0) + a.us);
  }
  const hot = [...agg.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((a) => ({ fn: a.fn, where: a.where, selfMs: a.us / 1000, pct: (100 * a.us) / Math.max(1, totalUs) }));
  return {
    process: name,
    file,
    sampledMs: totalUs / 1000,
    windowed,
    top: hot,
    areas: [...areas]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, selfMs: us / 1000, pct: (100 * us) / Math.max(1, totalUs) })),
  };
}

/** The main-thread profile of each Sluice process (named CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile). */
function profilesOf(dir: string, procs: { name: string; pid: number }[]): { name: string; file: string }[] {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  return procs.flatMap(({ name, pid }) => {
    const f = files.find((x) => x.split(".")[3] === String(pid) && x.split(".")[4] === "0");
    return f ? [{ name, file: join(dir, f) }] : [];
  });
}

// ---- the run ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const f = flags();
  const { events, destinations } = f;
  const fsync = !f["no-fsync"];
  const cpuProf = !f["no-cpu-prof"];
  const bench = benchStart("profile");
  const { out } = bench;
  const idleBusy = await machineBusyPct(2000);
  out(`machine load before starting: ${idleBusy}% of one core busy over 2 s${idleBusy > 25 ? " — NOT idle" : " (quiet)"}`);
  const embedded = f.embedded;
  const pgs = embedded ? null : await bench.postgres(fsync, true, f["pg-icu-locale"]);
  out(
    `workload: ${fmt(destinations)} destinations, ${fmt(events)} events (after ${fmt(f.warmup)} to warm up) in batches of 1,000, round-robin; ` +
      `${embedded ? "sluice start on the embedded store (PGlite)" : `sluice api + ${f.workers} × sluice worker`}; ` +
      `receiver answers at once; CPU profiles ${cpuProf ? "on (--cpu-prof; adds a little Sluice CPU)" : "off"}`,
  );
  const profDir = mkdtempSync(join(tmpdir(), "sluice-cpuprof-"));
  const nodeArgs = cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];

  // The embedded store: its data directory instead of a database on the throwaway server.
  const inStore = <T>(f: (databaseUrl: string | null, dataDir?: string) => Promise<T>): Promise<T> => {
    if (pgs) return withDatabase(pgs.server.url, "sluice_profile", (url) => f(url));
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-profile-pglite-"));
    return f(null, dataDir).finally(() => rmSync(dataDir, { recursive: true, force: true }));
  };
  const result = await inStore(async (databaseUrl, dataDir) => {
    const rcv = await Receiver.start(bench.log("profile-receiver.log"), { delayMs: 0 });
    const cluster = new SluiceCluster({ databaseUrl, dataDir, logPrefix: bench.log("profile-sluice"), nodeArgs });
    const db = databaseUrl ? await connect(databaseUrl) : null;
    try {
      await cluster.startApi(db ? "api" : "start");
      if (db) await cluster.startWorkers(f.workers, true);
      const ids = await cluster.createDestinations(destinations, (i) => ({ url: rcv.destUrl(i), name: `profile-${i}` }));
      const procs = cluster.pids().map((pid, i) => ({ name: !db ? "start" : i === 0 ? "api" : `worker${i - 1}`, pid }));
      await db?.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      // `n` events in batches of 1,000, one batch at a time, then the wait for all of them to arrive.
      const load = async (n: number, what: string, startedAt: number): Promise<number> => {
        await rcv.reset(n);
        process.stderr.write(`▶ ${what}: publishing ${fmt(n)} events\n`);
        for (let off = 0; off < n; off += 1000) {
          const sentAt = Date.now();
          await cluster.publishBatch(
            Array.from({ length: Math.min(1000, n - off) }, (_, k) => {
              const seq = off + k;
              const dest = seq % destinations;
              return { type: "bench.event", payload: { seq, dest, sent_at: sentAt }, destination_ids: [ids[dest]!] };
            }),
          );
        }
        const p = await rcv.waitFor(
          (x) => x.unique >= n,
          startedAt + f["timeout-s"] * 1000,
          (x) => `  ${what}: received ${fmt(x.unique)}/${fmt(n)}`,
          2000,
        );
        if (p.unique < n) throw new Error(`${what}: only ${p.unique} of ${n} deliveries arrived within ${f["timeout-s"]} s`);
        return p.unique;
      };
      // Small runs are dominated by a cold start (JIT, pools, the first claims): warm up first.
      if (f.warmup > 0) {
        await load(f.warmup, "warm-up", Date.now());
        // An idle backend flushes its table and database counters up to 10 s later
        // (PGSTAT_IDLE_INTERVAL): let the warm-up's land before the reset, not after it.
        await sleep(11_000);
      }
      if (f["wait-quiet-s"] > 0) await waitQuiet(f["wait-quiet-s"] * 1000);

      // The counters start from zero just before the load: set-up and warm-up are not in the figures.
      await db?.query("SELECT pg_stat_statements_reset()");
      await db?.query("SELECT pg_stat_reset()");
      const before = db ? await counters(db) : null;
      const sampler = new CpuSampler({
        system: "sluice",
        pids: () => cluster.pids(),
        postmaster: pgs ? pgs.postmaster : () => null,
        receiver: rcv.pid,
        bench: "bench (publisher)",
      }).begin();
      const fromUs = monoUs();
      const startedAt = Date.now();
      const delivered = await load(events, "load", startedAt);
      const toUs = monoUs();
      const wallMs = Date.now() - startedAt;
      const cpu = sampler.end();
      const stmts = db ? await statements(db) : [];
      const after = db ? await counters(db) : null;
      const walBytes = db && before && after ? await walBytesBetween(db, before.lsn, after.lsn) : null;

      // Backends flush their table counters when idle for a while or when they exit: stop Sluice
      // (which also writes its CPU profiles) before reading them.
      await cluster.stop();
      await sleep(1000);
      await db?.query("SELECT pg_stat_clear_snapshot()");
      const tbl = db ? await tables(db) : [];
      const final = db ? await counters(db) : null;
      const profiles = cpuProf ? profilesOf(profDir, procs).map((x) => summariseProfile(x.name, x.file, fromUs, toUs, 15)) : [];
      return {
        delivered,
        wallMs,
        deliveriesPerSec: delivered / (wallMs / 1000),
        cpu,
        statements: stmts,
        commits: final && before ? final.commits - before.commits : null,
        rollbacks: final && before ? final.rollbacks - before.rollbacks : null,
        walBytes,
        tables: tbl,
        profiles,
      };
    } finally {
      await db?.end().catch(() => undefined);
      await cluster.stop().catch(() => undefined);
      await rcv.stop();
    }
  });
  if (f["keep-cpu-prof"]) out(`CPU profiles kept in ${profDir} (open them in Chrome DevTools or speedscope)`);
  else rmSync(profDir, { recursive: true, force: true });

  const n = result.delivered;
  const per = (x: number, d = 2): string => fmt(x / n, d);
  const us = (cpuSeconds: number | undefined): number => ((cpuSeconds ?? 0) * 1e6) / n;
  out(`\ndelivered ${fmt(n)} in ${(result.wallMs / 1000).toFixed(1)} s (${fmt(result.deliveriesPerSec)}/s, first publish → last arrival)`);
  const serverOnly = (rows: string[][]): string[][] => (pgs ? rows : []);
  const totals = [
    ["per delivery", "value"],
    ...serverOnly([
      ["commits (pg_stat_database xact_commit)", per(result.commits ?? 0)],
      ["rollbacks", per(result.rollbacks ?? 0)],
      ["WAL bytes (pg_current_wal_lsn diff)", per(result.walBytes ?? 0, 0)],
      ["statement calls (pg_stat_statements)", per(result.statements.reduce((s, x) => s + x.calls, 0))],
      [
        "statement exec time µs",
        per(
          result.statements.reduce((s, x) => s + x.total_ms * 1000, 0),
          1,
        ),
      ],
      [
        "JIT compiling µs (pg_stat_statements jit_*_time)",
        per(
          result.statements.reduce((s, x) => s + x.jit_ms * 1000, 0),
          1,
        ),
      ],
      ["Postgres CPU µs (postmaster + children, /proc)", fmt(us(result.cpu.postgres?.cpuSeconds), 1)],
    ]),
    [
      pgs ? "Sluice CPU µs (api + workers, /proc)" : "Sluice CPU µs (sluice start with PGlite in it, /proc)",
      fmt(us(result.cpu.sluice?.cpuSeconds), 1),
    ],
    ["receiver CPU µs", fmt(us(result.cpu.receiver?.cpuSeconds), 1)],
    ["machine busy µs (all processes, kernel)", fmt(us(result.cpu["(machine busy)"]?.cpuSeconds), 1)],
  ];
  out(`\n${table(totals, true)}`);
  out(
    `\nCPU over the load (% of one core; 2 cores = 200 %): ${Object.entries(result.cpu)
      .map(([k, v]) => `${k} ${v.pctOfOneCore}%`)
      .join(", ")}`,
  );

  // Statements and tables: the server store only (PGlite has no pg_stat_statements here).
  if (pgs) {
    const stmtRows = [
      ["statement (normalised)", "calls/dlv", "mean ms", "exec µs/dlv", "rows/dlv", "WAL B/dlv", "hit/dlv", "read/dlv"],
      ...result.statements
        .slice(0, 15)
        .map((s) => [
          `\`${s.query.length > 90 ? `${s.query.slice(0, 89)}…` : s.query}\``.replaceAll("|", "\\|"),
          per(s.calls, 3),
          fmt(s.mean_ms, 3),
          per(s.total_ms * 1000, 1),
          per(s.rows, 2),
          per(s.wal_bytes, 0),
          per(s.blks_hit, 1),
          per(s.blks_read, 2),
        ]),
    ];
    out(`\ntop 15 statements by total execution time (pg_stat_statements, track=all), per delivery:\n${table(stmtRows, true)}`);

    const tableRows = [
      ["table", "indexes", "ins/dlv", "upd/dlv", "del/dlv", "HOT upd/dlv", "HOT %"],
      ...result.tables
        .filter((t) => t.ins + t.upd + t.del > 0)
        .map((t) => [
          t.table,
          fmt(t.indexes),
          per(t.ins, 3),
          per(t.upd, 3),
          per(t.del, 3),
          per(t.hot_upd, 3),
          t.upd > 0 ? `${fmt((100 * t.hot_upd) / t.upd)} %` : "–",
        ]),
    ];
    out(`\nrow writes per table (pg_stat_user_tables), per delivery:\n${table(tableRows, true)}`);
  }

  for (const p of result.profiles) {
    out(
      `\nCPU profile of sluice ${p.process}: top 15 functions by self time, ${fmt(p.sampledMs)} ms sampled ` +
        `${p.windowed ? "during the load" : "over the whole process life (start-up included: the clocks did not line up)"}:\n` +
        table(
          [["function", "where", "self ms", "self %"], ...p.top.map((h) => [`\`${h.fn}\``, h.where, fmt(h.selfMs), fmt(h.pct, 1)])],
          true,
        ) +
        `\nby where the code lives: ${p.areas
          .filter((a) => a.pct >= 0.5)
          .map((a) => `${a.area} ${fmt(a.pct, 1)} %`)
          .join(", ")}`,
    );
  }
  if (!cpuProf) out("\n(no CPU profiles: --no-cpu-prof)");

  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  bench.finish(`profile-${stamp}`, {
    machineBusyBeforePct: idleBusy,
    postgres: pgs?.settings ?? null,
    fsync,
    options: { embedded, events, destinations, workers: f.workers, warmup: f.warmup, cpuProf, quick: f.quick },
    ...result,
  });
}

runBench(main);
