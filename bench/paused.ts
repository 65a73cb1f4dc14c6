// "Paused" figure: do paused destinations holding a large backlog cost the active destinations
// beside them anything? 1,000 destinations of which 100 are paused (POST /v1/destinations/{id}/pause)
// with 1,000 deliveries held each, against a run with the 900 active ones only; the active workload
// (90,000 events round-robin over the 900) is timed at the receiver. Two runs on fresh databases of
// one throwaway Postgres server, `sluice api` + N × `sluice worker` each (bench/held-cost.ts).
// Target: active throughput with/without ≥ 0.95; the paused destinations get no request and keep
// their backlog queued.
// Usage: npm run bench:paused [-- --quick | --destinations 1000 --paused 100 --held-per-destination 1000 --active-events 90000]
import { mkdirSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { adminQuery, dropDatabase, postmasterPid, recreateDatabase, serverSettings, startPostgres } from "./pg.js";
import { sourceState } from "./diagnostics.js";
import { writeJson } from "./report.js";
import { CountReceiver, REPO, fmt, registerPostgres, runBench } from "./sluice-cluster.js";
import { BATCH, heldRun, intFlag, parseRunOrder, printComparison, type HeldRunOutcome } from "./held-cost.js";

const HELP = `npm run bench:paused -- [options]

  --destinations N          destinations in all, the paused ones included (default 1000; --quick 100)
  --paused N                of which paused in run B (default 100; --quick 10)
  --held-per-destination N  deliveries held by each paused destination (default 1000; --quick 500)
  --active-events N         active workload, round-robin over the active destinations (default 90000; --quick 9000)
  --workers N               sluice worker processes beside one sluice api (default 2)
  --timeout-s N             per run, for the active workload to arrive (default 900)
  --wait-quiet-s N          before each timed run, wait up to N s for other processes to leave the CPU (default 60; 0 = don't)
  --order RUNS              the runs in order (default AAB: a pilot run without, then A and B;
                            AB, BA, ABAB, …: the last A and the last B are compared)
  --no-fsync                Postgres with fsync=off (default: durable)
  --quick                   small: 90 active + 10 paused × 500 held, 9,000 events
`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      destinations: { type: "string" }, paused: { type: "string" }, "held-per-destination": { type: "string" }, "active-events": { type: "string" },
      workers: { type: "string" }, "timeout-s": { type: "string" }, "wait-quiet-s": { type: "string" }, "no-fsync": { type: "boolean" },
      order: { type: "string" }, quick: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const quick = values.quick ?? false;
  const destinations = intFlag(values.destinations, quick ? 100 : 1000, "destinations", 2);
  const paused = intFlag(values.paused, quick ? 10 : 100, "paused");
  if (paused >= destinations) throw new Error(`--paused (${paused}) must be below --destinations (${destinations})`);
  const active = destinations - paused;
  const perDestination = intFlag(values["held-per-destination"], quick ? 500 : 1000, "held-per-destination");
  const activeEvents = intFlag(values["active-events"], quick ? 9000 : 90_000, "active-events");
  const workers = intFlag(values.workers, 2, "workers");
  const timeoutMs = intFlag(values["timeout-s"], 900, "timeout-s") * 1000;
  const waitQuietMs = intFlag(values["wait-quiet-s"], 60, "wait-quiet-s", 0) * 1000;
  const fsync = !(values["no-fsync"] ?? false);
  const runOrder = parseRunOrder(values.order);
  const warmup = Math.min(5000, Math.max(BATCH, Math.round(activeEvents / 20 / BATCH) * BATCH));

  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  const logDir = join(REPO, "bench", "results", "logs");
  mkdirSync(logDir, { recursive: true });
  const startedAt = new Date();
  const source = sourceState(REPO);
  out(`Sluice paused-destinations benchmark — ${startedAt.toISOString()}`);
  out(`machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; Sluice ${source.commit}` +
    `${source.localChanges.length ? ` + local changes (${source.localChanges.length} files)` : ""} (fingerprint ${source.fingerprint})`);
  out(`workload: ${fmt(active)} active destinations (Sluice's defaults), ${fmt(activeEvents)} events round-robin over them, all due at once (deliver_at); ` +
    `run B adds ${fmt(paused)} destinations paused through the API holding ${fmt(perDestination)} deliveries each (${fmt(paused * perDestination)}, ` +
    `published through the API after the pause); ${fmt(warmup)} warm-up deliveries first in every run (not measured); runs ${runOrder.join(" → ")}. ` +
    `sluice api + ${workers} × sluice worker on one throwaway Postgres server; each run on a fresh database.`);

  const server = await startPostgres({ fsync });
  registerPostgres(server);
  const settings = await serverSettings(server.url);
  out(`Postgres ${settings.version} (throwaway): fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}, shared_buffers=${settings.shared_buffers}`);
  const receiver = await CountReceiver.start(join(logDir, "paused-receiver.log"));

  const runs: HeldRunOutcome[] = [];
  for (const [i, run] of runOrder.entries()) {
    const dbName = `paused_${run.toLowerCase()}`;
    process.stderr.write(`\n▶ run ${run}${runOrder.lastIndexOf(run) !== i ? " (pilot)" : ""}: ${run === "A" ? "active destinations only" : `+ ${fmt(paused)} paused holding ${fmt(paused * perDestination)}`}\n`);
    await adminQuery(server.url, "CHECKPOINT");
    const url = await recreateDatabase(server.url, dbName);
    try {
      runs.push(await heldRun({
        label: run, url, receiver, active, activeEvents, workers, warmup, timeoutMs, waitQuietMs,
        held: run === "B" ? { kind: "paused", destinations: paused, perDestination, timezone: "UTC", windowHours: 0 } : null,
        logPrefix: join(logDir, `paused-${run}${runOrder.length > 2 ? `-${i + 1}` : ""}`), postmaster: () => postmasterPid(server.dataDir),
      }));
    } finally {
      await dropDatabase(server.url, dbName);
    }
    const r = runs[runs.length - 1]!;
    process.stderr.write(`  run ${r.label}: ${fmt(r.received)}/${fmt(r.expected)} received, ${fmt(r.deliveriesPerSec)}/s\n`);
  }
  const verdict = printComparison(out, runs, `${fmt(paused)} paused`);
  out(`notes: only delivery is timed — the active workload is published with one deliver_at after publishing ends, so every active ` +
    `delivery comes due at once with the workers warm and idle; every run gets the same warm-up, VACUUM ANALYZE and CHECKPOINT and waits ` +
    `for a quiet machine; a pilot run (default --order AAB) is not compared. "Rows locked/rewritten" compares the paused destinations' xmax/xmin before and after the workload: a claim ` +
    `that so much as locked one shows. On a shared 2-core machine runs vary by ±10-15 %: compare ratios only when "CPU other ` +
    `processes" is low in both runs. --quick runs only prove the bench works.`);

  const file = join(REPO, "bench", "results", "paused.json");
  writeJson(file, {
    startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString(), source, postgres: settings,
    options: { destinations, active, paused, perDestination, activeEvents, warmup, workers, timeoutMs, fsync, quick, batch: BATCH, order: runOrder.join("") },
    verdict, runs,
  });
  out(`results: ${file} (process logs: ${logDir})`);
}

runBench(main);
