// The baseline's worker: graphile-worker 0.16 running one `deliver` job per delivery, each a
// signed undici POST like Sluice's (same body shape, Standard Webhooks headers, keep-alive
// Agent). No flow control: every job runs as soon as a slot is free.
// argv: <connectionString> <concurrency> <maxPoolSize>; IPC out: ready
import { Logger, run, type Task } from "graphile-worker";
import { closePeerAgent, sendSigned, type PeerDelivery } from "./peer-send.js";

export type DeliverPayload = PeerDelivery;

const [connectionString, concurrency, maxPoolSize] = process.argv.slice(2);

const deliver: Task = (raw) => sendSigned(raw as DeliverPayload, "graphile-worker-baseline/0.16.6");

// Only warnings and errors: per-job info lines would cost more than the jobs.
const logger = new Logger(() => (level: string, message) => {
  if (level === "error" || level === "warning") process.stderr.write(`[graphile-worker ${level}] ${message}\n`);
});

const runner = await run({
  connectionString,
  concurrency: Number(concurrency),
  maxPoolSize: Number(maxPoolSize),
  noHandleSignals: true,
  pollInterval: 1000,
  logger,
  taskList: { deliver },
});

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await runner.stop().catch(() => undefined);
  await closePeerAgent();
  process.exit(0);
}
for (const event of ["SIGTERM", "SIGINT", "disconnect"] as const) process.on(event, () => void stop()); // disconnect: the bench is gone
process.send?.({ type: "ready" });
