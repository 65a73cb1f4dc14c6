import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { SessionOps } from "./embedded-session.js";
import type { TxStep } from "./statements.js";

// The embedded store's session on a thread of its own (embedded-worker.ts runs it). PGlite is
// Postgres compiled to WebAssembly; in Sluice's thread its execution took turns with everything
// else Sluice does — HTTP in and out, signing, planning — on one core while the machine's other
// core idled. On its own thread the two overlap. What crosses between the threads is small: a
// statement's text and parameters one way, its rows the other, errors as plain fields.
//
// The thread does all of a statement's work, turning values into protocol messages and the
// answer into rows included: a version that sent raw protocol bytes and did that work here was
// ~25 % slower (npm run bench -- --scenarios embedded), since Sluice's thread, busier, then took
// longer to send each transaction's next statement.

/** An operation of SessionOps, as sent to the session's thread. */
export interface Call {
  id: number;
  op: keyof SessionOps;
  args: unknown[];
}

/** A call that ends its transaction: `run` with `commit` (its arguments as SessionThread.run sends them). */
export function commits(c: Call): boolean {
  return c.op === "run" && c.args[3] === true;
}

/** The answer to call `id` (0: the session opened, or failed to). */
export type Answer = { id: number; ok: unknown } | { id: number; err: WireError };

/** An error as it crosses threads: its message and own fields (a Postgres error's code, detail, …). */
export interface WireError {
  message: string;
  fields: Record<string, unknown>;
}

export function toWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { message: describeThrown(err), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err)) if (v === null || ["string", "number", "boolean"].includes(typeof v)) fields[k] = v;
  return { message: err.message, fields };
}

/**
 * What was thrown, when it is not an Error: PGlite's file system throws Emscripten's ErrnoError, a
 * plain object ({ name: "ErrnoError", errno: 44 }), which String() would turn into "[object Object]".
 */
function describeThrown(x: unknown): string {
  if (typeof x !== "object" || x === null) return String(x);
  const o = x as Record<string, unknown>;
  if (typeof o.message === "string" && o.message !== "") return o.message;
  const facts = Object.entries(o)
    .filter(([k, v]) => k !== "name" && ["string", "number", "boolean"].includes(typeof v))
    .map(([k, v]) => `${k} ${String(v)}`);
  const name = typeof o.name === "string" ? o.name : (o.constructor?.name ?? "an object");
  return facts.length > 0 ? `${name} (${facts.join(", ")})` : name;
}

/**
 * A call that failed because the thread stopped without being closed (it crashed, or PGlite in it
 * broke): the store is unavailable until EmbeddedDb (db.ts) has opened the folder again.
 */
export class ThreadStoppedError extends Error {}

/**
 * An error that leaves PGlite unusable: a trap in its WebAssembly (out of memory, an assertion) or
 * its Postgres calling exit. The thread answers the call with it, then ends, so that the store is
 * opened afresh instead of every later statement failing in a broken instance.
 */
export function isFatal(err: unknown): boolean {
  return (
    err instanceof WebAssembly.RuntimeError ||
    (typeof err === "object" && err !== null && (err as { name?: unknown }).name === "ExitStatus")
  );
}

function fromWire(w: WireError): Error {
  return Object.assign(new Error(w.message), w.fields);
}

/**
 * The thread running embedded-worker, beside this file: compiled, as it is; from source (tests,
 * tsx), through tsx's loader, which a thread does not inherit.
 */
function startWorker(workerData: WorkerData): Worker {
  const ext = path.extname(fileURLToPath(import.meta.url));
  const file = new URL(`./embedded-worker${ext}`, import.meta.url);
  if (ext !== ".ts") return new Worker(file, { workerData });
  const load = `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((tsx) => tsx.tsImport(${JSON.stringify(file.href)}, ${JSON.stringify(file.href)}))`;
  return new Worker(load, { eval: true, workerData });
}

/** What the thread opens: the folder, and whether it must already hold a store (see EmbeddedSession.open). */
export interface WorkerData {
  dir: string;
  existing: boolean;
}

export class SessionThread implements SessionOps {
  private next = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** Set once the thread has stopped: every call fails with it. */
  private stopped: Error | null = null;
  /** Until the session has opened: a thread that stops then is a failure to open, not a crash. */
  private opening = true;

  constructor(
    private readonly worker: Worker,
    /** Told once when the thread stops without close() (not told of a failure to open). */
    private readonly onCrash: (err: ThreadStoppedError) => void,
  ) {
    // An idle store does not keep the process alive (as PGlite in Sluice's own thread did not).
    worker.unref();
    worker.on("message", (a: Answer) => this.answer(a));
    worker.on("error", (err) => this.crashed(new ThreadStoppedError(`the embedded store's thread failed: ${err.message}`, { cause: err })));
    worker.on("exit", (code) => this.crashed(new ThreadStoppedError(`the embedded store's thread stopped (exit code ${code})`)));
  }

  /** Ends the thread at once, as a crash would: what the store does then is tested with it. */
  async kill(): Promise<void> {
    await this.worker.terminate();
  }

  /** Resolves once the session has opened; rejects with why it could not. */
  async opened(): Promise<void> {
    try {
      await this.answered(0);
    } finally {
      this.opening = false;
    }
  }

  query(sql: string, params: unknown[]): Promise<unknown[]> {
    return this.call("query", [sql, params]) as Promise<unknown[]>;
  }

  run(sql: string, params: unknown[], before: TxStep[], commit: boolean): Promise<{ rows: unknown[]; tag: string | null }> {
    return this.call("run", [sql, params, before, commit]) as Promise<{ rows: unknown[]; tag: string | null }>;
  }

  steps(steps: TxStep[]): Promise<string> {
    return this.call("steps", [steps]) as Promise<string>;
  }

  script(sql: string): Promise<void> {
    return this.call("script", [sql]) as Promise<void>;
  }

  async close(): Promise<void> {
    try {
      await this.call("close", []);
    } finally {
      this.stopped ??= new Error("the embedded store is closed");
      await this.worker.terminate();
    }
  }

  private call(op: keyof SessionOps, args: unknown[]): Promise<unknown> {
    const id = this.next++;
    const answered = this.answered(id);
    if (!this.stopped) this.worker.postMessage({ id, op, args } satisfies Call);
    return answered;
  }

  private answered(id: number): Promise<unknown> {
    if (this.stopped) return Promise.reject(this.stopped);
    // Waiting on the thread keeps the process alive, as a statement under way did in one thread.
    if (this.pending.size === 0) this.worker.ref();
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  private answer(a: Answer): void {
    const p = this.pending.get(a.id);
    if (!p) return;
    this.pending.delete(a.id);
    if (this.pending.size === 0) this.worker.unref();
    if ("err" in a) p.reject(fromWire(a.err));
    else p.resolve(a.ok);
  }

  private crashed(err: ThreadStoppedError): void {
    const first = this.stopped === null;
    this.stop(err);
    if (first && !this.opening) this.onCrash(err);
  }

  private stop(err: Error): void {
    this.stopped ??= err;
    for (const p of this.pending.values()) p.reject(this.stopped);
    this.pending.clear();
  }
}

/**
 * Opens the embedded store in `dir` (`memory://…`: in memory), its session on a thread of its own;
 * `onCrash` is told if that thread later stops without being closed.
 */
export async function openSessionThread(
  dir: string,
  onCrash: (err: ThreadStoppedError) => void,
  opts: { existing?: boolean } = {},
): Promise<SessionThread> {
  const thread = new SessionThread(startWorker({ dir, existing: opts.existing ?? false }), onCrash);
  try {
    await thread.opened();
  } catch (err) {
    await thread.close().catch(() => undefined);
    throw err;
  }
  return thread;
}
