// Receiver process for bench/isolation.ts and bench/scale.ts (its own process, so the bench's
// publishing does not share its event loop).
//   /d/<n>       answers 200 at once; counts distinct deliveries by the payload's "seq", records
//                each one's first arrival time and, when the payload has "sent_at" (ms), the
//                publish → arrival latency.
//   /throttled   answers 429 with `Retry-After: <retryAfter>` and records when each request came.
// argv: [<retryAfter seconds, default 5>]
// IPC in:  {type: "reset", expected}  start counting a new workload (throttled requests keep counting
//                                      in `throttledAll`, and restart in `throttled`)
//          {type: "progress"} · {type: "report"}
// IPC out: {type: "ready", port} · {type: "progress", ...} · {type: "report", report}
import http from "node:http";

export interface CountReport {
  expected: number;
  unique: number;
  /** Requests to /d/* since the reset, repeats included. */
  total: number;
  duplicates: number;
  malformed: number;
  firstAt: number | null;
  lastAt: number | null;
  /** Arrival time of the distinct delivery at 10 % and 90 % of `expected` (the steady middle). */
  p10At: number | null;
  p90At: number | null;
  latencyMs: { p50: number; p90: number; p99: number; max: number } | null;
  /** Arrival times (ms) of requests to /throttled since the reset. */
  throttled: number[];
  /** Requests to /throttled since the process started. */
  throttledAll: number;
}

export type CountMessage =
  | { type: "ready"; port: number }
  | { type: "progress"; unique: number; total: number; throttled: number; throttledAll: number; at: number }
  | { type: "report"; report: CountReport };

const retryAfter = process.argv[2] ?? "5";

let expected = 0;
let seen = new Uint8Array(0);
let arrivals = new Float64Array(0);
let latency = new Float64Array(0);
let latencies = 0;
let unique = 0;
let total = 0;
let malformed = 0;
let firstAt: number | null = null;
let lastAt: number | null = null;
let throttled: number[] = [];
let throttledAll = 0;

function reset(n: number): void {
  expected = n;
  seen = new Uint8Array(n);
  arrivals = new Float64Array(n);
  latency = new Float64Array(n);
  latencies = unique = total = malformed = 0;
  firstAt = lastAt = null;
  throttled = [];
}

// Regexes, not JSON.parse: the receiver should cost as little CPU as it can; the payload is ours.
const SEQ = /"seq":(\d+)/;
const SENT_AT = /"sent_at":(\d+)/;

function record(body: string): void {
  const now = Date.now();
  total++;
  const seq = Number(SEQ.exec(body)?.[1] ?? NaN);
  if (!Number.isInteger(seq) || seq < 0 || seq >= expected) {
    malformed++;
    return;
  }
  if (seen[seq]! < 255) seen[seq] = seen[seq]! + 1;
  if (seen[seq] !== 1) return;
  arrivals[unique++] = now;
  firstAt ??= now;
  lastAt = now;
  const sentAt = Number(SENT_AT.exec(body)?.[1] ?? NaN);
  if (Number.isFinite(sentAt)) latency[latencies++] = now - sentAt;
}

const server = http.createServer((req, res) => {
  const path = req.url ?? "";
  if (path === "/throttled") {
    throttled.push(Date.now());
    throttledAll++;
    req.resume();
    req.on("end", () => {
      res.writeHead(429, { "retry-after": retryAfter, "content-type": "text/plain", "content-length": "4" });
      res.end("slow");
    });
    return;
  }
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    if (path.startsWith("/d/")) record(Buffer.concat(chunks).toString("utf8"));
    res.writeHead(path.startsWith("/d/") ? 200 : 404, { "content-type": "text/plain", "content-length": "2" });
    res.end("ok");
  });
});
// Senders keep connections open for the whole run; never be the side that closes them.
server.keepAliveTimeout = 600_000;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;

function pct(sorted: Float64Array, p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(): CountReport {
  const lat = latency.slice(0, latencies).sort();
  let dupes = 0;
  for (let i = 0; i < expected; i++) if (seen[i]! > 1) dupes += seen[i]! - 1;
  const at = (f: number): number | null => {
    const i = Math.floor(f * expected);
    return i < unique ? arrivals[i]! : null;
  };
  return {
    expected, unique, total, duplicates: dupes, malformed, firstAt, lastAt, p10At: at(0.1), p90At: at(0.9),
    latencyMs: lat.length === 0 ? null : { p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: lat[lat.length - 1]! },
    throttled: [...throttled], throttledAll,
  };
}

const send = (m: CountMessage): void => void process.send?.(m);
process.on("message", (m: { type: string; expected?: number }) => {
  if (m.type === "reset") {
    reset(m.expected ?? 0);
    send({ type: "progress", unique, total, throttled: throttled.length, throttledAll, at: Date.now() });
  } else if (m.type === "progress") {
    send({ type: "progress", unique, total, throttled: throttled.length, throttledAll, at: Date.now() });
  } else if (m.type === "report") {
    send({ type: "report", report: report() });
  }
});
process.on("disconnect", () => process.exit(0)); // the bench is gone: so are we
process.on("SIGTERM", () => process.exit(0));
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  send({ type: "ready", port: typeof addr === "object" && addr !== null ? addr.port : 0 });
});
