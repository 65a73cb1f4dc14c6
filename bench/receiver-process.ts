// The webhook receiver, run as its own process so the bench's publishing does not share its
// event loop. One node:http server answers every destination at /d/<n>, after `delayMs`.
// It measures at the receiving end: publish-to-receive latency from the payload's sent_at,
// duplicates by the payload's seq, and the most requests held at once per destination.
//
// argv: <delayMs> <expected deliveries> <destinations> [<per-destination cap to check, 0 = none> [<ports>]]
// IPC out: ready {port} · progress {unique,total} each second · done {at} · report {...}
// IPC in:  report {publishEndAt}
import http from "node:http";

export interface ReceiverReport {
  unique: number;
  total: number;
  duplicates: number;
  misrouted: number;
  malformed: number;
  firstAt: number | null;
  lastAt: number | null;
  /** Distinct deliveries first received after `publishEndAt`. */
  receivedAfterPublish: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number } | null;
  maxInflight: number;
  maxInflightPerDestination: number;
  connections: number;
  /** Most connections open at the same time. */
  peakOpenConnections: number;
  /** Requests that arrived while their destination already had `cap` in flight (cap given). */
  overCapRequests: number;
  destinationsOverCap: number;
}

export type ReceiverMessage =
  | { type: "ready"; ports: number[] }
  | { type: "progress"; unique: number; total: number; at: number }
  | { type: "done"; at: number }
  | { type: "report"; report: ReceiverReport };

const delayMs = Number(process.argv[2] ?? "0");
const expected = Number(process.argv[3] ?? "0");
const destinations = Number(process.argv[4] ?? "1");
const cap = Number(process.argv[5] ?? "0");
const portCount = Math.max(1, Number(process.argv[6] ?? "1"));

const seen = new Uint8Array(expected);
const firstReceiveAt = new Float64Array(expected);
const latency = new Float64Array(expected);
const inflightPerDest = new Int32Array(destinations);
let unique = 0;
let total = 0;
let misrouted = 0;
let malformed = 0;
let inflight = 0;
let maxInflight = 0;
let maxInflightPerDest = 0;
let connections = 0;
let overCapRequests = 0;
const overCapDests = new Set<number>();
let openConnections = 0;
let peakOpenConnections = 0;
let firstAt: number | null = null;
let lastAt: number | null = null;
let doneSent = false;

function send(m: ReceiverMessage): void {
  process.send?.(m);
}

// Regexes rather than JSON.parse: the receiver should cost as little CPU as it can, and the
// payload shape is ours ({"seq":n,"dest":n,"sent_at":ms}).
const SEQ = /"seq":(\d+)/;
const DEST = /"dest":(\d+)/;
const SENT_AT = /"sent_at":(\d+)/;

function record(path: string, body: string): void {
  const now = Date.now();
  total++;
  const seq = Number(SEQ.exec(body)?.[1] ?? NaN);
  const sentAt = Number(SENT_AT.exec(body)?.[1] ?? NaN);
  if (!Number.isInteger(seq) || seq < 0 || seq >= expected || !Number.isFinite(sentAt)) {
    malformed++;
    return;
  }
  if (path !== `/d/${DEST.exec(body)?.[1] ?? "?"}`) misrouted++;
  if (seen[seq]! < 255) seen[seq] = seen[seq]! + 1;
  if (seen[seq] !== 1) return;
  firstReceiveAt[seq] = now;
  latency[unique] = now - sentAt;
  unique++;
  firstAt ??= now;
  lastAt = now;
  if (unique === expected && !doneSent) {
    doneSent = true;
    send({ type: "done", at: now });
  }
}

function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = req.url ?? "";
  const dest = Number(path.startsWith("/d/") ? path.slice(3) : NaN);
  const destIdx = Number.isInteger(dest) && dest >= 0 && dest < destinations ? dest : -1;
  inflight++;
  if (inflight > maxInflight) maxInflight = inflight;
  if (destIdx >= 0) {
    if (cap > 0 && inflightPerDest[destIdx]! >= cap) {
      overCapRequests++;
      overCapDests.add(destIdx);
    }
    const n = ++inflightPerDest[destIdx]!;
    if (n > maxInflightPerDest) maxInflightPerDest = n;
  }
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    record(path, Buffer.concat(chunks).toString("utf8"));
    const answer = (): void => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" });
      res.end("ok");
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
  res.on("close", () => {
    inflight--;
    if (destIdx >= 0) inflightPerDest[destIdx]!--;
  });
}

// One server per port: several ports make several origins, as distinct destinations usually are
// (senders cap sockets per origin).
const servers = Array.from({ length: portCount }, () => {
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

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(publishEndAt: number): ReceiverReport {
  const lat = latency.slice(0, unique).sort();
  let after = 0;
  for (let i = 0; i < expected; i++) if (seen[i]! > 0 && firstReceiveAt[i]! > publishEndAt) after++;
  let dupes = 0;
  for (let i = 0; i < expected; i++) if (seen[i]! > 1) dupes += seen[i]! - 1;
  return {
    unique, total, duplicates: dupes, misrouted, malformed, firstAt, lastAt,
    receivedAfterPublish: after,
    latencyMs: unique === 0 ? null : { p50: percentile(lat, 50), p90: percentile(lat, 90), p99: percentile(lat, 99), max: lat[lat.length - 1]! },
    maxInflight, maxInflightPerDestination: maxInflightPerDest, connections, peakOpenConnections,
    overCapRequests, destinationsOverCap: overCapDests.size,
  };
}

process.on("message", (m: { type: string; publishEndAt?: number }) => {
  if (m.type === "report") send({ type: "report", report: report(m.publishEndAt ?? 0) });
});
process.on("disconnect", () => process.exit(0)); // the bench is gone: so are we
process.on("SIGTERM", () => process.exit(0));

void Promise.all(servers.map((server) => new Promise<number>((resolve) => {
  server.listen(0, "127.0.0.1", () => {
    const addr = server.address();
    resolve(typeof addr === "object" && addr !== null ? addr.port : 0);
  });
}))).then((ports) => {
  send({ type: "ready", ports });
  setInterval(() => send({ type: "progress", unique, total, at: Date.now() }), 1000).unref();
});
