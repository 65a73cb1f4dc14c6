// Shared by bench/isolation.ts and bench/scale.ts: the counting receiver process, `sluice api` and
// `sluice worker` child processes on one DATABASE_URL, a small API client, and the bench's
// process lifecycle (every child and the Postgres server stopped on exit, error or Ctrl-C).
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import type { CountMessage, CountReport } from "./count-receiver.js";
import { summariseSluiceMetrics } from "./diagnostics.js";
import { postmasterPid, type PgServer } from "./pg.js";
import { forkLogged, freePort, killAllChildrenNow, machineBusyPct, sleep, spawnLogged, stopAllChildren, stopChild } from "./procs.js";

export const REPO = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

// ---- lifecycle -------------------------------------------------------------------------------

let pgServer: PgServer | null = null;

export function registerPostgres(s: PgServer): void {
  pgServer = s;
}

export async function cleanup(): Promise<void> {
  await stopAllChildren(5000);
  if (pgServer) {
    const s = pgServer;
    pgServer = null;
    await s.stop().catch((err: unknown) => process.stderr.write(`stopping postgres failed: ${String(err)}\n`));
  }
}

/** A `--name N` flag: a whole number ≥ `min`, or `def` when absent. */
export function intFlag(v: string | undefined, def: number, name: string, min = 1): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} takes a whole number ≥ ${min}, not '${v}'`);
  return n;
}

/** Runs `main`, then stops everything — also after an error, SIGINT or SIGTERM. */
export function runBench(main: () => Promise<void>): void {
  let exiting = false;
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      if (exiting) return;
      exiting = true;
      process.stderr.write(`\n${sig}: stopping every child process and Postgres…\n`);
      const hard = setTimeout(() => process.exit(130), 20_000);
      void cleanup().finally(() => {
        clearTimeout(hard);
        process.exit(130);
      });
    });
  }
  process.on("exit", () => {
    killAllChildrenNow();
    if (pgServer) {
      // Synchronous last resort: an immediate shutdown of the postmaster (scripts/pg-server.mjs
      // also SIGKILLs it and deletes its data directory from its own exit hook).
      const pid = postmasterPid(pgServer.dataDir);
      if (pid !== null) try { process.kill(pid, "SIGQUIT"); } catch { /* gone */ }
    }
  });
  main()
    .then(cleanup)
    .then(() => process.exit(0))
    .catch(async (err: unknown) => {
      // After a signal the run fails as its processes go away: the signal handler exits.
      if (exiting) return;
      process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
      await cleanup();
      process.exit(1);
    });
}

/** Waits (up to `maxMs`) until the machine is below `maxBusyPct` of one core; returns the last reading. */
export async function waitQuiet(maxMs: number, maxBusyPct = 25): Promise<number> {
  const from = Date.now();
  let busy = await machineBusyPct(1000);
  let told = false;
  while (busy > maxBusyPct && Date.now() - from < maxMs) {
    if (!told) process.stderr.write(`  machine busy (${busy}% of one core); waiting up to ${Math.round(maxMs / 1000)} s for it to go quiet\n`);
    told = true;
    busy = await machineBusyPct(2000);
  }
  return busy;
}

// ---- receiver --------------------------------------------------------------------------------

export class CountReceiver {
  private waiters: { type: CountMessage["type"]; resolve: (m: CountMessage) => void }[] = [];

  private constructor(readonly child: ChildProcess, readonly port: number) {
    child.on("message", (m: CountMessage) => {
      const i = this.waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m);
    });
  }

  static async start(logFile: string, retryAfterSeconds = 5): Promise<CountReceiver> {
    const child = forkLogged(fileURLToPath(new URL("./count-receiver.ts", import.meta.url)), [String(retryAfterSeconds)], logFile);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("receiver did not start within 30 s")), 30_000);
      child.on("message", (m: CountMessage) => {
        if (m.type === "ready") {
          clearTimeout(timer);
          resolve(m.port);
        }
      });
      child.once("exit", (code) => reject(new Error(`receiver exited early (code ${code})`)));
    });
    return new CountReceiver(child, port);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  private ask<T extends CountMessage["type"]>(msg: object, type: T): Promise<Extract<CountMessage, { type: T }>> {
    if (this.child.exitCode !== null) return Promise.reject(new Error("receiver is gone"));
    const p = new Promise<CountMessage>((resolve, reject) => {
      this.waiters.push({ type, resolve });
      setTimeout(() => reject(new Error(`receiver did not answer '${type}' within 30 s`)), 30_000).unref();
    });
    this.child.send(msg);
    return p as Promise<Extract<CountMessage, { type: T }>>;
  }

  async reset(expected: number): Promise<void> {
    await this.ask({ type: "reset", expected }, "progress");
  }

  progress(): Promise<Extract<CountMessage, { type: "progress" }>> {
    return this.ask({ type: "progress" }, "progress");
  }

  async report(): Promise<CountReport> {
    return (await this.ask({ type: "report" }, "report")).report;
  }
}

// ---- Sluice processes ------------------------------------------------------------------------

export interface ApiResponse {
  status: number;
  json: unknown;
}

export class SluiceCluster {
  readonly apiKey = `bench_${randomBytes(12).toString("hex")}`;
  private api: ChildProcess | null = null;
  private apiPort = 0;
  private readonly workers: { child: ChildProcess; metricsPort: number }[] = [];
  private readonly agent = new Agent({ keepAliveTimeout: 60_000, connections: 8 });

  constructor(private readonly databaseUrl: string, private readonly logPrefix: string) {}

  private env(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return {
      ...process.env, DATABASE_URL: this.databaseUrl, SLUICE_API_KEY: this.apiKey, SLUICE_ALLOW_PRIVATE_NETWORKS: "1",
      SLUICE_HOST: "127.0.0.1", SLUICE_LOG_LEVEL: process.env.SLUICE_LOG_LEVEL ?? "warn", ...extra,
    };
  }

  private spawn(command: "api" | "worker", extra: NodeJS.ProcessEnv, logFile: string): ChildProcess {
    return spawnLogged(process.execPath, ["--import", "tsx", "src/cli/main.ts", command], { env: this.env(extra), cwd: REPO, logFile });
  }

  /** `sluice api`: runs the migrations and creates the default tenant; resolves once /healthz answers 200. */
  async startApi(): Promise<void> {
    this.apiPort = await freePort();
    const logFile = `${this.logPrefix}-api.log`;
    this.api = this.spawn("api", { SLUICE_PORT: String(this.apiPort) }, logFile);
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      if (this.api.exitCode !== null) throw new Error(`sluice api exited (code ${this.api.exitCode}) before it was ready; see ${logFile}`);
      try {
        const res = await request(`http://127.0.0.1:${this.apiPort}/healthz`, { dispatcher: this.agent });
        await res.body.dump();
        if (res.statusCode === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    throw new Error(`sluice api was not healthy within 120 s; see ${logFile}`);
  }

  /**
   * `n` × `sluice worker`. With `waitReady` it waits until each one's metrics port accepts a TCP
   * connection (no HTTP request: a /metrics scrape runs database-wide queries).
   */
  async startWorkers(n: number, waitReady: boolean): Promise<void> {
    const started: { child: ChildProcess; metricsPort: number; logFile: string }[] = [];
    for (let i = 0; i < n; i++) {
      const metricsPort = await freePort();
      const logFile = `${this.logPrefix}-worker${this.workers.length}.log`;
      const child = this.spawn("worker", { SLUICE_METRICS_PORT: String(metricsPort), SLUICE_PORT: "0" }, logFile);
      this.workers.push({ child, metricsPort });
      started.push({ child, metricsPort, logFile });
    }
    if (!waitReady) return;
    const deadline = Date.now() + 120_000;
    for (const w of started) {
      for (;;) {
        if (w.child.exitCode !== null) throw new Error(`sluice worker exited (code ${w.child.exitCode}) before it was ready; see ${w.logFile}`);
        if (await portOpen(w.metricsPort)) break;
        if (Date.now() > deadline) throw new Error(`sluice worker was not ready within 120 s; see ${w.logFile}`);
        await sleep(100);
      }
    }
  }

  pids(): number[] {
    return [this.api, ...this.workers.map((w) => w.child)].flatMap((c) => (c?.pid === undefined ? [] : [c.pid]));
  }

  async call(method: "GET" | "POST", path: string, body?: unknown): Promise<ApiResponse> {
    const res = await request(`http://127.0.0.1:${this.apiPort}${path}`, {
      method, dispatcher: this.agent, body: body === undefined ? undefined : JSON.stringify(body),
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

  /** Publishes one batch; throws unless every event made exactly one delivery. */
  async publishBatch(events: { type: string; payload: unknown; destination_ids: string[] }[]): Promise<void> {
    const res = await this.call("POST", "/v1/events/batch", { events });
    if (res.status !== 202) throw new Error(`POST /v1/events/batch answered ${res.status}: ${JSON.stringify(res.json).slice(0, 500)}`);
    const routed = (res.json as { events: { deliveries: number }[] }).events.reduce((n, e) => n + e.deliveries, 0);
    if (routed !== events.length) throw new Error(`a batch of ${events.length} events made ${routed} deliveries`);
  }

  /** A few of Sluice's own metrics, summed over the workers (claims, claim avg ms, …). */
  async engineMetrics(): Promise<Record<string, number> | null> {
    const texts: string[] = [];
    for (const w of this.workers) {
      try {
        const res = await request(`http://127.0.0.1:${w.metricsPort}/metrics`, { dispatcher: this.agent });
        const text = await res.body.text();
        if (res.statusCode === 200) texts.push(text);
      } catch {
        // a worker that is gone has no metrics
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

// ---- formatting ------------------------------------------------------------------------------

export const fmt = (n: number | null | undefined, digits = 0): string =>
  n === null || n === undefined || !Number.isFinite(n) ? "–" : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
}

/** First publish → last arrival, and the middle 80 % of the distinct deliveries. */
export function rates(r: CountReport, from: number): { perSec: number | null; steadyPerSec: number | null; spanS: number | null } {
  if (r.lastAt === null || r.unique === 0) return { perSec: null, steadyPerSec: null, spanS: null };
  const spanS = Math.max(0.001, (r.lastAt - from) / 1000);
  const steady = r.p10At !== null && r.p90At !== null && r.p90At > r.p10At
    ? (Math.floor(0.9 * r.expected) - Math.floor(0.1 * r.expected)) / ((r.p90At - r.p10At) / 1000) : null;
  return { perSec: r.unique / spanS, steadyPerSec: steady, spanS };
}
