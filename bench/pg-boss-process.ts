// The second peer's worker: pg-boss 12 with its group concurrency, the nearest a Node team gets
// to per-destination caps today. One queue, one job per delivery grouped by destination, and
// `groupConcurrency` (counted in the database, across processes) as the destination's limit.
// Each job is a signed undici POST exactly like the graphile-worker peer's (same body shape,
// Standard Webhooks headers, keep-alive Agent).
// argv: <connectionString> <queue> <groupConcurrency> <localConcurrency> <batchSize> <poolSize>; IPC out: ready
import { type Job, type JobResult, PgBoss } from "pg-boss";
import { closePeerAgent, sendSigned, type PeerDelivery } from "./peer-send.js";

/** A job's data: where to send it and what; the group (destination) is set on the job itself. */
export type PgBossDeliverData = PeerDelivery;

const [connectionString, queue, groupConcurrency, localConcurrency, batchSize, poolSize] = process.argv.slice(2);

// A fetched batch is sent all at once; each job is settled on its own, so one failed POST retries
// only itself (throwing would fail the whole batch).
async function handler(jobs: Job<PgBossDeliverData>[]): Promise<JobResult[]> {
  return Promise.all(
    jobs.map(async (job): Promise<JobResult> => {
      try {
        await sendSigned(job.data, "pg-boss-baseline/12.38");
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
  await closePeerAgent();
  process.exit(0);
}
for (const event of ["SIGTERM", "SIGINT", "disconnect"] as const) process.on(event, () => void stop()); // disconnect: the bench is gone
process.send?.({ type: "ready" });
