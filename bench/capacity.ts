// Receivers with a hidden capacity, for bench:adaptive (and tests of adaptive pace): pure models
// that answer each request from its arrival time alone (the clock is passed in), a loopback HTTP
// server that hosts any number of them at their own paths and records what each one answered,
// and the figures that say whether, and from when, a sender kept to a receiver's capacity.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";

// ---- models ----------------------------------------------------------------------------------

/** The answer to one request: its status, sent `delayMs` after the request arrived. */
export interface Answer {
  status: number;
  delayMs: number;
}

/**
 * A receiver's behaviour. `answer(t)` is called once per request, in arrival order, with the
 * arrival time in ms since the model's start (non-decreasing); `capacityAt(t)` is the rate in
 * requests/s it can take at time t, which a sender is not told.
 */
export interface CapacityModel {
  readonly label: string;
  /** "limit429" | "knee" | "shifting". */
  readonly kind: string;
  answer(tMs: number): Answer;
  capacityAt(tMs: number): number;
}

/**
 * A sliding-window limiter: 429 (without Retry-After) when accepting the request would make more
 * than `n` accepted requests in the last 1,000 ms, else 200 at once. `nAt(t)` lets the limit move
 * (shifting()); a refused request does not count against the window.
 */
function slidingLimit(label: string, kind: string, nAt: (tMs: number) => number): CapacityModel {
  const accepted: number[] = []; // arrival times of the accepted requests of the last second, oldest first
  let head = 0;
  return {
    label,
    kind,
    capacityAt: nAt,
    answer(t) {
      while (head < accepted.length && accepted[head]! <= t - 1000) head++;
      if (head > 4096 && head * 2 > accepted.length) {
        accepted.splice(0, head);
        head = 0;
      }
      if (accepted.length - head >= nAt(t)) return { status: 429, delayMs: 0 };
      accepted.push(t);
      return { status: 200, delayMs: 0 };
    },
  };
}

/** 429 (no Retry-After) beyond `n` accepted requests in any sliding second; capacity n/s. */
export function limit429(n: number): CapacityModel {
  return slidingLimit(`limit429 ${n}/s`, "limit429", () => n);
}

/** limit429 whose limit changes from `n1` to `n2` at `atMs` after the start; capacity n1/s, then n2/s. */
export function shifting(n1: number, n2: number, atMs: number): CapacityModel {
  const label = `shifting ${n1}→${n2}/s at ${Math.round(atMs / 1000)} s`;
  return slidingLimit(label, "shifting", (t) => (t < atMs ? n1 : n2));
}

/**
 * A server that works through at most `n` requests/s: one FIFO queue, each request done at
 * max(its arrival, the previous one's completion) + 1000/n ms, and answered `baseMs` after that
 * (the part of its latency that does not queue). Past n/s its latency grows without bound, so it
 * always answers 200 — unless `shedAfterMs` is set: a request that would wait longer than that in
 * the queue is refused at once with 503 (no Retry-After) and takes no place in the queue.
 */
export function knee(n: number, baseMs: number, opts: { shedAfterMs?: number } = {}): CapacityModel {
  const serviceMs = 1000 / n;
  let doneAt = -Infinity; // completion time of the last request queued
  return {
    label: `knee ${n}/s, ${baseMs} ms`,
    kind: "knee",
    capacityAt: () => n,
    answer(t) {
      const start = Math.max(t, doneAt);
      if (opts.shedAfterMs !== undefined && start - t > opts.shedAfterMs) return { status: 503, delayMs: 0 };
      doneAt = start + serviceMs;
      return { status: 200, delayMs: doneAt - t + baseMs };
    },
  };
}

// ---- the HTTP server -------------------------------------------------------------------------

/** One request as its receiver saw it: arrival (ms since the server's origin), status, and the latency served (NaN while in flight). */
export interface Served {
  at: number;
  status: number;
  latencyMs: number;
}

interface Hosted {
  model: CapacityModel;
  served: Served[];
  inflight: number;
  maxInflight: number;
}

/**
 * Hosts models at their own paths on 127.0.0.1, answers each request as its model says (after
 * reading the body), and records every request. Times are ms since the origin, which the models
 * see too: begin(), or else the first request to a hosted path (time 0 for all of them). An
 * unknown path answers 404, unrecorded.
 */
export class CapacityServer {
  private readonly hosted = new Map<string, Hosted>();
  private origin: number | null = null;
  private onBegin: () => void = () => {};
  /** Resolves at the origin: begin() or the first request. */
  readonly begun = new Promise<void>((resolve) => (this.onBegin = resolve));

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
    private readonly now: () => number,
  ) {}

  static async start(now: () => number = () => performance.now()): Promise<CapacityServer> {
    const server = http.createServer();
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const self = new CapacityServer(server, (server.address() as AddressInfo).port, now);
    server.on("request", (req, res) => self.handle(req, res));
    return self;
  }

  /** Hosts `model` at `path` (e.g. "/limit429/adaptive"); its URL. */
  host(path: string, model: CapacityModel): string {
    if (this.hosted.has(path)) throw new Error(`${path} is already hosted`);
    this.hosted.set(path, { model, served: [], inflight: 0, maxInflight: 0 });
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Time 0 is now, for the models and the records (once only; not needed when the first request may set it). */
  begin(): void {
    if (this.origin !== null) throw new Error("the origin is already set");
    this.origin = this.now();
    this.onBegin();
  }

  /** ms since the origin; 0 before it. */
  elapsed(): number {
    return this.origin === null ? 0 : this.now() - this.origin;
  }

  /** What `path` answered so far, in arrival order (the live array: copy it to keep a snapshot). */
  served(path: string): readonly Served[] {
    return this.hosted.get(path)?.served ?? [];
  }

  /** The most requests `path` had in flight at once. */
  maxInflight(path: string): number {
    return this.hosted.get(path)?.maxInflight ?? 0;
  }

  async close(): Promise<void> {
    const closed = new Promise((r) => this.server.close(r));
    this.server.closeAllConnections();
    await closed;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const h = this.hosted.get((req.url ?? "").split("?")[0]!);
    if (!h) {
      req.resume();
      res.writeHead(404).end();
      return;
    }
    if (this.origin === null) this.begin();
    const at = this.elapsed();
    const { status, delayMs } = h.model.answer(at);
    const rec: Served = { at, status, latencyMs: NaN };
    h.served.push(rec);
    h.maxInflight = Math.max(h.maxInflight, ++h.inflight);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      h.inflight--;
    };
    res.once("close", finish);
    req.resume();
    req.once("end", () => {
      const wait = Math.max(0, at + delayMs - this.elapsed());
      setTimeout(() => {
        if (res.destroyed) return; // the sender gave up (timeout)
        res.writeHead(status, { "content-type": "text/plain" }).end(String(status));
        rec.latencyMs = this.elapsed() - at;
        finish();
      }, wait);
    });
  }
}

// ---- figures ---------------------------------------------------------------------------------

/** When a window of a receiver's record counts as "converged". */
export interface PaceCriteria {
  /** Window length in whole seconds. */
  windowS: number;
  /** Accepted (2xx) in the window ≥ minShare × the receiver's capacity over the window. */
  minShare: number;
  /** Refusals (429 and 503) ≤ maxRefusedPer1000 per 1,000 requests in the window. */
  maxRefusedPer1000: number;
  /** When set: p99 of the accepted requests' latency in the window ≤ this. */
  maxP99Ms: number | null;
}

const quantile = (sorted: number[], q: number): number | null =>
  sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
const per1000 = (n: number, of: number): number | null => (of > 0 ? (1000 * n) / of : null);

/**
 * A receiver's record over [0, durationS) in whole seconds. Window k is seconds [k, k + windowS);
 * its capacity is the sum of capacityAt(mid-second) over its seconds. convergedAtS: the first
 * second k such that window k and every later window (up to the last whole one) pass `c`, null
 * ("never") when the last one fails. The "once converged" figures are over [convergedAtS,
 * durationS). With `shiftAtS` also: convergedBeforeShiftS, the same over the windows that end by
 * the shift, and reconvergedAfterShiftS = convergedAtS − shiftAtS (0 when it stayed converged
 * through the shift).
 */
export function paceFigures(
  served: readonly Served[],
  capacityAt: (tMs: number) => number,
  durationS: number,
  c: PaceCriteria,
  shiftAtS: number | null = null,
) {
  const secs = Array.from({ length: durationS }, (_, k) => ({
    capacity: capacityAt(k * 1000 + 500),
    accepted: 0,
    r429: 0,
    r503: 0,
    all: 0,
  }));
  const latencies: number[][] = secs.map(() => []); // of accepted requests, by arrival second
  for (const s of served) {
    const k = Math.floor(s.at / 1000);
    const sec = secs[k];
    if (s.at < 0 || !sec) continue;
    sec.all++;
    if (s.status >= 200 && s.status < 300) {
      sec.accepted++;
      if (Number.isFinite(s.latencyMs)) latencies[k]!.push(s.latencyMs);
    } else if (s.status === 429) sec.r429++;
    else if (s.status === 503) sec.r503++;
  }
  const sum = (from: number, to: number, f: (s: (typeof secs)[number]) => number): number =>
    secs.slice(from, to).reduce((n, s) => n + f(s), 0);
  const span = (from: number, to: number) => {
    const lat = latencies
      .slice(from, to)
      .flat()
      .sort((a, b) => a - b);
    const all = sum(from, to, (s) => s.all);
    const capacity = sum(from, to, (s) => s.capacity);
    const accepted = sum(from, to, (s) => s.accepted);
    const refused = sum(from, to, (s) => s.r429 + s.r503);
    return {
      seconds: to - from,
      accepted,
      share: capacity > 0 ? accepted / capacity : null,
      r429: sum(from, to, (s) => s.r429),
      r503: sum(from, to, (s) => s.r503),
      refusedPer1000: per1000(refused, all),
      p50Ms: quantile(lat, 0.5),
      p99Ms: quantile(lat, 0.99),
    };
  };
  const windowOk = (k: number): boolean => {
    const w = span(k, k + c.windowS);
    return (
      (w.share ?? 0) >= c.minShare &&
      (w.refusedPer1000 ?? 0) <= c.maxRefusedPer1000 &&
      (c.maxP99Ms === null || (w.p99Ms !== null && w.p99Ms <= c.maxP99Ms))
    );
  };
  /** The first k such that windows k … last all pass, or null. */
  const convergedBy = (last: number): number | null => {
    let k = last;
    while (k >= 0 && windowOk(k)) k--;
    return k === last ? null : k + 1;
  };
  const lastWindow = durationS - c.windowS;
  const convergedAtS = lastWindow >= 0 ? convergedBy(lastWindow) : null;
  const shift =
    shiftAtS === null
      ? null
      : {
          convergedBeforeShiftS: shiftAtS - c.windowS >= 0 ? convergedBy(shiftAtS - c.windowS) : null,
          reconvergedAfterShiftS: convergedAtS === null ? null : Math.max(0, convergedAtS - shiftAtS),
        };
  const total = span(0, durationS);
  return {
    convergedAtS,
    ...shift,
    converged: convergedAtS === null ? null : span(convergedAtS, durationS),
    overall: total,
    acceptedPerSec: total.accepted / durationS,
    requests: sum(0, durationS, (s) => s.all),
    perSecond: {
      capacity: secs.map((s) => s.capacity),
      accepted: secs.map((s) => s.accepted),
      r429: secs.map((s) => s.r429),
      r503: secs.map((s) => s.r503),
      p99Ms: latencies.map((l) =>
        quantile(
          l.sort((a, b) => a - b),
          0.99,
        ),
      ),
    },
  };
}
