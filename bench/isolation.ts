// "Isolation" figure: does one destination that answers 429 (Retry-After: 5) with a large backlog
// cost the healthy destinations beside it anything? Runs A (healthy destinations only) and B (with
// the throttled one, its backlog published first) of bench/held-cost.ts, the healthy workload
// published while timing. Targets (the issue): throughput B/A ≥ 0.95, p99 latency B/A ≤ 1.1.
import { clusterFlags, parseFlags, runBench } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt } from "./report.js";
import { BATCH, heldRuns, printComparison, warmupFor } from "./held-cost.js";

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:isolation", {
    destinations: { def: 1000, quick: 100, min: 2, help: "destinations in all, the throttled one included" },
    "healthy-events": { def: 100_000, quick: 10_000, help: "healthy workload: events round-robin over the healthy destinations" },
    backlog: { def: 100_000, quick: 10_000, help: "deliveries queued for the throttled destination in run B" },
    "retry-after": { arg: "S", def: 5, help: "the throttled destination's Retry-After, seconds" },
    "publish-rate": { def: 0, min: 0, help: "pace the healthy workload at N events/s (default 0: as fast as the API takes them)" },
    ...clusterFlags(900),
    quick: { type: "bool", help: "small: 100 destinations, 10,000 events, 10,000 backlog" },
  });
  const { destinations, backlog, workers, "healthy-events": healthyEvents, "retry-after": retryAfter, "publish-rate": publishRate } = f;
  const healthy = destinations - 1;
  const warmup = warmupFor(healthyEvents);

  const bench = benchStart("isolation");
  bench.out(
    `workload: ${fmt(healthy)} healthy destinations, ${fmt(healthyEvents)} events round-robin over them in batches of ${BATCH}` +
      `${publishRate > 0 ? ` paced at ${fmt(publishRate)}/s` : " published as fast as the API takes them"}; ` +
      `run B adds 1 destination answering 429 Retry-After: ${retryAfter} with ${fmt(backlog)} deliveries queued first. ` +
      `sluice api + ${workers} × sluice worker, all destinations at Sluice's defaults (max_concurrency 5); ` +
      `${fmt(warmup)} warm-up deliveries first in both runs (not measured).`,
  );
  const pg = await bench.postgres(!f["no-fsync"]);
  const receiver = await Receiver.start(bench.log("isolation-receiver.log"), { retryAfter });
  const runs = await heldRuns({
    name: "isolation",
    pg,
    order: ["A", "B"],
    held: { kind: "throttled", destinations: 1, perDestination: backlog },
    describeB: `with a throttled destination holding ${fmt(backlog)} deliveries`,
    log: bench.log,
    receiver,
    active: healthy,
    activeEvents: healthyEvents,
    flags: f,
    timed: { publishRate },
  });
  const verdict = printComparison(bench.out, runs, "B: + throttled", true);
  bench.finish("isolation", {
    postgres: pg.settings,
    options: { ...f, healthyDestinations: healthy, warmup, batch: BATCH },
    verdict,
    runs,
  });
}

runBench(main);
