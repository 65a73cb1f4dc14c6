// "Isolation" figure: does one destination that answers 429 (Retry-After: 5) with a large backlog
// cost the healthy destinations beside it anything? Two runs on fresh databases of one throwaway
// Postgres server, each with `sluice api` + N × `sluice worker` started the same way:
//   A  baseline: the healthy destinations only; the healthy workload is published while timing.
//   B  the same, plus one destination whose receiver path answers 429 with `Retry-After: 5`: its
//      backlog is published first (workers running), we wait until it shows `status: "throttled"`,
//      then the same healthy workload is published while timing.
// Measured at the receiver: healthy deliveries/s and publish → arrival latency.
// Targets (the issue): throughput B/A ≥ 0.95, p99 latency B/A ≤ 1.1.
// Usage: npm run bench:isolation [-- --quick | --destinations 1000 --healthy-events 100000 --backlog 100000 --workers 2]
import { mkdirSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { adminQuery, dropDatabase, postmasterPid, recreateDatabase, serverSettings, startPostgres } from "./pg.js";
import { CpuSampler, machineBusyPct, sleep } from "./procs.js";
import { sourceState } from "./diagnostics.js";
import { writeJson } from "./report.js";
import type { CountReport } from "./count-receiver.js";
import { CountReceiver, REPO, SluiceCluster, fmt, rates, registerPostgres, runBench, intFlag, table, waitQuiet } from "./sluice-cluster.js";

const HELP = `npm run bench:isolation -- [options]

  --destinations N     destinations in all, the throttled one included (default 1000; --quick 100)
  --healthy-events N   healthy workload: events round-robin over the healthy destinations (default 100000; --quick 10000)
  --backlog N          deliveries queued for the throttled destination in run B (default 100000; --quick 10000)
  --workers N          sluice worker processes beside one sluice api (default 2)
  --retry-after S      the throttled destination's Retry-After, seconds (default 5)
  --publish-rate N     pace the healthy workload at N events/s (default 0: as fast as the API takes them)
  --timeout-s N        per run, for the healthy workload to arrive (default 900)
  --wait-quiet-s N     before each run, wait up to N s for other processes to leave the CPU (default 60; 0 = don't)
  --no-fsync           Postgres with fsync=off (default: durable)
  --quick              small: 100 destinations, 10,000 events, 10,000 backlog
`;

const BATCH = 1000;

interface RunOutcome {
  run: "A" | "B";
  healthyDestinations: number;
  throttledDestination: string | null;
  backlog: { deliveries: number; publishS: number; waitedForThrottledS: number; requestsBeforeHealthy: number } | null;
  machineBusyBeforePct: number;
  publish: { ms: number; eventsPerSec: number };
  received: number;
  expected: number;
  duplicates: number;
  complete: boolean;
  deliveriesPerSec: number | null;
  steadyPerSec: number | null;
  spanS: number | null;
  latencyMs: CountReport["latencyMs"];
  cpu: ReturnType<CpuSampler["end"]>;
  engine: Record<string, number> | null;
  throttled: null | {
    requestsDuringHealthy: number;
    /** Seconds from the first healthy publish to the last healthy arrival. */
    phaseS: number;
    requestsPer5s: number;
    /** Gaps between bursts of requests (s): should be ≈ Retry-After. */
    burstGapsS: number[];
    requestsPerBurst: number[];
    /** Share of 1 s samples (from the database) during the healthy phase in which it was held. */
    heldShare: number;
    statusAtStart: unknown;
    statusAtEnd: unknown;
    attempts: number;
    queued: number;
  };
  endState: Record<string, number>;
  /** Rows Postgres read during the healthy workload, per table (sequential) and index, most first. */
  dbWork: { name: string; rows: number; scans: number }[];
}

type Stats = Map<string, { rows: number; scans: number }>;

/** Cumulative rows read by sequential scans per table and fetched through each index (pg_stat_*). */
async function tableStats(db: pg.Client): Promise<Stats> {
  const rows = (await db.query<{ name: string; rows: string; scans: string }>(
    `SELECT 'seq scan ' || relname AS name, coalesce(seq_tup_read, 0) AS rows, coalesce(seq_scan, 0) AS scans FROM pg_stat_user_tables
     UNION ALL
     SELECT 'index ' || indexrelname, coalesce(idx_tup_read, 0), coalesce(idx_scan, 0) FROM pg_stat_user_indexes`)).rows;
  return new Map(rows.map((r) => [r.name, { rows: Number(r.rows), scans: Number(r.scans) }]));
}

function diffStats(a: Stats, b: Stats): RunOutcome["dbWork"] {
  return [...b].map(([name, v]) => ({ name, rows: v.rows - (a.get(name)?.rows ?? 0), scans: v.scans - (a.get(name)?.scans ?? 0) }))
    .filter((x) => x.rows > 0 || x.scans > 0).sort((x, y) => y.rows - x.rows);
}


async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      destinations: { type: "string" }, "healthy-events": { type: "string" }, backlog: { type: "string" }, workers: { type: "string" },
      "retry-after": { type: "string" }, "publish-rate": { type: "string" }, "timeout-s": { type: "string" }, "wait-quiet-s": { type: "string" },
      "no-fsync": { type: "boolean" }, quick: { type: "boolean" }, help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const quick = values.quick ?? false;
  const destinations = intFlag(values.destinations, quick ? 100 : 1000, "destinations", 2);
  const healthy = destinations - 1;
  const healthyEvents = intFlag(values["healthy-events"], quick ? 10_000 : 100_000, "healthy-events");
  const backlog = intFlag(values.backlog, quick ? 10_000 : 100_000, "backlog");
  const workers = intFlag(values.workers, 2, "workers");
  const retryAfter = intFlag(values["retry-after"], 5, "retry-after");
  const publishRate = intFlag(values["publish-rate"], 0, "publish-rate", 0);
  const timeoutMs = intFlag(values["timeout-s"], 900, "timeout-s") * 1000;
  const waitQuietMs = intFlag(values["wait-quiet-s"], 60, "wait-quiet-s", 0) * 1000;
  const fsync = !(values["no-fsync"] ?? false);
  // Delivered (and not measured) before anything else in both runs.
  const warmup = Math.min(5000, Math.max(BATCH, Math.round(healthyEvents / 20 / BATCH) * BATCH));

  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  const logDir = join(REPO, "bench", "results", "logs");
  mkdirSync(logDir, { recursive: true });
  const startedAt = new Date();
  const source = sourceState(REPO);
  out(`Sluice isolation benchmark — ${startedAt.toISOString()}`);
  out(`machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; Sluice ${source.commit}` +
    `${source.localChanges.length ? ` + local changes (${source.localChanges.length} files)` : ""} (fingerprint ${source.fingerprint})`);
  out(`workload: ${fmt(healthy)} healthy destinations, ${fmt(healthyEvents)} events round-robin over them in batches of ${BATCH}` +
    `${publishRate > 0 ? ` paced at ${fmt(publishRate)}/s` : " published as fast as the API takes them"}; ` +
    `run B adds 1 destination answering 429 Retry-After: ${retryAfter} with ${fmt(backlog)} deliveries queued first. ` +
    `sluice api + ${workers} × sluice worker, all destinations at Sluice's defaults (max_concurrency 5); ` +
    `${fmt(warmup)} warm-up deliveries first in both runs (not measured).`);

  const server = await startPostgres({ fsync });
  registerPostgres(server);
  const settings = await serverSettings(server.url);
  out(`Postgres ${settings.version} (throwaway): fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}, shared_buffers=${settings.shared_buffers}`);
  const receiver = await CountReceiver.start(join(logDir, "isolation-receiver.log"), retryAfter);

  const runs: RunOutcome[] = [];
  for (const run of ["A", "B"] as const) {
    const dbName = `isolation_${run.toLowerCase()}`;
    process.stderr.write(`\n▶ run ${run}: ${run === "A" ? "baseline, healthy destinations only" : `with a throttled destination holding ${fmt(backlog)} deliveries`}\n`);
    await adminQuery(server.url, "CHECKPOINT");
    const url = await recreateDatabase(server.url, dbName);
    try {
      runs.push(await oneRun({ run, url, receiver, healthy, healthyEvents, backlog, workers, warmup, publishRate, timeoutMs, waitQuietMs, logPrefix: join(logDir, `isolation-${run}`), postmaster: () => postmasterPid(server.dataDir) }));
    } finally {
      await dropDatabase(server.url, dbName);
    }
    const r = runs[runs.length - 1]!;
    process.stderr.write(`  run ${r.run}: ${fmt(r.received)}/${fmt(r.expected)} received, ${fmt(r.deliveriesPerSec)}/s, p99 ${fmt(r.latencyMs?.p99)} ms\n`);
  }

  const [a, b] = runs as [RunOutcome, RunOutcome];
  const ratio = (x: number | null | undefined, y: number | null | undefined): number | null => (x && y ? x / y : null);
  const tputRatio = ratio(b.deliveriesPerSec, a.deliveriesPerSec);
  const steadyRatio = ratio(b.steadyPerSec, a.steadyPerSec);
  const p99Ratio = ratio(b.latencyMs?.p99, a.latencyMs?.p99);
  const p50Ratio = ratio(b.latencyMs?.p50, a.latencyMs?.p50);
  const cpu = (r: RunOutcome, k: string): string => `${fmt(r.cpu[k]?.pctOfOneCore)} %`;
  const eng = (r: RunOutcome, k: string, d = 0): string => fmt(r.engine?.[k], d);
  out("");
  out(table([
    ["healthy workload", "A: baseline", "B: + throttled", "B/A"],
    ["received", `${fmt(a.received)}/${fmt(a.expected)}`, `${fmt(b.received)}/${fmt(b.expected)}`, ""],
    ["publish (s)", fmt(a.publish.ms / 1000, 1), fmt(b.publish.ms / 1000, 1), fmt(ratio(b.publish.ms, a.publish.ms), 2)],
    ["deliveries/s (first publish → last arrival)", fmt(a.deliveriesPerSec), fmt(b.deliveriesPerSec), fmt(tputRatio, 3)],
    ["deliveries/s (steady: middle 80 %)", fmt(a.steadyPerSec), fmt(b.steadyPerSec), fmt(steadyRatio, 3)],
    ["latency p50 (ms)", fmt(a.latencyMs?.p50), fmt(b.latencyMs?.p50), fmt(p50Ratio, 3)],
    ["latency p90 (ms)", fmt(a.latencyMs?.p90), fmt(b.latencyMs?.p90), fmt(ratio(b.latencyMs?.p90, a.latencyMs?.p90), 3)],
    ["latency p99 (ms)", fmt(a.latencyMs?.p99), fmt(b.latencyMs?.p99), fmt(p99Ratio, 3)],
    ["latency max (ms)", fmt(a.latencyMs?.max), fmt(b.latencyMs?.max), ""],
    ["CPU sluice (% of one core)", cpu(a, "sluice"), cpu(b, "sluice"), ""],
    ["CPU postgres", cpu(a, "postgres"), cpu(b, "postgres"), ""],
    ["CPU other processes", cpu(a, "(other processes, kernel)"), cpu(b, "(other processes, kernel)"), ""],
    ["machine busy before the run", `${a.machineBusyBeforePct} %`, `${b.machineBusyBeforePct} %`, ""],
    ["claims (worker metrics)", eng(a, "claims"), eng(b, "claims"), ""],
    ["claim avg ms", eng(a, "claim avg ms", 1), eng(b, "claim avg ms", 1), ""],
    ["deliveries per claim", eng(a, "deliveries per claim", 1), eng(b, "deliveries per claim", 1), ""],
  ]));
  // Where Postgres read rows during each healthy workload: a backlog that costs the healthy
  // destinations work shows up as more rows read per healthy delivery in B.
  const names = [...new Set([...a.dbWork, ...b.dbWork].map((x) => x.name))];
  const get = (r: RunOutcome, n: string) => r.dbWork.find((x) => x.name === n);
  const work = names.map((n) => ({ n, a: get(a, n), b: get(b, n) }))
    .sort((x, y) => Math.max(y.a?.rows ?? 0, y.b?.rows ?? 0) - Math.max(x.a?.rows ?? 0, x.b?.rows ?? 0)).slice(0, 8);
  out(`\nrows Postgres read during the healthy workload (pg_stat_user_tables/indexes), per healthy delivery — the 8 largest:`);
  out(table([
    ["", "A rows/delivery", "B rows/delivery", "A scans", "B scans"],
    ...work.map((w) => [`  ${w.n}`, fmt((w.a?.rows ?? 0) / a.expected, 1), fmt((w.b?.rows ?? 0) / b.expected, 1), fmt(w.a?.scans ?? 0), fmt(w.b?.scans ?? 0)]),
  ]));
  const t = b.throttled;
  if (t) {
    out(`\nthrottled destination in run B (${b.throttledDestination}):`);
    out(`  backlog: ${fmt(b.backlog?.deliveries)} deliveries published in ${fmt(b.backlog?.publishS, 1)} s with the workers running; ` +
      `status "throttled" ${fmt(b.backlog?.waitedForThrottledS, 1)} s after that; ${fmt(b.backlog?.requestsBeforeHealthy)} requests reached it before the healthy workload`);
    out(`  during the healthy workload (${fmt(t.phaseS, 1)} s): ${fmt(t.requestsDuringHealthy)} requests (429) = ${fmt(t.requestsPer5s, 1)} per 5 s, ` +
      `in bursts of ${t.requestsPerBurst.length ? `${Math.min(...t.requestsPerBurst)}–${Math.max(...t.requestsPerBurst)}` : "–"} ` +
      `every ${t.burstGapsS.length ? `${fmt(Math.min(...t.burstGapsS), 1)}–${fmt(Math.max(...t.burstGapsS), 1)}` : "–"} s; ` +
      `held (throttled_until > now) in ${fmt(100 * t.heldShare)} % of 1 s samples`);
    const st = (s: unknown): string => {
      const d = s as { status?: string; queued_events?: number; throttle_reason?: string | null } | null;
      return d ? `status ${JSON.stringify(d.status)}, queued_events ${fmt(d.queued_events)}, throttle_reason ${JSON.stringify(d.throttle_reason)}` : "–";
    };
    out(`  GET /v1/destinations/{id} at the start of the healthy workload: ${st(t.statusAtStart)}`);
    out(`  GET /v1/destinations/{id} at its end:                        ${st(t.statusAtEnd)}`);
    out(`  its attempts recorded in the whole run: ${fmt(t.attempts)}; its deliveries still queued: ${fmt(t.queued)} of ${fmt(b.backlog?.deliveries)}`);
  }
  const mark = (ok: boolean | null): string => (ok === null ? "?" : ok ? "✓" : "✗");
  out(`\nverdict (targets from the issue):`);
  out(`  healthy throughput B/A = ${fmt(tputRatio, 3)} ${mark(tputRatio === null ? null : tputRatio >= 0.95)} (target ≥ 0.95; steady-state B/A ${fmt(steadyRatio, 3)})`);
  out(`  healthy p99 latency B/A = ${fmt(p99Ratio, 3)} ${mark(p99Ratio === null ? null : p99Ratio <= 1.1)} (target ≤ 1.1; p50 B/A ${fmt(p50Ratio, 3)})`);
  out(`  throttled destination shows status "throttled": ${mark(t ? (t.statusAtStart as { status?: string } | null)?.status === "throttled" && (t.statusAtEnd as { status?: string } | null)?.status === "throttled" : null)}`);
  if (!a.complete || !b.complete) out(`  ✗ a run did not receive its whole workload before the timeout: the figures are partial`);
  out(`notes: deliveries/s = distinct healthy deliveries ÷ (last arrival − first healthy publish); latency = arrival − the batch's publish time ` +
    `(sent_at in the payload), so with an unpaced workload it is mostly queueing time. Before each healthy workload the bench runs VACUUM ANALYZE and ` +
    `CHECKPOINT (in both runs alike) so that neither run pays for the other's autovacuum or checkpoint. On a shared 2-core machine runs vary by ±10-15 %: ` +
    `compare ratios only when "CPU other processes" is low in both.`);

  const file = join(REPO, "bench", "results", "isolation.json");
  writeJson(file, {
    startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString(), source, postgres: settings,
    options: { destinations, healthyDestinations: healthy, healthyEvents, backlog, warmup, workers, retryAfter, publishRate, timeoutMs, fsync, quick, batch: BATCH },
    verdict: { throughputRatio: tputRatio, steadyThroughputRatio: steadyRatio, p99Ratio, p50Ratio, throughputOk: tputRatio !== null && tputRatio >= 0.95, p99Ok: p99Ratio !== null && p99Ratio <= 1.1 },
    runs,
  });
  out(`results: ${file} (process logs: ${logDir})`);
}

async function oneRun(o: {
  run: "A" | "B"; url: string; receiver: CountReceiver; healthy: number; healthyEvents: number; backlog: number; workers: number; warmup: number;
  publishRate: number; timeoutMs: number; waitQuietMs: number; logPrefix: string; postmaster: () => number | null;
}): Promise<RunOutcome> {
  const { receiver } = o;
  const cluster = new SluiceCluster(o.url, o.logPrefix);
  const db = new pg.Client({ connectionString: o.url });
  db.on("error", () => undefined); // the server going away (Ctrl-C) surfaces as a failed query instead
  try {
    await cluster.startApi();
    await db.connect();
    // Healthy destinations first (in both runs), then the throttled one (run B only).
    const ids: string[] = new Array<string>(o.healthy);
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i = next++; i < o.healthy; i = next++) ids[i] = await cluster.createDestination({ url: receiver.url(`/d/${i}`), name: `healthy-${i}` });
    }));
    const throttledId = o.run === "B" ? await cluster.createDestination({ url: receiver.url("/throttled"), name: "throttled" }) : null;
    await cluster.startWorkers(o.workers, true);
    process.stderr.write(`  ${o.healthy} healthy destinations${throttledId ? " + 1 throttled" : ""}; sluice api + ${o.workers} workers running\n`);

    // Warm-up, the same in both runs: the API and the workers see some traffic (JIT, connection
    // pools) before anything is timed — in run B the backlog would otherwise warm them for B alone.
    await receiver.reset(0);
    for (let off = 0; off < o.warmup; off += BATCH) {
      const n = Math.min(BATCH, o.warmup - off);
      await cluster.publishBatch(Array.from({ length: n }, (_, k) => ({ type: "bench.warmup", payload: { warmup: off + k }, destination_ids: [ids[(off + k) % o.healthy]!] })));
    }
    for (const until = Date.now() + 120_000; (await receiver.progress()).total < o.warmup;) {
      if (Date.now() > until) throw new Error("the warm-up deliveries did not all arrive within 120 s");
      await sleep(200);
    }

    let backlogInfo: RunOutcome["backlog"] = null;
    if (throttledId) {
      const t0 = Date.now();
      for (let off = 0; off < o.backlog; off += BATCH) {
        const n = Math.min(BATCH, o.backlog - off);
        await cluster.publishBatch(Array.from({ length: n }, (_, k) => ({ type: "bench.backlog", payload: { backlog: off + k }, destination_ids: [throttledId] })));
      }
      const published = Date.now();
      process.stderr.write(`  backlog of ${fmt(o.backlog)} published in ${((published - t0) / 1000).toFixed(1)} s; waiting for status "throttled"\n`);
      for (;;) {
        const res = await cluster.call("GET", `/v1/destinations/${throttledId}`);
        if ((res.json as { status?: string }).status === "throttled") break;
        if (Date.now() - published > 60_000) throw new Error(`the 429 destination did not show status "throttled" within 60 s: ${JSON.stringify(res.json)}`);
        await sleep(250);
      }
      backlogInfo = { deliveries: o.backlog, publishS: (published - t0) / 1000, waitedForThrottledS: (Date.now() - published) / 1000, requestsBeforeHealthy: 0 };
    }

    // The same preparation in both runs: fresh statistics, no pending checkpoint, a quiet machine.
    await db.query("VACUUM ANALYZE destinations, events, deliveries, attempts");
    await db.query("CHECKPOINT");
    const busy = o.waitQuietMs > 0 ? await waitQuiet(o.waitQuietMs) : await machineBusyPct(1000);
    if (backlogInfo) backlogInfo.requestsBeforeHealthy = (await receiver.progress()).throttledAll;

    await receiver.reset(o.healthyEvents);
    const statusAtStart = throttledId ? (await cluster.call("GET", `/v1/destinations/${throttledId}`)).json : null;
    // The throttled destination's hold, sampled from the database once a second (cheap: one row by
    // primary key — GET /v1/destinations/{id} would count its whole backlog each time).
    const held: boolean[] = [];
    let sampling = throttledId !== null;
    const sampler = (async () => {
      while (sampling) {
        const r = await db.query<{ held: boolean }>("SELECT coalesce(throttled_until > now(), false) AS held FROM destinations WHERE id = $1", [throttledId]);
        held.push(r.rows[0]?.held ?? false);
        await sleep(1000);
      }
    })();
    await sleep(1100); // backends flush their table statistics at most once a second
    const statsBefore = await tableStats(db);
    const cpu = new CpuSampler(() => ({
      sluice: { pids: cluster.pids(), tree: true },
      postgres: { pids: [o.postmaster() ?? -1], tree: true },
      receiver: { pids: [receiver.pid], tree: false },
      "bench (publisher)": { pids: [process.pid], tree: false },
    }));

    const publishStart = Date.now();
    const deadline = publishStart + o.timeoutMs;
    cpu.begin();
    for (let off = 0, b = 0; off < o.healthyEvents; off += BATCH, b++) {
      if (o.publishRate > 0) {
        const due = publishStart + (off / o.publishRate) * 1000;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      const n = Math.min(BATCH, o.healthyEvents - off);
      const sentAt = Date.now();
      await cluster.publishBatch(Array.from({ length: n }, (_, k) => {
        const seq = off + k;
        return { type: "bench.event", payload: { seq, sent_at: sentAt }, destination_ids: [ids[seq % o.healthy]!] };
      }));
      if (Date.now() > deadline) break;
    }
    const publishMs = Date.now() - publishStart;
    process.stderr.write(`  healthy workload published in ${(publishMs / 1000).toFixed(1)} s\n`);
    let lastPrint = 0;
    for (;;) {
      const p = await receiver.progress();
      if (p.unique >= o.healthyEvents || Date.now() > deadline) break;
      if (Date.now() - lastPrint > 5000) {
        process.stderr.write(`  [${o.run}] received ${fmt(p.unique)}/${fmt(o.healthyEvents)}${throttledId ? `, 429s ${p.throttled}` : ""}  t=${((Date.now() - publishStart) / 1000).toFixed(0)}s\n`);
        lastPrint = Date.now();
      }
      await sleep(200);
    }
    const cpuUse = cpu.end();
    sampling = false;
    await sampler;
    await sleep(1100);
    const dbWork = diffStats(statsBefore, await tableStats(db));
    const rep = await receiver.report();
    const statusAtEnd = throttledId ? (await cluster.call("GET", `/v1/destinations/${throttledId}`)).json : null;
    const engine = await cluster.engineMetrics();
    const r = rates(rep, publishStart);

    let throttled: RunOutcome["throttled"] = null;
    if (throttledId) {
      const phaseEnd = rep.lastAt ?? Date.now();
      const during = rep.throttled.filter((at) => at >= publishStart && at <= phaseEnd);
      // Bursts: requests less than 1 s apart belong together.
      const bursts: number[][] = [];
      for (const at of during) {
        const last = bursts[bursts.length - 1];
        if (last && at - last[last.length - 1]! < 1000) last.push(at);
        else bursts.push([at]);
      }
      const phaseS = (phaseEnd - publishStart) / 1000;
      const counts = (await db.query<{ attempts: number; queued: number }>(
        `SELECT (SELECT count(*)::int FROM attempts WHERE destination_id = $1) AS attempts,
                (SELECT count(*)::int FROM deliveries WHERE destination_id = $1 AND status IN ('queued', 'retry_scheduled')) AS queued`, [throttledId])).rows[0]!;
      throttled = {
        requestsDuringHealthy: during.length, phaseS, requestsPer5s: phaseS > 0 ? (5 * during.length) / phaseS : 0,
        burstGapsS: bursts.slice(1).map((bu, i) => Math.round((bu[0]! - bursts[i]![0]!) / 100) / 10),
        requestsPerBurst: bursts.map((bu) => bu.length),
        heldShare: held.length ? held.filter(Boolean).length / held.length : 0,
        statusAtStart, statusAtEnd, attempts: counts.attempts, queued: counts.queued,
      };
    }
    const endState: Record<string, number> = {};
    for (const row of (await db.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries GROUP BY status ORDER BY status")).rows) {
      endState[`deliveries.${row.status}`] = row.n;
    }
    return {
      run: o.run, healthyDestinations: o.healthy, throttledDestination: throttledId, backlog: backlogInfo, machineBusyBeforePct: busy,
      publish: { ms: publishMs, eventsPerSec: o.healthyEvents / Math.max(0.001, publishMs / 1000) },
      received: rep.unique, expected: o.healthyEvents, duplicates: rep.duplicates, complete: rep.unique >= o.healthyEvents,
      deliveriesPerSec: r.perSec, steadyPerSec: r.steadyPerSec, spanS: r.spanS, latencyMs: rep.latencyMs,
      cpu: cpuUse, engine, throttled, endState, dbWork,
    };
  } finally {
    await db.end().catch(() => undefined);
    await cluster.stop();
  }
}

runBench(main);
