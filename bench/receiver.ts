// The bench's side of the receiver process (bench/receiver-process.ts): start it, ask it for its
// progress and measurements, wait for a workload to arrive.
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { forkReady, sleep, stopChild } from "./procs.js";
import type { Progress, ReceiverConfig, ReceiverMessage } from "./receiver-process.js";

export type { Progress, ReceiverReport } from "./receiver-process.js";
type Message<T extends ReceiverMessage["type"]> = Extract<ReceiverMessage, { type: T }>;

export class Receiver {
  private waiters: { type: string; resolve: (m: ReceiverMessage) => void }[] = [];

  private constructor(
    readonly child: ChildProcess,
    readonly ports: number[],
  ) {
    child.on("message", (m: ReceiverMessage) => {
      const i = this.waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m);
    });
  }

  static async start(logFile: string, config: ReceiverConfig = {}): Promise<Receiver> {
    const module = fileURLToPath(new URL("./receiver-process.ts", import.meta.url));
    const { child, ready } = await forkReady<Message<"ready">>(module, [JSON.stringify(config)], logFile);
    return new Receiver(child, ready.ports);
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

  private ask<T extends ReceiverMessage["type"]>(msg: object, type: T): Promise<Message<T>> {
    if (this.child.exitCode !== null) return Promise.reject(new Error("receiver is gone"));
    const answer = new Promise<Message<T>>((resolve, reject) => {
      this.waiters.push({ type, resolve: resolve as (m: ReceiverMessage) => void });
      setTimeout(() => reject(new Error(`receiver did not answer '${type}' within 30 s`)), 30_000).unref();
    });
    this.child.send(msg);
    return answer;
  }

  /** Starts counting a new workload of `expected` deliveries. */
  async reset(expected = 0): Promise<void> {
    await this.ask({ type: "reset", expected }, "progress");
  }

  progress(): Promise<Progress> {
    return this.ask({ type: "progress" }, "progress");
  }

  async report(publishEndAt?: number) {
    return (await this.ask({ type: "report", publishEndAt }, "report")).report;
  }

  async dump(): Promise<Record<string, { times: number[]; ranks: number[] }>> {
    return (await this.ask({ type: "dump" }, "dump")).arrivals;
  }

  /**
   * Each seq's first arrival (Unix ms on the receiver's performance clock, sub-millisecond: when its
   * headers were parsed), null for one not (yet) received; and the receiver's wall-clock offset.
   */
  async arrivalsBySeq(): Promise<{ at: (number | null)[]; wallClockOffsetMs: number }> {
    const m = await this.ask({ type: "arrivals" }, "arrivals");
    return { at: m.at, wallClockOffsetMs: m.wallClockOffsetMs };
  }

  /**
   * Publish → arrival latencies (ms) of the distinct deliveries first received since the `from`-th
   * (0 after a reset), in arrival order, and the `next` to ask from.
   */
  async latencies(from: number): Promise<{ latencyMs: number[]; next: number }> {
    const m = await this.ask({ type: "latencies", from }, "latencies");
    return { latencyMs: m.latencyMs, next: m.next };
  }

  /** Polls until `until(progress)` or the deadline, printing `line(progress)` on stderr every `everyMs`; the last progress. */
  async waitFor(
    until: (p: Progress) => boolean | Promise<boolean>,
    deadline: number,
    line?: (p: Progress) => string,
    everyMs = 5000,
  ): Promise<Progress> {
    for (let printed = Date.now(); ; await sleep(200)) {
      const p = await this.progress();
      if ((await until(p)) || Date.now() > deadline) return p;
      if (line && Date.now() - printed >= everyMs) {
        process.stderr.write(`${line(p)}\n`);
        printed = Date.now();
      }
    }
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 3000);
  }
}
