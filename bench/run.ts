// `npm run bench`: Sluice against graphile-worker on one throwaway Postgres server, plus an
// embedded (PGlite) figure. Prints figures and writes bench/results/latest.json; asserts nothing.
// See docs/benchmarks.md for what each scenario measures.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem, hostname, release } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { cleanup, intFlag, registerPostgres, runBench } from "./sluice-cluster.js";
import { measure } from "./harness.js";
import { setupSluice, sluiceLogFile } from "./sluice-run.js";
import { setupGraphile } from "./baseline-graphile.js";
import { startPostgres, postmasterPid, recreateDatabase, dropDatabase, serverSettings, adminQuery, type PgServer, type ServerSettings } from "./pg.js";
import { machineBusyPct } from "./procs.js";
import { sourceState } from "./diagnostics.js";
import { comparisonTable, describeRun, writeJson, type RunResult, type Scenario } from "./report.js";

const HELP = `npm run bench -- [options]

  --events N                 events per server scenario (default 100000; --quick 5000)
  --destinations N           destinations (default 1000; --quick 100)
  --scenarios LIST           any of 0ms,50ms,embedded (default all three)
  --skip-baseline            Sluice only
  --skip-sluice              the baseline only (for tuning it)
  --quick                    small smoke run: 100 destinations, 5,000 events
  --embedded-events N        embedded scenario's events (default min(20000, --events))
  --embedded-destinations N  embedded scenario's destinations (default min(100, --destinations))
  --max-concurrency N        each destination's max_concurrency (default: Sluice's default, 5)
  --baseline-workers N       graphile-worker processes (default 2)
  --baseline-concurrency N   graphile-worker concurrency per process (default 50)
  --receiver-ports N         spread the destinations over N receiver ports, i.e. N origins (default 1;
                             Sluice caps sockets per origin: SLUICE_MAX_SOCKETS_PER_ORIGIN, 256)
  --publish-concurrency N    batches in flight while publishing (default 1)
  --batch-size N             events per publish batch (default 1000)
  --timeout-s N              per run; then it reports what it got and moves on (default 600)
  --wait-quiet-s N           before each run, wait up to N s for other processes to stop using
                             the CPU (default 120; 0 = don't wait)
  --sluice-workers N         run \`sluice api\` + N \`sluice worker\` processes (default 2); 0 = one \`sluice start\`
                             (server scenarios; default 0 = one process)
  --sluice-dir DIR            run the Sluice of another checkout (with node_modules) instead of this one
  --no-fsync                 run Postgres with fsync=off (default: durable, fsync=on)
`;

const REPO = resolve(fileURLToPath(new URL("..", import.meta.url)));
const RESULTS = join(REPO, "bench", "results");


// The server of this run; registered with sluice-cluster's cleanup, which stops it (and every
// child) on any exit.
let pgServer: PgServer | null = null;

async function stopServer(): Promise<void> {
  await cleanup();
  pgServer = null;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      events: { type: "string" }, destinations: { type: "string" }, scenarios: { type: "string" },
      "skip-baseline": { type: "boolean" }, "skip-sluice": { type: "boolean" }, quick: { type: "boolean" }, "embedded-events": { type: "string" },
      "embedded-destinations": { type: "string" }, "max-concurrency": { type: "string" },
      "baseline-workers": { type: "string" }, "baseline-concurrency": { type: "string" },
      "publish-concurrency": { type: "string" }, "batch-size": { type: "string" }, "timeout-s": { type: "string" },
      "no-fsync": { type: "boolean" }, "wait-quiet-s": { type: "string" }, "sluice-dir": { type: "string" }, "sluice-workers": { type: "string" }, "receiver-ports": { type: "string" }, help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const quick = values.quick ?? false;
  const events = intFlag(values.events, quick ? 5000 : 100_000, "events");
  const destinations = intFlag(values.destinations, quick ? 100 : 1000, "destinations");
  const scenarios = (values.scenarios ?? "0ms,50ms,embedded").split(",").map((s) => s.trim()).filter(Boolean);
  for (const s of scenarios) if (!["0ms", "50ms", "embedded"].includes(s)) throw new Error(`unknown scenario '${s}' (0ms, 50ms, embedded)`);
  const embeddedEvents = intFlag(values["embedded-events"], Math.min(20_000, events), "embedded-events");
  const embeddedDestinations = intFlag(values["embedded-destinations"], Math.min(100, destinations), "embedded-destinations");
  const maxConcurrency = values["max-concurrency"] === undefined ? null : intFlag(values["max-concurrency"], 5, "max-concurrency");
  const baselineWorkers = intFlag(values["baseline-workers"], 2, "baseline-workers");
  const baselineConcurrency = intFlag(values["baseline-concurrency"], 50, "baseline-concurrency");
  const receiverPorts = intFlag(values["receiver-ports"], 1, "receiver-ports");
  const publishConcurrency = intFlag(values["publish-concurrency"], 1, "publish-concurrency");
  const batchSize = Math.min(1000, intFlag(values["batch-size"], 1000, "batch-size"));
  const timeoutMs = intFlag(values["timeout-s"], 600, "timeout-s") * 1000;
  const fsync = !(values["no-fsync"] ?? false);
  const waitQuietMs = values["wait-quiet-s"] === "0" ? 0 : intFlag(values["wait-quiet-s"], 120, "wait-quiet-s") * 1000;
  const skipBaseline = values["skip-baseline"] ?? false;
  const skipSluice = values["skip-sluice"] ?? false;
  // Default: `sluice api` + 2 × `sluice worker` — the server deployment docs/configuration.md
  // recommends, and the same process count as the baseline's 2 graphile-worker processes.
  // `--sluice-workers 0` runs one `sluice start` process instead.
  const sluiceWorkers = values["sluice-workers"] === undefined ? 2 : values["sluice-workers"] === "0" ? 0 : intFlag(values["sluice-workers"], 0, "sluice-workers");
  const sluiceDir = resolve(values["sluice-dir"] ?? REPO);
  if (!existsSync(join(sluiceDir, "src", "cli", "main.ts"))) throw new Error(`--sluice-dir ${sluiceDir} has no src/cli/main.ts`);

  const logDir = join(RESULTS, "logs");
  mkdirSync(logDir, { recursive: true });
  const startedAt = new Date();
  const cpu = cpus();
  const machine = { hostname: hostname(), cores: cpu.length, cpuModel: cpu[0]?.model ?? "?", memoryGiB: Math.round(totalmem() / 2 ** 30), kernel: release(), node: process.version };
  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  out(`Sluice delivery benchmark — ${startedAt.toISOString()}`);
  out(`machine: ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}`);
  out(`every process (Postgres, Sluice or graphile-worker, the receiver, this publisher) shares those ${machine.cores} cores`);

  const source = sourceState(sluiceDir);
  out(`Sluice source${sluiceDir === REPO ? "" : ` (${sluiceDir})`}: commit ${source.commit}, ${source.localChanges.length === 0 ? "src/ and migrations/ clean" : `LOCAL CHANGES: ${source.localChanges.join("; ")}`} (fingerprint ${source.fingerprint})`);
  const idleBusy = await machineBusyPct(2000);
  out(`machine load before starting: ${idleBusy}% of one core busy over 2 s` +
    (idleBusy > 25 ? " — NOT idle: other processes are competing for the cores, figures will be low" : " (quiet)"));

  let pgInfo: ServerSettings | null = null;
  const serverScenarios = scenarios.filter((s) => s !== "embedded") as Scenario[];
  if (serverScenarios.length > 0) {
    pgServer = await startPostgres({ fsync });
    registerPostgres(pgServer);
    pgInfo = await serverSettings(pgServer.url);
    out(`Postgres ${pgInfo.version} (throwaway, started by ${pgServer.source}): fsync=${pgInfo.fsync}, synchronous_commit=${pgInfo.synchronous_commit}, ` +
      `full_page_writes=${pgInfo.full_page_writes}, wal_sync_method=${pgInfo.wal_sync_method}, shared_buffers=${pgInfo.shared_buffers}, max_connections=${pgInfo.max_connections}` +
      `${pgInfo.fsync === "on" && pgInfo.synchronous_commit === "on" ? " — durable defaults: every commit is flushed to disk" : " — NOT durable"}`);
  }
  out(`workload: ${destinations.toLocaleString("en-US")} destinations, ${events.toLocaleString("en-US")} events in batches of ${batchSize} ` +
    `(${publishConcurrency} batch${publishConcurrency > 1 ? "es" : ""} in flight), each event to one destination round-robin; per-run timeout ${timeoutMs / 1000} s`);

  const results: RunResult[] = [];
  const pgPid = (): number | null => (pgServer ? postmasterPid(pgServer.dataDir) : null);
  const common = { batchSize, publishConcurrency, timeoutMs, logDir, postmasterPid: pgPid, waitQuietMs, receiverPorts };
  const sluiceCap = maxConcurrency ?? 5;
  const record = (r: RunResult): void => {
    results.push(r);
    out(`\n${describeRun(r)}`);
  };

  for (const scenario of serverScenarios) {
    const delayMs = scenario === "50ms" ? 50 : 0;
    const server = pgServer!;
    if (!skipSluice) {
      const sluiceDb = `sluice_${scenario}`;
      await adminQuery(server.url, "CHECKPOINT"); // start each run with no dirty pages from the last
      const sluiceUrl = await recreateDatabase(server.url, sluiceDb);
      record(await measure({
        ...common, system: "sluice", scenario, store: "postgres", destinations, events, delayMs, databaseUrl: sluiceUrl, perDestinationCap: sluiceCap,
        setup: (rcv, deadline) => setupSluice(rcv, deadline, { databaseUrl: sluiceUrl, dataDir: null, destinations, maxConcurrency, sluiceDir, workers: sluiceWorkers, logFile: sluiceLogFile(logDir, scenario) }),
      }));
      await dropDatabase(server.url, sluiceDb);
    }
    if (skipBaseline) continue;
    const gwDb = `graphile_${scenario}`;
    await adminQuery(server.url, "CHECKPOINT");
    const gwUrl = await recreateDatabase(server.url, gwDb);
    record(await measure({
      ...common, system: "graphile-worker", scenario, store: "postgres", destinations, events, delayMs, databaseUrl: gwUrl, perDestinationCap: null,
      setup: (rcv, deadline) => setupGraphile(rcv, deadline, {
        databaseUrl: gwUrl, workers: baselineWorkers, concurrency: baselineConcurrency,
        maxConnections: pgInfo?.max_connections ?? 100, logDir, scenario,
      }),
    }));
    await dropDatabase(server.url, gwDb);
  }
  if (pgServer && !scenarios.includes("embedded")) await stopServer();

  if (scenarios.includes("embedded") && !skipSluice) {
    if (pgServer) await stopServer(); // nothing else on the machine during the embedded run
    const dataDir = mkdtempSync(join(tmpdir(), "sluice-bench-pglite-"));
    try {
      record(await measure({
        ...common, system: "sluice", scenario: "embedded", store: "pglite", destinations: embeddedDestinations, events: embeddedEvents, delayMs: 0,
        postmasterPid: () => null, databaseUrl: null, perDestinationCap: sluiceCap,
        setup: (rcv, deadline) => setupSluice(rcv, deadline, { databaseUrl: null, dataDir, destinations: embeddedDestinations, maxConcurrency, sluiceDir, workers: 0, logFile: sluiceLogFile(logDir, "embedded") }),
      }));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  out(`\n${comparisonTable(results)}`);
  out(`targets (from the issue): Sluice ≥ 5,000 deliveries/s with the 0 ms receiver; Sluice/baseline ratio ≥ 1.0. ` +
    `deliveries/s = distinct deliveries received ÷ (last receive − first publish); p50/p99 = publish → receive.`);
  if (serverScenarios.includes("50ms")) {
    // In-flight limits divided by the answer time: what each setting alone would allow.
    const perSec = (inflight: number): string => `${Math.round(inflight / 0.05).toLocaleString("en-US")}/s`;
    const workerConcurrency = Number(process.env.SLUICE_WORKER_CONCURRENCY ?? 512);
    const sockets = Number(process.env.SLUICE_MAX_SOCKETS_PER_ORIGIN ?? 256);
    const sluiceProcs = Math.max(1, sluiceWorkers);
    out(`50 ms bounds (in flight ÷ 0.05 s): Sluice max_concurrency ${destinations.toLocaleString("en-US")} × ${sluiceCap} → ${perSec(destinations * sluiceCap)}; ` +
      `SLUICE_WORKER_CONCURRENCY ${sluiceProcs} × ${workerConcurrency} → ${perSec(sluiceProcs * workerConcurrency)}; ` +
      `SLUICE_MAX_SOCKETS_PER_ORIGIN ${sluiceProcs} × ${sockets} × ${receiverPorts} origin${receiverPorts > 1 ? "s" : ""} → ${perSec(sluiceProcs * sockets * receiverPorts)}; ` +
      `baseline ${baselineWorkers} × concurrency ${baselineConcurrency} → ${perSec(baselineWorkers * baselineConcurrency)}`);
  }
  const file = join(RESULTS, "latest.json");
  writeJson(file, {
    startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString(), machine, source, machineBusyBeforePct: idleBusy, postgres: pgInfo, fsync,
    options: { events, destinations, scenarios, skipBaseline, skipSluice, quick, embeddedEvents, embeddedDestinations, maxConcurrency, baselineWorkers, baselineConcurrency, publishConcurrency, batchSize, timeoutMs, waitQuietMs, sluiceDir, sluiceWorkers, receiverPorts },
    results, table: comparisonTable(results),
  });
  out(`results: ${file} (logs of every process: ${logDir})`);
}

runBench(main);
