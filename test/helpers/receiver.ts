// The receiver simulator every delivery test reuses: a real node:http server on 127.0.0.1, port 0,
// that records what arrives and answers however the test says (200, 429 + Retry-After, 503, 410,
// slow, never). Tests assert on `received`, `maxInflight` and friends.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { waitFor } from "./wait-for.js";

export interface ReceivedRequest {
  /** 1-based arrival number; keeps counting across reset(). */
  seq: number;
  /** Date.now() when the request's headers arrived. */
  receivedAt: number;
  method: string;
  /** The request target as sent, query string included. */
  path: string;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON, or undefined when empty or not JSON. */
  json: unknown;
  /** Requests in flight when this one arrived, itself included. */
  inflightAtArrival: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer; the request ends when the client gives up or the receiver closes. */
  hang?: boolean;
}

export type Responder = (req: ReceivedRequest) => Reply | Promise<Reply>;

export interface Receiver {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  /** In arrival order, recorded once each body has been read. */
  received: ReceivedRequest[];
  /** Requests being handled now (from arrival until the response ends or the client disconnects). */
  inflight: number;
  /** The highest `inflight` seen since start or the last reset(). */
  maxInflight: number;
  /** Changes how later requests are answered. */
  respondWith(r: Responder | Reply): void;
  /** Requests received, all of them or those whose path is exactly `path`. */
  countByPath(path?: string): number;
  /** Resolves once `received.length >= n`. */
  waitForCount(n: number, timeoutMs?: number): Promise<void>;
  /** Clears `received` and sets `maxInflight` back to the current `inflight`. */
  reset(): void;
  /** Stops the server, ending hanging requests and keep-alive sockets. */
  close(): Promise<void>;
}

function toResponder(r: Responder | Reply): Responder {
  return typeof r === "function" ? r : () => r;
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

function parseJson(body: string): unknown {
  if (body === "") return undefined;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

export async function startReceiver(responder: Responder | Reply = { status: 200 }): Promise<Receiver> {
  let respond = toResponder(responder);
  let nextSeq = 1;
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((req, res) => {
    const receivedAt = Date.now();
    receiver.inflight++;
    receiver.maxInflight = Math.max(receiver.maxInflight, receiver.inflight);
    const inflightAtArrival = receiver.inflight;
    // 'close' fires once per response, whether it completed or the client went away.
    res.on("close", () => {
      receiver.inflight--;
    });

    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const request: ReceivedRequest = {
        seq: nextSeq++,
        receivedAt,
        method: req.method ?? "",
        path: req.url ?? "",
        headers: flattenHeaders(req.headers),
        body,
        json: parseJson(body),
        inflightAtArrival,
      };
      receiver.received.push(request);
      void answer(request, res);
    });
  });

  async function answer(request: ReceivedRequest, res: http.ServerResponse): Promise<void> {
    let reply: Reply;
    try {
      reply = await respond(request);
    } catch (err) {
      reply = { status: 500, body: `receiver responder threw: ${err instanceof Error ? err.message : String(err)}` };
    }
    if (reply.hang) return; // left open; close() or the client ends it
    const send = () => {
      if (res.destroyed || res.writableEnded) return; // the client already gave up
      res.writeHead(reply.status, reply.headers);
      res.end(reply.body ?? "");
    };
    if (reply.delayMs !== undefined && reply.delayMs > 0) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        send();
      }, reply.delayMs);
      timers.add(timer);
    } else {
      send();
    }
  }

  // Senders reuse connections at thousands of requests a second: keep sockets open long and never
  // force-close them after N requests.
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000; // must exceed keepAliveTimeout
  server.maxRequestsPerSocket = 0;

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0, backlog: 4096 }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    received: [],
    inflight: 0,
    maxInflight: 0,
    respondWith(r) {
      respond = toResponder(r);
    },
    countByPath(path) {
      if (path === undefined) return receiver.received.length;
      return receiver.received.filter((r) => r.path === path).length;
    },
    waitForCount(n, timeoutMs = 15_000) {
      return waitFor(() => receiver.received.length >= n, {
        timeoutMs,
        message: () => `receiver: expected ${n} requests within ${timeoutMs} ms, got ${receiver.received.length}`,
      });
    },
    reset() {
      receiver.received.length = 0;
      receiver.maxInflight = receiver.inflight;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // ends hanging requests and idle keep-alive sockets alike
      await closed;
    },
  };
  return receiver;
}

// Ready-made responders.

export function ok(): Responder {
  return () => ({ status: 200 });
}

export function status(code: number, headers?: Record<string, string>): Responder {
  return () => (headers ? { status: code, headers } : { status: code });
}

/** Answers the nth request with the nth reply, then repeats the last one. */
export function sequence(...replies: Array<Reply | Responder>): Responder {
  const last = replies[replies.length - 1];
  if (last === undefined) throw new Error("sequence() needs at least one reply");
  let n = 0;
  return (req) => {
    const r = replies[n] ?? last;
    n++;
    return toResponder(r)(req);
  };
}

/**
 * 200 for the first `maxPerSecond` requests of each wall-clock second (by arrival time), then
 * 429 with `Retry-After: retryAfterSeconds` for the rest of that second.
 */
export function rateLimited(opts: { maxPerSecond: number; retryAfterSeconds: number }): Responder {
  let window = -1;
  let count = 0;
  return (req) => {
    const w = Math.floor(req.receivedAt / 1000);
    if (w !== window) {
      window = w;
      count = 0;
    }
    count++;
    if (count > opts.maxPerSecond) {
      return { status: 429, headers: { "retry-after": String(opts.retryAfterSeconds) } };
    }
    return { status: 200 };
  };
}

export function hang(): Responder {
  return () => ({ status: 200, hang: true });
}

export function slow(ms: number): Responder {
  return () => ({ status: 200, delayMs: ms });
}
