// Issue 3's accuracy figure: 20 destinations at max_per_second 50 / burst 50, 5,000 deliveries
// queued for each; counted at the receiver: windows over the limit, and utilisation of the rate
// while backlogged. Sluice runs as `sluice api` + 2 × `sluice worker` on a throwaway Postgres.
// Usage: npm run bench:flow [-- --quick | --destinations 20 --per-destination 5000 --rate 50 --burst 50]
import { mkdirSync, writeFileSync } from "node:fs";
import { bucketsFor } from "../src/policy/token-bucket.js";
import { auditBucket } from "../src/policy/rate-audit.js";
import { startPostgres } from "./pg.js";
import { parseFlags, runBench, sleep } from "./procs.js";
import { Receiver } from "./receiver.js";
import { REPO, SluiceCluster } from "./sluice.js";

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
  mkdirSync(`${REPO}/bench/results/logs`, { recursive: true });
  const pgs = await startPostgres({ fsync: true });
  const rx = await Receiver.start(`${REPO}/bench/results/logs/flow-receiver.log`, { log: true });
  const sluice = new SluiceCluster({ databaseUrl: pgs.url, logPrefix: `${REPO}/bench/results/logs/flow` });
  await sluice.startApi();
  const ids = await sluice.createDestinations(D, (i) => ({
    url: rx.destUrl(i),
    max_concurrency: 100,
    rate_limit: { max_per_second: RATE, burst_capacity: BURST },
  }));
  // Queue everything first, then start the workers: every destination is backlogged from the start.
  await sluice.publishAll(D * PER, (i) => ({ type: "flow.x", payload: { n: i }, destination_ids: [ids[i % D]!] }));
  console.log(`queued ${D * PER} deliveries over ${D} destinations (rate ${RATE}/s, burst ${BURST}); starting ${workers} workers`);
  await sluice.startWorkers(workers, false);
  const deadline = Date.now() + (((PER - BURST) / RATE) * 2 + 60) * 1000;
  for (;;) {
    await sleep(2000);
    const n = (await rx.progress()).logged;
    process.stderr.write(`  received ${n}/${D * PER}\n`);
    if (n >= D * PER || Date.now() > deadline) break;
  }
  const arrivals = Object.fromEntries(Object.entries(await rx.dump()).map(([path, l]) => [path, l.times]));
  const [bucket] = bucketsFor({ max_per_second: RATE, burst_capacity: BURST });
  if (f["save-arrivals"]) writeFileSync(f["save-arrivals"], JSON.stringify(arrivals));
  let strictOver = 0,
    jitterOver = 0,
    maxIn1s = 0,
    total = 0;
  const utilisation: number[] = [];
  for (const times of Object.values(arrivals)) {
    const t = [...times].sort((a, b) => a - b);
    total += t.length;
    strictOver += auditBucket(t, bucket!, 0).offending.length;
    jitterOver += auditBucket(t, bucket!, 20).offending.length;
    for (let i = 0, j = 0; j < t.length; j++) {
      while (t[j]! - t[i]! >= 1000) i++;
      maxIn1s = Math.max(maxIn1s, j - i + 1);
    }
    // Backlogged phase, measured over its middle 80 % so that tokens banked while the first claim
    // after the burst was on its way (and the ragged end) do not flatter or spoil the rate.
    const after = t.slice(BURST);
    const a = Math.floor(after.length * 0.1),
      z = Math.floor(after.length * 0.9);
    if (z - a > 1) utilisation.push((z - a) / ((after[z]! - after[a]!) / 1000) / RATE);
  }
  const uMin = Math.min(...utilisation),
    uAvg = utilisation.reduce((a, b) => a + b, 0) / utilisation.length;
  console.log(
    `\naccuracy: ${D} destinations × ${PER} at max_per_second ${RATE}, burst ${BURST} (Postgres fsync on, sluice api + ${workers} workers)`,
  );
  console.log(`  received ${total}/${D * PER}`);
  console.log(
    `  windows over the limit at the receiver (any window > burst + rate × length): ${strictOver} sends ${strictOver === 0 ? "✓" : "✗"}; allowing 20 ms arrival jitter: ${jitterOver}`,
  );
  console.log(`  most arrivals in any sliding 1 s window: ${maxIn1s} (bound: burst + rate = ${BURST + RATE}; steady state ${RATE})`);
  console.log(
    `  utilisation of the configured rate while backlogged: min ${(uMin * 100).toFixed(1)} %, mean ${(uAvg * 100).toFixed(1)} % ${uMin >= 0.98 ? "✓" : "✗"} (target ≥ 98 %)`,
  );
}

runBench(main);
