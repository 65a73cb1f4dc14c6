// The bench's side of the receiver process: start it, follow its progress on stderr, wait for
// the last delivery (or the deadline), and fetch its measurements.
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { forkLogged, stopChild } from "./procs.js";
import type { ReceiverMessage, ReceiverReport } from "./receiver-process.js";

const MODULE = fileURLToPath(new URL("./receiver-process.ts", import.meta.url));

export class Receiver {
  private doneAt: number | null = null;
  private doneWaiters: (() => void)[] = [];
  private reportWaiter: ((r: ReceiverReport) => void) | null = null;
  private lastProgress = { unique: 0, total: 0, at: 0 };
  private lastPrintAt = 0;
  private lastPrinted = { unique: 0, at: 0 };
  /** Set by the run so progress lines can say how far publishing got. */
  published = 0;
  measureFrom: number | null = null;

  private constructor(readonly child: ChildProcess, readonly ports: number[], private readonly label: string, private readonly expected: number) {
    child.on("message", (m: ReceiverMessage) => this.onMessage(m));
    child.once("exit", () => this.wakeAll());
  }

  static async start(opts: {
    delayMs: number; expected: number; destinations: number; label: string; logFile: string;
    /** Per-destination limit to check at the receiver; 0 = none. */
    cap: number;
    /** Ports (origins) to spread the destinations over. */
    ports: number;
  }): Promise<Receiver> {
    const args = [opts.delayMs, opts.expected, opts.destinations, opts.cap, opts.ports].map(String);
    const child = forkLogged(MODULE, args, opts.logFile);
    const ports = await new Promise<number[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("receiver did not start within 30 s")), 30_000);
      child.on("message", (m: ReceiverMessage) => {
        if (m.type === "ready") {
          clearTimeout(timer);
          resolve(m.ports);
        }
      });
      child.once("exit", (code) => reject(new Error(`receiver exited early (code ${code})`)));
    });
    return new Receiver(child, ports, opts.label, opts.expected);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get received(): number {
    return this.lastProgress.unique;
  }

  /** Destination `dest`'s URL: its own path, on port dest mod ports. */
  url(dest: number): string {
    return `http://127.0.0.1:${this.ports[dest % this.ports.length]!}/d/${dest}`;
  }

  /** Resolves with the time the last expected delivery arrived, or null at the deadline. */
  async waitDone(deadline: number): Promise<number | null> {
    while (this.doneAt === null && Date.now() < deadline && this.child.exitCode === null) {
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.max(0, Math.min(1000, deadline - Date.now())));
        this.doneWaiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return this.doneAt;
  }

  async report(publishEndAt: number): Promise<ReceiverReport> {
    if (this.child.exitCode !== null) throw new Error("receiver is gone");
    const p = new Promise<ReceiverReport>((resolve, reject) => {
      this.reportWaiter = resolve;
      setTimeout(() => reject(new Error("receiver did not report within 30 s")), 30_000).unref();
    });
    this.child.send({ type: "report", publishEndAt });
    return p;
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 3000);
  }

  private onMessage(m: ReceiverMessage): void {
    if (m.type === "progress") {
      this.lastProgress = m;
      this.printProgress();
    } else if (m.type === "done") {
      this.doneAt = m.at;
      this.wakeAll();
    } else if (m.type === "report") {
      this.reportWaiter?.(m.report);
      this.reportWaiter = null;
    }
  }

  private wakeAll(): void {
    const ws = this.doneWaiters;
    this.doneWaiters = [];
    for (const w of ws) w();
  }

  // At most one line a second, and only once the measured run has begun.
  private printProgress(): void {
    const now = Date.now();
    if (this.measureFrom === null || now - this.lastPrintAt < 1000) return;
    const p = this.lastProgress;
    const spanS = (p.at - this.lastPrinted.at) / 1000;
    const nowRate = this.lastPrinted.at > 0 && spanS > 0 ? (p.unique - this.lastPrinted.unique) / spanS : 0;
    const avgRate = p.unique / Math.max(0.001, (p.at - this.measureFrom) / 1000);
    const dup = p.total - p.unique;
    process.stderr.write(
      `  [${this.label}] received ${fmt(p.unique)}/${fmt(this.expected)}  ${fmt(nowRate)}/s now, ${fmt(avgRate)}/s avg` +
        `  published ${fmt(this.published)}${dup > 0 ? `  (+${fmt(dup)} repeat requests)` : ""}  t=${((p.at - this.measureFrom) / 1000).toFixed(0)}s\n`,
    );
    this.lastPrintAt = now;
    this.lastPrinted = { unique: p.unique, at: p.at };
  }
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}
