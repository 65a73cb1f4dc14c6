// "Paused" figure: do paused destinations holding a large backlog cost the active destinations
// beside them anything? 1,000 destinations of which 100 are paused with 1,000 deliveries held
// each, against the 900 active ones alone (bench/held-cost.ts). Target: active throughput
// with/without ≥ 0.95; the paused destinations get no request and keep their backlog queued.
import { clusterFlags, parseFlags, runBench } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt } from "./report.js";
import { BATCH, heldRuns, parseRunOrder, printComparison, warmupFor } from "./held-cost.js";

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:paused", {
    destinations: { def: 1000, quick: 100, min: 2, help: "destinations in all, the paused ones included" },
    paused: { def: 100, quick: 10, help: "of which paused in run B" },
    "held-per-destination": { def: 1000, quick: 500, help: "deliveries held by each paused destination" },
    "active-events": { def: 90_000, quick: 9000, help: "active workload, round-robin over the active destinations" },
    order: {
      type: "str",
      arg: "RUNS",
      def: "AAB",
      help: "the runs in order (default AAB: a pilot run without, then A and B; AB, BA, ABAB, …: the last A and the last B are compared)",
    },
    ...clusterFlags(900),
    quick: { type: "bool", help: "small: 90 active + 10 paused × 500 held, 9,000 events" },
  });
  const { destinations, paused, workers } = f;
  if (paused >= destinations) throw new Error(`--paused (${paused}) must be below --destinations (${destinations})`);
  const { "held-per-destination": perDestination, "active-events": activeEvents } = f;
  const active = destinations - paused;
  const runOrder = parseRunOrder(f.order);
  const warmup = warmupFor(activeEvents);

  const bench = benchStart("paused-destinations");
  bench.out(
    `workload: ${fmt(active)} active destinations (Sluice's defaults), ${fmt(activeEvents)} events round-robin over them, all due at once (deliver_at); ` +
      `run B adds ${fmt(paused)} destinations paused through the API holding ${fmt(perDestination)} deliveries each (${fmt(paused * perDestination)}, ` +
      `published through the API after the pause); ${fmt(warmup)} warm-up deliveries first in every run (not measured); runs ${runOrder.join(" → ")}. ` +
      `sluice api + ${workers} × sluice worker on one throwaway Postgres server; each run on a fresh database.`,
  );
  const pg = await bench.postgres(!f["no-fsync"]);
  const receiver = await Receiver.start(bench.log("paused-receiver.log"));
  const runs = await heldRuns({
    name: "paused",
    pg,
    order: runOrder,
    held: { kind: "paused", destinations: paused, perDestination },
    describeB: `+ ${fmt(paused)} paused holding ${fmt(paused * perDestination)}`,
    log: bench.log,
    receiver,
    active,
    activeEvents,
    flags: f,
  });
  const verdict = printComparison(bench.out, runs, `B: + ${fmt(paused)} paused`);
  bench.finish("paused", {
    postgres: pg.settings,
    verdict,
    runs,
    options: { ...f, active, warmup, batch: BATCH },
  });
}

runBench(main);
