// Adaptive pace: does a destination with `adaptive` on find a receiver's hidden capacity, use it,
// and keep within it — against fixed rate limits set too high and too low? Four receivers (see
// bench/capacity.ts), each behind three destinations with their own receiver instance: adaptive
// (max_concurrency 200, no rate_limit), fixed-high (rate_limit 2 × capacity) and fixed-low
// (0.5 × capacity). All twelve are backlogged up front and run at once in one cluster: `sluice
// api` + 2 × `sluice worker` on a throwaway Postgres (fsync on). Counted at the receivers.
import { availableParallelism } from "node:os";
import { CapacityServer, knee, limit429, paceFigures, shifting, type CapacityModel, type PaceCriteria } from "./capacity.js";
import { adminQuery } from "./pg.js";
import { CpuSampler, machineBusyPct, parseFlags, runBench, sleep, waitQuiet, type CpuFigures } from "./procs.js";
import { benchStart, fmt, mark, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

const TARGET = { share: 0.8, refusedPer1000: 5 };
const VARIANTS = ["adaptive", "fixed-high", "fixed-low"] as const;
type Variant = (typeof VARIANTS)[number];
/** A fixed destination's rate_limit.max_per_second, × the receiver's capacity at the start. */
const FIXED_FACTOR: Record<Variant, number | null> = { adaptive: null, "fixed-high": 2, "fixed-low": 0.5 };

/** The pace fields of GET /v1/destinations/{id}, and the backlog, as sampled once a second. */
interface PaceSample {
  t: number;
  rate: number | null | undefined;
  concurrency: number | undefined;
  reason: string | null | undefined;
  changedAt: string | null | undefined;
  queued: number;
  inflight: number;
  status: string;
}

async function main(): Promise<void> {
  const f = parseFlags("npm run bench:adaptive", {
    capacity: { def: 100, help: "N: every receiver's capacity in requests/s (the shifting ones' at the start)" },
    "duration-s": { def: 60, quick: 20, help: "how long the workers deliver (the shifting receivers shift halfway)" },
    "window-s": { def: 5, help: "the window that must stay converged" },
    "knee-base-ms": { def: 50, min: 0, help: "the knee receiver's latency besides its queue" },
    "max-concurrency": { def: 200, help: "every destination's max_concurrency" },
    workers: { def: 2, help: "sluice worker processes beside one sluice api" },
    "no-analyze": {
      type: "bool",
      help: "skip the ANALYZE before the run (no statistics until autovacuum's first pass, ~60 s after Postgres starts)",
    },
    "wait-quiet-s": { def: 60, min: 0, help: "before the run, wait up to N s for other processes to leave the CPU (0 = don't)" },
    quick: { type: "bool", help: "a 20 s run" },
  });
  const { capacity: N, "duration-s": D, "window-s": W, "knee-base-ms": baseMs, "max-concurrency": maxConcurrency, workers } = f;
  if (D < 2 * W) throw new Error(`--duration-s must be at least twice --window-s (${W})`);
  const shiftAtS = Math.floor(D / 2);
  const kneeP99Ms = 3 * (baseMs + 1000 / N);
  const shedAfterMs = 5000;
  const criteria = (maxP99Ms: number | null): PaceCriteria => ({
    windowS: W,
    minShare: TARGET.share,
    maxRefusedPer1000: TARGET.refusedPer1000,
    maxP99Ms,
  });
  // The receivers, by kind: a fresh model per destination; the shifting ones shift at shiftAtS.
  const down = Math.max(1, Math.round(0.4 * N));
  const kinds: { kind: string; make: () => CapacityModel; criteria: PaceCriteria; shift: boolean }[] = [
    { kind: "limit429", make: () => limit429(N), criteria: criteria(null), shift: false },
    { kind: "knee", make: () => knee(N, baseMs, { shedAfterMs }), criteria: criteria(kneeP99Ms), shift: false },
    { kind: "shift-down", make: () => shifting(N, down, shiftAtS * 1000), criteria: criteria(null), shift: true },
    { kind: "shift-up", make: () => shifting(N, 2 * N, shiftAtS * 1000), criteria: criteria(null), shift: true },
  ];

  const bench = benchStart("adaptive-pace");
  bench.out(
    `workload: 4 receivers × 3 destinations, each with its own receiver, all backlogged, for ${D} s; capacity N = ${N}/s ` +
      `(shift-down ${N}→${down}/s and shift-up ${N}→${2 * N}/s at ${shiftAtS} s); every destination max_concurrency ${maxConcurrency}; ` +
      `adaptive: {enabled: true}, no rate_limit; fixed-high: rate_limit ${2 * N}/s; fixed-low: ${0.5 * N}/s (burst 10 % of the rate)`,
  );
  bench.out(
    `receivers: limit429 = 429 (no Retry-After) past N accepted in any sliding second; knee = FIFO server of N/s + ${baseMs} ms, ` +
      `always 200 unless a request would queue > ${shedAfterMs / 1000} s (then 503 at once); shift-* = limit429 whose N moves`,
  );
  bench.out(
    `converged at: the first second k such that every ${W} s window from k to the end of the run has accepted ≥ ${TARGET.share * 100} % ` +
      `of the receiver's capacity over it and ≤ ${TARGET.refusedPer1000} refusals (429 + 503) per 1,000 requests` +
      ` — and for knee p99 latency ≤ ${fmt(kneeP99Ms)} ms (3 × its unloaded ${fmt(baseMs + 1000 / N)} ms); "never" when the last window fails`,
  );

  const { server, postmaster } = await bench.postgres(true);
  const rx = await CapacityServer.start();
  const sluice = new SluiceCluster({ databaseUrl: server.url, logPrefix: bench.log("adaptive") });
  await sluice.startApi();

  const dests = kinds.flatMap((k) =>
    VARIANTS.map((variant) => {
      const model = k.make();
      const path = `/${k.kind}/${variant}`;
      const fixed = FIXED_FACTOR[variant];
      const rate = fixed === null ? null : fixed * model.capacityAt(0);
      const body: Record<string, unknown> = { name: `${k.kind} ${variant}`, url: rx.host(path, model), max_concurrency: maxConcurrency };
      if (rate === null) body.adaptive = { enabled: true };
      else body.rate_limit = { max_per_second: rate, burst_capacity: Math.max(1, Math.round(rate / 10)) };
      // The most it can take over the run: its receiver's highest capacity, or its own rate limit.
      const maxCapacity = Math.max(...Array.from({ length: D }, (_, s) => model.capacityAt(s * 1000 + 500)));
      const most = Math.min(rate ?? Infinity, maxCapacity);
      return { ...k, variant, model, path, body, queue: Math.ceil(most * (1.1 * D + 5)), id: "" };
    }),
  );
  for (const d of dests) {
    const res = await sluice.call("POST", "/v1/destinations", d.body);
    if (res.status !== 201)
      throw new Error(
        `creating '${String(d.body.name)}' answered ${res.status}${d.variant === "adaptive" ? " (does the engine know `adaptive` yet?)" : ""}: ` +
          JSON.stringify(res.json).slice(0, 400),
      );
    d.id = (res.json as { id: string }).id;
  }
  const first = await sluice.must(200, "GET", `/v1/destinations/${dests[0]!.id}`);
  if (!("effective_rate_per_second" in first))
    bench.out("note: GET /v1/destinations/{id} has no effective_rate_per_second: the pace columns will show '?'");

  const busyBefore = f["wait-quiet-s"] > 0 ? await waitQuiet(f["wait-quiet-s"] * 1000) : await machineBusyPct(1000);
  // Backlogged from the start: everything each destination could take in the run, queued before the workers start.
  const targets = dests.flatMap((d) => Array<string>(d.queue).fill(d.id));
  const publishStart = Date.now();
  await sluice.publishAll(targets.length, (i) => ({ type: "adaptive.bench", payload: { n: i }, destination_ids: [targets[i]!] }));
  bench.out(
    `queued ${fmt(targets.length)} deliveries in ${fmt((Date.now() - publishStart) / 1000, 1)} s ` +
      `(${dests.map((d) => `${d.kind}/${d.variant} ${fmt(d.queue)}`).join(", ")}); ` +
      `${f["no-analyze"] ? "no ANALYZE" : "ANALYZE"}; starting ${workers} workers`,
  );

  // Statistics for the queued rows, as a database in service has them. Without them, autovacuum's
  // first ANALYZE lands mid-run (~60 s after Postgres started) and changes the claim's plans under the run.
  if (!f["no-analyze"]) await adminQuery(server.url, "ANALYZE");
  // Time 0: the first delivery to reach any receiver (the workers take a few seconds to start).
  await sluice.startWorkers(workers, false);
  let noStart: NodeJS.Timeout | undefined;
  await Promise.race([
    rx.begun,
    new Promise<never>((_, reject) => {
      noStart = setTimeout(() => reject(new Error("no delivery arrived within 120 s of starting the workers")), 120_000);
    }),
  ]);
  clearTimeout(noStart);
  // The receivers live in this process: "bench" below is the bench and its receivers.
  const cpu = new CpuSampler({ system: "sluice", pids: () => sluice.pids(), postmaster, receiver: -1 }).begin();
  const samples = new Map<string, PaceSample[]>(dests.map((d) => [d.id, []]));
  const sample = async (d: (typeof dests)[number], t: number): Promise<void> => {
    const j = await sluice.must(200, "GET", `/v1/destinations/${d.id}`);
    samples.get(d.id)!.push({
      t,
      rate: j.effective_rate_per_second as number | null | undefined,
      concurrency: j.effective_concurrency as number | undefined,
      reason: j.pace_reason as string | null | undefined,
      changedAt: j.pace_changed_at as string | null | undefined,
      queued: j.queued_events as number,
      inflight: j.inflight as number,
      status: j.status as string,
    });
  };
  const acceptedSince = (path: string, fromMs: number): number =>
    rx.served(path).filter((s) => s.at >= fromMs && s.status >= 200 && s.status < 300).length;
  for (let t = 0; t <= D; t++) {
    await sleep(Math.max(0, t * 1000 - rx.elapsed()));
    await Promise.all(dests.map((d) => sample(d, t)));
    if (t > 0 && (t % 5 === 0 || t === D)) {
      const from = Math.max(0, t - 5);
      const perKind = kinds.map((k) => {
        const rates = VARIANTS.map((v) => fmt(acceptedSince(`/${k.kind}/${v}`, from * 1000) / (t - from)));
        return `${k.kind} ${rates.join("/")}`;
      });
      process.stderr.write(
        `  ${t}/${D} s — accepted/s over the last ${t - from} s (adaptive/fixed-high/fixed-low): ${perKind.join(" · ")}\n`,
      );
    }
  }
  const cpuFigures: CpuFigures = cpu.end();
  // The requests that arrived within the run, once answered (knee answers late): then the figures.
  const inRun = (path: string) => rx.served(path).filter((s) => s.at < D * 1000);
  for (const until = Date.now() + 10_000; Date.now() < until; await sleep(100))
    if (dests.every((d) => inRun(d.path).every((s) => Number.isFinite(s.latencyMs)))) break;
  await sluice.stop();

  const results = dests.map((d) => {
    const served = inRun(d.path).map((s) => ({ ...s }));
    const figures = paceFigures(served, (t) => d.model.capacityAt(t), D, d.criteria, d.shift ? shiftAtS : null);
    const s = samples.get(d.id)!;
    return {
      kind: d.kind,
      variant: d.variant,
      receiver: d.model.label,
      config: d.body,
      queued: d.queue,
      maxInflight: rx.maxInflight(d.path),
      minBacklog: Math.min(...s.map((x) => x.queued)),
      final: s.at(-1)!,
      paceChanges: new Set(s.map((x) => x.changedAt).filter((x) => x)).size,
      figures,
      criteria: d.criteria,
      samples: s,
    };
  });
  type Result = (typeof results)[number];

  // ---- the tables ------------------------------------------------------------------------------
  const pct = (x: number | null | undefined): string => (x === null || x === undefined ? "–" : `${fmt(100 * x)} %`);
  const rateCell = (x: number | null | undefined): string => (x === undefined ? "?" : x === null ? "unlimited" : `${fmt(x, 1)}/s`);
  const latencyCell = (x: { p50Ms: number | null; p99Ms: number | null } | null): string =>
    x && (x.p50Ms !== null || x.p99Ms !== null) ? `${fmt(x.p50Ms)} / ${fmt(x.p99Ms)}` : "–";
  const name = (r: Result): string[] => [r.receiver, r.variant];
  bench.out(`\nonce converged (from "converged at" to the end of the run; targets marked ✓/✗):`);
  bench.out(
    table([
      ["receiver", "destination", "converged at", "shift: by · again after", "capacity used", "429+503 per 1k", "p50 / p99 ms"],
      ...results.map((r) => {
        const g = r.figures;
        const c = g.converged;
        const at = (s: number | null | undefined, plus = ""): string => (s === null || s === undefined ? "never" : `${plus}${s} s`);
        const p99Mark = r.criteria.maxP99Ms !== null && c ? ` ${mark(c.p99Ms !== null && c.p99Ms <= r.criteria.maxP99Ms)}` : "";
        return [
          ...name(r),
          `${at(g.convergedAtS)} ${mark(g.convergedAtS !== null)}`,
          "convergedBeforeShiftS" in g ? `${at(g.convergedBeforeShiftS)} · ${at(g.reconvergedAfterShiftS, "+")}` : "",
          c ? `${pct(c.share)} ${mark((c.share ?? 0) >= TARGET.share)}` : "–",
          c?.refusedPer1000 != null ? `${fmt(c.refusedPer1000, 1)} ${mark(c.refusedPer1000 <= TARGET.refusedPer1000)}` : "–",
          latencyCell(c) + p99Mark,
        ];
      }),
    ]),
  );
  bench.out(
    `targets: capacity used ≥ ${TARGET.share * 100} %, ≤ ${TARGET.refusedPer1000} refusals (429 + 503) per 1,000 requests, knee p99 ≤ ${fmt(kneeP99Ms)} ms. ` +
      `shift: converged by that second before the shift at ${shiftAtS} s, and again that long after it (+0 s: stayed converged).`,
  );
  bench.out(`\nthe whole run (${D} s from the first delivery; latency as served by the receiver):`);
  bench.out(
    table([
      [
        "receiver",
        "destination",
        "accepted/s",
        "429s",
        "503s",
        "requests",
        "p50 / p99 ms",
        "max in flight",
        "min backlog",
        "at the end (API)",
      ],
      ...results.map((r) => {
        const g = r.figures;
        const end =
          r.variant === "adaptive"
            ? `${rateCell(r.final.rate)} × ${r.final.concurrency ?? "?"}`
            : r.final.status !== "active"
              ? r.final.status
              : "";
        return [
          ...name(r),
          fmt(g.acceptedPerSec, 1),
          fmt(g.overall.r429),
          fmt(g.overall.r503),
          fmt(g.requests),
          latencyCell(g.overall),
          fmt(r.maxInflight),
          fmt(r.minBacklog),
          end,
        ];
      }),
    ]),
  );
  const cpuLine = ["sluice", "postgres", "bench", "(other processes, kernel)", "(machine busy)"].map(
    (k) => `${k === "bench" ? "bench + receivers" : k.replace(/[()]/g, "")} ${fmt(cpuFigures[k]?.pctOfOneCore)} %`,
  );
  bench.out(
    "min backlog: the fewest queued_events the API showed in the run (retries waiting included). at the end: adaptive ones " +
      "effective_rate_per_second × effective_concurrency; a fixed one's status when not active.",
  );
  bench.out(
    `CPU over the run, % of one core (${availableParallelism()} cores): ${cpuLine.join(", ")}; machine busy before the run ${busyBefore} %`,
  );
  // Sluice, Postgres and the receivers share the machine: a stranger's CPU shows as a dip in every destination at once.
  const strangers = cpuFigures["(other processes, kernel)"]?.pctOfOneCore ?? 0;
  if (strangers >= 10)
    bench.out(`note: other processes (and the kernel) used ${strangers} % of one core during the run: the figures may be disturbed`);
  // A control: fixed-low below its receiver's capacity all run long should get its whole rate in every window.
  const controls = results.filter((r) => r.variant === "fixed-low" && r.kind !== "shift-down");
  const worst = controls.map((r) => {
    const rate = (r.config.rate_limit as { max_per_second: number }).max_per_second;
    const acc = r.figures.perSecond.accepted;
    const share = (k: number): number => acc.slice(k, k + W).reduce((a, b) => a + b, 0) / (W * rate);
    const k = Array.from({ length: D - W + 1 }, (_, i) => i).reduce((a, b) => (share(b) < share(a) ? b : a), 0);
    return { r, share: share(k), at: k };
  });
  const low = worst.filter((x) => x.share < 0.9);
  bench.out(
    `control: fixed-low on ${controls.map((r) => r.kind).join(", ")} (below capacity all run) got in its worst ${W} s window ` +
      worst.map((x) => `${pct(x.share)} of its rate (from ${x.at} s)`).join(", ") +
      (low.length === 0 ? " ✓" : ` ✗ — Sluice or the machine fell behind there, and the other destinations' figures suffer too`),
  );

  // ---- the adaptive destinations' pace, every 5 s ---------------------------------------------
  const adaptive = results.filter((r) => r.variant === "adaptive");
  const at = (r: Result, t: number): PaceSample | undefined => r.samples.find((x) => x.t === t);
  const traceRows = Array.from({ length: Math.floor(D / 5) + 1 }, (_, i) => i * 5).map((t) => [
    `${t} s`,
    ...adaptive.map((r) => {
      const x = at(r, t);
      const acc = t === 0 ? "" : ` · ${fmt(r.figures.perSecond.accepted.slice(t - 5, t).reduce((a, b) => a + b, 0) / 5)}`;
      return x ? `${rateCell(x.rate)} × ${x.concurrency ?? "?"}${acc}` : "–";
    }),
  ]);
  bench.out("\nadaptive destinations: effective_rate_per_second × effective_concurrency (API) · accepted/s over the 5 s before (receiver)");
  bench.out(table([["t", ...adaptive.map((r) => `${r.kind} (capacity ${r.receiver.replace(/^\S+ /, "")})`)], ...traceRows]));
  for (const r of adaptive) {
    const reasons: string[] = [];
    for (const x of r.samples.filter((s) => s.t % 5 === 0 || s.t === D)) {
      const reason = x.reason === undefined ? "?" : (x.reason ?? "null");
      if (reasons.at(-1)?.endsWith(`"${reason}"`) !== true) reasons.push(`${x.t} s "${reason}"`);
    }
    bench.out(
      `  ${r.kind}: pace_reason at the end "${r.final.reason ?? "null"}", pace_changed_at ${r.final.changedAt ?? "null"}; ` +
        `${r.paceChanges} distinct pace_changed_at seen (sampled each second); every 5 s: ${reasons.join(", ")}`,
    );
  }

  const failed = adaptive.filter((r) => {
    const c = r.figures.converged;
    const latencyOk = r.criteria.maxP99Ms === null || (c?.p99Ms != null && c.p99Ms <= r.criteria.maxP99Ms);
    return !c || (c.share ?? 0) < TARGET.share || (c.refusedPer1000 ?? 0) > TARGET.refusedPer1000 || !latencyOk;
  });
  bench.out(
    failed.length === 0
      ? "\nverdict: every adaptive destination converged and met the targets ✓"
      : `\nverdict: adaptive destinations that missed a target: ${failed.map((r) => r.kind).join(", ")} ✗`,
  );
  bench.finish("adaptive", {
    cpu: cpuFigures,
    machineBusyBeforePct: busyBefore,
    options: {
      analyze: !f["no-analyze"],
      capacity: N,
      durationS: D,
      windowS: W,
      kneeBaseMs: baseMs,
      kneeP99Ms,
      shedAfterMs,
      maxConcurrency,
      workers,
      shiftAtS,
    },
    results,
  });
  await rx.close();
}

runBench(main);
