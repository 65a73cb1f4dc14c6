// The peers' worker processes, forked by `npm run bench` once esbuild has compiled this file: graphile-worker 0.16, or pg-boss 12
// with jobs grouped by destination and `groupConcurrency` (counted in the database, across processes) as its limit. Both send a
// delivery as Sluice does: the same body, Standard Webhooks headers signed with a key per destination, a keep-alive undici Agent
// with unlimited connections per origin and no pipelining. Sends `ready` over IPC.
// argv: graphile <connectionString> <concurrency> <maxPoolSize>
//       pgboss <connectionString> <queue> <groupConcurrency> <localConcurrency> <batchSize> <poolSize>
import { createHmac, randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Logger, run } from "graphile-worker";
import { PgBoss, type Job, type JobResult } from "pg-boss";
import { Agent, request } from "undici";

/** One delivery as a peer's job carries it; `id` is sent as webhook-id (the same on every retry). */
type PeerDelivery = { url: string; id: string; type: string; timestamp: string; dest: number; data: unknown };
export function peerDelivery(url: string, e: { dest: number; seq: number; sentAt: number }, id: string): PeerDelivery {
  const data = { seq: e.seq, dest: e.dest, sent_at: e.sentAt };
  return { url, id, type: "bench.event", timestamp: new Date(e.sentAt).toISOString(), dest: e.dest, data };
}

const agent = new Agent({ keepAliveTimeout: 60_000, pipelining: 1, headersTimeout: 0, bodyTimeout: 0 });
const keys = new Map<number, Buffer>();
/** POSTs one delivery; throws on a non-2xx answer (the peer's queue then retries it). */
async function sendSigned(p: PeerDelivery, userAgent: string): Promise<void> {
  const body = `{"type":${JSON.stringify(p.type)},"timestamp":"${p.timestamp}","data":${JSON.stringify(p.data)}}`;
  const ts = Math.floor(Date.now() / 1000);
  if (!keys.has(p.dest)) keys.set(p.dest, randomBytes(24));
  const sig = createHmac("sha256", keys.get(p.dest)!).update(`${p.id}.${ts}.${body}`).digest("base64");
  const headers = { "content-type": "application/json", "user-agent": userAgent, "webhook-id": p.id };
  const signature = { "webhook-timestamp": String(ts), "webhook-signature": `v1,${sig}` };
  const signal = AbortSignal.timeout(15_000); // Sluice's default timeout_seconds
  const res = await request(p.url, { method: "POST", dispatcher: agent, body, signal, headers: { ...headers, ...signature } });
  const answer = await res.body.text(); // Read the (small) answer so the connection is reused, as Sluice keeps 1 KiB of it.
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}: ${answer.slice(0, 200)}`);
}

async function graphile(connectionString: string, ...sizes: string[]): Promise<() => Promise<unknown>> {
  const [concurrency, maxPoolSize] = sizes.map(Number);
  // Only warnings and errors: per-job info lines would cost more than the jobs.
  const logger = new Logger(() => (level: string, message) => {
    if (level === "error" || level === "warning") process.stderr.write(`[graphile-worker ${level}] ${message}\n`);
  });
  const taskList = { deliver: (raw: unknown) => sendSigned(raw as PeerDelivery, "graphile-worker-baseline/0.16.6") };
  const runner = await run({ connectionString, concurrency, maxPoolSize, noHandleSignals: true, pollInterval: 1000, logger, taskList });
  return () => runner.stop();
}

async function pgboss(connectionString: string, queue: string, ...sizes: string[]): Promise<() => Promise<unknown>> {
  const [groupConcurrency, localConcurrency, batchSize, poolSize] = sizes.map(Number);
  // The bench process installed the schema and created the queue: no migration, no maintenance here.
  const boss = new PgBoss({ connectionString, max: poolSize, migrate: false, supervise: false, schedule: false, useListenNotify: true });
  boss.on("error", (err) => process.stderr.write(`[pg-boss error] ${err.message}\n`));
  await boss.start();
  // A fetched batch is sent all at once; each job is settled on its own, so one failed POST retries
  // only itself (throwing would fail the whole batch).
  const settle = (job: Job<PeerDelivery>): Promise<JobResult> =>
    sendSigned(job.data, "pg-boss-baseline/12.38").then(
      (): JobResult => ({ id: job.id, status: "completed" }),
      (err: Error): JobResult => ({ id: job.id, status: "failed", output: { message: err.message } }),
    );
  const handler = (jobs: Job<PeerDelivery>[]): Promise<JobResult[]> => Promise.all(jobs.map(settle));
  // With a backlog, fetch again as soon as a full batch is done; otherwise NOTIFY wakes the workers.
  const options = { groupConcurrency, localConcurrency, batchSize, perJobResults: true, burstWhenBatchFull: true };
  await boss.work<PeerDelivery>(queue, { ...options, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 1 }, handler);
  return () => boss.stop({ graceful: true, timeout: 10_000 });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [peer, url, ...rest] = process.argv.slice(2);
  const stopPeer = peer === "graphile" ? await graphile(url!, ...rest) : await pgboss(url!, rest[0]!, ...rest.slice(1));
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await stopPeer().catch(() => undefined);
    await agent.close().catch(() => undefined);
    process.exit(0);
  };
  for (const event of ["SIGTERM", "SIGINT", "disconnect"] as const) process.on(event, () => void stop()); // disconnect: the bench is gone
  process.send?.({ type: "ready" });
}
