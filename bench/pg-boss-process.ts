// The second peer's worker: pg-boss 12 with its group concurrency, the nearest a Node team gets
// to per-destination caps today. One queue, one job per delivery grouped by destination, and
// `groupConcurrency` (counted in the database, across processes) as the destination's limit.
// Each job is a signed undici POST exactly like the graphile-worker peer's (same body shape,
// Standard Webhooks headers, keep-alive Agent).
// argv: <connectionString> <queue> <groupConcurrency> <localConcurrency> <batchSize> <poolSize>; IPC out: ready
import { createHmac, randomBytes } from "node:crypto";
import { type Job, type JobResult, PgBoss } from "pg-boss";
import { Agent, request } from "undici";

/** A job's data: where to send it and what; the group (destination) is set on the job itself. */
export interface PgBossDeliverData {
  url: string;
  /** The event id, sent as webhook-id (the same on every retry). */
  id: string;
  type: string;
  timestamp: string;
  dest: number;
  data: unknown;
}

const [connectionString, queue, groupConcurrency, localConcurrency, batchSize, poolSize] = process.argv.slice(2);

const agent = new Agent({ keepAliveTimeout: 60_000, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
const TIMEOUT_MS = 15_000; // Sluice's default timeout_seconds
const keys = new Map<number, Buffer>();

async function deliver(p: PgBossDeliverData): Promise<void> {
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
      "user-agent": "pg-boss-baseline/12.38",
      "webhook-id": p.id,
      "webhook-timestamp": String(ts),
      "webhook-signature": `v1,${sig}`,
    },
  });
  const answer = await res.body.text();
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}: ${answer.slice(0, 200)}`);
}

// A fetched batch is sent all at once; each job is settled on its own, so one failed POST retries
// only itself (throwing would fail the whole batch).
async function handler(jobs: Job<PgBossDeliverData>[]): Promise<JobResult[]> {
  return Promise.all(
    jobs.map(async (job): Promise<JobResult> => {
      try {
        await deliver(job.data);
        return { id: job.id, status: "completed" };
      } catch (err) {
        return { id: job.id, status: "failed", output: { message: (err as Error).message } };
      }
    }),
  );
}

// The bench process installed the schema and created the queue: no migration, no maintenance here.
const boss = new PgBoss({
  connectionString,
  max: Number(poolSize),
  migrate: false,
  supervise: false,
  schedule: false,
  useListenNotify: true,
});
boss.on("error", (err) => process.stderr.write(`[pg-boss error] ${err.message}\n`));
await boss.start();
await boss.work<PgBossDeliverData>(
  queue!,
  {
    groupConcurrency: Number(groupConcurrency),
    localConcurrency: Number(localConcurrency),
    batchSize: Number(batchSize),
    perJobResults: true,
    // With a backlog, fetch again as soon as a full batch is done; otherwise NOTIFY wakes the workers.
    burstWhenBatchFull: true,
    pollingIntervalSeconds: 0.5,
    notifyPollingIntervalSeconds: 1,
  },
  handler,
);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await boss.stop({ graceful: true, timeout: 10_000 }).catch(() => undefined);
  await agent.close().catch(() => undefined);
  process.exit(0);
}
for (const event of ["SIGTERM", "SIGINT", "disconnect"] as const) process.on(event, () => void stop()); // disconnect: the bench is gone
process.send?.({ type: "ready" });
