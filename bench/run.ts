// `npm run bench`: Sluice against graphile-worker on one throwaway Postgres server, plus an
// embedded (PGlite) figure. Prints figures and writes bench/results/latest.json; asserts nothing.
// See docs/benchmarks.md for what each scenario measures.
// One measured run is the same for Sluice and for the baseline: a fresh receiver, the system set
// up against it, the events published in batches (each stamped with sent_at), then a wait for
// the last delivery or the deadline, whichever comes first.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem, hostname, release } from "node:os";
import { join, resolve } from "node:path";
import { setupGraphile } from "./baseline-graphile.js";
import { connect, deliveriesByStatus, postmasterPid, withDatabase, serverSettings, startPostgres, PgActivitySampler } from "./pg.js";
import { cleanup, CpuSampler, machineBusyPct, parseFlags, runBench, waitQuiet } from "./procs.js";
import { Receiver } from "./receiver.js";
import { comparisonTable, deriveFigures, describeRun, writeJson, type RunResult, type Scenario, type System } from "./report.js";
import { REPO, SluiceCluster, sourceState } from "./sluice.js";

/** One event of the workload: event `seq` goes to destination `dest` (round-robin), its batch handed over at `sentAt` (Unix ms). */
export interface BenchEvent {
  seq: number;
  dest: number;
  sentAt: number;
}

export interface SystemUnderTest {
  /** Process trees whose CPU counts as the system's own. */
  pids(): number[];
  publishBatch(batch: BenchEvent[]): Promise<void>;
  /** Database-side tally after the run, when there is a database we can look into. */
  endState(): Promise<Record<string, number> | null>;
  /** The system's own figures about itself (Sluice: its /metrics), when it has any. */
  engineMetrics(): Promise<Record<string, number> | null>;
  stop(): Promise<void>;
  settings: RunResult["settings"];
  notes: string[];
}

/** Sluice settings read from the environment; the ones set are recorded with the results. */
const KNOBS = ["SLUICE_WORKER_CONCURRENCY", "SLUICE_CLAIM_BATCH", "SLUICE_GRANT_CAP", "SLUICE_DB_POOL_SIZE"] as const;

/** Sluice against the receiver: `sluice start`, or with `workers` > 0 (server store) `sluice api` + N × `sluice worker`. */
async function setupSluice(
  rcv: Receiver,
  o: {
    databaseUrl: string | null;
    dataDir?: string;
    destinations: number;
    maxConcurrency: number;
    logPrefix: string;
    sluiceDir: string;
    workers: number;
  },
): Promise<SystemUnderTest> {
  const source = sourceState(o.sluiceDir); // before it starts: the files it loads
  const split = o.workers > 0 && o.databaseUrl !== null;
  const cluster = new SluiceCluster({ databaseUrl: o.databaseUrl, dataDir: o.dataDir, logPrefix: o.logPrefix, dir: o.sluiceDir });
  let ids: string[];
  try {
    await cluster.startApi(split ? "api" : "start");
    await cluster.startWorkers(split ? o.workers : 0, true);
    ids = await cluster.createDestinations(o.destinations, (i) => ({
      url: rcv.destUrl(i),
      name: `bench-${i}`,
      ...(o.maxConcurrency ? { max_concurrency: o.maxConcurrency } : {}),
    }));
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  const settings: SystemUnderTest["settings"] = {
    process: split ? `sluice api + ${o.workers} × sluice worker (separate processes)` : "sluice start (API + worker, one process)",
    store: o.databaseUrl ? "postgres server" : "embedded PGlite",
    max_concurrency_per_destination: o.maxConcurrency || "5 (default)",
    routing: "destination_ids: [one destination per event], round-robin",
    sluice_dir: o.sluiceDir,
    source: `${source.commit}${source.localChanges.length ? ` + local changes (${source.localChanges.length} files)` : ", clean"}; fingerprint ${source.fingerprint}`,
  };
  for (const k of KNOBS) settings[k] = process.env[k] ?? "default";
  return {
    settings,
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
        const a = (
          await c.query<{ n: number; bad: number }>(
            "SELECT count(*)::int AS n, count(*) FILTER (WHERE status_code IS DISTINCT FROM 200)::int AS bad FROM attempts",
          )
        ).rows[0];
        return { ...(await deliveriesByStatus(c)), attempts: a?.n ?? 0, "attempts.not_200": a?.bad ?? 0 };
      } finally {
        await c.end();
      }
    },
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

async function measure(o: {
  system: System;
  scenario: Scenario;
  store: "postgres" | "pglite";
  destinations: number;
  events: number;
  delayMs: number;
  batchSize: number;
  publishConcurrency: number;
  timeoutMs: number;
  logDir: string;
  postmasterPid: () => number | null;
  /** The system's database on the server, to sample what its connections do; null for PGlite. */
  databaseUrl: string | null;
  /** max_concurrency to check at the receiver (null: the system has none to check). */
  perDestinationCap: number | null;
  receiverPorts: number;
  waitQuietMs: number;
  setup: (receiver: Receiver) => Promise<SystemUnderTest>;
}): Promise<RunResult> {
  const label = `${o.system} ${o.scenario}`;
  const waitFrom = Date.now();
  const busy = o.waitQuietMs > 0 ? await waitQuiet(o.waitQuietMs) : 0;
  const startedAt = Date.now();
  const deadline = startedAt + o.timeoutMs;
  const result: RunResult = {
    system: o.system,
    scenario: o.scenario,
    store: o.store,
    destinations: o.destinations,
    events: o.events,
    receiverDelayMs: o.delayMs,
    settings: {},
    status: "error",
    error: null,
    publish: null,
    received: 0,
    duplicates: 0,
    misrouted: 0,
    totalRequests: 0,
    measuredMs: null,
    deliveriesPerSec: null,
    steadyStatePerSec: null,
    latencyMs: null,
    maxInflight: 0,
    maxInflightPerDestination: 0,
    receiverConnections: 0,
    peakOpenConnections: 0,
    perDestinationCap: o.perDestinationCap,
    overCapRequests: 0,
    destinationsOverCap: 0,
    cpu: {},
    wallMs: 0,
    endState: null,
    pgActivity: null,
    engineMetrics: null,
    notes: [],
  };
  if (busy > 25)
    result.notes.push(
      `started although the machine was ${busy}% busy with other processes (waited ${Math.round((startedAt - waitFrom) / 1000)} s)`,
    );
  process.stderr.write(
    `\n▶ ${label}: ${o.destinations.toLocaleString("en-US")} destinations, ${o.events.toLocaleString("en-US")} events, receiver delay ${o.delayMs} ms\n`,
  );

  let receiver: Receiver | null = null;
  let sut: SystemUnderTest | null = null;
  let sampler: CpuSampler | null = null;
  let activity: PgActivitySampler | null = null;
  let stopFollowing = (): void => undefined;
  let publishStartAt = 0;
  let publishEndAt = 0;
  try {
    const rcv = (receiver = await Receiver.start(join(o.logDir, `${o.system}-${o.scenario}-receiver.log`), {
      delayMs: o.delayMs,
      cap: o.perDestinationCap ?? 0,
      ports: o.receiverPorts,
    }));
    await rcv.reset(o.events);
    const sys = (sut = await beforeDeadline(o.setup(rcv), deadline, "setting up"));
    result.settings = sys.settings;
    sampler = new CpuSampler(() => ({
      [o.system]: { pids: sys.pids(), tree: true },
      postgres: { pids: [o.postmasterPid() ?? -1], tree: true },
      receiver: { pids: [rcv.pid], tree: false },
      "bench (publisher)": { pids: [process.pid], tree: false },
    }));
    process.stderr.write(`  set up in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; publishing\n`);

    publishStartAt = Date.now();
    let published = 0;
    stopFollowing = rcv.follow(label, o.events, publishStartAt, () => published);
    sampler.begin();
    if (o.databaseUrl) await (activity = new PgActivitySampler(o.databaseUrl)).begin();
    const batches = Math.ceil(o.events / o.batchSize);
    let next = 0;
    let timedOut = false;
    const publisher = async (): Promise<void> => {
      for (let b = next++; b < batches && !timedOut; b = next++) {
        if (Date.now() > deadline) timedOut = true;
        if (timedOut) return;
        const batch: BenchEvent[] = [];
        const sentAt = Date.now();
        for (let seq = b * o.batchSize; seq < Math.min(o.events, (b + 1) * o.batchSize); seq++)
          batch.push({ seq, dest: seq % o.destinations, sentAt });
        await beforeDeadline(sys.publishBatch(batch), deadline, `publishing batch ${b + 1}`);
        published += batch.length;
      }
    };
    await Promise.all(Array.from({ length: o.publishConcurrency }, publisher));
    publishEndAt = Date.now();
    const publishMs = publishEndAt - publishStartAt;
    result.publish = {
      ms: publishMs,
      eventsPerSec: published / Math.max(0.001, publishMs / 1000),
      batches: Math.ceil(published / o.batchSize),
    };
    process.stderr.write(`  published ${published.toLocaleString("en-US")} events in ${(publishMs / 1000).toFixed(1)} s\n`);

    const doneAt = timedOut ? null : await rcv.waitDone(deadline);
    result.status = doneAt !== null ? "complete" : "timeout";
    if (doneAt === null)
      result.notes.push(
        `stopped at the ${Math.round(o.timeoutMs / 1000)} s deadline with ${(await rcv.progress()).unique.toLocaleString("en-US")} of ${o.events.toLocaleString("en-US")} received`,
      );
  } catch (err) {
    result.status = "error";
    result.error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`  ✗ ${label} failed: ${result.error}\n`);
  } finally {
    stopFollowing();
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
    if (receiver) await receiver.stop();
    result.wallMs = Date.now() - startedAt;
  }
  return result;
}

async function main(): Promise<void> {
  const f = parseFlags("npm run bench", {
    events: { def: 100_000, quick: 5000, help: "events per server scenario" },
    destinations: { def: 1000, quick: 100, help: "destinations" },
    scenarios: { type: "str", arg: "LIST", def: "0ms,50ms,embedded", help: "any of 0ms,50ms,embedded" },
    "skip-baseline": { type: "bool", help: "Sluice only" },
    "skip-sluice": { type: "bool", help: "the baseline only (for tuning it)" },
    quick: { type: "bool", help: "small smoke run: 100 destinations, 5,000 events" },
    "embedded-events": { def: 0, help: "embedded scenario's events (default min(20000, --events))" },
    "embedded-destinations": { def: 0, help: "embedded scenario's destinations (default min(100, --destinations))" },
    "max-concurrency": { def: 0, help: "each destination's max_concurrency (default: Sluice's default, 5)" },
    "baseline-workers": { def: 2, help: "graphile-worker processes" },
    "baseline-concurrency": { def: 50, help: "graphile-worker concurrency per process" },
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
  const { events, destinations, quick } = f;
  const scenarios = f.scenarios
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of scenarios) if (!["0ms", "50ms", "embedded"].includes(s)) throw new Error(`unknown scenario '${s}' (0ms, 50ms, embedded)`);
  const embeddedEvents = f["embedded-events"] || Math.min(20_000, events);
  const embeddedDestinations = f["embedded-destinations"] || Math.min(100, destinations);
  const maxConcurrency = f["max-concurrency"];
  const {
    "baseline-workers": baselineWorkers,
    "baseline-concurrency": baselineConcurrency,
    "receiver-ports": receiverPorts,
    "publish-concurrency": publishConcurrency,
  } = f;
  const batchSize = Math.min(1000, f["batch-size"]);
  const timeoutMs = f["timeout-s"] * 1000;
  const waitQuietMs = f["wait-quiet-s"] * 1000;
  const fsync = !f["no-fsync"];
  const skipBaseline = f["skip-baseline"];
  const skipSluice = f["skip-sluice"];
  // Default: `sluice api` + 2 × `sluice worker` — the server deployment docs/configuration.md
  // recommends, and the same process count as the baseline's 2 graphile-worker processes.
  const sluiceWorkers = f["sluice-workers"];
  const sluiceDir = resolve(f["sluice-dir"] ?? REPO);
  if (!existsSync(join(sluiceDir, "src", "cli", "main.ts"))) throw new Error(`--sluice-dir ${sluiceDir} has no src/cli/main.ts`);

  const results = join(REPO, "bench", "results");
  const logDir = join(results, "logs");
  const startedAt = new Date();
  const cpu = cpus();
  const machine = {
    hostname: hostname(),
    cores: cpu.length,
    cpuModel: cpu[0]?.model ?? "?",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  out(`Sluice delivery benchmark — ${startedAt.toISOString()}`);
  out(`machine: ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}`);
  out(`every process (Postgres, Sluice or graphile-worker, the receiver, this publisher) shares those ${machine.cores} cores`);
  mkdirSync(logDir, { recursive: true });

  const source = sourceState(sluiceDir);
  out(
    `Sluice source${sluiceDir === REPO ? "" : ` (${sluiceDir})`}: commit ${source.commit}, ${source.localChanges.length === 0 ? "src/ and migrations/ clean" : `LOCAL CHANGES: ${source.localChanges.join("; ")}`} (fingerprint ${source.fingerprint})`,
  );
  const idleBusy = await machineBusyPct(2000);
  out(
    `machine load before starting: ${idleBusy}% of one core busy over 2 s` +
      (idleBusy > 25 ? " — NOT idle: other processes are competing for the cores, figures will be low" : " (quiet)"),
  );

  let pgInfo: Awaited<ReturnType<typeof serverSettings>> | null = null;
  const serverScenarios = scenarios.filter((s) => s !== "embedded") as Scenario[];
  const server = serverScenarios.length > 0 ? await startPostgres({ fsync }) : null;
  if (server) {
    const p = (pgInfo = await serverSettings(server.url));
    out(
      `Postgres ${p.server_version} (throwaway, started by scripts/pg-server.mjs): fsync=${p.fsync}, synchronous_commit=${p.synchronous_commit}, ` +
        `full_page_writes=${p.full_page_writes}, wal_sync_method=${p.wal_sync_method}, shared_buffers=${p.shared_buffers}, max_connections=${p.max_connections}` +
        `${p.fsync === "on" && p.synchronous_commit === "on" ? " — durable defaults: every commit is flushed to disk" : " — NOT durable"}`,
    );
  }
  out(
    `workload: ${destinations.toLocaleString("en-US")} destinations, ${events.toLocaleString("en-US")} events in batches of ${batchSize} ` +
      `(${publishConcurrency} batch${publishConcurrency > 1 ? "es" : ""} in flight), each event to one destination round-robin; per-run timeout ${timeoutMs / 1000} s`,
  );

  const runs: RunResult[] = [];
  const common = {
    batchSize,
    publishConcurrency,
    timeoutMs,
    logDir,
    waitQuietMs,
    receiverPorts,
    postmasterPid: () => (server ? postmasterPid(server.dataDir) : null),
  };
  const sluiceCap = maxConcurrency || 5;
  const record = (r: RunResult): void => {
    runs.push(r);
    out(`\n${describeRun(r)}`);
  };

  for (const scenario of serverScenarios) {
    const delayMs = scenario === "50ms" ? 50 : 0;
    if (!skipSluice) {
      const result = await withDatabase(server!.url, `sluice_${scenario}`, (databaseUrl) =>
        measure({
          ...common,
          system: "sluice",
          scenario,
          store: "postgres",
          destinations,
          events,
          delayMs,
          databaseUrl,
          perDestinationCap: sluiceCap,
          setup: (rcv) =>
            setupSluice(rcv, {
              databaseUrl,
              destinations,
              maxConcurrency,
              sluiceDir,
              workers: sluiceWorkers,
              logPrefix: join(logDir, `sluice-${scenario}`),
            }),
        }),
      );
      record(result);
    }
    if (skipBaseline) continue;
    const result = await withDatabase(server!.url, `graphile_${scenario}`, (databaseUrl) =>
      measure({
        ...common,
        system: "graphile-worker",
        scenario,
        store: "postgres",
        destinations,
        events,
        delayMs,
        databaseUrl,
        perDestinationCap: null,
        setup: (rcv) =>
          setupGraphile(rcv, {
            databaseUrl,
            workers: baselineWorkers,
            concurrency: baselineConcurrency,
            maxConnections: Number(pgInfo?.max_connections ?? 100),
            logDir,
            scenario,
          }),
      }),
    );
    record(result);
  }
  if (server) await cleanup(); // nothing else on the machine during the embedded run

  if (scenarios.includes("embedded") && !skipSluice) {
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-bench-pglite-"));
    try {
      record(
        await measure({
          ...common,
          system: "sluice",
          scenario: "embedded",
          store: "pglite",
          destinations: embeddedDestinations,
          events: embeddedEvents,
          delayMs: 0,
          postmasterPid: () => null,
          databaseUrl: null,
          perDestinationCap: sluiceCap,
          setup: (rcv) =>
            setupSluice(rcv, {
              databaseUrl: null,
              dataDir,
              destinations: embeddedDestinations,
              maxConcurrency,
              sluiceDir,
              workers: 0,
              logPrefix: join(logDir, "sluice-embedded"),
            }),
        }),
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  out(`\n${comparisonTable(runs)}`);
  out(
    `targets (from the issue): Sluice ≥ 5,000 deliveries/s with the 0 ms receiver; Sluice/baseline ratio ≥ 1.0. ` +
      `deliveries/s = distinct deliveries received ÷ (last receive − first publish); p50/p99 = publish → receive.`,
  );
  if (serverScenarios.includes("50ms")) {
    // In-flight limits divided by the answer time: what each setting alone would allow.
    const perSec = (inflight: number): string => `${Math.round(inflight / 0.05).toLocaleString("en-US")}/s`;
    const workerConcurrency = Number(process.env.SLUICE_WORKER_CONCURRENCY ?? 512);
    const sockets = Number(process.env.SLUICE_MAX_SOCKETS_PER_ORIGIN ?? 256);
    const sluiceProcs = Math.max(1, sluiceWorkers);
    out(
      `50 ms bounds (in flight ÷ 0.05 s): Sluice max_concurrency ${destinations.toLocaleString("en-US")} × ${sluiceCap} → ${perSec(destinations * sluiceCap)}; ` +
        `SLUICE_WORKER_CONCURRENCY ${sluiceProcs} × ${workerConcurrency} → ${perSec(sluiceProcs * workerConcurrency)}; ` +
        `SLUICE_MAX_SOCKETS_PER_ORIGIN ${sluiceProcs} × ${sockets} × ${receiverPorts} origin${receiverPorts > 1 ? "s" : ""} → ${perSec(sluiceProcs * sockets * receiverPorts)}; ` +
        `baseline ${baselineWorkers} × concurrency ${baselineConcurrency} → ${perSec(baselineWorkers * baselineConcurrency)}`,
    );
  }
  const file = join(results, "latest.json");
  writeJson(file, {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    source,
    machineBusyBeforePct: idleBusy,
    postgres: pgInfo,
    fsync,
    options: {
      events,
      destinations,
      scenarios,
      skipBaseline,
      skipSluice,
      quick,
      embeddedEvents,
      embeddedDestinations,
      maxConcurrency: maxConcurrency || null,
      baselineWorkers,
      baselineConcurrency,
      publishConcurrency,
      batchSize,
      timeoutMs,
      waitQuietMs,
      sluiceDir,
      sluiceWorkers,
      receiverPorts,
    },
    results: runs,
    table: comparisonTable(runs),
  });
  out(`results: ${file} (logs of every process: ${logDir})`);
}

runBench(main);
