// Sluice as the benches run it: `sluice start` (API and workers in one process), or `sluice api`
// plus N × `sluice worker` on one DATABASE_URL, in child processes — or embedded PGlite in a data
// directory — driven through its HTTP API like any client; its own /metrics figures; and which
// source was measured.
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { spawnSync } from "node:child_process";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { freePort, sleep, spawnLogged, stopChild } from "./procs.js";

export const REPO = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

export interface ApiResponse {
  status: number;
  json: unknown;
}

export interface SluiceOptions {
  /** Postgres URL, or null for the embedded store in `dataDir`. */
  databaseUrl: string | null;
  dataDir?: string;
  /** Log files are `<logPrefix>-<api|start|workerN>.log`. */
  logPrefix: string;
  /** The checkout whose Sluice runs (default: this one). */
  dir?: string;
  env?: NodeJS.ProcessEnv;
}

export class SluiceCluster {
  readonly apiKey = `bench_${randomBytes(12).toString("hex")}`;
  private api: ChildProcess | null = null;
  private apiPort = 0;
  private single = false;
  private readonly workers: { child: ChildProcess; metricsPort: number }[] = [];
  // Its own pool: the bench is a client like any other, with keep-alive connections.
  private readonly agent = new Agent({ keepAliveTimeout: 60_000, connections: 8 });

  constructor(private readonly o: SluiceOptions) {}

  private spawn(command: "api" | "start" | "worker", extra: NodeJS.ProcessEnv, logFile: string): ChildProcess {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SLUICE_API_KEY: this.apiKey,
      SLUICE_ALLOW_PRIVATE_NETWORKS: "1",
      SLUICE_HOST: "127.0.0.1",
      SLUICE_LOG_LEVEL: process.env.SLUICE_LOG_LEVEL ?? "warn",
      ...this.o.env,
      ...extra,
    };
    delete env.DATABASE_URL;
    if (this.o.databaseUrl) env.DATABASE_URL = this.o.databaseUrl;
    if (this.o.dataDir) env.SLUICE_DATA_DIR = this.o.dataDir;
    return spawnLogged(process.execPath, ["--import", "tsx", "src/cli/main.ts", command], { env, cwd: this.o.dir ?? REPO, logFile });
  }

  /** `sluice api` (or `sluice start`): runs the migrations, creates the default tenant; resolves once /healthz answers 200. */
  async startApi(command: "api" | "start" = "api"): Promise<void> {
    this.apiPort = await freePort();
    this.single = command === "start";
    const logFile = `${this.o.logPrefix}-${command}.log`;
    const child = (this.api = this.spawn(command, { SLUICE_PORT: String(this.apiPort) }, logFile));
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
      if (child.exitCode !== null) throw new Error(`sluice ${command} exited (code ${child.exitCode}) before it was ready; see ${logFile}`);
      if ((await this.call("GET", "/healthz").catch(() => null))?.status === 200) return;
    }
    throw new Error(`sluice ${command} was not healthy within 120 s; see ${logFile}`);
  }

  /**
   * `n` × `sluice worker`. With `waitReady` it waits until each one's metrics port accepts a TCP
   * connection (no HTTP request: a /metrics scrape runs database-wide queries).
   */
  async startWorkers(n: number, waitReady: boolean): Promise<void> {
    const started: { child: ChildProcess; metricsPort: number; logFile: string }[] = [];
    for (let i = 0; i < n; i++) {
      const metricsPort = await freePort();
      const logFile = `${this.o.logPrefix}-worker${this.workers.length}.log`;
      const child = this.spawn("worker", { SLUICE_METRICS_PORT: String(metricsPort), SLUICE_PORT: "0" }, logFile);
      this.workers.push({ child, metricsPort });
      started.push({ child, metricsPort, logFile });
    }
    const deadline = Date.now() + 120_000;
    for (const w of waitReady ? started : []) {
      while (!(await portOpen(w.metricsPort))) {
        if (w.child.exitCode !== null)
          throw new Error(`sluice worker exited (code ${w.child.exitCode}) before it was ready; see ${w.logFile}`);
        if (Date.now() > deadline) throw new Error(`sluice worker was not ready within 120 s; see ${w.logFile}`);
        await sleep(100);
      }
    }
  }

  /** Whether the API (or `sluice start`) process has exited. */
  get exited(): boolean {
    return this.api !== null && this.api.exitCode !== null;
  }

  pids(): number[] {
    return [this.api, ...this.workers.map((w) => w.child)].flatMap((c) => (c?.pid === undefined ? [] : [c.pid]));
  }

  async call(method: "GET" | "POST" | "PATCH", path: string, body?: unknown): Promise<ApiResponse> {
    const res = await request(`http://127.0.0.1:${this.apiPort}${path}`, {
      method,
      dispatcher: this.agent,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: { authorization: `Bearer ${this.apiKey}`, "content-type": "application/json" },
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? (JSON.parse(text) as unknown) : null };
  }

  async createDestination(body: Record<string, unknown>): Promise<string> {
    const res = await this.call("POST", "/v1/destinations", body);
    if (res.status !== 201) throw new Error(`POST /v1/destinations answered ${res.status}: ${JSON.stringify(res.json)}`);
    return (res.json as { id: string }).id;
  }

  /** `n` destinations, `body(i)` each, 8 requests in flight; their ids in order. */
  async createDestinations(
    n: number,
    body: (i: number) => Record<string, unknown>,
    after?: (id: string) => Promise<void>,
  ): Promise<string[]> {
    const ids = new Array<string>(n);
    await forEachParallel(n, 8, async (i) => {
      ids[i] = await this.createDestination(body(i));
      await after?.(ids[i]);
    });
    return ids;
  }

  /** Publishes one batch; throws unless every event made exactly one delivery. */
  async publishBatch(events: { type: string; payload: unknown; destination_ids: string[]; [k: string]: unknown }[]): Promise<void> {
    const res = await this.call("POST", "/v1/events/batch", { events });
    if (res.status !== 202) throw new Error(`POST /v1/events/batch answered ${res.status}: ${JSON.stringify(res.json).slice(0, 500)}`);
    const routed = (res.json as { events: { deliveries: number }[] }).events.reduce((n, e) => n + e.deliveries, 0);
    if (routed !== events.length) throw new Error(`a batch of ${events.length} events made ${routed} deliveries`);
  }

  /** `n` events made by `event(i)`, in batches of 1,000 one at a time. */
  async publishAll(n: number, event: (i: number) => Parameters<SluiceCluster["publishBatch"]>[0][number]): Promise<void> {
    for (let off = 0; off < n; off += 1000)
      await this.publishBatch(Array.from({ length: Math.min(1000, n - off) }, (_, k) => event(off + k)));
  }

  /** A few of Sluice's own metrics, summed over its processes (claims, claim avg ms, …). */
  async engineMetrics(): Promise<Record<string, number> | null> {
    const ports = this.single ? [this.apiPort] : this.workers.map((w) => w.metricsPort);
    const texts: string[] = [];
    for (const port of ports) {
      try {
        const res = await request(`http://127.0.0.1:${port}/metrics`, { dispatcher: this.agent });
        const text = await res.body.text();
        if (res.statusCode === 200) texts.push(text);
      } catch {
        // a process that is gone has no metrics
      }
    }
    return texts.length > 0 ? summariseSluiceMetrics(texts) : null;
  }

  async stopApi(): Promise<void> {
    if (this.api) await stopChild(this.api, 30_000);
  }

  async stop(): Promise<void> {
    // Workers first: the API process holds nothing in flight.
    await Promise.all(this.workers.map((w) => stopChild(w.child, 30_000)));
    await this.stopApi();
    await this.agent.close();
  }
}

/** Runs `f(0 … n−1)` with `parallel` calls in flight. */
export async function forEachParallel(n: number, parallel: number, f: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, n) }, async () => {
      for (let i = next++; i < n; i = next++) await f(i);
    }),
  );
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** Reads a few of Sluice's own metrics from the /metrics text of each of its processes. */
export function summariseSluiceMetrics(texts: string[]): Record<string, number> {
  const lines = texts.flatMap((t) => t.split("\n"));
  // Summed over the processes, except where `max` asks for the worst one.
  const value = (name: string, labels?: string, max = false): number => {
    let sum = 0;
    for (const line of lines) {
      if (line.startsWith("#") || !line.startsWith(name)) continue;
      const rest = line.slice(name.length);
      if (!(rest.startsWith(" ") || rest.startsWith("{"))) continue;
      if (labels !== undefined && !rest.includes(labels)) continue;
      const v = Number(line.slice(line.lastIndexOf(" ") + 1)) || 0;
      sum = max ? Math.max(sum, v) : sum + v;
    }
    return sum;
  };
  const claims = value("sluice_claim_duration_seconds_count");
  const attempts = value("sluice_attempt_duration_seconds_count");
  const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
  return {
    claims,
    "claim avg ms": claims > 0 ? round((1000 * value("sluice_claim_duration_seconds_sum")) / claims) : 0,
    "deliveries per claim": claims > 0 ? round(attempts / claims) : 0,
    "attempt avg ms": attempts > 0 ? round((1000 * value("sluice_attempt_duration_seconds_sum")) / attempts) : 0,
    "attempts ok": value("sluice_attempts_total", 'outcome="success"'),
    "attempts failed": value("sluice_attempts_total", 'outcome="failure"'),
    "slot denied": value("sluice_concurrency_slot_denied_total"),
    "lease lost": value("sluice_lease_lost_total"),
    "process cpu s": round(value("sluice_process_process_cpu_seconds_total"), 1),
    "event loop lag p99 ms": round(1000 * value("sluice_process_nodejs_eventloop_lag_p99_seconds", undefined, true)),
  };
}

/** Which Sluice was measured: the commit, and whether src/ or migrations/ differ from it. */
export function sourceState(repo: string): { commit: string; localChanges: string[]; fingerprint: string } {
  const git = (args: string[]): string => {
    // --no-optional-locks: status must not refresh (write) the index of a repo others work in.
    const r = spawnSync("git", ["--no-optional-locks", ...args], { cwd: repo, encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim() : "";
  };
  const commit = git(["rev-parse", "--short", "HEAD"]) || "unknown";
  const localChanges = git(["status", "--porcelain", "--", "src", "migrations", "package.json"]).split("\n").filter(Boolean);
  // A hash of the files themselves: two runs with the same fingerprint ran the same engine.
  const h = createHash("sha256");
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else h.update(p).update(readFileSync(p));
    }
  };
  for (const d of ["src", "migrations"]) walk(join(repo, d));
  return { commit, localChanges, fingerprint: h.digest("hex").slice(0, 12) };
}
