// The bench's own process: its flags, its child processes (all stopped, with the Postgres server, on an error, Ctrl-C or a
// timeout), clocks and percentiles, and a /proc sampler that says where the CPU went.
import { fork, type ChildProcess } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

// Wall clock minus performance.timeOrigin + performance.now(), in ms. Each process fixes its timeOrigin at start, off
// the wall clock by up to ~1 ms: to compare sub-millisecond stamps of two processes, add each one's offset. Measured at
// the edge of a Date.now() tick, 5 times; the median.
function wallClockOffsetMs(): number {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    const before = Date.now();
    let [wall, mono] = [before, 0];
    while (wall === before) [mono, wall] = [performance.timeOrigin + performance.now(), Date.now()];
    samples.push(wall - mono);
  }
  return samples.sort((a, b) => a - b)[2]!;
}

let offsetMs: number | null = null;
/** Unix ms with a sub-millisecond part: the performance clock, put on the wall clock once per process. */
export const preciseNow = (): number => performance.timeOrigin + performance.now() + (offsetMs ??= wallClockOffsetMs());

export type Percentiles = { n: number; p50: number; p90: number; p99: number; max: number };
/** Nearest-rank percentiles of the finite values; null for none. */
export function percentiles(values: number[]): Percentiles | null {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (p: number): number => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))]!;
  return v.length === 0 ? null : { n: v.length, p50: at(50), p90: at(90), p99: at(99), max: v[v.length - 1]! };
}

type Flag =
  | { type?: "int"; arg?: string; help: string; def?: number; quick?: number; min?: number }
  | { type: "str"; arg?: string; help: string; def?: string; quick?: string }
  | { type: "bool"; help: string };
type Value<F> = F extends { type: "bool" }
  ? boolean
  : F extends { type: "str" }
    ? F extends { def: string }
      ? string
      : string | undefined
    : number;
type Values<S extends Record<string, Flag>> = { [K in keyof S]: Value<S[K]> };

/** The flags of every bench that runs Sluice on a throwaway Postgres server. */
export const commonFlags = (timeoutS: number) => ({
  workers: { def: 2, min: 0, help: "sluice worker processes beside one sluice api" },
  "timeout-s": { def: timeoutS, help: "for the deliveries to arrive" },
  "wait-quiet-s": { def: 60, min: 0, help: "before each timed run, wait up to N s for other processes to leave the CPU (0 = don't)" },
  "no-fsync": { type: "bool" as const, help: "Postgres with fsync=off (default: durable)" },
  "pg-icu-locale": { type: "str" as const, arg: "LOCALE", help: "the server's default collation, an ICU locale (e.g. en-US); default C" },
});

/** A comma-separated flag's values, each one of `known`. */
export function listFlag<T extends string>(flag: string, value: string, known: readonly T[]): T[] {
  const xs = value.split(",").flatMap((s) => (s.trim() ? [s.trim()] : []));
  for (const x of xs) if (!known.includes(x as T)) throw new Error(`--${flag}: unknown '${x}' (${known.join(", ")})`);
  return xs as T[];
}

// Parses `--name value` flags from their spec, which also makes the --help text: int flags are whole numbers ≥ `min`
// (default 1), `def` when absent (`quick` under --quick). The last of a repeated flag wins: a script alias's can be overridden.
export function parseFlags<S extends Record<string, Flag>>(usage: string, spec: S): Values<S> & { quick: boolean } {
  const all: Record<string, Flag> = {
    ...spec,
    quick: { type: "bool", help: spec.quick?.help ?? "a smoke run: small sizes (see above)" },
    help: { type: "bool", help: "this text" },
  };
  const options = Object.fromEntries(Object.entries(all).map(([k, f]) => [k, { type: f.type === "bool" ? "boolean" : "string" } as const]));
  const { values } = parseArgs({ options });
  if (values.help) {
    const left = (k: string, f: Flag): string => `--${k}${f.type === "bool" ? "" : ` ${f.arg ?? "N"}`}`;
    const width = Math.max(...Object.entries(all).map(([k, f]) => left(k, f).length)) + 2;
    const lines = Object.entries(all).map(([k, f]) => {
      const quick = f.type !== "bool" && f.quick !== undefined ? `; --quick ${f.quick}` : "";
      const def = f.type === "bool" || f.def === undefined || f.help.includes("default") ? "" : ` (default ${f.def}${quick})`;
      return `  ${left(k, f).padEnd(width)}${f.help}${def}`;
    });
    process.stdout.write(`${usage} -- [options]\n\n${lines.join("\n")}\n`);
    process.exit(0);
  }
  const quick = values.quick === true;
  const out: Record<string, unknown> = { quick };
  for (const [k, f] of Object.entries(spec)) {
    const v = values[k];
    if (f.type === "bool") out[k] = v === true;
    else if (v === undefined) out[k] = quick && f.quick !== undefined ? f.quick : f.def;
    else if (f.type === "str") out[k] = v;
    else {
      const n = Number(v);
      if (!Number.isInteger(n) || n < (f.min ?? 1)) throw new Error(`--${k} takes a whole number ≥ ${f.min ?? 1}, not '${String(v)}'`);
      out[k] = n;
    }
  }
  return out as Values<S> & { quick: boolean };
}

const children = new Set<ChildProcess>();
/** Keeps `child` (its stdout and stderr going to `logFile`) to stop in cleanup(). */
export function logged(child: ChildProcess, logFile: string): ChildProcess {
  const out = createWriteStream(logFile);
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
  children.add(child);
  child.once("exit", () => {
    children.delete(child);
    setTimeout(() => out.end(), 50);
  });
  return child;
}

/** Forks a module (TypeScript through tsx, or JavaScript as is) with an IPC channel; resolves on its first `ready` message. */
export function forkReady<M extends { type: string }>(module: string, args: string[], logFile: string, ms = 30_000) {
  const execArgv = module.endsWith(".ts") ? ["--import", "tsx"] : [];
  const child = logged(fork(module, args, { execArgv, stdio: ["ignore", "pipe", "pipe", "ipc"] }), logFile);
  return new Promise<{ child: ChildProcess; ready: M }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${module} did not start within ${ms / 1000} s`)), ms);
    child.on("message", (m: M) => {
      if (m.type !== "ready") return;
      clearTimeout(timer);
      resolve({ child, ready: m });
    });
    child.once("exit", (code) => reject(new Error(`${module} exited early (code ${code}); see ${logFile}`)));
  });
}

/** SIGTERM, then SIGKILL after `graceMs` if it is still there. */
export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

const stoppers: (() => Promise<void>)[] = [];
/** A server (Postgres, PgBouncer, a Citus cluster) to stop after the child processes, the last registered first. */
export const onCleanup = (stop: () => Promise<void>): void => void stoppers.unshift(stop);

/** Stops every child process, then every registered server. */
export async function cleanup(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c, 5000)));
  for (const stop of stoppers.splice(0)) await stop().catch((err: unknown) => process.stderr.write(`stopping failed: ${String(err)}\n`));
}

/** Runs `main`, then stops everything — also after an error, SIGINT or SIGTERM. */
export function runBench(main: () => Promise<void>): void {
  let exiting = false;
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(sig, () => {
      if (exiting) return;
      exiting = true;
      process.stderr.write(`\n${sig}: stopping every child process and Postgres…\n`);
      setTimeout(() => process.exit(130), 20_000);
      void cleanup().finally(() => process.exit(130));
    });
  }
  // scripts/pg-server.mjs SIGKILLs its server and deletes its data directory from its own exit hook.
  process.on("exit", () => children.forEach((c) => c.exitCode === null && c.kill("SIGKILL")));
  main()
    .then(cleanup)
    .then(() => process.exit(process.exitCode ?? 0))
    .catch(async (err: unknown) => {
      if (exiting) return; // after a signal the run fails as its processes go away
      process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      await cleanup();
      process.exit(1);
    });
}

const TICKS_PER_SECOND = 100; // USER_HZ on Linux
const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Every process: its name, parent, and CPU ticks, its own (utime + stime) and its reaped children's (cutime + cstime). */
function readAllStats() {
  const out = new Map<number, { comm: string; ppid: number; self: number; reaped: number }>();
  for (const name of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const raw = readFileSync(`/proc/${name}/stat`, "utf8");
      const comm = raw.slice(raw.indexOf("(") + 1, raw.lastIndexOf(")"));
      // The command name is parenthesised and may hold spaces: the fields follow the last ')'.
      const f = raw.slice(raw.lastIndexOf(")") + 2).split(" ");
      out.set(Number(name), { comm, ppid: Number(f[1]), self: Number(f[11]) + Number(f[12]), reaped: Number(f[13]) + Number(f[14]) });
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** Busy seconds (user nice system irq softirq steal) and iowait seconds of the machine since `from` (/proc/stat). */
function machineSeconds(from: number[] = []): { ticks: number[]; busy: number; iowait: number } {
  const ticks = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1, 9).map(Number);
  const d = (i: number): number => ((ticks[i] ?? 0) - (from[i] ?? 0)) / TICKS_PER_SECOND;
  return { ticks, busy: d(0) + d(1) + d(2) + d(5) + d(6) + d(7), iowait: d(4) };
}

export type CpuFigures = Record<string, { cpuSeconds: number; pctOfOneCore: number }>;
type SamplerOptions = { system: string; pids(): number[]; receiver: number; bench?: string; pooler?: boolean } & Servers;
export type Servers = { postmaster(): number | null } | { nodes(): Record<string, number | null> }; // nodes: a cluster's, by name
// The CPU time between begin() and end() of the system under test and Postgres (their process trees, and the children
// those reaped meanwhile: Postgres backends come and go), the receiver, the bench itself and, with `pooler`, the PgBouncer it
// started; the rest is "other processes". A process of the system that exits before end() takes its CPU with it.
export class CpuSampler {
  private from: Record<string, number> = {};
  private machineFrom: number[] = [];
  private startedAt = 0;

  constructor(private readonly o: SamplerOptions) {}

  private ticks(): Record<string, number> {
    const [stats, kids] = [readAllStats(), new Map<number, number[]>()];
    for (const [pid, s] of stats) kids.set(s.ppid, [...(kids.get(s.ppid) ?? []), pid]);
    const tree = (pids: number[]): number[] => pids.flatMap((p) => [p, ...tree(kids.get(p) ?? [])]);
    const sum = (pids: number[]): number => pids.reduce((n, p) => n + (stats.get(p)?.self ?? 0) + (stats.get(p)?.reaped ?? 0), 0);
    const pooler = tree(kids.get(process.pid) ?? []).filter((p) => stats.get(p)?.comm === "pgbouncer");
    return {
      [this.o.system]: sum(tree(this.o.pids())),
      ...Object.fromEntries(Object.entries(this.servers()).map(([name, pid]) => [name, sum(tree([pid ?? -1]))])),
      ...(this.o.pooler ? { pgbouncer: sum(pooler) } : {}),
      receiver: sum([this.o.receiver]),
      [this.o.bench ?? "bench"]: stats.get(process.pid)?.self ?? 0, // its reaped children are the systems run before
    };
  }

  private servers = (): Record<string, number | null> => ("nodes" in this.o ? this.o.nodes() : { postgres: this.o.postmaster() });

  begin(): this {
    [this.startedAt, this.machineFrom, this.from] = [Date.now(), machineSeconds().ticks, this.ticks()];
    return this;
  }

  /** Seconds of CPU per component and as a percentage of one core over the span. */
  end(): CpuFigures {
    const spanS = Math.max(0.001, (Date.now() - this.startedAt) / 1000);
    const out: CpuFigures = {};
    const put = (name: string, s: number): void =>
      void (out[name] = { cpuSeconds: round(s, 2), pctOfOneCore: round((100 * s) / spanS, 0) });
    for (const [name, t] of Object.entries(this.ticks())) put(name, Math.max(0, t - (this.from[name] ?? 0)) / TICKS_PER_SECOND);
    const m = machineSeconds(this.machineFrom); // The whole machine, everything included: is the box saturated, or waiting on the disk?
    put("(other processes, kernel)", Math.max(0, m.busy - Object.values(out).reduce((n, v) => n + v.cpuSeconds, 0)));
    const nodes = Object.keys(this.servers());
    const allNodes = nodes.reduce((n, k) => n + out[k]!.cpuSeconds, 0);
    if (nodes.length > 1) put("(postgres, all nodes)", allNodes);
    put("(machine busy)", m.busy);
    put("(machine iowait)", m.iowait);
    return out;
  }
}

/** Waits (up to `maxMs`) until the machine is below 25 % of one core; returns the last reading. */
export async function waitQuiet(maxMs: number): Promise<number> {
  const from = Date.now();
  const busyPct = async (ms: number): Promise<number> => {
    const { ticks } = machineSeconds();
    await sleep(ms);
    return Math.round((100 * machineSeconds(ticks).busy) / (ms / 1000));
  };
  let busy = await busyPct(1000);
  if (busy > 25 && maxMs > 0)
    process.stderr.write(`  machine busy (${busy}% of one core); waiting up to ${Math.round(maxMs / 1000)} s for it to go quiet\n`);
  while (busy > 25 && Date.now() - from < maxMs) busy = await busyPct(2000);
  return busy;
}
