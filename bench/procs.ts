// Child processes of the bench: every one is registered so that an error, Ctrl-C or a timeout
// still ends them all; and a /proc sampler that says where the CPU went during a run.
import { fork, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import net from "node:net";

const children = new Set<ChildProcess>();

export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Spawns a long-lived child whose stdout and stderr go to `logFile`. */
export function spawnLogged(cmd: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd: string; logFile: string }): ChildProcess {
  const out = createWriteStream(opts.logFile);
  const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
  child.once("exit", () => setTimeout(() => out.end(), 50));
  return track(child);
}

/** Forks a TypeScript module of bench/ with an IPC channel; its output goes to `logFile`. */
export function forkLogged(modulePath: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const out = createWriteStream(logFile);
  const child = fork(modulePath, args, { execArgv: ["--import", "tsx"], env, stdio: ["ignore", "pipe", "pipe", "ipc"] });
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
  child.once("exit", () => setTimeout(() => out.end(), 50));
  return track(child);
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

export async function stopAllChildren(graceMs = 3000): Promise<void> {
  await Promise.all([...children].map((c) => stopChild(c, graceMs)));
}

/** Last resort from a synchronous exit handler. */
export function killAllChildrenNow(): void {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---- CPU accounting ----------------------------------------------------------------------

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcStat {
  ppid: number;
  ticks: number;
}

function readAllStats(): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const raw = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command name is parenthesised and may hold spaces: parse after the last ')'.
      const rest = raw.slice(raw.lastIndexOf(")") + 2).split(" ");
      const ppid = Number(rest[1]);
      const ticks = Number(rest[11]) + Number(rest[12]); // utime + stime
      out.set(Number(name), { ppid, ticks });
    } catch {
      // exited while we looked
    }
  }
  return out;
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
  private stoppedAt = 0;
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
    this.stoppedAt = Date.now();
    const spanS = Math.max(0.001, (this.stoppedAt - this.startedAt) / 1000);
    const sums: Record<string, number> = {};
    for (const name of Object.keys(this.roots())) sums[name] = 0;
    for (const [pid, ticks] of this.last) {
      const name = this.owner.get(pid);
      if (name === undefined) continue;
      sums[name] = (sums[name] ?? 0) + (ticks - (this.start.get(pid) ?? 0));
    }
    const out: Record<string, { cpuSeconds: number; pctOfOneCore: number }> = {};
    for (const [name, ticks] of Object.entries(sums)) {
      const cpuSeconds = ticks / TICKS_PER_SECOND;
      out[name] = { cpuSeconds: round(cpuSeconds, 2), pctOfOneCore: round((100 * cpuSeconds) / spanS, 0) };
    }
    // The whole machine, everything included: is the box saturated, or waiting on the disk?
    const m = machineTicks();
    const d = (i: number): number => ((m[i] ?? 0) - (this.machineStart[i] ?? 0)) / TICKS_PER_SECOND;
    const busy = d(0) + d(1) + d(2) + d(5) + d(6) + d(7); // user nice system irq softirq steal
    const ours = Object.values(out).reduce((n, v) => n + v.cpuSeconds, 0);
    const other = Math.max(0, busy - ours);
    out["(other processes, kernel)"] = { cpuSeconds: round(other, 2), pctOfOneCore: round((100 * other) / spanS, 0) };
    out["(machine busy)"] = { cpuSeconds: round(busy, 2), pctOfOneCore: round((100 * busy) / spanS, 0) };
    out["(machine iowait)"] = { cpuSeconds: round(d(4), 2), pctOfOneCore: round((100 * d(4)) / spanS, 0) };
    return out;
  }

  private sample(first: boolean): void {
    let stats: Map<number, ProcStat>;
    try {
      stats = readAllStats();
    } catch {
      return;
    }
    const kids = new Map<number, number[]>();
    for (const [pid, s] of stats) {
      const list = kids.get(s.ppid) ?? [];
      list.push(pid);
      kids.set(s.ppid, list);
    }
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
  const b = machineTicks();
  const d = (i: number): number => ((b[i] ?? 0) - (a[i] ?? 0)) / TICKS_PER_SECOND;
  return Math.round((100 * (d(0) + d(1) + d(2) + d(5) + d(6) + d(7))) / (ms / 1000));
}

/** The aggregate "cpu" line of /proc/stat: user nice system idle iowait irq softirq steal, in ticks. */
function machineTicks(): number[] {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "";
    return line.trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return [];
  }
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
