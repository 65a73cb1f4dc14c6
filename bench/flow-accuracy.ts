// `npm run bench:flow`: does a rate limit hold at the receiver, and is the rate used while a
// backlog waits? 20 destinations at max_per_second 50 / burst 50 get 5,000 deliveries each,
// queued before the workers start; the receiver times every arrival. A window is over the limit
// when it holds more than burst + rate × its length (auditBucket, src/policy/rate-audit.ts).
import { writeFileSync } from "node:fs";
import { auditBucket } from "../src/policy/rate-audit.js";
import { bucketsFor } from "../src/policy/token-bucket.js";
import { commonFlags, parseFlags, runBench } from "./procs.js";
import { Receiver } from "./receiver.js";
import { benchStart, fmt, mark } from "./report.js";
import { SluiceCluster } from "./sluice.js";

/** One destination's sorted arrival times (ms) against its rate limit. */
function rateFigures(t: number[], rate: number, burst: number) {
  const bucket = bucketsFor({ max_per_second: rate, burst_capacity: burst })[0]!;
  let maxIn1s = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j]! - t[i]! >= 1000) i++;
    maxIn1s = Math.max(maxIn1s, j - i + 1);
  }
  // The backlogged phase after the burst, over its middle 80 %, so that tokens banked while the
  // first claim after the burst was on its way (and the ragged end) do not flatter or spoil the rate.
  const after = t.slice(burst);
  const [a, z] = [Math.floor(after.length * 0.1), Math.floor(after.length * 0.9)];
  return {
    overLimit: auditBucket(t, bucket, 0).offending.length,
    overLimitJitter20ms: auditBucket(t, bucket, 20).offending.length,
    maxIn1s,
    utilisation: z - a > 1 ? (z - a) / ((after[z]! - after[a]!) / 1000) / rate : null,
  };
}

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:flow", {
    destinations: { def: 20, help: "destinations" },
    "per-destination": { def: 5000, quick: 1000, help: "deliveries queued for each" },
    rate: { def: 50, help: "their rate_limit.max_per_second" },
    burst: { def: 50, help: "their rate_limit.burst_capacity" },
    "save-arrivals": { type: "str", arg: "FILE", help: "write the arrival times by destination to FILE" },
    ...commonFlags(600),
    quick: { type: "bool", help: "1,000 deliveries per destination" },
  });
  const { destinations: D, "per-destination": PER, rate, burst, workers } = f;
  const bench = benchStart("flow-accuracy");
  const { server, settings } = await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]);
  const rx = await Receiver.start(bench.log("flow-receiver.log"));
  const sluice = new SluiceCluster({ databaseUrl: server.url, logPrefix: bench.log("flow") });
  await sluice.startApi();
  const rateLimit = { max_per_second: rate, burst_capacity: burst };
  const ids = await sluice.createDestinations(D, (i) => ({ url: rx.destUrl(i), max_concurrency: 100, rate_limit: rateLimit }));
  // Queue everything first, then start the workers: every destination is backlogged from the start.
  await rx.reset(D * PER);
  await sluice.publishAll(D * PER, (i) => ({ type: "flow.x", payload: { seq: i, dest: i % D }, destination_ids: [ids[i % D]!] }));
  bench.out(`queued ${fmt(D * PER)} deliveries over ${D} destinations (rate ${rate}/s, burst ${burst}); starting ${workers} workers`);
  await sluice.startWorkers(workers, false);
  await rx.waitFor(
    (p) => p.unique >= D * PER,
    Date.now() + f["timeout-s"] * 1000,
    (p) => `  received ${fmt(p.unique)}/${fmt(D * PER)}`,
    2000,
  );

  const { seq, at } = await rx.take();
  const arrivals: number[][] = Array.from({ length: D }, () => []);
  seq.forEach((s, i) => arrivals[s % D]!.push(at[i]!));
  if (f["save-arrivals"]) writeFileSync(f["save-arrivals"], JSON.stringify(arrivals));
  // In arrival order but stamped when the headers were parsed: two requests can finish out of order.
  const each = arrivals.map((t) =>
    rateFigures(
      t.sort((a, b) => a - b),
      rate,
      burst,
    ),
  );
  const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
  const over = sum(each.map((r) => r.overLimit));
  const utilisation = each.flatMap((r) => (r.utilisation === null ? [] : [r.utilisation]));
  const [uMin, uAvg] = [Math.min(...utilisation), sum(utilisation) / utilisation.length];
  const rep = await rx.report();
  bench.out(`\naccuracy: ${D} destinations × ${fmt(PER)} at max_per_second ${rate}, burst ${burst} (sluice api + ${workers} workers)`);
  bench.out(`  received ${fmt(rep.unique)}/${fmt(D * PER)}, ${fmt(rep.duplicates)} duplicates`);
  bench.out(
    `  windows over the limit at the receiver (any window > burst + rate × length): ${over} sends ${mark(over === 0)}; ` +
      `allowing 20 ms arrival jitter: ${sum(each.map((r) => r.overLimitJitter20ms))}`,
  );
  bench.out(
    `  most arrivals in any sliding 1 s window: ${Math.max(0, ...each.map((r) => r.maxIn1s))} (bound: burst + rate = ${burst + rate})`,
  );
  bench.out(
    `  utilisation of the rate while backlogged: min ${fmt(uMin * 100, 1)} %, mean ${fmt(uAvg * 100, 1)} % ${mark(uMin >= 0.98)} (target ≥ 98 %)`,
  );
  bench.finish("flow", { postgres: settings, options: f, overLimit: over, utilisation: { min: uMin, mean: uAvg }, perDestination: each });
  await sluice.stop();
}

runBench(main);
