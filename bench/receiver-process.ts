// The webhook receiver of every bench, run as its own process so the bench's publishing does not
// share its event loop. One node:http server per port (several ports = several origins). Its
// behaviour, from the JSON in argv[2]:
//   delayMs     answer 200 after this long (default 0: at once)
//   ports       servers to open (default 1)
//   cap         count requests arriving while their path already holds `cap` in flight (0: none)
//   retryAfter  /throttled answers 429 with `Retry-After: <retryAfter>`; each 429's time is kept
//   throttleOneIn  /throttled answers 429 to one request in N, 200 at once to the others (default 1: all)
//   log         keep every arrival by path: its time (sub-millisecond, when its headers were
//               parsed) and the payload's "rank" (-1 without one)
// A payload with "seq" (< the expected count) is a delivery: distinct ones counted by seq, repeats
// as duplicates, publish → arrival latency from "sent_at" (Unix ms on the wall clock, may be
// fractional) to when the request's headers were parsed, misrouted when its "dest" is not the
// /d/<n> it arrived at. /failing always answers 500. Any other request but to /throttled and
// /failing counts as "malformed".
// IPC in: reset {expected} (counts restart; throttledAll does not) · progress · report {publishEndAt} · dump
//         · arrivals (each seq's first arrival, sub-millisecond, as `at` above; null if none yet; and
//           this process's wall-clock offset, procs.ts wallClockOffsetMs)
//         · latencies {from} (the latencies of distinct deliveries first received since the `from`-th,
//           in arrival order, and the `next` to ask from: a window's figures without the whole run)
import http from "node:http";
import { performance } from "node:perf_hooks";
import { wallClockOffsetMs } from "./procs.js";

export type ReceiverConfig = { delayMs?: number; ports?: number; cap?: number; retryAfter?: number; throttleOneIn?: number; log?: boolean };
export type ReceiverReport = ReturnType<typeof report>;
export type Progress = ReturnType<typeof progress>;
export type ReceiverMessage =
  | { type: "ready"; ports: number[] }
  | Progress
  | { type: "report"; report: ReceiverReport }
  | { type: "dump"; arrivals: Record<string, { times: number[]; ranks: number[] }> }
  | { type: "arrivals"; at: (number | null)[]; wallClockOffsetMs: number }
  | { type: "latencies"; latencyMs: number[]; next: number };

const cfg = JSON.parse(process.argv[2] ?? "{}") as ReceiverConfig;
const delayMs = cfg.delayMs ?? 0;
const cap = cfg.cap ?? 0;
const retryAfter = String(cfg.retryAfter ?? 5);
const throttleOneIn = Math.max(1, cfg.throttleOneIn ?? 1);
// `at` (performance clock) + this = wall clock: what the senders' sent_at (Date.now()) is on.
const wallOffsetAtStart = wallClockOffsetMs();

// Kept across resets.
let throttledAll = 0;
let throttledRequests = 0;
let inflight = 0;
let openConnections = 0;
const inflightPerPath = new Map<string, number>();

function counters(expected: number) {
  return {
    expected,
    seen: new Uint8Array(expected),
    arrivals: new Float64Array(expected),
    firstAtBySeq: new Float64Array(expected).fill(NaN),
    latency: [] as number[],
    unique: 0,
    total: 0,
    misrouted: 0,
    malformed: 0,
    firstAt: null as number | null,
    lastAt: null as number | null,
    throttled: [] as number[],
    logged: new Map<string, { times: number[]; ranks: number[] }>(),
    loggedCount: 0,
    maxInflight: 0,
    maxInflightPerDestination: 0,
    connections: 0,
    peakOpenConnections: openConnections,
    overCapRequests: 0,
    overCapPaths: new Set<string>(),
  };
}
let c = counters(0);

// Regexes rather than JSON.parse: the receiver should cost as little CPU as it can, and the payload shape is ours.
const FIELD = { seq: /"seq":(\d+)/, dest: /"dest":(\d+)/, sent_at: /"sent_at":(\d+(?:\.\d+)?)/, rank: /"rank":(\d+)/ };
const field = (body: string, name: keyof typeof FIELD): number => Number(FIELD[name].exec(body)?.[1] ?? NaN);

function record(path: string, body: string, at: number): void {
  const now = Date.now();
  c.total++;
  if (cfg.log) {
    let l = c.logged.get(path);
    if (!l) c.logged.set(path, (l = { times: [], ranks: [] }));
    l.times.push(at);
    l.ranks.push(Number(FIELD.rank.exec(body)?.[1] ?? -1));
    c.loggedCount++;
  }
  const seq = field(body, "seq");
  if (!Number.isInteger(seq) || seq >= c.expected) {
    c.malformed++;
    return;
  }
  const dest = field(body, "dest");
  if (!Number.isNaN(dest) && path.startsWith("/d/") && path !== `/d/${dest}`) c.misrouted++;
  if (c.seen[seq]! < 255) c.seen[seq]!++;
  if (c.seen[seq] !== 1) return;
  c.arrivals[c.unique++] = now;
  c.firstAtBySeq[seq] = at;
  c.firstAt ??= now;
  c.lastAt = now;
  const sentAt = field(body, "sent_at");
  if (Number.isFinite(sentAt)) c.latency.push(at + wallOffsetAtStart - sentAt);
}

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  const at = performance.timeOrigin + performance.now();
  const path = req.url ?? "";
  if (path === "/throttled") {
    req.resume();
    if (throttledRequests++ % throttleOneIn !== 0) {
      req.on("end", () => res.writeHead(200, { "content-type": "text/plain", "content-length": "2" }).end("ok"));
      return;
    }
    c.throttled.push(Date.now());
    throttledAll++;
    req.on("end", () => res.writeHead(429, { "retry-after": retryAfter, "content-type": "text/plain", "content-length": "4" }).end("slow"));
    return;
  }
  if (path === "/failing") {
    req.resume();
    req.on("end", () => res.writeHead(500, { "content-type": "text/plain", "content-length": "4" }).end("fail"));
    return;
  }
  c.maxInflight = Math.max(c.maxInflight, ++inflight);
  const held = inflightPerPath.get(path) ?? 0;
  if (cap > 0 && held >= cap) {
    c.overCapRequests++;
    c.overCapPaths.add(path);
  }
  inflightPerPath.set(path, held + 1);
  c.maxInflightPerDestination = Math.max(c.maxInflightPerDestination, held + 1);
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    record(path, Buffer.concat(chunks).toString("utf8"), at);
    const answer = (): void => void res.writeHead(200, { "content-type": "text/plain", "content-length": "2" }).end("ok");
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
  res.on("close", () => {
    inflight--;
    inflightPerPath.set(path, (inflightPerPath.get(path) ?? 1) - 1);
  });
}

/**
 * total: requests since the reset, repeats and malformed included (/throttled and /failing not);
 * p10At/p90At: arrival of the distinct delivery at 10 % and 90 % of `expected` (the steady middle);
 * receivedAfterPublish: distinct deliveries first received after `publishEndAt`; throttled: arrival
 * times of the 429s /throttled answered since the reset (throttledAll: since the start).
 */
function report(publishEndAt: number) {
  const { seen, arrivals, latency, logged: _logged, loggedCount: _loggedCount, firstAtBySeq: _firstAtBySeq, overCapPaths, ...counts } = c;
  const lat = [...latency].sort((a, b) => a - b);
  const pct = (p: number): number => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))]!;
  const nth = (f: number): number | null => (Math.floor(f * c.expected) < c.unique ? arrivals[Math.floor(f * c.expected)]! : null);
  return {
    ...counts,
    duplicates: seen.reduce((n, s) => n + Math.max(0, s - 1), 0),
    p10At: nth(0.1),
    p90At: nth(0.9),
    receivedAfterPublish: arrivals.subarray(0, c.unique).filter((t) => t > publishEndAt).length,
    latencyMs: lat.length === 0 ? null : { p50: pct(50), p90: pct(90), p99: pct(99), max: lat[lat.length - 1]! },
    destinationsOverCap: overCapPaths.size,
    throttledAll,
  };
}

function progress() {
  return {
    type: "progress" as const,
    unique: c.unique,
    total: c.total,
    throttled: c.throttled.length,
    throttledAll,
    logged: c.loggedCount,
    at: Date.now(),
  };
}

const send = (m: ReceiverMessage): void => void process.send?.(m);
process.on("message", (m: { type: string; expected?: number; publishEndAt?: number; from?: number }) => {
  if (m.type === "reset") c = counters(m.expected ?? 0);
  if (m.type === "reset" || m.type === "progress") send(progress());
  else if (m.type === "report") send({ type: "report", report: report(m.publishEndAt ?? Infinity) });
  else if (m.type === "dump") send({ type: "dump", arrivals: Object.fromEntries(c.logged) });
  else if (m.type === "arrivals")
    send({ type: "arrivals", at: Array.from(c.firstAtBySeq, (t) => (Number.isNaN(t) ? null : t)), wallClockOffsetMs: wallClockOffsetMs() });
  else if (m.type === "latencies") send({ type: "latencies", latencyMs: c.latency.slice(m.from ?? 0), next: c.latency.length });
});
process.on("disconnect", () => process.exit(0)); // the bench is gone: so are we
process.on("SIGTERM", () => process.exit(0));

const listening = Array.from({ length: Math.max(1, cfg.ports ?? 1) }, () => {
  const server = http.createServer(handle);
  // Senders keep connections open for the whole run; never be the side that closes them.
  server.keepAliveTimeout = 600_000;
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  server.maxRequestsPerSocket = 0;
  server.on("connection", (socket) => {
    c.connections++;
    c.peakOpenConnections = Math.max(c.peakOpenConnections, ++openConnections);
    socket.once("close", () => openConnections--);
  });
  return new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
});
void Promise.all(listening).then((ports) => send({ type: "ready", ports }));
