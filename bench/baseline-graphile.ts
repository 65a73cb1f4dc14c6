// The baseline as the system under test: graphile-worker 0.16.6 in its own database on the same
// server, one `deliver` job per delivery, added 1,000 at a time with graphile_worker.add_jobs
// (one statement per batch, as Sluice takes one request per batch). The workers run in child
// processes, like Sluice, so the bench's own publishing does not share their event loop.
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { runMigrations } from "graphile-worker";
import type { BenchEvent, SystemUnderTest } from "./run.js";
import type { Receiver } from "./receiver.js";
import type { DeliverPayload } from "./graphile-worker-process.js";
import { firstMessage, forkLogged, stopChild } from "./procs.js";

const WORKER_MODULE = fileURLToPath(new URL("./graphile-worker-process.ts", import.meta.url));

export interface BaselineOptions {
  databaseUrl: string;
  workers: number;
  concurrency: number;
  /** Connections the server accepts; the pools are sized to fit under it. */
  maxConnections: number;
  logDir: string;
  scenario: string;
}

// json_populate_recordset turns the JSON array into job_spec rows; unset fields take
// add_jobs' defaults (queue-less, run now, 25 attempts).
const ADD_JOBS = `
  SELECT count(*)::int AS n FROM graphile_worker.add_jobs(
    (SELECT array_agg(s) FROM json_populate_recordset(null::graphile_worker.job_spec, $1::json) AS s))`;

export async function setupGraphile(receiver: Receiver, o: BaselineOptions): Promise<SystemUnderTest> {
  const notes: string[] = [];
  // graphile-worker warns below concurrency; +1 for the connection its LISTEN holds.
  let maxPoolSize = o.concurrency + 1;
  const budget = Math.floor((o.maxConnections - 10) / o.workers); // leave room for the bench and superuser slots
  if (maxPoolSize > budget) {
    notes.push(`maxPoolSize capped at ${budget} (server max_connections=${o.maxConnections}) below concurrency+1=${maxPoolSize}`);
    maxPoolSize = budget;
  }
  await runMigrations({ connectionString: o.databaseUrl, logger: undefined });

  const workers: ChildProcess[] = [];
  const publisher = new pg.Client({ connectionString: o.databaseUrl });
  try {
    for (let i = 0; i < o.workers; i++) {
      const child = forkLogged(
        WORKER_MODULE,
        [o.databaseUrl, String(o.concurrency), String(maxPoolSize)],
        join(o.logDir, `graphile-${o.scenario}-worker${i}.log`),
      );
      workers.push(child);
      await firstMessage(child, "ready", "graphile-worker", 60_000);
    }
    await publisher.connect();
  } catch (err) {
    await Promise.all(workers.map((w) => stopChild(w, 5000)));
    await publisher.end().catch(() => undefined);
    throw err;
  }

  return {
    notes,
    settings: {
      version: "graphile-worker 0.16.6",
      worker_processes: o.workers,
      concurrency_per_process: o.concurrency,
      maxPoolSize_per_process: maxPoolSize,
      pollInterval_ms: 1000,
      jobs: "one `deliver` job per delivery, no queue_name (no per-destination limit), max_attempts 25",
      adding: "graphile_worker.add_jobs, one statement per batch of 1,000",
    },
    pids: () => workers.flatMap((w) => (w.pid === undefined ? [] : [w.pid])),
    async publishBatch(batch: BenchEvent[]) {
      const specs = batch.map((e) => {
        const payload: DeliverPayload = {
          url: receiver.destUrl(e.dest),
          id: `evt_${randomUUID()}`,
          type: "bench.event",
          timestamp: new Date(e.sentAt).toISOString(),
          dest: e.dest,
          data: { seq: e.seq, dest: e.dest, sent_at: e.sentAt },
        };
        return { identifier: "deliver", payload };
      });
      const res = await publisher.query<{ n: number }>(ADD_JOBS, [JSON.stringify(specs)]);
      if (res.rows[0]?.n !== batch.length) throw new Error(`add_jobs added ${res.rows[0]?.n} of ${batch.length} jobs`);
    },
    async endState() {
      const row = (
        await publisher.query<{ left: number; failed: number; attempts: number }>(
          `SELECT count(*)::int AS left, count(*) FILTER (WHERE last_error IS NOT NULL)::int AS failed,
                coalesce(sum(attempts), 0)::int AS attempts FROM graphile_worker.jobs`,
        )
      ).rows[0];
      return { "jobs.remaining": row?.left ?? 0, "jobs.with_error": row?.failed ?? 0, "attempts.of_remaining": row?.attempts ?? 0 };
    },
    engineMetrics: () => Promise.resolve(null),
    async stop() {
      await publisher.end().catch(() => undefined);
      await Promise.all(workers.map((w) => stopChild(w, 15_000)));
    },
  };
}
