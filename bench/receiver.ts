// The bench's side of the receiver process (bench/receiver-process.ts): start it, ask it for its
// progress and measurements, follow a run on stderr, wait for the last delivery.
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { firstMessage, forkLogged, sleep, stopChild } from "./procs.js";
import type { Progress, ReceiverConfig, ReceiverMessage, ReceiverReport } from "./receiver-process.js";

export type { ReceiverReport } from "./receiver-process.js";
const MODULE = fileURLToPath(new URL("./receiver-process.ts", import.meta.url));

export class Receiver {
  private waiters: { type: string; resolve: (m: ReceiverMessage) => void }[] = [];
  private doneAt: number | null = null;

  private constructor(
    readonly child: ChildProcess,
    readonly ports: number[],
  ) {
    child.on("message", (m: ReceiverMessage) => {
      if (m.type === "done") this.doneAt = m.at;
      const i = this.waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m);
    });
  }

  static async start(logFile: string, config: ReceiverConfig = {}): Promise<Receiver> {
    const child = forkLogged(MODULE, [JSON.stringify(config)], logFile);
    const { ports } = await firstMessage<Extract<ReceiverMessage, { type: "ready" }>>(child, "ready", "receiver");
    return new Receiver(child, ports);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** `path` on the first port. */
  url(path: string): string {
    return `http://127.0.0.1:${this.ports[0]!}${path}`;
  }

  /** Destination `dest`'s URL: its own path /d/<dest>, on port dest mod ports. */
  destUrl(dest: number): string {
    return `http://127.0.0.1:${this.ports[dest % this.ports.length]!}/d/${dest}`;
  }

  private ask<T extends ReceiverMessage["type"]>(msg: object, type: T): Promise<Extract<ReceiverMessage, { type: T }>> {
    if (this.child.exitCode !== null) return Promise.reject(new Error("receiver is gone"));
    const p = new Promise<ReceiverMessage>((resolve, reject) => {
      this.waiters.push({ type, resolve });
      setTimeout(() => reject(new Error(`receiver did not answer '${type}' within 30 s`)), 30_000).unref();
    });
    this.child.send(msg);
    return p as Promise<Extract<ReceiverMessage, { type: T }>>;
  }

  /** Starts counting a new workload of `expected` deliveries. */
  async reset(expected = 0): Promise<void> {
    this.doneAt = null;
    await this.ask({ type: "reset", expected }, "progress");
  }

  progress(): Promise<Progress> {
    return this.ask({ type: "progress" }, "progress");
  }

  async report(publishEndAt?: number): Promise<ReceiverReport> {
    return (await this.ask({ type: "report", publishEndAt }, "report")).report;
  }

  async dump(): Promise<Record<string, { times: number[]; ranks: number[] }>> {
    return (await this.ask({ type: "dump" }, "dump")).arrivals;
  }

  /** Resolves with the time the last expected delivery arrived, or null at the deadline. */
  async waitDone(deadline: number): Promise<number | null> {
    while (this.doneAt === null && Date.now() < deadline && this.child.exitCode === null)
      await sleep(Math.max(0, Math.min(100, deadline - Date.now())));
    return this.doneAt;
  }

  /**
   * Polls until `until(progress)` or the deadline, and every `everyMs` prints `line(progress)` on stderr.
   * Returns the last progress.
   */
  async waitFor(until: (p: Progress) => boolean, deadline: number, line: (p: Progress) => string, everyMs = 5000): Promise<Progress> {
    let lastPrint = 0;
    for (;;) {
      const p = await this.progress();
      if (until(p) || Date.now() > deadline) return p;
      if (Date.now() - lastPrint > everyMs) {
        process.stderr.write(`${line(p)}\n`);
        lastPrint = Date.now();
      }
      await sleep(200);
    }
  }

  /** A progress line every second from `from` on, until the returned function is called. */
  follow(label: string, expected: number, from: number, published: () => number): () => void {
    let last = { unique: 0, at: 0 };
    const fmt = (n: number): string => Math.round(n).toLocaleString("en-US");
    const timer = setInterval(
      () =>
        void this.progress().then(
          (p) => {
            const spanS = (p.at - last.at) / 1000;
            const nowRate = last.at > 0 && spanS > 0 ? (p.unique - last.unique) / spanS : 0;
            const avgRate = p.unique / Math.max(0.001, (p.at - from) / 1000);
            const dup = p.total - p.unique;
            process.stderr.write(
              `  [${label}] received ${fmt(p.unique)}/${fmt(expected)}  ${fmt(nowRate)}/s now, ${fmt(avgRate)}/s avg` +
                `  published ${fmt(published())}${dup > 0 ? `  (+${fmt(dup)} repeat requests)` : ""}  t=${((p.at - from) / 1000).toFixed(0)}s\n`,
            );
            last = p;
          },
          () => undefined,
        ),
      1000,
    );
    return () => clearInterval(timer);
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 3000);
  }
}
