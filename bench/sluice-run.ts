// Sluice as the system under test: `sluice start` (API and workers in one process) in a child
// process — or, with `workers` > 0, `sluice api` plus that many `sluice worker` processes on one
// DATABASE_URL — with destinations created and events published through its HTTP API like any client.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Agent, request } from "undici";
import type { BenchEvent, SystemUnderTest } from "./harness.js";
import type { Receiver } from "./receiver.js";
import { freePort, sleep, spawnLogged, stopChild } from "./procs.js";
import { sourceState, summariseSluiceMetrics } from "./diagnostics.js";

export const REPO = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
/** Sluice settings read from the environment; the ones set are recorded with the results. */
const KNOBS = ["SLUICE_WORKER_CONCURRENCY", "SLUICE_CLAIM_BATCH", "SLUICE_GRANT_CAP", "SLUICE_DB_POOL_SIZE"] as const;

export interface SluiceSetupOptions {
  /** Postgres URL of a fresh database, or null for the embedded store in `dataDir`. */
  databaseUrl: string | null;
  dataDir: string | null;
  destinations: number;
  /** null: leave the destination default (5). */
  maxConcurrency: number | null;
  logFile: string;
  /** The checkout whose Sluice runs (default: this one). */
  sluiceDir: string;
  /** 0: one `sluice start`; N: `sluice api` + N × `sluice worker` (server store only). */
  workers: number;
}

export async function setupSluice(receiver: Receiver, deadline: number, o: SluiceSetupOptions): Promise<SystemUnderTest> {
  const source = sourceState(o.sluiceDir); // before it starts: the files it loads
  const port = await freePort();
  const apiKey = `bench_${randomBytes(12).toString("hex")}`;
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  if (o.databaseUrl) env.DATABASE_URL = o.databaseUrl;
  if (o.dataDir) env.SLUICE_DATA_DIR = o.dataDir;
  Object.assign(env, {
    SLUICE_API_KEY: apiKey, SLUICE_ALLOW_PRIVATE_NETWORKS: "1", SLUICE_PORT: String(port),
    SLUICE_HOST: "127.0.0.1", SLUICE_LOG_LEVEL: process.env.SLUICE_LOG_LEVEL ?? "warn",
  });
  const spawnSluice = (command: string, extraEnv: NodeJS.ProcessEnv, logFile: string): ChildProcess =>
    spawnLogged(process.execPath, ["--import", "tsx", "src/cli/main.ts", command], { env: { ...env, ...extraEnv }, cwd: o.sluiceDir, logFile });
  const split = o.workers > 0 && o.databaseUrl !== null;
  const child = spawnSluice(split ? "api" : "start", {}, o.logFile);
  const workers: { child: ChildProcess; metricsPort: number }[] = [];
  const base = `http://127.0.0.1:${port}`;
  // Its own pool: the bench is a client like any other, with keep-alive connections.
  const agent = new Agent({ keepAliveTimeout: 60_000, connections: 8 });
  const auth = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };

  const call = async (method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; json: unknown }> => {
    const res = await request(base + path, { method, headers: auth, body: body === undefined ? undefined : JSON.stringify(body), dispatcher: agent });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? (JSON.parse(text) as unknown) : null };
  };

  const ids: string[] = new Array<string>(o.destinations);
  try {
    await waitHealthy(`${base}/healthz`, child, agent, Math.min(deadline, Date.now() + 120_000), o.logFile);
    for (let i = 0; split && i < o.workers; i++) {
      // A worker serves no API; its metrics port doubles as its readiness signal.
      const metricsPort = await freePort();
      const logFile = o.logFile.replace(/\.log$/, `-worker${i}.log`);
      const w = spawnSluice("worker", { SLUICE_METRICS_PORT: String(metricsPort), SLUICE_PORT: "0" }, logFile);
      workers.push({ child: w, metricsPort });
      await waitHealthy(`http://127.0.0.1:${metricsPort}/metrics`, w, agent, Math.min(deadline, Date.now() + 120_000), logFile);
    }

    let nextDest = 0;
    const creator = async (): Promise<void> => {
      for (let i = nextDest++; i < o.destinations; i = nextDest++) {
        const body: Record<string, unknown> = { url: receiver.url(i), name: `bench-${i}` };
        if (o.maxConcurrency !== null) body.max_concurrency = o.maxConcurrency;
        const res = await call("POST", "/v1/destinations", body);
        if (res.status !== 201) throw new Error(`POST /v1/destinations answered ${res.status}: ${JSON.stringify(res.json)}`);
        ids[i] = (res.json as { id: string }).id;
      }
    };
    await Promise.all(Array.from({ length: 8 }, creator));
  } catch (err) {
    await Promise.all([child, ...workers.map((w) => w.child)].map((c) => stopChild(c, 5000)));
    await agent.close();
    throw err;
  }

  const settings: SystemUnderTest["settings"] = {
    process: split ? `sluice api + ${o.workers} × sluice worker (separate processes)` : "sluice start (API + worker, one process)",
    store: o.databaseUrl ? "postgres server" : "embedded PGlite",
    max_concurrency_per_destination: o.maxConcurrency ?? "5 (default)",
    routing: "destination_ids: [one destination per event], round-robin",
    sluice_dir: o.sluiceDir,
    source: `${source.commit}${source.localChanges.length ? ` + local changes (${source.localChanges.length} files)` : ", clean"}; fingerprint ${source.fingerprint}`,
  };
  for (const k of KNOBS) settings[k] = process.env[k] ?? "default";

  return {
    settings,
    notes: [],
    pids: () => [child, ...workers.map((w) => w.child)].flatMap((c) => (c.pid === undefined ? [] : [c.pid])),
    async publishBatch(batch: BenchEvent[]) {
      const events = batch.map((e) => ({
        type: "bench.event",
        payload: { seq: e.seq, dest: e.dest, sent_at: e.sentAt },
        destination_ids: [ids[e.dest]!],
      }));
      const res = await call("POST", "/v1/events/batch", { events });
      if (res.status !== 202) throw new Error(`POST /v1/events/batch answered ${res.status}: ${JSON.stringify(res.json).slice(0, 500)}`);
      const routed = (res.json as { events: { deliveries: number }[] }).events.reduce((n, e) => n + e.deliveries, 0);
      if (routed !== batch.length) throw new Error(`a batch of ${batch.length} events made ${routed} deliveries`);
    },
    async endState() {
      if (!o.databaseUrl) return null; // PGlite is single-process: only Sluice itself can open it
      const c = new pg.Client({ connectionString: o.databaseUrl });
      await c.connect();
      try {
        const out: Record<string, number> = {};
        const rows = (await c.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries GROUP BY status ORDER BY status")).rows;
        for (const r of rows) out[`deliveries.${r.status}`] = r.n;
        const a = (await c.query<{ n: number; bad: number }>("SELECT count(*)::int AS n, count(*) FILTER (WHERE status_code IS DISTINCT FROM 200)::int AS bad FROM attempts")).rows[0];
        out.attempts = a?.n ?? 0;
        out["attempts.not_200"] = a?.bad ?? 0;
        return out;
      } finally {
        await c.end();
      }
    },
    async engineMetrics() {
      const urls = split ? workers.map((w) => `http://127.0.0.1:${w.metricsPort}/metrics`) : [`${base}/metrics`];
      const texts: string[] = [];
      for (const url of urls) {
        const res = await request(url, { dispatcher: agent });
        const text = await res.body.text();
        if (res.statusCode === 200) texts.push(text);
      }
      return texts.length > 0 ? summariseSluiceMetrics(texts) : null;
    },
    async stop() {
      await agent.close();
      // Workers first: the API process holds nothing in flight.
      await Promise.all(workers.map((w) => stopChild(w.child, 30_000)));
      await stopChild(child, 30_000);
    },
  };
}

async function waitHealthy(url: string, child: ChildProcess, agent: Agent, deadline: number, logFile: string): Promise<void> {
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`sluice exited (code ${child.exitCode}) before it was ready; see ${logFile}`);
    try {
      const res = await request(url, { dispatcher: agent });
      await res.body.dump();
      if (res.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`sluice was not healthy in time; see ${logFile}`);
}

export function sluiceLogFile(logDir: string, scenario: string): string {
  return join(logDir, `sluice-${scenario}.log`);
}
