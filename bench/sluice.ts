// Sluice as the benches run it: `sluice start`, or `sluice api` + N × `sluice worker`, in child processes on a Postgres URL or an
// embedded PGlite data directory, driven through its HTTP API like any client; its own /metrics figures; and which source was measured.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { freePort } from "../scripts/pg-server.mjs";
import { logged, sleep, stopChild } from "./procs.js";

export const REPO = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

type Event = { type: string; payload: unknown; destination_ids: string[]; [k: string]: unknown };
type ClusterOptions = { databaseUrl: string | null; dataDir?: string; logPrefix: string; dir?: string; env?: NodeJS.ProcessEnv };

export class SluiceCluster {
  readonly apiKey = `bench_${randomBytes(12).toString("hex")}`;
  private api: ChildProcess | null = null;
  private apiPort = 0;
  private readonly workers: { child: ChildProcess; metricsPort: number; logFile: string }[] = [];
  // Its own pool: the bench is a client like any other, with keep-alive connections.
  private readonly agent = new Agent({ keepAliveTimeout: 60_000, connections: 8 });

  /** `databaseUrl` null: the embedded store in `dataDir`; logs go to `<logPrefix>-<api|start|workerN>.log`; `dir`: the checkout to run. */
  constructor(private readonly o: ClusterOptions) {}

  private spawn(command: "api" | "start" | "worker", extra: NodeJS.ProcessEnv, logFile: string): ChildProcess {
    const ours = { SLUICE_API_KEY: this.apiKey, SLUICE_ALLOW_PRIVATE_NETWORKS: "1", SLUICE_HOST: "127.0.0.1" };
    // DATABASE_URL undefined: not passed on.
    const store = { DATABASE_URL: this.o.databaseUrl ?? undefined, SLUICE_DATA_DIR: this.o.dataDir ?? process.env.SLUICE_DATA_DIR };
    const env = { ...process.env, ...ours, SLUICE_LOG_LEVEL: process.env.SLUICE_LOG_LEVEL ?? "warn", ...this.o.env, ...extra, ...store };
    const cwd = this.o.dir ?? REPO;
    ensureBuilt(cwd);
    // As users run it: compiled (bin/sluice.js → dist/), not from source through a loader.
    return logged(spawn(process.execPath, ["bin/sluice.js", command], { env, cwd, stdio: ["ignore", "pipe", "pipe"] }), logFile);
  }

  /** `workers` 0: one `sluice start`; else `sluice api` + that many `sluice worker`, each ready. */
  start = (workers: number): Promise<void> => this.startApi(workers === 0 ? "start" : "api").then(() => this.startWorkers(workers));

  /** `sluice api` (or `sluice start`): runs the migrations, creates the default tenant; resolves once /healthz answers 200. */
  async startApi(command: "api" | "start" = "api"): Promise<void> {
    this.apiPort = await freePort();
    const logFile = `${this.o.logPrefix}-${command}.log`;
    const child = (this.api = this.spawn(command, { SLUICE_PORT: String(this.apiPort) }, logFile));
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
      if (child.exitCode !== null) throw new Error(`sluice ${command} exited (code ${child.exitCode}) before it was ready; see ${logFile}`);
      if ((await this.call("GET", "/healthz").catch(() => null))?.status === 200) return;
    }
    throw new Error(`sluice ${command} was not healthy within 120 s; see ${logFile}`);
  }

  /** `n` × `sluice worker`, ready once each one's metrics port takes a connection (a /metrics scrape would run database-wide queries). */
  async startWorkers(n: number): Promise<void> {
    const [deadline, from] = [Date.now() + 120_000, this.workers.length];
    for (let i = 0; i < n; i++) {
      const [metricsPort, logFile] = [await freePort(), `${this.o.logPrefix}-worker${this.workers.length}.log`];
      const child = this.spawn("worker", { SLUICE_METRICS_PORT: String(metricsPort), SLUICE_PORT: "0" }, logFile);
      this.workers.push({ child, metricsPort, logFile });
    }
    for (const w of this.workers.slice(from)) {
      while (!(await portOpen(w.metricsPort))) {
        if (w.child.exitCode !== null) throw new Error(`sluice worker exited (code ${w.child.exitCode}) before ready; see ${w.logFile}`);
        if (Date.now() > deadline) throw new Error(`sluice worker was not ready within 120 s; see ${w.logFile}`);
        await sleep(100);
      }
    }
  }

  exited = (): boolean => this.api !== null && this.api.exitCode !== null;
  pids = (): number[] => [this.api, ...this.workers.map((w) => w.child)].flatMap((c) => (c?.pid === undefined ? [] : [c.pid]));

  async call(method: "GET" | "POST" | "PATCH", path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    const headers = { authorization: `Bearer ${this.apiKey}`, "content-type": "application/json" };
    const json = body === undefined ? undefined : JSON.stringify(body);
    const res = await request(`http://127.0.0.1:${this.apiPort}${path}`, { method, dispatcher: this.agent, body: json, headers });
    const text = await res.body.text();
    return { status: res.statusCode, json: text ? (JSON.parse(text) as unknown) : null };
  }

  /** A call that must answer `expect`; its JSON. */
  async must<T = Record<string, unknown>>(expect: number, method: "GET" | "POST" | "PATCH", path: string, body?: unknown): Promise<T> {
    const res = await this.call(method, path, body);
    if (res.status !== expect) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.json).slice(0, 500)}`);
    return res.json as T;
  }

  /** `n` destinations, `body(i)` each, 8 requests in flight; their ids in order. */
  async createDestinations(n: number, body: (i: number) => Record<string, unknown>): Promise<string[]> {
    const ids = new Array<string>(n);
    let next = 0;
    const creator = async (): Promise<void> => {
      for (let i = next++; i < n; i = next++) ids[i] = (await this.must<{ id: string }>(201, "POST", "/v1/destinations", body(i))).id;
    };
    await Promise.all(Array.from({ length: Math.min(8, n) }, creator));
    return ids;
  }

  /** Publishes one batch; throws unless every event made exactly one delivery. */
  async publishBatch(events: Event[]): Promise<void> {
    const res = await this.must<{ events: { deliveries: number }[] }>(202, "POST", "/v1/events/batch", { events });
    const routed = res.events.reduce((n, e) => n + e.deliveries, 0);
    if (routed !== events.length) throw new Error(`a batch of ${events.length} events made ${routed} deliveries`);
  }

  /** `n` events made by `event(i)`, in batches of 1,000 one at a time. */
  async publishAll(n: number, event: (i: number) => Event): Promise<void> {
    for (let off = 0; off < n; off += 1000)
      await this.publishBatch(Array.from({ length: Math.min(1000, n - off) }, (_, k) => event(off + k)));
  }

  /** A few of Sluice's own metrics (claims, claim avg ms, …), summed over its processes' /metrics (and those of `also`). */
  async engineMetrics(also: SluiceCluster[] = []): Promise<Record<string, number> | null> {
    const ports = [this, ...also].flatMap((c) => (c.workers.length > 0 ? c.workers.map((w) => w.metricsPort) : [c.apiPort]));
    const texts: string[] = [];
    for (const port of ports) {
      const res = await request(`http://127.0.0.1:${port}/metrics`, { dispatcher: this.agent }).catch(() => null);
      const text = await res?.body.text(); // a process that is gone has no metrics
      if (res?.statusCode === 200 && text) texts.push(...text.split("\n"));
    }
    if (texts.length === 0) return null;
    const value = (name: string, labels = ""): number =>
      texts
        .filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && l.includes(labels))
        .reduce((n, l) => n + (Number(l.slice(l.lastIndexOf(" ") + 1)) || 0), 0);
    const per = (n: number, d: number): number => (d > 0 ? Math.round((10 * n) / d) / 10 : 0);
    const [claims, attempts] = [value("sluice_claim_duration_seconds_count"), value("sluice_attempt_duration_seconds_count")];
    return {
      claims,
      "claim avg ms": per(1000 * value("sluice_claim_duration_seconds_sum"), claims),
      "deliveries per claim": per(attempts, claims),
      "attempt avg ms": per(1000 * value("sluice_attempt_duration_seconds_sum"), attempts),
      "attempts failed": value("sluice_attempts_total", 'outcome="failure"'),
      "lease lost": value("sluice_lease_lost_total"),
    };
  }

  stopApi = async (): Promise<void> => void (this.api && (await stopChild(this.api, 30_000)));

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => stopChild(w.child, 30_000))); // Workers first: the API process holds nothing in flight.
    await this.stopApi();
    await this.agent.close();
  }
}

/** Whether anything listens on `port`: a bare TCP connection. */
function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => resolve(true)).once("error", () => resolve(false));
    socket.once("connect", () => socket.destroy());
  });
}

/** A hash of `dir`'s source: what its dist/ is built from, and migrations/. */
function sourceHash(dir: string): string {
  const h = createHash("sha256");
  const add = (p: string): void => {
    if (!existsSync(p)) return;
    if (!statSync(p).isDirectory()) return void h.update(p.slice(dir.length)).update(readFileSync(p));
    for (const name of readdirSync(p).sort()) if (name !== "node_modules") add(join(p, name));
  };
  for (const sub of ["src", "migrations", "sdk/src", "ui", "package.json", "tsconfig.json", "tsconfig.build.json"]) add(join(dir, sub));
  return h.digest("hex");
}

const built = new Set<string>();
// Builds `dir`'s dist/ (`npm run build`) unless it was built from this very source (its hash, kept in dist/): the benches
// measure the compiled Sluice that `npm start` runs, so a checkout whose code changed is built again first.
function ensureBuilt(dir: string): void {
  if (built.has(dir)) return;
  const [stamp, want] = [join(dir, "dist", ".bench-source"), sourceHash(dir)];
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== want || !existsSync(join(dir, "dist", "src", "cli", "main.js"))) {
    process.stderr.write(`building ${dir === REPO ? "Sluice" : dir} (npm run build) — the benches run the compiled dist/ …\n`);
    const r = spawnSync("npm", ["run", "build", "--silent"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });
    if (r.status !== 0) throw new Error(`npm run build failed in ${dir} (${r.error?.message ?? `exit code ${r.status}`})`);
    writeFileSync(stamp, want);
  }
  built.add(dir);
}

/** Which Sluice was measured: the commit, the files under src/ and migrations/ that differ from it, and a hash of its source. */
export function sourceState(repo: string): { commit: string; localChanges: string[]; fingerprint: string } {
  // --no-optional-locks: status must not refresh (write) the index of a repo others work in.
  const git = (...args: string[]): string => {
    const r = spawnSync("git", ["--no-optional-locks", ...args], { cwd: repo, encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim() : "";
  };
  return {
    commit: git("rev-parse", "--short", "HEAD") || "unknown",
    localChanges: git("status", "--porcelain", "--", "src", "migrations", "package.json").split("\n").filter(Boolean),
    fingerprint: sourceHash(repo).slice(0, 12),
  };
}
