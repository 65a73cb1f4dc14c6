// The webhook receiver of every bench, run as its own process so the bench's publishing does not
// share its event loop. One node:http server per port (several ports = several origins, as distinct
// destinations usually are: senders cap sockets per origin). Its behaviour, from the JSON in argv[2]:
//   delayMs     answer 200 after this long (default 0: at once)
//   ports       servers to open (default 1)
//   cap         per-destination limit to check: requests arriving while their path already holds
//               `cap` in flight are counted (default 0: none)
//   retryAfter  /throttled answers 429 with `Retry-After: <retryAfter>` and records when each request came
//   log         keep every arrival by path: its time (sub-millisecond, taken when its headers were
//               parsed, before the body) and the payload's "rank" (-1 without one)
// A payload with "seq" (< the expected count) is a delivery: distinct ones counted by seq, repeats
// as duplicates, publish → arrival latency from "sent_at" (ms), and misrouted when its "dest" is
// not the /d/<n> it arrived at. Any other request to a path but /throttled counts as "malformed".
// IPC in:  reset {expected} (counts restart; throttledAll does not) · progress · report {publishEndAt} · dump
// IPC out: ready {ports} · progress · done {at} (the expected count reached) · report · dump
import http from "node:http";
import { performance } from "node:perf_hooks";

export interface ReceiverConfig {
  delayMs?: number;
  ports?: number;
  cap?: number;
  retryAfter?: number;
  log?: boolean;
}

export type ReceiverReport = ReturnType<typeof report>;
export type Progress = {
  type: "progress";
  unique: number;
  total: number;
  throttled: number;
  throttledAll: number;
  logged: number;
  at: number;
};
export type ReceiverMessage =
  | { type: "ready"; ports: number[] }
  | Progress
  | { type: "done"; at: number }
  | { type: "report"; report: ReceiverReport }
  /** Every logged arrival by path. */
  | { type: "dump"; arrivals: Record<string, { times: number[]; ranks: number[] }> };

const cfg = JSON.parse(process.argv[2] ?? "{}") as ReceiverConfig;
const delayMs = cfg.delayMs ?? 0;
const cap = cfg.cap ?? 0;
const retryAfter = String(cfg.retryAfter ?? 5);

let expected = 0;
let seen = new Uint8Array(0);
let arrivals = new Float64Array(0);
let latency = new Float64Array(0);
let latencies = 0,
  unique = 0,
  total = 0,
  misrouted = 0,
  malformed = 0;
let firstAt: number | null = null,
  lastAt: number | null = null;
let throttled: number[] = [];
let throttledAll = 0;
let logged = new Map<string, { times: number[]; ranks: number[] }>();
let loggedCount = 0;
let inflight = 0,
  maxInflight = 0,
  maxInflightPerDest = 0,
  connections = 0,
  openConnections = 0,
  peakOpenConnections = 0,
  overCapRequests = 0;
const inflightPerPath = new Map<string, number>();
let overCapPaths = new Set<string>();

function reset(n: number): void {
  expected = n;
  seen = new Uint8Array(n);
  arrivals = new Float64Array(n);
  latency = new Float64Array(n);
  latencies = unique = total = misrouted = malformed = loggedCount = overCapRequests = 0;
  maxInflight = maxInflightPerDest = connections = 0;
  peakOpenConnections = openConnections;
  firstAt = lastAt = null;
  throttled = [];
  logged = new Map();
  overCapPaths = new Set();
}

// Regexes rather than JSON.parse: the receiver should cost as little CPU as it can, and the
// payload shape is ours.
const SEQ = /"seq":(\d+)/;
const DEST = /"dest":(\d+)/;
const SENT_AT = /"sent_at":(\d+)/;
const RANK = /"rank":(\d+)/;

function record(path: string, body: string, at: number): void {
  const now = Date.now();
  total++;
  if (cfg.log) {
    let l = logged.get(path);
    if (!l) logged.set(path, (l = { times: [], ranks: [] }));
    l.times.push(at);
    l.ranks.push(Number(RANK.exec(body)?.[1] ?? -1));
    loggedCount++;
  }
  const seq = Number(SEQ.exec(body)?.[1] ?? NaN);
  if (!Number.isInteger(seq) || seq < 0 || seq >= expected) {
    malformed++;
    return;
  }
  const dest = DEST.exec(body)?.[1];
  if (dest !== undefined && path.startsWith("/d/") && path !== `/d/${dest}`) misrouted++;
  if (seen[seq]! < 255) seen[seq] = seen[seq]! + 1;
  if (seen[seq] !== 1) return;
  arrivals[unique++] = now;
  firstAt ??= now;
  lastAt = now;
  const sentAt = Number(SENT_AT.exec(body)?.[1] ?? NaN);
  if (Number.isFinite(sentAt)) latency[latencies++] = now - sentAt;
  if (unique === expected) send({ type: "done", at: now });
}

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  const at = performance.timeOrigin + performance.now();
  const path = req.url ?? "";
  if (path === "/throttled") {
    throttled.push(Date.now());
    throttledAll++;
    req.resume();
    req.on("end", () => res.writeHead(429, { "retry-after": retryAfter, "content-type": "text/plain", "content-length": "4" }).end("slow"));
    return;
  }
  if (++inflight > maxInflight) maxInflight = inflight;
  const held = inflightPerPath.get(path) ?? 0;
  if (cap > 0 && held >= cap) {
    overCapRequests++;
    overCapPaths.add(path);
  }
  inflightPerPath.set(path, held + 1);
  if (held + 1 > maxInflightPerDest) maxInflightPerDest = held + 1;
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
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

const pct = (sorted: Float64Array, p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/**
 * total: requests since the reset, repeats and malformed included (/throttled not); p10At/p90At:
 * arrival of the distinct delivery at 10 % and 90 % of `expected` (the steady middle);
 * receivedAfterPublish: distinct deliveries first received after `publishEndAt`; throttled: arrival
 * times (ms) of requests to /throttled since the reset (throttledAll: since the start).
 */
function report(publishEndAt: number) {
  const lat = latency.slice(0, latencies).sort();
  let dupes = 0;
  for (let i = 0; i < expected; i++) if (seen[i]! > 1) dupes += seen[i]! - 1;
  let after = 0;
  for (let i = 0; i < unique; i++) if (arrivals[i]! > publishEndAt) after++;
  const nth = (f: number): number | null => {
    const i = Math.floor(f * expected);
    return i < unique ? arrivals[i]! : null;
  };
  return {
    expected,
    unique,
    total,
    duplicates: dupes,
    misrouted,
    malformed,
    firstAt,
    lastAt,
    p10At: nth(0.1),
    p90At: nth(0.9),
    receivedAfterPublish: after,
    latencyMs: lat.length === 0 ? null : { p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: lat[lat.length - 1]! },
    maxInflight,
    maxInflightPerDestination: maxInflightPerDest,
    connections,
    peakOpenConnections,
    overCapRequests,
    destinationsOverCap: overCapPaths.size,
    throttled: [...throttled],
    throttledAll,
  };
}

const send = (m: ReceiverMessage): void => void process.send?.(m);
const progress = (): void =>
  send({ type: "progress", unique, total, throttled: throttled.length, throttledAll, logged: loggedCount, at: Date.now() });
process.on("message", (m: { type: string; expected?: number; publishEndAt?: number }) => {
  if (m.type === "reset") reset(m.expected ?? 0);
  if (m.type === "reset" || m.type === "progress") progress();
  else if (m.type === "report") send({ type: "report", report: report(m.publishEndAt ?? Infinity) });
  else if (m.type === "dump") send({ type: "dump", arrivals: Object.fromEntries(logged) });
});
process.on("disconnect", () => process.exit(0)); // the bench is gone: so are we
process.on("SIGTERM", () => process.exit(0));

const servers = Array.from({ length: Math.max(1, cfg.ports ?? 1) }, () => {
  const server = http.createServer(handle);
  // Senders keep connections open for the whole run; never be the side that closes them.
  server.keepAliveTimeout = 600_000;
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  server.maxRequestsPerSocket = 0;
  server.on("connection", (socket) => {
    connections++;
    if (++openConnections > peakOpenConnections) peakOpenConnections = openConnections;
    socket.once("close", () => openConnections--);
  });
  return server;
});
void Promise.all(
  servers.map(
    (server) =>
      new Promise<number>((resolve) => {
        server.listen(0, "127.0.0.1", () => {
          const addr = server.address();
          resolve(typeof addr === "object" && addr !== null ? addr.port : 0);
        });
      }),
  ),
).then((ports) => send({ type: "ready", ports }));
