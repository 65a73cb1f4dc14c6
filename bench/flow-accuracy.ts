// Issue 3's accuracy figure: 20 destinations at max_per_second 50 / burst 50, 5,000 deliveries
// queued for each; counted at the receiver: windows over the limit, and utilisation of the rate
// while backlogged. Sluice runs as `sluice api` + 2 × `sluice worker` on a throwaway Postgres.
import { writeFileSync } from "node:fs";
import { rateFigures } from "./arrivals.js";
import { parseFlags, runBench } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart } from "./report.js";
import { SluiceCluster } from "./sluice.js";

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:flow", {
    destinations: { def: 20, help: "destinations" },
    "per-destination": { def: 5000, quick: 1000, help: "deliveries queued for each" },
    rate: { def: 50, help: "their rate_limit.max_per_second" },
    burst: { def: 50, help: "their rate_limit.burst_capacity" },
    workers: { def: 2, help: "sluice worker processes beside one sluice api" },
    "save-arrivals": { type: "str", arg: "FILE", help: "write the arrival times by destination to FILE" },
    quick: { type: "bool", help: "1,000 deliveries per destination" },
  });
  const { destinations: D, "per-destination": PER, rate: RATE, burst: BURST, workers } = f;
  const bench = benchStart("flow-accuracy");
  const { server } = await bench.postgres(true);
  const rx = await Receiver.start(bench.log("flow-receiver.log"), { log: true });
  const sluice = new SluiceCluster({ databaseUrl: server.url, logPrefix: bench.log("flow") });
  await sluice.startApi();
  const rateLimit = { max_per_second: RATE, burst_capacity: BURST };
  const ids = await sluice.createDestinations(D, (i) => ({ url: rx.destUrl(i), max_concurrency: 100, rate_limit: rateLimit }));
  // Queue everything first, then start the workers: every destination is backlogged from the start.
  await sluice.publishAll(D * PER, (i) => ({ type: "flow.x", payload: { n: i }, destination_ids: [ids[i % D]!] }));
  bench.out(`queued ${D * PER} deliveries over ${D} destinations (rate ${RATE}/s, burst ${BURST}); starting ${workers} workers`);
  await sluice.startWorkers(workers, false);
  const deadline = Date.now() + (((PER - BURST) / RATE) * 2 + 60) * 1000;
  await rx.waitFor(
    (p) => p.logged >= D * PER,
    deadline,
    (p) => `  received ${p.logged}/${D * PER}`,
    2000,
  );

  const arrivals = Object.fromEntries(Object.entries(await rx.dump()).map(([path, l]) => [path, l.times]));
  if (f["save-arrivals"]) writeFileSync(f["save-arrivals"], JSON.stringify(arrivals));
  const each = Object.values(arrivals).map((times) =>
    rateFigures(
      [...times].sort((a, b) => a - b),
      RATE,
      BURST,
    ),
  );
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  const strictOver = sum(each.map((r) => r.overLimit.strict));
  const utilisation = each.flatMap((r) => (r.utilisation === null ? [] : [r.utilisation]));
  const uMin = Math.min(...utilisation);
  const uAvg = sum(utilisation) / utilisation.length;
  bench.out(
    `\naccuracy: ${D} destinations × ${PER} at max_per_second ${RATE}, burst ${BURST} (Postgres fsync on, sluice api + ${workers} workers)`,
  );
  bench.out(`  received ${sum(Object.values(arrivals).map((t) => t.length))}/${D * PER}`);
  bench.out(
    `  windows over the limit at the receiver (any window > burst + rate × length): ${strictOver} sends ${strictOver === 0 ? "✓" : "✗"}; ` +
      `allowing 20 ms arrival jitter: ${sum(each.map((r) => r.overLimit.jitter20ms))}`,
  );
  bench.out(
    `  most arrivals in any sliding 1 s window: ${Math.max(0, ...each.map((r) => r.maxIn1s))} (bound: burst + rate = ${BURST + RATE}; steady state ${RATE})`,
  );
  bench.out(
    `  utilisation of the configured rate while backlogged: min ${(uMin * 100).toFixed(1)} %, mean ${(uAvg * 100).toFixed(1)} % ` +
      `${uMin >= 0.98 ? "✓" : "✗"} (target ≥ 98 %)`,
  );
}

runBench(main);
