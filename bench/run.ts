// `npm run bench`: Sluice against two job queues (graphile-worker, pg-boss) on one throwaway
// Postgres server, plus an embedded (PGlite) figure. Prints figures and writes
// bench/results/delivery-<start>-<commit>.json; asserts nothing. One measured run is the same for
// every system: a fresh receiver, the system set up against it, the events published in batches
// (each stamped with sent_at), then a wait for the last delivery or the deadline.
// Fairness: every system runs compiled (Sluice from dist/, the peers' workers bundled by esbuild),
// and with the 50 ms receiver every system gets the same in-flight budget (--inflight-50ms), since
// there the budget, not the engine, would otherwise set the figure.
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { runMigrations } from "graphile-worker";
import { PgBoss } from "pg-boss";
import type { DeliverPayload } from "./graphile-worker-process.js";
import type { PgBossDeliverData } from "./pg-boss-process.js";
import { peerDelivery } from "./peer-send.js";
import { connect, deliveriesByStatus, PgActivitySampler, withDatabase } from "./pg.js";
import { cleanup, CpuSampler, forkReady, machineBusyPct, parseFlags, runBench, stopChild, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import {
  benchStart,
  comparisonTable,
  deriveFigures,
  describeRun,
  fmt,
  newRun,
  TARGETS_TEXT,
  type RunResult,
  type Scenario,
} from "./report.js";
import { REPO, SluiceCluster, sourceState } from "./sluice.js";

/** One event of the workload: event `seq` goes to destination `dest` (round-robin), its batch handed over at `sentAt` (Unix ms). */
type BenchEvent = { seq: number; dest: number; sentAt: number };

type SystemUnderTest = {
  /** Process trees whose CPU counts as the system's own. */
  pids(): number[];
  publishBatch(batch: BenchEvent[]): Promise<void>;
  /** Database-side tally after the run (null: there is no database we can look into). */
  endState(): Promise<Record<string, number> | null>;
  engineMetrics(): Promise<Record<string, number> | null>;
  stop(): Promise<void>;
  /** The most requests it may have in flight at once, across its processes: its settings' product. */
  inflight: number;
  settings: RunResult["settings"];
  notes: string[];
};

/** Sluice settings read from the environment; the ones set are recorded with the results. */
const KNOBS = ["SLUICE_CLAIM_BATCH", "SLUICE_GRANT_CAP", "SLUICE_DB_POOL_SIZE"] as const;

/** Sluice against the receiver: `sluice start`, or with `workers` > 0 (server store) `sluice api` + N × `sluice worker`. */
async function setupSluice(
  rcv: Receiver,
  o: {
    databaseUrl: string | null;
    dataDir?: string;
    destinations: number;
    maxConcurrency: number;
    logPrefix: string;
    dir: string;
    workers: number;
    /** SLUICE_WORKER_CONCURRENCY: requests in flight per worker process. */
    workerConcurrency: number;
    receiverPorts: number;
  },
): Promise<SystemUnderTest> {
  const source = sourceState(o.dir); // before it starts: the files it loads
  const split = o.workers > 0 && o.databaseUrl !== null;
  const cluster = new SluiceCluster({ ...o, env: { SLUICE_WORKER_CONCURRENCY: String(o.workerConcurrency) } });
  const procs = split ? o.workers : 1;
  const sockets = Number(process.env.SLUICE_MAX_SOCKETS_PER_ORIGIN ?? 256) * o.receiverPorts;
  const inflight = Math.min(procs * o.workerConcurrency, procs * sockets, o.destinations * (o.maxConcurrency || 5));
  let ids: string[];
  try {
    await cluster.startApi(split ? "api" : "start");
    await cluster.startWorkers(split ? o.workers : 0, true);
    const maxConcurrency = o.maxConcurrency ? { max_concurrency: o.maxConcurrency } : {};
    ids = await cluster.createDestinations(o.destinations, (i) => ({ url: rcv.destUrl(i), name: `bench-${i}`, ...maxConcurrency }));
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  const settings: RunResult["settings"] = {
    process: split ? `sluice api + ${o.workers} × sluice worker (separate processes)` : "sluice start (API + worker, one process)",
    store: o.databaseUrl ? "postgres server" : "embedded PGlite",
    max_concurrency_per_destination: o.maxConcurrency || "5 (default)",
    routing: "destination_ids: [one destination per event], round-robin",
    in_flight: `min(${procs} × SLUICE_WORKER_CONCURRENCY ${o.workerConcurrency}, ${procs} × ${sockets} sockets per origin, destinations × max_concurrency) = ${inflight}`,
    sluice_dir: o.dir,
    source: `${source.commit}${source.localChanges.length ? ` + local changes (${source.localChanges.length} files)` : ", clean"}; fingerprint ${source.fingerprint}`,
  };
  for (const k of KNOBS) settings[k] = process.env[k] ?? "default";
  settings.SLUICE_WORKER_CONCURRENCY = o.workerConcurrency;
  return {
    settings,
    inflight,
    notes: [],
    pids: () => cluster.pids(),
    engineMetrics: () => cluster.engineMetrics(),
    stop: () => cluster.stop(),
    publishBatch: (batch) =>
      cluster.publishBatch(
        batch.map((e) => ({
          type: "bench.event",
          payload: { seq: e.seq, dest: e.dest, sent_at: e.sentAt },
          destination_ids: [ids[e.dest]!],
        })),
      ),
    async endState() {
      if (!o.databaseUrl) return null; // PGlite is single-process: only Sluice itself can open it
      const c = await connect(o.databaseUrl);
      try {
        const a = await c.query<{ n: number; bad: number }>(
          "SELECT count(*)::int AS n, count(*) FILTER (WHERE status_code IS DISTINCT FROM 200)::int AS bad FROM attempts",
        );
        return { ...(await deliveriesByStatus(c)), attempts: a.rows[0]?.n ?? 0, "attempts.not_200": a.rows[0]?.bad ?? 0 };
      } finally {
        await c.end();
      }
    },
  };
}

// graphile_worker.add_jobs with the JSON array turned into job_spec rows: one statement per batch,
// as Sluice takes one request per batch; unset fields take its defaults (no queue, run now, 25 attempts).
const ADD_JOBS = `
  SELECT count(*)::int AS n FROM graphile_worker.add_jobs(
    (SELECT array_agg(s) FROM json_populate_recordset(null::graphile_worker.job_spec, $1::json) AS s))`;

/** The baseline: graphile-worker 0.16.6 in its own database, one `deliver` job per delivery, run by child processes. */
async function setupGraphile(
  rcv: Receiver,
  o: { databaseUrl: string; workers: number; concurrency: number; maxConnections: number; logPrefix: string; module: string },
): Promise<SystemUnderTest> {
  const notes: string[] = [];
  // graphile-worker warns below concurrency; +1 for the connection its LISTEN holds. The pools
  // must fit under the server's max_connections, with room for the bench and superuser slots.
  const budget = Math.floor((o.maxConnections - 10) / o.workers);
  const maxPoolSize = Math.min(o.concurrency + 1, budget);
  if (maxPoolSize < o.concurrency + 1)
    notes.push(`maxPoolSize capped at ${budget} (server max_connections=${o.maxConnections}) below concurrency+1=${o.concurrency + 1}`);
  await runMigrations({ connectionString: o.databaseUrl, logger: undefined });
  const workers: ChildProcess[] = [];
  const publisher = await connect(o.databaseUrl);
  const stop = async (): Promise<void> => {
    await publisher.end().catch(() => undefined);
    await Promise.all(workers.map((w) => stopChild(w, 15_000)));
  };
  try {
    for (let i = 0; i < o.workers; i++) {
      const args = [o.databaseUrl, String(o.concurrency), String(maxPoolSize)];
      workers.push((await forkReady(o.module, args, `${o.logPrefix}-worker${i}.log`, 60_000)).child);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    notes,
    inflight: o.workers * o.concurrency,
    settings: {
      version: "graphile-worker 0.16.6",
      worker_processes: o.workers,
      concurrency_per_process: o.concurrency,
      maxPoolSize_per_process: maxPoolSize,
      pollInterval_ms: 1000,
      jobs: "one `deliver` job per delivery, no queue_name (no per-destination limit), max_attempts 25",
      adding: "graphile_worker.add_jobs, one statement per batch of 1,000",
    },
    pids: () => workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid])),
    async publishBatch(batch) {
      const specs = batch.map((e) => {
        const payload: DeliverPayload = peerDelivery(rcv.destUrl(e.dest), e, `evt_${randomUUID()}`);
        return { identifier: "deliver", payload };
      });
      const res = await publisher.query<{ n: number }>(ADD_JOBS, [JSON.stringify(specs)]);
      if (res.rows[0]?.n !== batch.length) throw new Error(`add_jobs added ${res.rows[0]?.n} of ${batch.length} jobs`);
    },
    async endState() {
      const r = await publisher.query<Record<string, number>>(
        `SELECT count(*)::int AS "jobs.remaining", count(*) FILTER (WHERE last_error IS NOT NULL)::int AS "jobs.with_error",
                coalesce(sum(attempts), 0)::int AS "attempts.of_remaining" FROM graphile_worker.jobs`,
      );
      return r.rows[0] ?? null;
    },
    engineMetrics: () => Promise.resolve(null),
    stop,
  };
}

const PGBOSS_QUEUE = "webhooks";

/**
 * The second peer: pg-boss 12.38 in its own database, one job per delivery in one queue, grouped
 * by destination, run by child processes whose `work()` sets `groupConcurrency` to the
 * destination's max_concurrency (pg-boss counts a group's active jobs in the database, so the
 * limit holds across processes). The bench publishes through pg-boss's own `insert()`.
 */
async function setupPgBoss(
  rcv: Receiver,
  o: {
    databaseUrl: string;
    workers: number;
    localConcurrency: number;
    batchSize: number;
    groupConcurrency: number;
    maxConnections: number;
    logPrefix: string;
    module: string;
  },
): Promise<SystemUnderTest> {
  const notes: string[] = [];
  // Each local worker holds at most one connection (fetch, then settle), +1 for LISTEN, +1 to spare.
  const budget = Math.floor((o.maxConnections - 10) / o.workers);
  const poolSize = Math.min(o.localConcurrency + 2, budget);
  if (poolSize < o.localConcurrency + 2) notes.push(`pool capped at ${budget} (server max_connections=${o.maxConnections})`);
  // The publisher installs the schema and creates the queue, so the workers start on a ready database.
  const publisher = new PgBoss({ connectionString: o.databaseUrl, max: 4, supervise: false, schedule: false });
  publisher.on("error", (err) => notes.push(`pg-boss publisher error: ${err.message}`));
  const workers: ChildProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(workers.map((w) => stopChild(w, 15_000)));
    await publisher.stop({ graceful: false, timeout: 5000 }).catch(() => undefined);
  };
  try {
    await publisher.start();
    // 25 attempts as the graphile-worker peer; NOTIFY so idle workers wake when jobs arrive.
    await publisher.createQueue(PGBOSS_QUEUE, { retryLimit: 24, notify: true });
    for (let i = 0; i < o.workers; i++) {
      const args = [o.databaseUrl, PGBOSS_QUEUE, o.groupConcurrency, o.localConcurrency, o.batchSize, poolSize].map(String);
      workers.push((await forkReady(o.module, args, `${o.logPrefix}-worker${i}.log`, 60_000)).child);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    notes,
    inflight: o.workers * o.localConcurrency * o.batchSize,
    settings: {
      version: "pg-boss 12.38",
      worker_processes: o.workers,
      localConcurrency_per_process: o.localConcurrency,
      batchSize: o.batchSize,
      in_flight_per_process: o.localConcurrency * o.batchSize,
      groupConcurrency: o.groupConcurrency,
      pool_per_process: poolSize,
      jobs: `one job per delivery in queue '${PGBOSS_QUEUE}', group.id = destination, retryLimit 24 (25 attempts), notify`,
      fetching: "burstWhenBatchFull, LISTEN/NOTIFY, pollingIntervalSeconds 0.5; each batch POSTed at once, settled per job",
      adding: "boss.insert(), one call per batch of 1,000",
    },
    pids: () => workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid])),
    async publishBatch(batch) {
      const jobs = batch.map((e) => {
        const data: PgBossDeliverData = peerDelivery(rcv.destUrl(e.dest), e, `evt_${randomUUID()}`);
        return { data, group: { id: String(e.dest) } };
      });
      await publisher.insert(PGBOSS_QUEUE, jobs);
    },
    async endState() {
      const c = await connect(o.databaseUrl);
      try {
        const r = await c.query<{ state: string; n: number; retries: number }>(
          "SELECT state::text, count(*)::int AS n, coalesce(sum(retry_count), 0)::int AS retries FROM pgboss.job WHERE name = $1 GROUP BY state",
          [PGBOSS_QUEUE],
        );
        const out: Record<string, number> = {};
        for (const row of r.rows) out[`jobs.${row.state}`] = row.n;
        out["jobs.retries"] = r.rows.reduce((n, row) => n + row.retries, 0);
        return out;
      } finally {
        await c.end();
      }
    },
    engineMetrics: () => Promise.resolve(null),
    stop,
  };
}

/** `p`, unless the deadline comes first (a hung system must not hang the bench). */
async function beforeDeadline<T>(p: Promise<T>, deadline: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish before the run's deadline`)), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function measure(
  result: RunResult,
  f: Flags,
  o: {
    log: (name: string) => string;
    postmaster: () => number | null;
    /** The system's database on the server, to sample what its connections do; null for PGlite. */
    databaseUrl: string | null;
    setup: (receiver: Receiver) => Promise<SystemUnderTest>;
  },
): Promise<RunResult> {
  const { system, scenario, events, destinations } = result;
  const label = `${system} ${scenario}`;
  const timeoutMs = f["timeout-s"] * 1000;
  const batchSize = Math.min(1000, f["batch-size"]);
  const waitFrom = Date.now();
  const busy = f["wait-quiet-s"] > 0 ? await waitQuiet(f["wait-quiet-s"] * 1000) : 0;
  const startedAt = Date.now();
  const deadline = startedAt + timeoutMs;
  if (busy > 25)
    result.notes.push(
      `started although the machine was ${busy}% busy with other processes (waited ${Math.round((startedAt - waitFrom) / 1000)} s)`,
    );
  process.stderr.write(
    `\n▶ ${label}: ${fmt(destinations)} destinations, ${fmt(events)} events, receiver delay ${result.receiverDelayMs} ms\n`,
  );

  let receiver: Receiver | null = null;
  let sut: SystemUnderTest | null = null;
  let sampler: CpuSampler | null = null;
  let activity: PgActivitySampler | null = null;
  let arrived: Promise<unknown> = Promise.resolve();
  let finished = false;
  let publishStartAt = 0;
  let publishEndAt = 0;
  try {
    const rcv = (receiver = await Receiver.start(o.log(`${system}-${scenario}-receiver.log`), {
      delayMs: result.receiverDelayMs,
      cap: result.perDestinationCap ?? 0,
      ports: f["receiver-ports"],
    }));
    await rcv.reset(events);
    const sys = (sut = await beforeDeadline(o.setup(rcv), deadline, "setting up"));
    result.settings = sys.settings;
    result.inflight = sys.inflight;
    sampler = new CpuSampler({ system, pids: () => sys.pids(), postmaster: o.postmaster, receiver: rcv.pid, bench: "bench (publisher)" });
    process.stderr.write(`  set up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; publishing\n`);

    publishStartAt = Date.now();
    let published = 0;
    let timedOut = false;
    let last = { unique: 0, at: publishStartAt };
    const progressLine = (p: { unique: number; total: number; at: number }): string => {
      const nowRate = (p.unique - last.unique) / Math.max(0.001, (p.at - last.at) / 1000);
      const avgRate = p.unique / Math.max(0.001, (p.at - publishStartAt) / 1000);
      const dup = p.total - p.unique;
      last = p;
      return (
        `  [${label}] received ${fmt(p.unique)}/${fmt(events)}  ${fmt(nowRate)}/s now, ${fmt(avgRate)}/s avg  published ${fmt(published)}` +
        `${dup > 0 ? `  (+${fmt(dup)} repeat requests)` : ""}  t=${((p.at - publishStartAt) / 1000).toFixed(0)}s`
      );
    };
    const waiting = rcv.waitFor((p) => finished || timedOut || p.unique >= events, deadline, progressLine, 1000);
    arrived = waiting.catch(() => undefined);
    sampler.begin();
    if (o.databaseUrl) activity = await PgActivitySampler.begin(o.databaseUrl);
    const batches = Math.ceil(events / batchSize);
    let next = 0;
    const publisher = async (): Promise<void> => {
      for (let b = next++; b < batches && !timedOut; b = next++) {
        timedOut = Date.now() > deadline;
        if (timedOut) return;
        const sentAt = Date.now();
        const batch: BenchEvent[] = [];
        for (let seq = b * batchSize; seq < Math.min(events, (b + 1) * batchSize); seq++)
          batch.push({ seq, dest: seq % destinations, sentAt });
        await beforeDeadline(sys.publishBatch(batch), deadline, `publishing batch ${b + 1}`);
        published += batch.length;
      }
    };
    await Promise.all(Array.from({ length: f["publish-concurrency"] }, publisher));
    publishEndAt = Date.now();
    const publishMs = publishEndAt - publishStartAt;
    result.publish = {
      ms: publishMs,
      eventsPerSec: published / Math.max(0.001, publishMs / 1000),
      batches: Math.ceil(published / batchSize),
    };
    process.stderr.write(`  published ${fmt(published)} events in ${(publishMs / 1000).toFixed(1)} s\n`);

    const p = await waiting;
    result.status = p.unique >= events ? "complete" : "timeout";
    if (result.status === "timeout")
      result.notes.push(`stopped at the ${f["timeout-s"]} s deadline with ${fmt(p.unique)} of ${fmt(events)} received`);
  } catch (err) {
    result.status = "error";
    result.error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`  ✗ ${label} failed: ${result.error}\n`);
  } finally {
    finished = true;
    await arrived;
    if (sampler) {
      result.cpu = sampler.end();
      const other = result.cpu["(other processes, kernel)"]?.pctOfOneCore ?? 0;
      if (other > 25)
        result.notes.push(`${other}% of one core went to processes outside this run (or the kernel): the figures are disturbed`);
    }
    if (activity) result.pgActivity = await activity.end();
    if (receiver && publishStartAt > 0) {
      try {
        await new Promise((r) => setTimeout(r, 500)); // let a duplicate that is on its way arrive before we count
        const rep = await receiver.report(publishEndAt || Date.now());
        Object.assign(result, deriveFigures(rep, publishStartAt, publishEndAt || Date.now()));
        if (rep.malformed > 0) result.notes.push(`${rep.malformed} requests had a body the receiver could not read`);
      } catch (err) {
        result.notes.push(`receiver report failed: ${(err as Error).message}`);
      }
    }
    if (sut) {
      result.notes.push(...sut.notes);
      result.endState = await sut.endState().catch((err: unknown) => {
        result.notes.push(`end-state query failed: ${(err as Error).message}`);
        return null;
      });
      result.engineMetrics = await sut.engineMetrics().catch(() => null);
      await sut.stop().catch((err: unknown) => result.notes.push(`stop failed: ${(err as Error).message}`));
    }
    await receiver?.stop();
    result.wallMs = Date.now() - startedAt;
  }
  return result;
}

const flags = () =>
  parseFlags("npm run bench", {
    events: { def: 100_000, quick: 5000, help: "events per server scenario" },
    destinations: { def: 1000, quick: 100, help: "destinations" },
    scenarios: { type: "str", arg: "LIST", def: "0ms,50ms,embedded", help: "any of 0ms,50ms,embedded" },
    repeat: { def: 1, help: "runs of each system in each scenario, interleaved; the table gives the median and the spread" },
    "inflight-50ms": {
      def: 200,
      min: 0,
      help: "50 ms scenario: requests each system may have in flight, across its processes (0 = each one's 0 ms settings)",
    },
    "skip-baseline": { type: "bool", help: "Sluice only (neither graphile-worker nor pg-boss)" },
    "pg-icu-locale": {
      type: "str",
      arg: "LOCALE",
      help: "initdb the throwaway Postgres with this ICU locale as its default collation (e.g. en-US, as most servers are); default C",
    },
    "skip-sluice": { type: "bool", help: "the baselines only (for tuning them)" },
    "skip-graphile": { type: "bool", help: "no graphile-worker run" },
    "skip-pgboss": { type: "bool", help: "no pg-boss run" },
    quick: { type: "bool", help: "small smoke run: 100 destinations, 5,000 events" },
    "embedded-events": { def: 0, min: 0, help: "embedded scenario's events (default min(20000, --events))" },
    "embedded-destinations": { def: 0, min: 0, help: "embedded scenario's destinations (default min(100, --destinations))" },
    "max-concurrency": { def: 0, min: 0, help: "each destination's max_concurrency (default: Sluice's default, 5)" },
    "sluice-worker-concurrency": {
      def: Number(process.env.SLUICE_WORKER_CONCURRENCY ?? 512),
      help: "0 ms and embedded: Sluice's SLUICE_WORKER_CONCURRENCY per process (default: the variable's value, or 512)",
    },
    "baseline-workers": { def: 2, help: "graphile-worker processes" },
    "baseline-concurrency": { def: 50, help: "0 ms: graphile-worker concurrency per process" },
    "pgboss-workers": { def: 2, help: "pg-boss worker processes" },
    "pgboss-local-concurrency": { def: 5, help: "0 ms: pg-boss localConcurrency (fetch loops) per process" },
    "pgboss-batch-size": { def: 10, help: "pg-boss batchSize: jobs each fetch loop takes and POSTs at once" },
    "receiver-ports": {
      def: 1,
      help: "spread the destinations over N receiver ports, i.e. N origins (Sluice caps sockets per origin: SLUICE_MAX_SOCKETS_PER_ORIGIN, 256)",
    },
    "publish-concurrency": { def: 1, help: "batches in flight while publishing" },
    "batch-size": { def: 1000, help: "events per publish batch (≤ 1000)" },
    "timeout-s": { def: 600, help: "per run; then it reports what it got and moves on" },
    "wait-quiet-s": {
      def: 120,
      min: 0,
      help: "before each run, wait up to N s for other processes to stop using the CPU (0 = don't wait)",
    },
    "sluice-workers": { def: 2, min: 0, help: "server scenarios: `sluice api` + N `sluice worker` processes; 0 = one `sluice start`" },
    "sluice-dir": { type: "str", arg: "DIR", help: "run the Sluice of another checkout (with node_modules) instead of this one" },
    "no-fsync": { type: "bool", help: "run Postgres with fsync=off (default: durable, fsync=on)" },
  });
type Flags = ReturnType<typeof flags>;

/**
 * The peers' worker modules bundled to JavaScript by esbuild (their packages left as imports), so
 * that they run without a loader as Sluice's dist/ does. Written under bench/results/ (ignored by
 * git) so that those imports resolve from this checkout's node_modules.
 */
async function compilePeers(): Promise<{ graphile: string; pgboss: string }> {
  const outdir = join(REPO, "bench", "results", ".peers");
  const entry = (f: string): string => fileURLToPath(new URL(f, import.meta.url));
  await build({
    entryPoints: { graphile: entry("./graphile-worker-process.ts"), pgboss: entry("./pg-boss-process.ts") },
    outdir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
  });
  return { graphile: join(outdir, "graphile.mjs"), pgboss: join(outdir, "pgboss.mjs") };
}

/**
 * Each system's in-flight settings in a scenario. At 0 ms the engine, not the budget, sets the
 * figure, and each runs as tuned for it (docs/benchmarks.md, Method); at 50 ms each gets the
 * same total budget, split evenly over its processes.
 */
function inflightSettings(f: Flags, scenario: Scenario) {
  const budget = scenario === "50ms" ? f["inflight-50ms"] : 0;
  const share = (procs: number, per = 1): number => Math.max(1, Math.floor(budget / Math.max(1, procs) / per));
  return {
    sluiceWorkerConcurrency: budget ? share(f["sluice-workers"]) : f["sluice-worker-concurrency"],
    graphileConcurrency: budget ? share(f["baseline-workers"]) : f["baseline-concurrency"],
    pgbossLocalConcurrency: budget ? share(f["pgboss-workers"], f["pgboss-batch-size"]) : f["pgboss-local-concurrency"],
  };
}

async function main(): Promise<void> {
  const f = flags();
  const { events, destinations } = f;
  const scenarios = f.scenarios.split(",").flatMap((s) => (s.trim() ? [s.trim() as Scenario] : []));
  for (const s of scenarios) if (!["0ms", "50ms", "embedded"].includes(s)) throw new Error(`unknown scenario '${s}' (0ms, 50ms, embedded)`);
  const embeddedEvents = f["embedded-events"] || Math.min(20_000, events);
  const embeddedDestinations = f["embedded-destinations"] || Math.min(100, destinations);
  const maxConcurrency = f["max-concurrency"];
  const batchSize = Math.min(1000, f["batch-size"]);
  // Default: `sluice api` + 2 × `sluice worker`, the same process count as each peer's 2 worker processes.
  const sluiceWorkers = f["sluice-workers"];
  const sluiceDir = resolve(f["sluice-dir"] ?? REPO);
  if (!existsSync(join(sluiceDir, "src", "cli", "main.ts"))) throw new Error(`--sluice-dir ${sluiceDir} has no src/cli/main.ts`);

  const bench = benchStart("delivery", sluiceDir);
  const { out } = bench;
  const idleBusy = await machineBusyPct(2000);
  out(
    `machine load before starting: ${idleBusy}% of one core busy over 2 s` +
      (idleBusy > 25 ? " — NOT idle: other processes are competing for the cores, figures will be low" : " (quiet)"),
  );
  const serverScenarios = scenarios.filter((s) => s !== "embedded");
  const peers = serverScenarios.length > 0 && !f["skip-baseline"] ? await compilePeers() : null;
  const pgs = serverScenarios.length > 0 ? await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]) : null;
  const pc = f["publish-concurrency"];
  out(
    `workload: ${fmt(destinations)} destinations, ${fmt(events)} events in batches of ${batchSize} (${pc} batch${pc > 1 ? "es" : ""} in flight), ` +
      `each event to one destination round-robin; per-run timeout ${f["timeout-s"]} s; ${f.repeat} run${f.repeat > 1 ? "s" : ""} of each`,
  );

  const runs: RunResult[] = [];
  const sluiceCap = maxConcurrency || 5;
  const run = async (result: RunResult, databaseUrl: string | null, setup: (rcv: Receiver) => Promise<SystemUnderTest>): Promise<void> => {
    const postmaster = databaseUrl && pgs ? pgs.postmaster : () => null;
    const measured = await measure(result, f, { log: bench.log, postmaster, databaseUrl, setup });
    runs.push(measured);
    out(`\n${describeRun(measured)}`);
  };
  const sluice = { maxConcurrency, dir: sluiceDir, receiverPorts: f["receiver-ports"] };
  for (const scenario of serverScenarios) {
    const base = { scenario, store: "postgres", destinations, events, receiverDelayMs: scenario === "50ms" ? 50 : 0 } as const;
    const inflight = inflightSettings(f, scenario);
    const maxConnections = Number(pgs!.settings.max_connections ?? 100);
    for (let rep = 1; rep <= f.repeat; rep++) {
      const db = (name: string): string => `${name}_${scenario}_${rep}`;
      const logPrefix = (name: string): string => bench.log(`${name}-${scenario}${f.repeat > 1 ? `-${rep}` : ""}`);
      if (!f["skip-sluice"]) {
        await withDatabase(pgs!.server.url, db("sluice"), (databaseUrl) =>
          run(newRun({ ...base, system: "sluice", perDestinationCap: sluiceCap }), databaseUrl, (rcv) =>
            setupSluice(rcv, {
              ...sluice,
              databaseUrl,
              destinations,
              workers: sluiceWorkers,
              workerConcurrency: inflight.sluiceWorkerConcurrency,
              logPrefix: logPrefix("sluice"),
            }),
          ),
        );
      }
      if (!peers) continue;
      if (!f["skip-graphile"]) {
        await withDatabase(pgs!.server.url, db("graphile"), (databaseUrl) =>
          run(newRun({ ...base, system: "graphile-worker", perDestinationCap: null }), databaseUrl, (rcv) =>
            setupGraphile(rcv, {
              databaseUrl,
              workers: f["baseline-workers"],
              concurrency: inflight.graphileConcurrency,
              maxConnections,
              logPrefix: logPrefix("graphile"),
              module: peers.graphile,
            }),
          ),
        );
      }
      if (!f["skip-pgboss"]) {
        // The same cap as Sluice's, checked at the receiver the same way.
        await withDatabase(pgs!.server.url, db("pgboss"), (databaseUrl) =>
          run(newRun({ ...base, system: "pg-boss", perDestinationCap: sluiceCap }), databaseUrl, (rcv) =>
            setupPgBoss(rcv, {
              databaseUrl,
              workers: f["pgboss-workers"],
              localConcurrency: inflight.pgbossLocalConcurrency,
              batchSize: f["pgboss-batch-size"],
              groupConcurrency: sluiceCap,
              maxConnections,
              logPrefix: logPrefix("pgboss"),
              module: peers.pgboss,
            }),
          ),
        );
      }
    }
  }
  if (pgs) await cleanup(); // nothing else on the machine during the embedded run

  for (let rep = 1; rep <= f.repeat && scenarios.includes("embedded") && !f["skip-sluice"]; rep++) {
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-bench-pglite-"));
    const result = newRun({
      system: "sluice",
      scenario: "embedded",
      store: "pglite",
      destinations: embeddedDestinations,
      events: embeddedEvents,
      receiverDelayMs: 0,
      perDestinationCap: sluiceCap,
    });
    await run(result, null, (rcv) =>
      setupSluice(rcv, {
        ...sluice,
        databaseUrl: null,
        dataDir,
        destinations: embeddedDestinations,
        workers: 0,
        workerConcurrency: f["sluice-worker-concurrency"],
        logPrefix: bench.log(`sluice-embedded${f.repeat > 1 ? `-${rep}` : ""}`),
      }),
    ).finally(() => rmSync(dataDir, { recursive: true, force: true }));
  }

  const summary = comparisonTable(runs);
  out(`\n${summary}\n\n${TARGETS_TEXT}`);
  out(
    "deliveries/s = distinct deliveries received ÷ (last receive − first publish); p50/p99 = publish → receive; " +
      "in flight = the most requests each system's settings allow at once (the 50 ms bound is that ÷ 0.05 s).",
  );
  bench.finish("delivery", {
    machineBusyBeforePct: idleBusy,
    postgres: pgs?.settings ?? null,
    options: { ...f, scenarios, embeddedEvents, embeddedDestinations, batchSize, sluiceDir },
    results: runs,
    table: summary,
  });
}

runBench(main);
