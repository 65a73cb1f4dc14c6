// Issue 3's accuracy figure: 20 destinations at max_per_second 50 / burst 50, 5,000 deliveries
// queued for each; counted at the receiver: windows over the limit, and utilisation of the rate
// while backlogged. Sluice runs as `sluice api` + 2 × `sluice worker` on a throwaway Postgres.
// Usage: npm run bench:flow [-- --destinations 20 --per-destination 5000 --rate 50 --burst 50]
import { fork, spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startThrowawayPostgres } from "../scripts/pg-server.mjs";
import { bucketsFor } from "../src/policy/token-bucket.js";
import { auditBucket } from "../src/policy/rate-audit.js";
import { freePort } from "./procs.js";

const { values } = parseArgs({ options: {
  destinations: { type: "string", default: "20" }, "per-destination": { type: "string", default: "5000" },
  rate: { type: "string", default: "50" }, burst: { type: "string", default: "50" }, workers: { type: "string", default: "2" },
  "save-arrivals": { type: "string" },
} });
const D = Number(values.destinations), PER = Number(values["per-destination"]), RATE = Number(values.rate), BURST = Number(values.burst);
const children: ChildProcess[] = [];
const pgs = await startThrowawayPostgres({ fsync: true, log: () => undefined });
const stopAll = async () => { for (const c of children) c.kill("SIGTERM"); await new Promise((r) => setTimeout(r, 1000)); await pgs.stop(); };
process.on("SIGINT", () => void stopAll().then(() => process.exit(130)));
try {
  const rx = fork(new URL("./flow-receiver.ts", import.meta.url).pathname, [], { execArgv: ["--import", "tsx"] });
  children.push(rx);
  const rxPort: number = await new Promise((r) => rx.once("message", (m: { port: number }) => r(m.port)));
  const ask = <T>(msg: string, key: string): Promise<T> => new Promise((r) => {
    const on = (m: Record<string, unknown>) => { if (key in m) { rx.off("message", on); r(m[key] as T); } };
    rx.on("message", on);
    rx.send(msg);
  });
  const apiPort = await freePort();
  const env = { ...process.env, DATABASE_URL: pgs.url, SLUICE_API_KEY: "sk_flow", SLUICE_PORT: String(apiPort), SLUICE_LOG_LEVEL: "warn", SLUICE_ALLOW_PRIVATE_NETWORKS: "1" };
  const sluice = (cmd: string) => { const c = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", cmd], { env, stdio: "inherit" }); children.push(c); return c; };
  sluice("api");
  const base = `http://127.0.0.1:${apiPort}`;
  for (let i = 0; i < 200; i++) { try { if ((await fetch(`${base}/healthz`)).ok) break; } catch { /* not yet */ } await new Promise((r) => setTimeout(r, 100)); }
  const call = async (path: string, body: unknown) => {
    const res = await fetch(base + path, { method: "POST", headers: { authorization: "Bearer sk_flow", "content-type": "application/json" }, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<{ id: string }>;
  };
  const ids: string[] = [];
  for (let i = 0; i < D; i++) ids.push((await call("/v1/destinations", { url: `http://127.0.0.1:${rxPort}/d/${i}`, max_concurrency: 100, rate_limit: { max_per_second: RATE, burst_capacity: BURST } })).id);
  // Queue everything first, then start the workers: every destination is backlogged from the start.
  for (let off = 0; off < D * PER; off += 1000) {
    await call("/v1/events/batch", { events: Array.from({ length: 1000 }, (_, k) => ({ type: "flow.x", payload: { n: off + k }, destination_ids: [ids[(off + k) % D]!] })) });
  }
  console.log(`queued ${D * PER} deliveries over ${D} destinations (rate ${RATE}/s, burst ${BURST}); starting ${values.workers} workers`);
  for (let w = 0; w < Number(values.workers); w++) sluice("worker");
  const expectS = (PER - BURST) / RATE;
  const deadline = Date.now() + (expectS * 2 + 60) * 1000;
  for (;;) {
    await new Promise((r) => setTimeout(r, 2000));
    const n = await ask<number>("count", "count");
    process.stderr.write(`  received ${n}/${D * PER}\n`);
    if (n >= D * PER || Date.now() > deadline) break;
  }
  const arrivals = await ask<Record<string, number[]>>("dump", "arrivals");
  const [bucket] = bucketsFor({ max_per_second: RATE, burst_capacity: BURST });
  if (values["save-arrivals"]) writeFileSync(values["save-arrivals"], JSON.stringify(arrivals));
  let strictOver = 0, jitterOver = 0, maxIn1s = 0, total = 0;
  const utilisation: number[] = [];
  for (const times of Object.values(arrivals)) {
    const t = [...times].sort((a, b) => a - b);
    total += t.length;
    strictOver += auditBucket(t, bucket!, 0).offending.length;
    jitterOver += auditBucket(t, bucket!, 20).offending.length;
    for (let i = 0, j = 0; j < t.length; j++) { while (t[j]! - t[i]! >= 1000) i++; maxIn1s = Math.max(maxIn1s, j - i + 1); }
    // Backlogged phase, measured over its middle 80 % so that tokens banked while the first claim
    // after the burst was on its way (and the ragged end) do not flatter or spoil the rate.
    const after = t.slice(BURST);
    const a = Math.floor(after.length * 0.1), z = Math.floor(after.length * 0.9);
    if (z - a > 1) utilisation.push((z - a) / ((after[z]! - after[a]!) / 1000) / RATE);
  }
  const uMin = Math.min(...utilisation), uAvg = utilisation.reduce((a, b) => a + b, 0) / utilisation.length;
  console.log(`\naccuracy: ${D} destinations × ${PER} at max_per_second ${RATE}, burst ${BURST} (Postgres fsync on, sluice api + ${values.workers} workers)`);
  console.log(`  received ${total}/${D * PER}`);
  console.log(`  windows over the limit at the receiver (any window > burst + rate × length): ${strictOver} sends ${strictOver === 0 ? "✓" : "✗"}; allowing 20 ms arrival jitter: ${jitterOver}`);
  console.log(`  most arrivals in any sliding 1 s window: ${maxIn1s} (bound: burst + rate = ${BURST + RATE}; steady state ${RATE})`);
  console.log(`  utilisation of the configured rate while backlogged: min ${(uMin * 100).toFixed(1)} %, mean ${(uAvg * 100).toFixed(1)} % ${uMin >= 0.98 ? "✓" : "✗"} (target ≥ 98 %)`);
} finally {
  await stopAll();
}
process.exit(0);
