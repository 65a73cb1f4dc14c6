// The baseline's worker: graphile-worker 0.16 running one `deliver` job per delivery, each a
// signed undici POST like Sluice's (same body shape, Standard Webhooks headers, keep-alive
// Agent). No flow control: every job runs as soon as a slot is free.
// argv: <connectionString> <concurrency> <maxPoolSize>; IPC out: ready
import { createHmac, randomBytes } from "node:crypto";
import { Logger, run, type Task } from "graphile-worker";
import { Agent, request } from "undici";

export interface DeliverPayload {
  url: string;
  /** The event id, sent as webhook-id (the same on every retry). */
  id: string;
  type: string;
  timestamp: string;
  dest: number;
  data: unknown;
}

const [connectionString, concurrency, maxPoolSize] = process.argv.slice(2);

// Unlimited connections per origin and no pipelining, as Sluice's sender.
const agent = new Agent({ keepAliveTimeout: 60_000, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
const TIMEOUT_MS = 15_000; // Sluice's default timeout_seconds

// One signing key per destination, as each Sluice destination has its own secret.
const keys = new Map<number, Buffer>();

const deliver: Task = async (raw) => {
  const p = raw as DeliverPayload;
  const body = `{"type":${JSON.stringify(p.type)},"timestamp":"${p.timestamp}","data":${JSON.stringify(p.data)}}`;
  const ts = Math.floor(Date.now() / 1000);
  if (!keys.has(p.dest)) keys.set(p.dest, randomBytes(24));
  const sig = createHmac("sha256", keys.get(p.dest)!).update(`${p.id}.${ts}.${body}`).digest("base64");
  const res = await request(p.url, {
    method: "POST",
    dispatcher: agent,
    body,
    signal: AbortSignal.timeout(TIMEOUT_MS),
    headers: {
      "content-type": "application/json",
      "user-agent": "graphile-worker-baseline/0.16.6",
      "webhook-id": p.id,
      "webhook-timestamp": String(ts),
      "webhook-signature": `v1,${sig}`,
    },
  });
  // Read the (small) answer so the connection is reused, as Sluice keeps 1 KiB of it.
  const answer = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}: ${answer.slice(0, 200)}`);
};

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
  await agent.close().catch(() => undefined);
  process.exit(0);
}
for (const event of ["SIGTERM", "SIGINT", "disconnect"] as const) process.on(event, () => void stop()); // disconnect: the bench is gone
process.send?.({ type: "ready" });
