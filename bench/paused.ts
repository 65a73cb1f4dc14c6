// "Paused" figure: do paused destinations holding a large backlog cost the active destinations
// beside them anything? 1,000 destinations of which 100 are paused (POST /v1/destinations/{id}/pause)
// with 1,000 deliveries held each, against a run with the 900 active ones only; the active workload
// (90,000 events round-robin over the 900) is timed at the receiver. Two runs on fresh databases of
// one throwaway Postgres server, `sluice api` + N × `sluice worker` each (bench/held-cost.ts).
// Target: active throughput with/without ≥ 0.95; the paused destinations get no request and keep
// their backlog queued.
// Usage: npm run bench:paused [-- --quick | --destinations 1000 --paused 100 --held-per-destination 1000 --active-events 90000]
import { postmasterPid } from "./pg.js";
import { parseFlags, runBench } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt } from "./report.js";
import { BATCH, heldRuns, parseRunOrder, printComparison } from "./held-cost.js";

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:paused", {
    destinations: { def: 1000, quick: 100, min: 2, help: "destinations in all, the paused ones included" },
    paused: { def: 100, quick: 10, help: "of which paused in run B" },
    "held-per-destination": { def: 1000, quick: 500, help: "deliveries held by each paused destination" },
    "active-events": { def: 90_000, quick: 9000, help: "active workload, round-robin over the active destinations" },
    workers: { def: 2, help: "sluice worker processes beside one sluice api" },
    "timeout-s": { def: 900, help: "per run, for the active workload to arrive" },
    "wait-quiet-s": { def: 60, min: 0, help: "before each timed run, wait up to N s for other processes to leave the CPU (0 = don't)" },
    order: {
      type: "str",
      arg: "RUNS",
      def: "AAB",
      help: "the runs in order (default AAB: a pilot run without, then A and B; AB, BA, ABAB, …: the last A and the last B are compared)",
    },
    "no-fsync": { type: "bool", help: "Postgres with fsync=off (default: durable)" },
    quick: { type: "bool", help: "small: 90 active + 10 paused × 500 held, 9,000 events" },
  });
  const { destinations, paused, workers, quick } = f;
  if (paused >= destinations) throw new Error(`--paused (${paused}) must be below --destinations (${destinations})`);
  const active = destinations - paused;
  const perDestination = f["held-per-destination"],
    activeEvents = f["active-events"],
    fsync = !f["no-fsync"];
  const timeoutMs = f["timeout-s"] * 1000,
    waitQuietMs = f["wait-quiet-s"] * 1000;
  const runOrder = parseRunOrder(f.order);
  const warmup = Math.min(5000, Math.max(BATCH, Math.round(activeEvents / 20 / BATCH) * BATCH));

  const bench = benchStart("paused-destinations");
  const { out } = bench;
  out(
    `workload: ${fmt(active)} active destinations (Sluice's defaults), ${fmt(activeEvents)} events round-robin over them, all due at once (deliver_at); ` +
      `run B adds ${fmt(paused)} destinations paused through the API holding ${fmt(perDestination)} deliveries each (${fmt(paused * perDestination)}, ` +
      `published through the API after the pause); ${fmt(warmup)} warm-up deliveries first in every run (not measured); runs ${runOrder.join(" → ")}. ` +
      `sluice api + ${workers} × sluice worker on one throwaway Postgres server; each run on a fresh database.`,
  );
  const { server, settings } = await bench.postgres(fsync);
  const receiver = await Receiver.start(bench.log("paused-receiver.log"));

  const runs = await heldRuns({
    name: "paused",
    serverUrl: server.url,
    order: runOrder,
    held: { kind: "paused", destinations: paused, perDestination, timezone: "UTC", windowHours: 0 },
    describeB: `+ ${fmt(paused)} paused holding ${fmt(paused * perDestination)}`,
    logPrefix: bench.log,
    run: { receiver, active, activeEvents, workers, warmup, timeoutMs, waitQuietMs, postmaster: () => postmasterPid(server.dataDir) },
  });
  const verdict = printComparison(out, runs, `${fmt(paused)} paused`);
  out(
    `notes: only delivery is timed — the active workload is published with one deliver_at after publishing ends, so every active ` +
      `delivery comes due at once with the workers warm and idle; every run gets the same warm-up, VACUUM ANALYZE and CHECKPOINT and waits ` +
      `for a quiet machine; a pilot run (default --order AAB) is not compared. "Rows locked/rewritten" compares the paused destinations' xmax/xmin before and after the workload: a claim ` +
      `that so much as locked one shows. On a shared 2-core machine runs vary by ±10-15 %: compare ratios only when "CPU other ` +
      `processes" is low in both runs. --quick runs only prove the bench works.`,
  );

  bench.finish("paused", {
    postgres: settings,
    verdict,
    runs,
    options: {
      destinations,
      active,
      paused,
      perDestination,
      activeEvents,
      warmup,
      workers,
      timeoutMs,
      fsync,
      quick,
      batch: BATCH,
      order: runOrder.join(""),
    },
  });
}

runBench(main);
