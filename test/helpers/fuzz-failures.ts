// What the API fuzz (fuzz.ts) found, and the health watch that adds to it: failures are kept by
// class (one problem, however often it is hit), each with its count, where it was seen and its
// smallest example.
import { availableParallelism, loadavg } from "node:os";
import { Worker } from "node:worker_threads";

export interface Failure {
  /**
   * server-error, error-shape, not-json, leak, other-tenant, media-type, no-answer, healthz,
   * unresponsive, exited, server-log; and the test's own: tenant-b-changed, tenant-b-received, stalled, post-check.
   */
  kind: string;
  /** The class: failures with one key are one problem. */
  key: string;
  title: string;
  detail: string;
  /** The shown request's size (body and path): the smallest example of a class is kept. */
  size: number;
  count: number;
  where: Set<string>;
}

export class FailureLog {
  readonly byKey = new Map<string, Failure>();
  constructor(readonly collect: boolean) {}
  add(f: Omit<Failure, "count" | "where">, where?: string): void {
    const seen = this.byKey.get(f.key);
    if (!seen) {
      this.byKey.set(f.key, { ...f, count: 1, where: new Set(where ? [where] : []) });
      return;
    }
    seen.count++;
    if (where) seen.where.add(where);
    if (f.size < seen.size) Object.assign(seen, { title: f.title, detail: f.detail, size: f.size });
  }
  get size(): number {
    return this.byKey.size;
  }
  report(): string {
    return [...this.byKey.values()]
      .map((f, i) => {
        const where = f.where.size ? `\n  seen on: ${[...f.where].slice(0, 40).join(", ")}${f.where.size > 40 ? ", …" : ""}` : "";
        return `${i + 1}. [${f.kind} ×${f.count}] ${f.title}${where}\n${f.detail.replace(/^/gm, "  ")}`;
      })
      .join("\n\n");
  }
}

/** Ids, numbers and quoted text out of a message: what is left names the problem, not the case. */
export function normalize(text: string): string {
  return text
    .replace(/\b[a-z]{2,5}_[0-9a-f]{20,}\b/g, "<id>")
    .replace(/'[^']*'/g, "'…'")
    .replace(/"[^"]*"/g, '"…"')
    .replace(/\d+/g, "N")
    .slice(0, 160);
}

export function truncate(text: string, max = 700): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 160)} …(${text.length} chars in all)… ${text.slice(-120)}`;
}

// ---------------------------------------------------------------------------------------------
// The health watch: GET /healthz every 250 ms, each given `timeoutMs`. It polls from a worker thread of its
// own, so that the fuzz's own work on this thread (building a 1 MiB body, say) cannot delay a
// poll and pass for a slow Sluice. Silence is counted from when the thread began to poll: its own
// start, and the set-up before it, can take seconds on a loaded machine and are not Sluice's.

const POLLER = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const agent = new http.Agent({ keepAlive: true });
const { url, intervalMs, timeoutMs } = workerData;
parentPort.postMessage({ ready: Date.now() });
setInterval(() => {
  const started = Date.now();
  let done = false;
  const finish = (m) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    parentPort.postMessage({ started, ms: Date.now() - started, ...m });
  };
  const req = http.get(url + "/healthz", { agent }, (res) => {
    res.resume();
    res.on("end", () => finish({ status: res.statusCode }));
    res.on("error", (e) => finish({ error: e.message }));
  });
  const timer = setTimeout(() => req.destroy(new Error("no answer within " + timeoutMs + " ms")), timeoutMs);
  req.on("error", (e) => finish({ error: e.message }));
}, intervalMs);
`;

interface Poll {
  started: number;
  ms: number;
  status?: number;
  error?: string;
}

export class HealthWatch {
  /** The last 200 in time, or when polling began. */
  lastOkAt = Date.now();
  polls = 0;
  misses = 0;
  /** The slowest 200 seen, in time or not: how near the budget a run came. */
  slowestOkMs = 0;
  /** What was in flight when a poll missed: the likely culprits. */
  describeInflight: () => string[] = () => [];
  private worker: Worker | undefined;

  constructor(
    private readonly url: string,
    private readonly failures: FailureLog,
    private readonly label: string,
    private readonly intervalMs = 250,
    private readonly timeoutMs = 1_000,
  ) {}

  start(): this {
    this.lastOkAt = Date.now();
    this.worker = new Worker(POLLER, { eval: true, workerData: { url: this.url, intervalMs: this.intervalMs, timeoutMs: this.timeoutMs } });
    this.worker.on("message", (m: Poll | { ready: number }) => {
      if ("ready" in m) this.lastOkAt = Math.max(this.lastOkAt, m.ready);
      else this.record(m);
    });
    this.worker.unref();
    return this;
  }

  private record(m: Poll): void {
    this.polls++;
    if (m.status === 200) this.slowestOkMs = Math.max(this.slowestOkMs, m.ms);
    if (m.status === 200 && m.ms <= this.timeoutMs) {
      this.lastOkAt = Math.max(this.lastOkAt, m.started + m.ms);
      return;
    }
    this.misses++;
    const outcome =
      m.status === 200 ? `200 after ${m.ms} ms` : m.status !== undefined ? `${m.status} after ${m.ms} ms` : (m.error ?? "no answer");
    this.failures.add({
      kind: "healthz",
      key: `healthz|${outcome.replace(/\d+ ms/, "")}`,
      title: `GET /healthz on ${this.label}: ${outcome} (more than ${this.timeoutMs} ms, or not 200)`,
      detail:
        `at ${new Date(m.started).toISOString()}, host load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} CPUs; in flight then:\n` +
        (this.describeInflight()
          .map((l) => `  ${l}`)
          .join("\n") || "  (no fuzz request)"),
      size: 0,
    });
  }

  /** How long since /healthz last answered 200 in time. */
  silentForMs(): number {
    return Date.now() - this.lastOkAt;
  }

  async stop(): Promise<void> {
    await this.worker?.terminate();
  }
}

export interface LoggedError {
  msg: string;
  /** The message, the error's type and message, and its first frame in src/. */
  summary: string;
  line: string;
}

/** The error (and fatal) lines of Sluice's JSON log. */
export function loggedErrors(text: string): LoggedError[] {
  const out: LoggedError[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let entry: { level?: string | number; msg?: string; err?: { type?: string; message?: string; stack?: string } };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue; // not a log line (or one cut by the read)
    }
    if (!["error", "fatal", 50, 60].includes(entry.level ?? "")) continue;
    const frame = entry.err?.stack
      ?.split("\n")
      .find((l) => l.includes("/src/"))
      ?.trim()
      .replace(/\(.*\/(src\/[^)]*)\)/, "($1)");
    const msg = entry.msg ?? "";
    out.push({ msg, summary: `${msg}: ${entry.err?.type ?? ""}: ${entry.err?.message ?? ""}${frame ? ` ${frame}` : ""}`, line });
  }
  return out;
}

/**
 * Records every error Sluice logged from `from` on that no request answered for (5xx answers
 * are checked where they arrive): a worker that failed on a fuzzed config, an unhandled
 * rejection. Returns where it stopped reading: the end of the last whole line.
 */
export function checkServerLog(failures: FailureLog, label: string, log: string, from: number): number {
  const end = log.lastIndexOf("\n") + 1;
  if (end <= from) return from;
  for (const e of loggedErrors(log.slice(from, end))) {
    if (e.msg === "request failed") continue;
    failures.add({
      kind: "server-log",
      key: `log|${normalize(e.summary)}`,
      title: `Sluice on ${label} logged an error outside any answer: ${truncate(e.summary, 300)}`,
      detail: truncate(e.line, 2000),
      size: e.line.length,
    });
  }
  return end;
}
