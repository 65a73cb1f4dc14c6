// `npm run bench:adaptive`: does a destination with `adaptive` on find a receiver's hidden capacity, use it and keep within it — against
// fixed rate limits set too high and too low? Four receivers of capacity N/s that Sluice is not told: limit429 (429 without Retry-After
// past N in any sliding second), knee (one FIFO server of N/s plus a fixed latency: past N its queue and latency grow), shift-down and
// shift-up (limit429 whose N moves halfway). Each is behind three destinations with a receiver of their own: adaptive
// (max_concurrency 200, no rate limit), fixed-high (rate limit 2 × capacity) and fixed-low (0.5 ×). All twelve are backlogged up front
// and run at once on `sluice api` + N × `sluice worker`; counted at the receivers, which run in this process. The fixed ones also
// check the rate limit itself: no window over it at the receiver, and a fixed-low one whose receiver can take its rate uses all of it.
import http from "node:http";
import { performance } from "node:perf_hooks";
import { auditBucket } from "../src/policy/rate-audit.js";
import { bucketsFor } from "../src/policy/token-bucket.js";
import { adminQuery } from "./pg.js";
import { commonFlags, CpuSampler, parseFlags, percentiles, runBench, sleep, waitQuiet } from "./procs.js";
import { benchStart, fmt, listFigures, mark, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

const TARGET = { share: 0.8, refusedPer1000: 5, rateUsed: 0.98 };
/** A fixed destination's rate_limit.max_per_second, × its receiver's capacity at the start. */
const VARIANTS = { adaptive: null, "fixed-high": 2, "fixed-low": 0.5 } as const;

/** A receiver's answer to a request arriving `t` ms after the start (non-decreasing), and its capacity in requests/s at t. */
type Model = { label: string; answer(t: number): { status: number; delayMs: number }; capacityAt(t: number): number };
/** 429 (no Retry-After) when accepting would make more than `nAt(t)` accepted requests in the last 1,000 ms; else 200 at once. */
function slidingLimit(label: string, nAt: (t: number) => number): Model {
  const accepted: number[] = []; // arrival times of the accepted requests, oldest first
  let head = 0; // the first one within the last second
  return {
    label,
    capacityAt: nAt,
    answer(t) {
      while (head < accepted.length && accepted[head]! <= t - 1000) head++;
      if (accepted.length - head >= nAt(t)) return { status: 429, delayMs: 0 };
      accepted.push(t);
      return { status: 200, delayMs: 0 };
    },
  };
}

/** A FIFO server of `n` requests/s, answering `baseMs` after each: past n/s its latency grows, to `shedAfterMs` of queue (then 503). */
function knee(n: number, baseMs: number, shedAfterMs: number): Model {
  let doneAt = -Infinity;
  return {
    label: `knee ${n}/s, ${baseMs} ms`,
    capacityAt: () => n,
    answer(t) {
      const start = Math.max(t, doneAt);
      if (start - t > shedAfterMs) return { status: 503, delayMs: 0 };
      doneAt = start + 1000 / n;
      return { status: 200, delayMs: doneAt - t + baseMs };
    },
  };
}

/** What one receiver answered: arrival ms since the origin (the first request to any), status, latency served (NaN while in flight). */
type Served = { at: number; status: number; latencyMs: number };
/** Hosts models at their own paths on 127.0.0.1 and records every request. */
async function capacityServer() {
  const hosted = new Map<string, { model: Model; served: Served[]; inflight: number; maxInflight: number }>();
  let origin: number | null = null;
  const elapsed = (): number => (origin === null ? 0 : performance.now() - origin);
  const server = http.createServer((req, res) => {
    const h = hosted.get(req.url ?? "");
    req.resume();
    if (!h) return void res.writeHead(404).end();
    origin ??= performance.now();
    const at = elapsed();
    const { status, delayMs } = h.model.answer(at);
    const rec: Served = { at, status, latencyMs: NaN };
    h.served.push(rec);
    h.maxInflight = Math.max(h.maxInflight, ++h.inflight);
    res.once("close", () => h.inflight--);
    const reply = (): void => {
      if (res.destroyed) return; // the sender gave up (timeout)
      res.writeHead(status, { "content-type": "text/plain" }).end(String(status));
      rec.latencyMs = elapsed() - at;
    };
    req.once("end", () => setTimeout(reply, at + delayMs - elapsed()));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    started: (): boolean => origin !== null,
    elapsed,
    host(path: string, model: Model): string {
      hosted.set(path, { model, served: [], inflight: 0, maxInflight: 0 });
      return `http://127.0.0.1:${port}${path}`;
    },
    served: (path: string): Served[] => hosted.get(path)?.served ?? [],
    maxInflight: (path: string): number => hosted.get(path)?.maxInflight ?? 0,
    close: (): Promise<unknown> => new Promise((r) => (server.closeAllConnections(), server.close(r))),
  };
}

/** What a destination's figures are judged over: the run's seconds, the window, knee's p99 bound, the shift's second. */
type Judged = { durationS: number; windowS: number; maxP99Ms: number | null; shiftAtS: number | null };
// A receiver's record over [0, durationS) in whole seconds. Window k is seconds [k, k + windowS); it passes with ≥
// TARGET.share of its capacity accepted, ≤ TARGET.refusedPer1000 refusals (429 + 503) per 1,000 requests and, with
// `maxP99Ms`, accepted p99 ≤ that. convergedAtS: the first k from which every window to the end passes (null: the last
// fails); with `shiftAtS` also the same over the windows before the shift, and how long after it the run converged again.
function paceFigures(served: Served[], model: Model, { durationS, windowS, maxP99Ms, shiftAtS }: Judged) {
  const sec = (k: number) => ({ capacity: model.capacityAt(k * 1000 + 500), accepted: 0, refused: 0, all: 0, latencies: [] as number[] });
  const secs = Array.from({ length: durationS }, (_, k) => sec(k)); // each second's figures; latencies: of the accepted requests
  for (const s of served) {
    const sec = secs[Math.floor(s.at / 1000)];
    if (!sec) continue;
    sec.all++;
    if (s.status >= 200 && s.status < 300) {
      sec.accepted++;
      sec.latencies.push(s.latencyMs);
    } else if (s.status === 429 || s.status === 503) sec.refused++;
  }
  const span = (from: number, to: number) => {
    const sum = (key: "capacity" | "accepted" | "refused" | "all"): number => secs.slice(from, to).reduce((n, s) => n + s[key], 0);
    const [capacity, accepted, refused, all] = [sum("capacity"), sum("accepted"), sum("refused"), sum("all")];
    const lat = percentiles(secs.slice(from, to).flatMap((s) => s.latencies));
    const rates = { share: capacity > 0 ? accepted / capacity : null, refusedPer1000: all > 0 ? (1000 * refused) / all : null };
    return { accepted, refused, ...rates, p50Ms: lat?.p50 ?? null, p99Ms: lat?.p99 ?? null };
  };
  const passes = (k: number): boolean => {
    const w = span(k, k + windowS);
    const fast = maxP99Ms === null || (w.p99Ms ?? Infinity) <= maxP99Ms;
    return (w.share ?? 0) >= TARGET.share && (w.refusedPer1000 ?? 0) <= TARGET.refusedPer1000 && fast;
  };
  const convergedBy = (last: number): number | null => {
    let k = last;
    while (k >= 0 && passes(k)) k--;
    return last < 0 || k === last ? null : k + 1;
  };
  const convergedAtS = convergedBy(durationS - windowS);
  return {
    convergedAtS,
    convergedBeforeShiftS: shiftAtS === null ? undefined : convergedBy(shiftAtS - windowS),
    reconvergedAfterShiftS: shiftAtS === null || convergedAtS === null ? null : Math.max(0, convergedAtS - shiftAtS),
    converged: convergedAtS === null ? null : span(convergedAtS, durationS),
    overall: span(0, durationS),
    acceptedPerSecond: secs.map((s) => s.accepted), // in the results file: how the pace moved
  };
}

// A fixed destination's requests against its rate limit: those ending a window over burst + rate × its length (auditBucket,
// no jitter allowed), and the share of the rate used over the middle 80 % of the requests after the first burst.
function rateFigures(served: Served[], limit: { max_per_second: number; burst_capacity: number }) {
  const t = served.map((s) => s.at);
  const after = t.slice(limit.burst_capacity);
  const [a, z] = [Math.floor(after.length * 0.1), Math.floor(after.length * 0.9)];
  return {
    overLimit: auditBucket(t, bucketsFor(limit)[0]!).offending.length,
    used: z - a > 1 ? (z - a) / ((after[z]! - after[a]!) / 1000) / limit.max_per_second : null,
  };
}

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:adaptive", {
    capacity: { def: 100, help: "N: every receiver's capacity in requests/s (the shifting ones' at the start)" },
    "duration-s": { def: 60, quick: 20, help: "how long the workers deliver (the shifting receivers shift halfway)" },
    ...commonFlags(120),
    quick: { type: "bool", help: "a 20 s run: too short for the shifting receivers to settle" },
  });
  const { capacity: N, "duration-s": D, workers } = f;
  const [W, baseMs, maxConcurrency] = [5, 50, 200]; // the window that must stay converged; the knee's latency besides its queue
  if (D < 2 * W) throw new Error(`--duration-s must be at least ${2 * W}`);
  const [shiftAtS, down, kneeP99Ms] = [Math.floor(D / 2), Math.max(1, Math.round(0.4 * N)), 3 * (baseMs + 1000 / N)];
  const shifting = (to: number) => () => slidingLimit(`${N}→${to}/s`, (t) => (t < shiftAtS * 1000 ? N : to));
  const kinds = [
    { kind: "limit429", make: () => slidingLimit(`limit429 ${N}/s`, () => N), maxP99Ms: null, shift: false },
    { kind: "knee", make: () => knee(N, baseMs, 5000), maxP99Ms: kneeP99Ms, shift: false },
    { kind: "shift-down", make: shifting(down), maxP99Ms: null, shift: true },
    { kind: "shift-up", make: shifting(2 * N), maxP99Ms: null, shift: true },
  ];
  const bench = benchStart("adaptive-pace");
  bench.out(
    `workload: 4 receivers × 3 destinations, each with its own receiver, all backlogged, for ${D} s; capacity N = ${N}/s ` +
      `(shift-down to ${down}/s and shift-up to ${2 * N}/s at ${shiftAtS} s; knee: FIFO of N/s + ${baseMs} ms, 503 past 5 s of queue); ` +
      `max_concurrency ${maxConcurrency}; adaptive: {enabled: true}, no rate_limit; fixed-high: rate_limit ${2 * N}/s; fixed-low: ${0.5 * N}/s`,
  );
  bench.out(
    `converged at: the first second from which every ${W} s window to the end of the run accepted ≥ ${TARGET.share * 100} % of the capacity ` +
      `with ≤ ${TARGET.refusedPer1000} refusals (429 + 503) per 1,000 requests, and for knee p99 ≤ ${fmt(kneeP99Ms)} ms; "never" when the last window fails`,
  );
  const { server, postmaster, settings } = await bench.postgres(!f["no-fsync"], false, f["pg-icu-locale"]);
  const [rx, sluice] = [await capacityServer(), new SluiceCluster({ databaseUrl: server.url, logPrefix: bench.log("adaptive") })];
  await sluice.startApi();
  const dests = kinds.flatMap((k) =>
    Object.entries(VARIANTS).map(([variant, factor]) => {
      const [model, path] = [k.make(), `/${k.kind}/${variant}`];
      const rate = factor === null ? null : factor * model.capacityAt(0);
      // A burst of one second's worth: Sluice then holds back its 500 ms of send jitter (SLUICE_RATE_SEND_JITTER_MS), which
      // a burst of a few tokens could not, and the limit is to hold at the receiver with no allowance.
      const limit = rate === null ? null : { max_per_second: rate, burst_capacity: rate };
      const pacing = limit === null ? { adaptive: { enabled: true } } : { rate_limit: limit };
      const body = { name: `${k.kind} ${variant}`, url: rx.host(path, model), max_concurrency: maxConcurrency, ...pacing };
      const capacities = Array.from({ length: D }, (_, s) => model.capacityAt(s * 1000 + 500));
      // Queued: the most it can take over the run (its receiver's highest capacity, or its own rate limit), and some.
      const most = Math.min(rate ?? Infinity, Math.max(...capacities));
      // Only where the receiver can always take the rate is all of it to be used.
      const rateBound = rate !== null && Math.min(...capacities) >= rate;
      return { ...k, variant, model, path, body, limit, rateBound, queue: Math.ceil(most * (1.1 * D + 5)), id: "" };
    }),
  );
  const ids = await sluice.createDestinations(dests.length, (i) => dests[i]!.body);
  dests.forEach((d, i) => (d.id = ids[i]!));
  const targets = dests.flatMap((d) => Array<string>(d.queue).fill(d.id));
  await sluice.publishAll(targets.length, (i) => ({ type: "adaptive.bench", payload: { n: i }, destination_ids: [targets[i]!] }));
  bench.out(`queued ${fmt(targets.length)} deliveries; starting ${workers} workers`);
  // Statistics for the queued rows, as a database in service has them: else autovacuum's first
  // ANALYZE lands mid-run (~60 s after Postgres started) and changes the claim's plans under it.
  await adminQuery(server.url, "ANALYZE");
  const busyBeforePct = await waitQuiet(f["wait-quiet-s"] * 1000);
  await sluice.startWorkers(workers);
  // Time 0: the first delivery to reach any receiver (the workers take a few seconds to start).
  for (const until = Date.now() + f["timeout-s"] * 1000; !rx.started(); await sleep(10))
    if (Date.now() > until) throw new Error(`no delivery arrived within ${f["timeout-s"]} s`);
  const cpu = new CpuSampler({ system: "sluice", pids: () => sluice.pids(), postmaster, receiver: -1, bench: "bench + receivers" }).begin();
  // The pace fields of GET /v1/destinations/{id}, once a second.
  type Pace = { t: number; effective_rate_per_second?: number | null; effective_concurrency?: number; status?: string };
  const samples = new Map<string, Pace[]>(dests.map((d) => [d.id, []]));
  const pace = (id: string) => sluice.must<Omit<Pace, "t">>(200, "GET", `/v1/destinations/${id}`);
  for (let t = 0; t <= D; t++) {
    await sleep(t * 1000 - rx.elapsed());
    await Promise.all(dests.map(async (d) => samples.get(d.id)!.push({ t, ...(await pace(d.id)) })));
    if (t > 0 && t % 10 === 0) process.stderr.write(`  ${t}/${D} s\n`);
  }
  const cpuFigures = cpu.end();
  // The requests that arrived within the run, once answered (knee answers late): then the figures.
  const inRun = (path: string): Served[] => rx.served(path).filter((s) => s.at < D * 1000);
  for (const until = Date.now() + 10_000; Date.now() < until && dests.some((d) => inRun(d.path).some((s) => Number.isNaN(s.latencyMs)));)
    await sleep(100);
  await sluice.stop();
  await rx.close();

  const results = dests.map((d) => ({
    kind: d.kind,
    variant: d.variant,
    receiver: d.model.label,
    config: d.body,
    queued: d.queue,
    maxInflight: rx.maxInflight(d.path),
    figures: paceFigures(inRun(d.path), d.model, { durationS: D, windowS: W, maxP99Ms: d.maxP99Ms, shiftAtS: d.shift ? shiftAtS : null }),
    rate: d.limit && { ...rateFigures(inRun(d.path), d.limit), bound: d.rateBound },
    samples: samples.get(d.id)!,
  }));
  const pct = (x: number | null | undefined): string => (x === null || x === undefined ? "–" : `${fmt(100 * x)} %`);
  const paceText = (x: Pace | undefined): string =>
    x?.effective_rate_per_second === undefined
      ? "?"
      : `${x.effective_rate_per_second === null ? "unlimited" : `${fmt(x.effective_rate_per_second, 1)}/s`} × ${x.effective_concurrency ?? "?"}`;
  const at = (s: number | null | undefined): string => (s === null || s === undefined ? "never" : `${s} s`);
  bench.out(`\nonce converged (from "converged at" to the end of the run), and the whole run:`);
  bench.out(
    table([
      "receiver|destination|converged at|shift: by · again after|capacity used|429+503 per 1k|p50 / p99 ms|accepted/s, whole run|refused|max in flight|rate limit: over · used|at the end (API)".split(
        "|",
      ),
      ...results.map((r) => {
        const [g, c] = [r.figures, r.figures.converged];
        const last = r.samples.at(-1);
        return [
          r.receiver,
          r.variant,
          `${at(g.convergedAtS)} ${mark(g.convergedAtS !== null)}`,
          g.convergedBeforeShiftS === undefined ? "" : `${at(g.convergedBeforeShiftS)} · +${at(g.reconvergedAfterShiftS)}`,
          c ? `${pct(c.share)} ${mark((c.share ?? 0) >= TARGET.share)}` : "–",
          c?.refusedPer1000 != null ? `${fmt(c.refusedPer1000, 1)} ${mark(c.refusedPer1000 <= TARGET.refusedPer1000)}` : "–",
          c ? `${fmt(c.p50Ms)} / ${fmt(c.p99Ms)}` : "–",
          fmt(g.overall.accepted / D, 1),
          fmt(g.overall.refused),
          fmt(r.maxInflight),
          r.rate
            ? `${r.rate.overLimit} ${mark(r.rate.overLimit === 0)}${r.rate.bound ? ` · ${pct(r.rate.used)} ${mark((r.rate.used ?? 0) >= TARGET.rateUsed)}` : ""}`
            : "",
          r.variant === "adaptive" ? paceText(last) : last?.status !== "active" ? (last?.status ?? "?") : "",
        ];
      }),
    ]),
  );
  bench.out(`CPU over the run, % of one core: ${listFigures(cpuFigures)}; machine busy before the run ${busyBeforePct} %`);
  const failed = results.filter((r) => r.variant === "adaptive" && r.figures.converged === null);
  const overLimit = results.filter((r) => r.rate && r.rate.overLimit > 0);
  const underused = results.filter((r) => r.rate?.bound && (r.rate.used ?? 0) < TARGET.rateUsed);
  bench.out(
    `\nverdict: ${failed.length === 0 ? "every adaptive destination converged and met the targets ✓" : `adaptive destinations that never converged: ${failed.map((r) => r.kind).join(", ")} ✗`}; ` +
      `fixed rate limits: ${overLimit.length === 0 ? "no window over the limit ✓" : `windows over the limit at ${overLimit.map((r) => r.config.name).join(", ")} ✗`}, ` +
      `${underused.length === 0 ? `≥ ${TARGET.rateUsed * 100} % of the rate used where the receiver could take it ✓` : `less than ${TARGET.rateUsed * 100} % of the rate used at ${underused.map((r) => r.config.name).join(", ")} ✗`}`,
  );
  const options = { ...f, windowS: W, kneeBaseMs: baseMs, maxConcurrency, shiftAtS, kneeP99Ms };
  bench.finish("adaptive", { postgres: settings, cpu: cpuFigures, busyBeforePct, options, results });
}

runBench(main);
