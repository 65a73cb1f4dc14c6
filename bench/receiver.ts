// The webhook receiver of every bench: a process of its own (this module, forked), so that the bench's publishing does not share
// its event loop; and the bench's side of it. On 127.0.0.1: /throttled answers 429 (`Retry-After: retryAfter`) to one request in
// `throttleOneIn` (default: all) and 200 to the others, /failing 500, POST /v1/traces is an OTLP/HTTP JSON sink counting spans,
// any other path 200 at once or after `delayMs`. A payload's integer "seq" counts it as a delivery, once (repeats are
// duplicates); its "sent_at" (Unix ms, may be fractional) gives publish → arrival latency, to when the headers were parsed. With
// `cap`, requests arriving while their path holds `cap` in flight are counted. Memory stays bounded over hours: a bit per seq,
// and per-delivery figures only until the bench takes them (take()).
import type { ChildProcess } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { forkReady, percentiles, preciseNow, sleep, stopChild } from "./procs.js";

type ReceiverConfig = { delayMs?: number; cap?: number; retryAfter?: number; throttleOneIn?: number };
type Progress = { type: "progress"; unique: number; total: number; throttled: number; at: number };
type Taken = { seq: number[]; at: number[]; latencyMs: number[] };
export type ReceiverReport = ReturnType<typeof report>;
type Message = { type: "ready"; port: number } | Progress | { type: "report"; report: ReceiverReport } | ({ type: "taken" } & Taken);

export class Receiver {
  private waiters: { type: string; resolve: (m: Message) => void }[] = [];

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly pid: number,
  ) {
    child.on("message", (m: Message) => {
      const i = this.waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiters.splice(i, 1)[0]!.resolve(m);
    });
  }

  static async start(logFile: string, config: ReceiverConfig = {}): Promise<Receiver> {
    const { child, ready } = await forkReady<{ type: "ready"; port: number }>(THIS_FILE, [JSON.stringify(config)], logFile);
    return new Receiver(child, ready.port, child.pid ?? -1);
  }

  url = (path: string): string => `http://127.0.0.1:${this.port}${path}`;
  destUrl = (dest: number): string => this.url(`/d/${dest}`); // Destination `dest`'s URL: its own path /d/<dest>.

  private ask<T extends Message["type"]>(msg: object, type: T): Promise<Extract<Message, { type: T }>> {
    if (this.child.exitCode !== null) return Promise.reject(new Error("receiver is gone"));
    const answer = new Promise<Extract<Message, { type: T }>>((resolve, reject) => {
      this.waiters.push({ type, resolve: resolve as (m: Message) => void });
      setTimeout(() => reject(new Error(`receiver did not answer '${type}' within 30 s`)), 30_000).unref();
    });
    this.child.send(msg);
    return answer;
  }

  /** Starts counting a new workload of `expected` deliveries. */
  reset = (expected = 0): Promise<unknown> => this.ask({ type: "reset", expected }, "progress");
  progress = (): Promise<Progress> => this.ask({ type: "progress" }, "progress");
  report = async (): Promise<ReceiverReport> => (await this.ask({ type: "report" }, "report")).report;
  stop = (): Promise<void> => stopChild(this.child, 3000);
  /** The distinct deliveries first received since the last take, in arrival order: seq, arrival (Unix ms), publish → arrival ms. */
  take = (): Promise<Taken> => this.ask({ type: "take" }, "taken");

  /** Polls until `n` distinct deliveries arrived, `stop()` or the deadline, printing progress every 2 s; the last progress. */
  async waitFor(n: number, deadline: number, label: string, more = (_: Progress) => "", stop = () => false): Promise<Progress> {
    for (let printed = Date.now(); ; await sleep(200)) {
      const p = await this.progress();
      if (p.unique >= n || stop() || Date.now() > deadline) return p;
      if (Date.now() - printed < 2000) continue;
      process.stderr.write(`  [${label}] received ${p.unique.toLocaleString("en-US")}/${n.toLocaleString("en-US")}${more(p)}\n`);
      printed = Date.now();
    }
  }
}

// ---- the receiver process --------------------------------------------------------------------

const THIS_FILE = fileURLToPath(import.meta.url);

function counters(expected: number) {
  return {
    expected,
    seen: new Uint8Array(Math.ceil(expected / 8) + 1), // a bit per seq; grown as needed
    unique: 0,
    total: 0,
    duplicates: 0,
    firstAt: null as number | null,
    lastAt: null as number | null,
    p10At: null as number | null, // arrival of the distinct delivery at 10 % of `expected`, and at 90 %: the steady middle
    p90At: null as number | null,
    taken: { seq: [], at: [], latencyMs: [] } as Taken, // the distinct deliveries first received since the last take
    maxInflight: 0,
    maxInflightPerDestination: 0,
    overCapRequests: 0,
    overCapPaths: new Set<string>(),
    spans: 0, // received on /v1/traces (OTLP/HTTP JSON)
  };
}

// total: requests since the reset, repeats included (/throttled and /failing not); latencyMs: of
// the distinct deliveries not taken yet — all of them for a bench that never takes.
function report(c: ReturnType<typeof counters>) {
  const { seen: _seen, taken, overCapPaths, ...counts } = c;
  return { ...counts, latencyMs: percentiles(taken.latencyMs), destinationsOverCap: overCapPaths.size };
}

function serve(cfg: ReceiverConfig): void {
  let [throttledRequests, throttled, inflight] = [0, 0, 0]; // kept across resets
  const inflightPerPath = new Map<string, number>();
  let c = counters(0);

  // Regexes rather than JSON.parse: the receiver should cost as little CPU as it can, and the payload shape is ours.
  const FIELD = { seq: /"seq":(\d+)/, sent_at: /"sent_at":(\d+(?:\.\d+)?)/ };
  const field = (body: string, name: keyof typeof FIELD): number => Number(FIELD[name].exec(body)?.[1] ?? NaN);

  const record = (body: string, at: number): void => {
    c.total++;
    const seq = field(body, "seq");
    if (!Number.isInteger(seq)) return;
    if (seq >> 3 >= c.seen.length) {
      const grown = new Uint8Array(Math.max(2 * c.seen.length, (seq >> 3) + 1));
      grown.set(c.seen);
      c.seen = grown;
    }
    if (c.seen[seq >> 3]! & (1 << (seq & 7))) return void c.duplicates++;
    c.seen[seq >> 3]! |= 1 << (seq & 7);
    c.unique++;
    c.firstAt ??= at;
    c.lastAt = at;
    if (c.unique === Math.floor(0.1 * c.expected)) c.p10At = at;
    if (c.unique === Math.floor(0.9 * c.expected)) c.p90At = at;
    c.taken.seq.push(seq);
    c.taken.at.push(at);
    c.taken.latencyMs.push(at - field(body, "sent_at"));
  };

  const answer = (res: http.ServerResponse, status: number, headers: Record<string, string> = {}): void =>
    void res.writeHead(status, { "content-type": "text/plain", "content-length": "2", ...headers }).end("ok");

  const server = http.createServer((req, res) => {
    const [at, path] = [preciseNow(), req.url ?? ""];
    if (path === "/throttled" || path === "/failing") {
      req.resume();
      const status = path === "/failing" ? 500 : throttledRequests++ % (cfg.throttleOneIn ?? 1) === 0 ? 429 : 200;
      if (status === 429) throttled++;
      req.on("end", () => answer(res, status, status === 429 ? { "retry-after": String(cfg.retryAfter ?? 5) } : {}));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    if (path === "/v1/traces") {
      req.on("end", () => {
        c.spans += Buffer.concat(chunks).toString("utf8").split('"spanId"').length - 1;
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
      return;
    }
    c.maxInflight = Math.max(c.maxInflight, ++inflight);
    const held = inflightPerPath.get(path) ?? 0;
    if (cfg.cap && held >= cfg.cap) {
      c.overCapRequests++;
      c.overCapPaths.add(path);
    }
    inflightPerPath.set(path, held + 1);
    c.maxInflightPerDestination = Math.max(c.maxInflightPerDestination, held + 1);
    req.on("end", () => {
      record(Buffer.concat(chunks).toString("utf8"), at);
      if (cfg.delayMs) setTimeout(() => answer(res, 200), cfg.delayMs);
      else answer(res, 200);
    });
    res.on("close", () => {
      inflight--;
      inflightPerPath.set(path, (inflightPerPath.get(path) ?? 1) - 1);
    });
  });
  // Senders keep connections open for the whole run; never be the side that closes them.
  Object.assign(server, { keepAliveTimeout: 600_000, headersTimeout: 0, requestTimeout: 0, maxRequestsPerSocket: 0 });

  const send = (m: Message): void => void process.send?.(m);
  const progress = (): Progress => ({ type: "progress", unique: c.unique, total: c.total, throttled, at: Date.now() });
  process.on("message", (m: { type: string; expected?: number }) => {
    if (m.type === "reset") c = counters(m.expected ?? 0);
    if (m.type === "reset" || m.type === "progress") send(progress());
    else if (m.type === "report") send({ type: "report", report: report(c) });
    else if (m.type === "take") {
      send({ type: "taken", ...c.taken });
      c.taken = { seq: [], at: [], latencyMs: [] };
    }
  });
  process.on("disconnect", () => process.exit(0)); // the bench is gone: so are we
  process.on("SIGTERM", () => process.exit(0));
  server.listen(0, "127.0.0.1", () => send({ type: "ready", port: (server.address() as { port: number }).port }));
}

if (process.argv[1] === THIS_FILE) serve(JSON.parse(process.argv[2] ?? "{}") as ReceiverConfig);
