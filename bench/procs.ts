// The bench's own process: its command-line flags, its child processes (every one registered, so
// that an error, Ctrl-C or a timeout still ends them all, and the Postgres server with them), and a
// /proc sampler that says where the CPU went during a run.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { parseArgs } from "node:util";

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- flags -----------------------------------------------------------------------------------

type Flag =
  | { type?: "int"; arg?: string; help: string; def?: number; quick?: number; min?: number }
  | { type: "str"; arg?: string; help: string; def?: string; quick?: string }
  | { type: "bool"; help: string };
type Values<S extends Record<string, Flag>> = {
  [K in keyof S]: S[K] extends { type: "bool" }
    ? boolean
    : S[K] extends { type: "str"; def: string }
      ? string
      : S[K] extends { type: "str" }
        ? string | undefined
        : number;
};

/**
 * Parses `--name value` flags from their spec, which also makes the --help text: int flags are
 * whole numbers ≥ `min` (default 1), `def` when absent (`quick` under --quick). --help prints and exits.
 */
export function parseFlags<S extends Record<string, Flag>>(usage: string, spec: S): Values<S> & { quick: boolean } {
  const all: Record<string, Flag> = {
    ...spec,
    quick: { type: "bool", help: spec.quick?.help ?? "small sizes (see above)" },
    help: { type: "bool", help: "this text" },
  };
  const { values } = parseArgs({
    options: Object.fromEntries(
      Object.entries(all).map(([k, f]) => [k, { type: f.type === "bool" ? ("boolean" as const) : ("string" as const) }]),
    ),
  });
  if (values.help) {
    const left = (k: string, f: Flag): string => `--${k}${f.type === "bool" ? "" : ` ${f.arg ?? "N"}`}`;
    const width = Math.max(...Object.entries(all).map(([k, f]) => left(k, f).length)) + 2;
    const lines = Object.entries(all).map(([k, f]) => {
      const d =
        f.type === "bool" || f.def === undefined || f.help.includes("default")
          ? ""
          : ` (default ${f.def}${f.quick === undefined ? "" : `; --quick ${f.quick}`})`;
      return `  ${left(k, f).padEnd(width)}${f.help}${d}`;
    });
    process.stdout.write(`${usage} -- [options]\n\n${lines.join("\n")}\n`);
    process.exit(0);
  }
  const quick = values.quick === true;
  const out: Record<string, unknown> = { quick };
  for (const [k, f] of Object.entries(spec)) {
    const v = values[k];
    if (f.type === "bool") out[k] = v === true;
    else if (f.type === "str") out[k] = v ?? (quick && f.quick !== undefined ? f.quick : f.def);
    else out[k] = v === undefined ? (quick && f.quick !== undefined ? f.quick : f.def) : intFlag(v as string, k, f.min ?? 1);
  }
  return out as Values<S> & { quick: boolean };
}

/** A whole number ≥ `min`, from `--name`. */
export function intFlag(v: string, name: string, min = 1): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} takes a whole number ≥ ${min}, not '${v}'`);
  return n;
}

// ---- children --------------------------------------------------------------------------------

const children = new Set<ChildProcess>();

function logged(child: ChildProcess, logFile: string): ChildProcess {
  const out = createWriteStream(logFile);
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
  child.once("exit", () => setTimeout(() => out.end(), 50));
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Spawns a long-lived child whose stdout and stderr go to `logFile`. */
export function spawnLogged(cmd: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd: string; logFile: string }): ChildProcess {
  return logged(spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] }), opts.logFile);
}

/** Forks a TypeScript module of bench/ with an IPC channel; its output goes to `logFile`. */
export function forkLogged(modulePath: string, args: string[], logFile: string): ChildProcess {
  return logged(fork(modulePath, args, { execArgv: ["--import", "tsx"], stdio: ["ignore", "pipe", "pipe", "ipc"] }), logFile);
}

/** Resolves with the first IPC message of `type` (a child's "ready"), or fails if it exits or `ms` pass first. */
export function firstMessage<M extends { type: string }>(child: ChildProcess, type: string, what: string, ms = 30_000): Promise<M> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${ms / 1000} s`)), ms);
    child.on("message", (m: M) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      resolve(m);
    });
    child.once("exit", (code) => reject(new Error(`${what} exited early (code ${code})`)));
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

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr !== null ? addr.port : 0));
    });
  });
}

// ---- lifecycle -------------------------------------------------------------------------------

let pgServer: { stop(): Promise<void>; dataDir: string } | null = null;

/** The Postgres server to stop with everything else (bench/pg.ts registers it). */
export function registerPostgres(s: typeof pgServer): void {
  pgServer = s;
}

/** Stops every child process, then the Postgres server. */
export async function cleanup(): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c, 5000)));
  const s = pgServer;
  pgServer = null;
  await s?.stop().catch((err: unknown) => process.stderr.write(`stopping postgres failed: ${String(err)}\n`));
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
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    // scripts/pg-server.mjs SIGKILLs its server and deletes its data directory from its own exit hook.
  });
  main()
    .then(cleanup)
    .then(() => process.exit(process.exitCode ?? 0))
    .catch(async (err: unknown) => {
      // After a signal the run fails as its processes go away: the signal handler exits.
      if (exiting) return;
      process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      await cleanup();
      process.exit(1);
    });
}

// ---- CPU accounting --------------------------------------------------------------------------

const TICKS_PER_SECOND = 100; // USER_HZ on Linux
const round = (n: number, digits: number): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Every process: parent pid and CPU ticks (utime + stime). */
function readAllStats(): Map<number, { ppid: number; ticks: number }> {
  const out = new Map<number, { ppid: number; ticks: number }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const raw = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command name is parenthesised and may hold spaces: parse after the last ')'.
      const rest = raw.slice(raw.lastIndexOf(")") + 2).split(" ");
      out.set(Number(name), { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) });
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** The aggregate "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal, in ticks. */
function machineTicks(): number[] {
  try {
    return (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return [];
  }
}

/** Busy seconds (user nice system irq softirq steal) and iowait seconds between two readings. */
function busyBetween(a: number[], b: number[]): { busy: number; iowait: number } {
  const d = (i: number): number => ((b[i] ?? 0) - (a[i] ?? 0)) / TICKS_PER_SECOND;
  return { busy: d(0) + d(1) + d(2) + d(5) + d(6) + d(7), iowait: d(4) };
}

/**
 * Samples /proc once a second and attributes CPU time to named process trees. A process that
 * exits between samples loses at most its last second; the trees measured here are long-lived.
 */
export class CpuSampler {
  private readonly start = new Map<number, number>();
  private readonly last = new Map<number, number>();
  private readonly owner = new Map<number, string>();
  private timer: NodeJS.Timeout | null = null;
  private startedAt = 0;
  private machineStart: number[] = [];

  /** `roots` names each component's processes; `tree` adds their descendants too. */
  constructor(private readonly roots: () => Record<string, { pids: number[]; tree: boolean }>) {}

  begin(): void {
    this.startedAt = Date.now();
    this.machineStart = machineTicks();
    this.sample(true);
    this.timer = setInterval(() => this.sample(false), 1000);
    this.timer.unref();
  }

  /** Seconds of CPU per component and as a percentage of one core over the sampled span. */
  end(): Record<string, { cpuSeconds: number; pctOfOneCore: number }> {
    if (this.timer) clearInterval(this.timer);
    this.sample(false);
    const spanS = Math.max(0.001, (Date.now() - this.startedAt) / 1000);
    const sums: Record<string, number> = {};
    for (const name of Object.keys(this.roots())) sums[name] = 0;
    for (const [pid, ticks] of this.last) {
      const name = this.owner.get(pid);
      if (name !== undefined) sums[name] = (sums[name] ?? 0) + ticks - (this.start.get(pid) ?? 0);
    }
    const out: Record<string, { cpuSeconds: number; pctOfOneCore: number }> = {};
    const put = (name: string, s: number): void =>
      void (out[name] = { cpuSeconds: round(s, 2), pctOfOneCore: round((100 * s) / spanS, 0) });
    for (const [name, ticks] of Object.entries(sums)) put(name, ticks / TICKS_PER_SECOND);
    // The whole machine, everything included: is the box saturated, or waiting on the disk?
    const m = busyBetween(this.machineStart, machineTicks());
    const ours = Object.values(out).reduce((n, v) => n + v.cpuSeconds, 0);
    put("(other processes, kernel)", Math.max(0, m.busy - ours));
    put("(machine busy)", m.busy);
    put("(machine iowait)", m.iowait);
    return out;
  }

  private sample(first: boolean): void {
    const stats = readAllStats();
    const kids = new Map<number, number[]>();
    for (const [pid, s] of stats) kids.set(s.ppid, [...(kids.get(s.ppid) ?? []), pid]);
    for (const [name, root] of Object.entries(this.roots())) {
      const stack = root.pids.filter((p) => stats.has(p));
      while (stack.length > 0) {
        const pid = stack.pop()!;
        const s = stats.get(pid);
        if (s === undefined) continue;
        const owner = this.owner.get(pid);
        if (owner !== undefined && owner !== name) continue; // claimed by another component
        if (owner === undefined) {
          this.owner.set(pid, name);
          // A process born after begin() counts from zero; one alive at begin() from its then-total.
          if (first) this.start.set(pid, s.ticks);
        }
        this.last.set(pid, s.ticks);
        if (root.tree) stack.push(...(kids.get(pid) ?? []));
      }
    }
  }
}

/** How busy the whole machine is over `ms`, in % of one core (a quiet 2-core box: near 0). */
export async function machineBusyPct(ms: number): Promise<number> {
  const a = machineTicks();
  await sleep(ms);
  return Math.round((100 * busyBetween(a, machineTicks()).busy) / (ms / 1000));
}

/** Waits (up to `maxMs`) until the machine is below `maxBusyPct` of one core; returns the last reading. */
export async function waitQuiet(maxMs: number, maxBusyPct = 25): Promise<number> {
  if (maxMs <= 0) return machineBusyPct(1000);
  const from = Date.now();
  let busy = await machineBusyPct(1000);
  let told = false;
  while (busy > maxBusyPct && Date.now() - from < maxMs) {
    if (!told)
      process.stderr.write(`  machine busy (${busy}% of one core); waiting up to ${Math.round(maxMs / 1000)} s for it to go quiet\n`);
    told = true;
    busy = await machineBusyPct(2000);
  }
  return busy;
}
