// Shared by bench/quiet.ts (its "cost" part) and bench/paused.ts: what do destinations holding a
// backlog they may not send — inside quiet hours, or paused — cost the active destinations beside
// them? One run = a fresh database with `sluice api` + N × `sluice worker`:
//   1. the active destinations and (in the run "with") the held ones are created through the API:
//      quiet ones with a quiet window open for the whole run, paused ones paused through the API;
//   2. the workers start and the same warm-up goes through in both runs;
//   3. ("with" only) the held backlog is published through the API, round-robin over the held
//      destinations, and the bench waits until none of them is ready (quiet: parked until their
//      window's end; paused: ready_at NULL);
//   4. VACUUM ANALYZE, CHECKPOINT, a quiet machine; snapshots of the held destinations' row
//      versions, of pg_stat_user_tables/indexes and of the workers' metrics;
//   5. the active workload is published with deliver_at = T, a moment after publishing will have
//      finished: every active delivery becomes due at once with the workers warm and idle, so only
//      delivery is timed (first → last arrival at the receiver), not ingest.
import pg from "pg";
import { DateTime } from "luxon";
import { CpuSampler, machineBusyPct, sleep } from "./procs.js";
import type { CountReport } from "./count-receiver.js";
import { CountReceiver, SluiceCluster, fmt, rates, table, waitQuiet, type ApiResponse } from "./sluice-cluster.js";
export { intFlag } from "./sluice-cluster.js";

export const BATCH = 1000;


/**
 * --order: the runs, in order; the comparison uses the LAST run of each label and every run is
 * saved. Default "AAB": a pilot run of the baseline, then A and B back to back — on a 2-core VM the
 * first run on a fresh server measured 5-15 % slower than the next whatever its kind (cold
 * receiver, Postgres server and OS caches), which would flatter B. "AB", "BA", "ABAB", … to check.
 */
export function parseRunOrder(v: string | undefined): ("A" | "B")[] {
  const o = (v ?? "AAB").toUpperCase();
  if (!/^[AB]+$/.test(o) || !o.includes("A") || !o.includes("B")) throw new Error(`--order takes a string of A and B runs with at least one of each (AAB, AB, BA, ABAB, …), not '${v}'`);
  return [...o] as ("A" | "B")[];
}

/** The runs a comparison uses: the last of each label. */
export function lastRuns<T extends { label: string }>(runs: T[]): [T, T] {
  const a = runs.filter((r) => r.label === "A").pop();
  const b = runs.filter((r) => r.label === "B").pop();
  if (!a || !b) throw new Error("a comparison needs a run A and a run B");
  return [a, b];
}

/** SluiceCluster.call with any method (its type admits GET and POST; the request passes the method through). */
export function callApi(cluster: SluiceCluster, method: "GET" | "POST" | "PATCH", path: string, body?: unknown): Promise<ApiResponse> {
  const call = cluster.call.bind(cluster) as (m: string, p: string, b?: unknown) => Promise<ApiResponse>;
  return call(method, path, body);
}

/** Runs `f(0 … n−1)` with `parallel` requests in flight. */
export async function forEachParallel(n: number, parallel: number, f: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(parallel, n) }, async () => {
    for (let i = next++; i < n; i = next++) await f(i);
  }));
}

/** Wall clock `offsetMs` from now in `zone`, as the HH:MM:SS a delivery_schedule takes. */
export function wallTime(zone: string, offsetMs: number): string {
  return DateTime.now().plus({ milliseconds: offsetMs }).setZone(zone).toFormat("HH:mm:ss");
}

// ---- Postgres counters -------------------------------------------------------------------------

export type Stats = Map<string, { rows: number; scans: number }>;

/** Cumulative rows read by sequential scans per table and fetched through each index (pg_stat_*). */
export async function tableStats(db: pg.Client): Promise<Stats> {
  const rows = (await db.query<{ name: string; rows: string; scans: string }>(
    `SELECT 'seq scan ' || relname AS name, coalesce(seq_tup_read, 0) AS rows, coalesce(seq_scan, 0) AS scans FROM pg_stat_user_tables
     UNION ALL
     SELECT 'index ' || indexrelname, coalesce(idx_tup_read, 0), coalesce(idx_scan, 0) FROM pg_stat_user_indexes`)).rows;
  return new Map(rows.map((r) => [r.name, { rows: Number(r.rows), scans: Number(r.scans) }]));
}

export function diffStats(a: Stats, b: Stats): { name: string; rows: number; scans: number }[] {
  return [...b].map(([name, v]) => ({ name, rows: v.rows - (a.get(name)?.rows ?? 0), scans: v.scans - (a.get(name)?.scans ?? 0) }))
    .filter((x) => x.rows > 0 || x.scans > 0).sort((x, y) => y.rows - x.rows);
}

/** Row versions: a claim that locks a row (FOR UPDATE) sets its xmax, one that writes it makes a new xmin. */
async function rowVersions(db: pg.Client, namePattern: string): Promise<Map<string, { xmin: string; xmax: string }>> {
  const rows = (await db.query<{ id: string; xmin: string; xmax: string }>(
    "SELECT id, xmin::text AS xmin, xmax::text AS xmax FROM destinations WHERE name LIKE $1", [namePattern])).rows;
  return new Map(rows.map((r) => [r.id, { xmin: r.xmin, xmax: r.xmax }]));
}

// ---- worker metrics over a phase ---------------------------------------------------------------

export interface ClaimFigures {
  claims: number;
  /** From the workers' rounded averages (0.1 ms): good to about ±0.1 ms. */
  claimAvgMs: number | null;
  attempts: number;
  deliveriesPerClaim: number | null;
}

function claimDiff(a: Record<string, number> | null, b: Record<string, number> | null): ClaimFigures | null {
  if (!a || !b) return null;
  const g = (m: Record<string, number>, k: string): number => m[k] ?? 0;
  const claims = g(b, "claims") - g(a, "claims");
  const ms = g(b, "claim avg ms") * g(b, "claims") - g(a, "claim avg ms") * g(a, "claims");
  const attempts = g(b, "attempts ok") + g(b, "attempts failed") - g(a, "attempts ok") - g(a, "attempts failed");
  return { claims, claimAvgMs: claims > 0 ? Math.round((10 * ms) / claims) / 10 : null, attempts, deliveriesPerClaim: claims > 0 ? Math.round((10 * attempts) / claims) / 10 : null };
}

// ---- one run ---------------------------------------------------------------------------------

export type HeldKind = "quiet" | "paused";

export interface HeldSpec {
  kind: HeldKind;
  destinations: number;
  perDestination: number;
  /** Quiet only: the zone of the window (open from 1 min before creation for `windowHours`). */
  timezone: string;
  windowHours: number;
}

export interface HeldRunOptions {
  label: string;
  url: string;
  receiver: CountReceiver;
  active: number;
  activeEvents: number;
  held: HeldSpec | null;
  workers: number;
  warmup: number;
  timeoutMs: number;
  waitQuietMs: number;
  logPrefix: string;
  postmaster: () => number | null;
}

export interface HeldOutcome {
  kind: HeldKind;
  destinations: number;
  perDestination: number;
  deliveries: number;
  schedule: unknown;
  createS: number;
  backlogPublishS: number;
  /** Backlog published → no held destination ready (quiet: all parked). */
  settleS: number;
  settled: boolean;
  claimsWhileSettling: ClaimFigures | null;
  /** destinations rows updated (n_tup_upd) while the backlog was published and settled. */
  destinationUpdatesWhileSettling: number;
  requestsWhileSettling: number;
  /** Quiet: the end of the open window, as GET /v1/destinations/{id} shows quiet_until. */
  windowEnd: string | null;
  statusAtStart: unknown;
  statusAtEnd: unknown;
  /** During the timed active workload. */
  duringRun: { requests: number; rowsLocked: number; rowsRewritten: number; maxReady: number };
  atEnd: { byStatus: Record<string, number>; attempts: number; readyAtWindowEnd: number; readyAtNull: number; readyNow: number; readyOther: number };
}

export interface HeldRunOutcome {
  label: string;
  activeDestinations: number;
  held: HeldOutcome | null;
  warmup: { events: number; publishMs: number };
  machineBusyBeforePct: number;
  publish: { ms: number; eventsPerSec: number; deliverAt: string; leadMs: number; finishedBeforeDue: boolean };
  received: number;
  expected: number;
  duplicates: number;
  complete: boolean;
  /** First → last arrival. */
  deliveriesPerSec: number | null;
  steadyPerSec: number | null;
  spanS: number | null;
  /** deliver_at → last arrival. */
  fromDuePerSec: number | null;
  firstArrivalAfterDueMs: number | null;
  /** Arrival − deliver_at. */
  latencyMs: CountReport["latencyMs"];
  /** destinations with ready_at <= now(), sampled twice a second during the timed workload. */
  ready: { samples: number; max: number; mean: number; maxHeld: number };
  claims: ClaimFigures | null;
  engine: Record<string, number> | null;
  cpu: ReturnType<CpuSampler["end"]>;
  dbWork: { name: string; rows: number; scans: number }[];
  endState: Record<string, number>;
}

export async function heldRun(o: HeldRunOptions): Promise<HeldRunOutcome> {
  const { receiver, held } = o;
  const cluster = new SluiceCluster(o.url, o.logPrefix);
  const db = new pg.Client({ connectionString: o.url });
  db.on("error", () => undefined); // the server going away (Ctrl-C) surfaces as a failed query instead
  const heldPattern = held ? `${held.kind}-%` : "held-none-%";
  const log = (s: string): void => void process.stderr.write(`  [${o.label}] ${s}\n`);
  try {
    await cluster.startApi();
    await db.connect();
    const ids = new Array<string>(o.active);
    await forEachParallel(o.active, 8, async (i) => {
      ids[i] = await cluster.createDestination({ url: receiver.url(`/d/${i}`), name: `active-${i}` });
    });

    // Held destinations: the receiver counts any request to them as "malformed" (no "seq").
    let heldIds: string[] = [];
    let createS = 0;
    let schedule: Record<string, unknown> | null = null;
    if (held) {
      const t0 = Date.now();
      schedule = held.kind === "quiet"
        ? { timezone: held.timezone, quiet_start: wallTime(held.timezone, -60_000), quiet_end: wallTime(held.timezone, held.windowHours * 3_600_000) }
        : null;
      heldIds = new Array<string>(held.destinations);
      await forEachParallel(held.destinations, 8, async (i) => {
        heldIds[i] = await cluster.createDestination({
          url: receiver.url(`/d/${held.kind}-${i}`), name: `${held.kind}-${i}`, ...(schedule ? { delivery_schedule: schedule } : {}),
        });
        if (held.kind === "paused") {
          const res = await cluster.call("POST", `/v1/destinations/${heldIds[i]}/pause`, { reason: "bench" });
          if (res.status !== 200) throw new Error(`pause answered ${res.status}: ${JSON.stringify(res.json)}`);
        }
      });
      createS = (Date.now() - t0) / 1000;
    }
    await cluster.startWorkers(o.workers, true);
    log(`${fmt(o.active)} active destinations${held ? ` + ${fmt(held.destinations)} ${held.kind} (created in ${createS.toFixed(1)} s)` : ""}; sluice api + ${o.workers} workers running`);

    // Warm-up, the same in both runs (API, workers, connection pools); its publish rate sizes
    // the lead before the timed workload comes due.
    await receiver.reset(0);
    const w0 = Date.now();
    for (let off = 0; off < o.warmup; off += BATCH) {
      const n = Math.min(BATCH, o.warmup - off);
      await cluster.publishBatch(Array.from({ length: n }, (_, k) => ({ type: "bench.warmup", payload: { warmup: off + k }, destination_ids: [ids[(off + k) % o.active]!] })));
    }
    const warmupPublishMs = Date.now() - w0;
    for (const until = Date.now() + 120_000; (await receiver.progress()).total < o.warmup;) {
      if (Date.now() > until) throw new Error("the warm-up deliveries did not all arrive within 120 s");
      await sleep(200);
    }

    let heldOut: HeldOutcome | null = null;
    if (held) {
      await receiver.reset(0);
      await sleep(1100); // table statistics are flushed at most once a second
      const updBefore = await destinationUpdates(db);
      const mBefore = await cluster.engineMetrics();
      const total = held.destinations * held.perDestination;
      const t0 = Date.now();
      for (let off = 0; off < total; off += BATCH) {
        const n = Math.min(BATCH, total - off);
        await cluster.publishBatch(Array.from({ length: n }, (_, k) => ({ type: "bench.held", payload: { held: off + k }, destination_ids: [heldIds[(off + k) % held.destinations]!] })));
      }
      const published = Date.now();
      log(`held backlog: ${fmt(total)} deliveries published in ${((published - t0) / 1000).toFixed(1)} s; waiting until no ${held.kind} destination is ready`);
      let settled = false;
      for (const until = published + 300_000; Date.now() < until;) {
        const r = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM destinations WHERE name LIKE $1 AND ready_at <= now()", [heldPattern]);
        if (r.rows[0]!.n === 0) {
          settled = true;
          break;
        }
        await sleep(200);
      }
      const settleS = (Date.now() - published) / 1000;
      if (!settled) log(`✗ ${held.kind} destinations still ready ${settleS.toFixed(0)} s after their backlog was published`);
      await sleep(1100);
      const mAfter = await cluster.engineMetrics();
      const statusAtStart = (await cluster.call("GET", `/v1/destinations/${heldIds[0]}`)).json as { quiet_until?: string | null };
      heldOut = {
        kind: held.kind, destinations: held.destinations, perDestination: held.perDestination, deliveries: total, schedule, createS,
        backlogPublishS: (published - t0) / 1000, settleS, settled, claimsWhileSettling: claimDiff(mBefore, mAfter),
        destinationUpdatesWhileSettling: (await destinationUpdates(db)) - updBefore,
        requestsWhileSettling: (await receiver.progress()).total,
        windowEnd: statusAtStart.quiet_until ?? null, statusAtStart, statusAtEnd: null,
        duringRun: { requests: 0, rowsLocked: 0, rowsRewritten: 0, maxReady: 0 },
        atEnd: { byStatus: {}, attempts: 0, readyAtWindowEnd: 0, readyAtNull: 0, readyNow: 0, readyOther: 0 },
      };
    }

    // The same preparation in both runs: fresh statistics, no pending checkpoint, a quiet machine.
    await db.query("VACUUM ANALYZE destinations, events, deliveries, attempts");
    await db.query("CHECKPOINT");
    const busy = o.waitQuietMs > 0 ? await waitQuiet(o.waitQuietMs) : await machineBusyPct(1000);
    const versionsBefore = held ? await rowVersions(db, heldPattern) : null;
    // A /metrics scrape runs database-wide queries (held deliveries by reason, …): before the
    // counters are read, so that its rows are not charged to the workload.
    const mBefore = await cluster.engineMetrics();
    await sleep(1100); // table statistics are flushed at most once a second
    const statsBefore = await tableStats(db);
    await receiver.reset(o.activeEvents);

    // deliver_at: long enough after now for the whole workload to be published (twice the
    // warm-up's publish rate says, + 2 s), so that nothing is due while publishing.
    const warmRate = o.warmup / Math.max(0.001, warmupPublishMs / 1000);
    const leadMs = Math.round(Math.min(120_000, Math.max(3000, (2 * o.activeEvents / warmRate) * 1000 + 2000)));
    const publishStart = Date.now();
    const dueMs = publishStart + leadMs;
    const deliverAt = new Date(dueMs).toISOString();
    for (let off = 0; off < o.activeEvents; off += BATCH) {
      const n = Math.min(BATCH, o.activeEvents - off);
      await cluster.publishBatch(Array.from({ length: n }, (_, k) => {
        const seq = off + k;
        return { type: "bench.event", payload: { seq, sent_at: dueMs }, destination_ids: [ids[seq % o.active]!], deliver_at: deliverAt };
      }));
    }
    const publishMs = Date.now() - publishStart;
    const finishedBeforeDue = Date.now() < dueMs;
    log(`active workload: ${fmt(o.activeEvents)} events published in ${(publishMs / 1000).toFixed(1)} s with deliver_at ${(leadMs / 1000).toFixed(1)} s after the first` +
      `${finishedBeforeDue ? "" : " — ✗ publishing outlasted deliver_at: delivery overlapped ingest"}`);
    const cpu = new CpuSampler(() => ({
      sluice: { pids: cluster.pids(), tree: true },
      postgres: { pids: [o.postmaster() ?? -1], tree: true },
      receiver: { pids: [receiver.pid], tree: false },
      "bench": { pids: [process.pid], tree: false },
    }));
    if (finishedBeforeDue) await sleep(Math.max(0, dueMs - Date.now() - 500));
    cpu.begin();

    // Ready destinations, twice a second (the partial index on ready_at: a cheap count).
    const readySamples: { all: number; held: number }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const r = await db.query<{ n_all: number; n_held: number }>(
          "SELECT count(*)::int AS n_all, (count(*) FILTER (WHERE name LIKE $1))::int AS n_held FROM destinations WHERE ready_at <= now()", [heldPattern]);
        readySamples.push({ all: r.rows[0]!.n_all, held: r.rows[0]!.n_held });
        await sleep(500);
      }
    })();
    const deadline = dueMs + o.timeoutMs;
    let lastPrint = 0;
    for (;;) {
      const p = await receiver.progress();
      if (p.unique >= o.activeEvents || Date.now() > deadline) break;
      if (Date.now() - lastPrint > 5000) {
        log(`received ${fmt(p.unique)}/${fmt(o.activeEvents)}  t=${((Date.now() - dueMs) / 1000).toFixed(0)}s after deliver_at`);
        lastPrint = Date.now();
      }
      await sleep(200);
    }
    const cpuUse = cpu.end();
    sampling = false;
    await sampler;
    const rep = await receiver.report();
    await sleep(1100);
    const dbWork = diffStats(statsBefore, await tableStats(db));
    const mAfter = await cluster.engineMetrics();
    const r = rates(rep, rep.firstAt ?? dueMs);
    const fromDue = rates(rep, dueMs);

    if (held && heldOut) {
      const after = await rowVersions(db, heldPattern);
      let locked = 0, rewritten = 0;
      for (const [id, v] of versionsBefore!) {
        const a = after.get(id);
        if (!a || a.xmin !== v.xmin) rewritten++;
        else if (a.xmax !== v.xmax) locked++;
      }
      const byStatus: Record<string, number> = {};
      for (const row of (await db.query<{ status: string; n: number }>(
        `SELECT x.status, count(*)::int AS n FROM deliveries x JOIN destinations d ON d.id = x.destination_id
          WHERE d.name LIKE $1 GROUP BY x.status ORDER BY x.status`, [heldPattern])).rows) byStatus[row.status] = row.n;
      const attempts = (await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM attempts a JOIN destinations d ON d.id = a.destination_id WHERE d.name LIKE $1", [heldPattern])).rows[0]!.n;
      const ready = (await db.query<{ at_end: number; at_null: number; now: number; other: number }>(
        `SELECT (count(*) FILTER (WHERE ready_at = $2::timestamptz))::int AS at_end,
                (count(*) FILTER (WHERE ready_at IS NULL))::int AS at_null,
                (count(*) FILTER (WHERE ready_at <= now()))::int AS now,
                (count(*) FILTER (WHERE ready_at > now() AND ready_at IS DISTINCT FROM $2::timestamptz))::int AS other
           FROM destinations WHERE name LIKE $1`, [heldPattern, heldOut.windowEnd])).rows[0]!;
      heldOut.statusAtEnd = (await cluster.call("GET", `/v1/destinations/${heldIds[0]}`)).json;
      heldOut.duringRun = { requests: rep.malformed, rowsLocked: locked, rowsRewritten: rewritten, maxReady: Math.max(0, ...readySamples.map((s) => s.held)) };
      heldOut.atEnd = { byStatus, attempts, readyAtWindowEnd: ready.at_end, readyAtNull: ready.at_null, readyNow: ready.now, readyOther: ready.other };
    }
    const endState: Record<string, number> = {};
    for (const row of (await db.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries GROUP BY status ORDER BY status")).rows) {
      endState[`deliveries.${row.status}`] = row.n;
    }
    const all = readySamples.map((s) => s.all);
    return {
      label: o.label, activeDestinations: o.active, held: heldOut, warmup: { events: o.warmup, publishMs: warmupPublishMs }, machineBusyBeforePct: busy,
      publish: { ms: publishMs, eventsPerSec: o.activeEvents / Math.max(0.001, publishMs / 1000), deliverAt, leadMs, finishedBeforeDue },
      received: rep.unique, expected: o.activeEvents, duplicates: rep.duplicates, complete: rep.unique >= o.activeEvents,
      deliveriesPerSec: r.perSec, steadyPerSec: r.steadyPerSec, spanS: r.spanS, fromDuePerSec: fromDue.perSec,
      firstArrivalAfterDueMs: rep.firstAt === null ? null : rep.firstAt - dueMs, latencyMs: rep.latencyMs,
      ready: { samples: all.length, max: Math.max(0, ...all), mean: all.length ? all.reduce((a, b) => a + b, 0) / all.length : 0, maxHeld: Math.max(0, ...readySamples.map((s) => s.held)) },
      claims: claimDiff(mBefore, mAfter), engine: mAfter, cpu: cpuUse, dbWork, endState,
    };
  } finally {
    await db.end().catch(() => undefined);
    await cluster.stop();
  }
}

async function destinationUpdates(db: pg.Client): Promise<number> {
  const r = await db.query<{ n: string }>("SELECT coalesce(n_tup_upd, 0) AS n FROM pg_stat_user_tables WHERE relname = 'destinations'");
  return Number(r.rows[0]?.n ?? 0);
}

// ---- report ----------------------------------------------------------------------------------

export interface Comparison {
  throughputRatio: number | null;
  steadyThroughputRatio: number | null;
  throughputOk: boolean;
  heldUntouched: boolean;
}

/** Prints the A/B table, the held destinations' figures and the verdict; returns the verdict. */
export function printComparison(out: (s: string) => void, all: HeldRunOutcome[], what: string): Comparison {
  const [a, b] = lastRuns(all);
  const ratio = (x: number | null | undefined, y: number | null | undefined): number | null => (x && y ? x / y : null);
  const tput = ratio(b.deliveriesPerSec, a.deliveriesPerSec);
  const steady = ratio(b.steadyPerSec, a.steadyPerSec);
  const cpu = (r: HeldRunOutcome, k: string): string => `${fmt(r.cpu[k]?.pctOfOneCore)} %`;
  out(`\nruns in order: ${all.map((r) => `${r.label}${r === a || r === b ? "" : " (pilot)"} ${fmt(r.deliveriesPerSec)}/s (steady ${fmt(r.steadyPerSec)})`).join(", ")}; compared: the last A and the last B`);
  out(table([
    ["active workload", "A: active only", `B: + ${what}`, "B/A"],
    ["received", `${fmt(a.received)}/${fmt(a.expected)}`, `${fmt(b.received)}/${fmt(b.expected)}`, ""],
    ["publish (s, with deliver_at; not timed)", fmt(a.publish.ms / 1000, 1), fmt(b.publish.ms / 1000, 1), fmt(ratio(b.publish.ms, a.publish.ms), 2)],
    ["deliveries/s (first → last arrival)", fmt(a.deliveriesPerSec), fmt(b.deliveriesPerSec), fmt(tput, 3)],
    ["deliveries/s (steady: middle 80 %)", fmt(a.steadyPerSec), fmt(b.steadyPerSec), fmt(steady, 3)],
    ["deliveries/s (deliver_at → last arrival)", fmt(a.fromDuePerSec), fmt(b.fromDuePerSec), fmt(ratio(b.fromDuePerSec, a.fromDuePerSec), 3)],
    ["first arrival after deliver_at (ms)", fmt(a.firstArrivalAfterDueMs), fmt(b.firstArrivalAfterDueMs), ""],
    ["latency after deliver_at p50 / p99 (ms)", `${fmt(a.latencyMs?.p50)} / ${fmt(a.latencyMs?.p99)}`, `${fmt(b.latencyMs?.p50)} / ${fmt(b.latencyMs?.p99)}`, ""],
    ["destinations ready (ready_at <= now), max / mean", `${fmt(a.ready.max)} / ${fmt(a.ready.mean, 1)}`, `${fmt(b.ready.max)} / ${fmt(b.ready.mean, 1)}`, ""],
    ["claims during the workload (worker metrics)", fmt(a.claims?.claims), fmt(b.claims?.claims), fmt(ratio(b.claims?.claims, a.claims?.claims), 2)],
    ["claim transaction avg ms", fmt(a.claims?.claimAvgMs, 1), fmt(b.claims?.claimAvgMs, 1), fmt(ratio(b.claims?.claimAvgMs, a.claims?.claimAvgMs), 2)],
    ["deliveries per claim", fmt(a.claims?.deliveriesPerClaim, 1), fmt(b.claims?.deliveriesPerClaim, 1), ""],
    ["CPU sluice (% of one core)", cpu(a, "sluice"), cpu(b, "sluice"), ""],
    ["CPU postgres", cpu(a, "postgres"), cpu(b, "postgres"), ""],
    ["CPU other processes", cpu(a, "(other processes, kernel)"), cpu(b, "(other processes, kernel)"), ""],
    ["machine busy before the run", `${a.machineBusyBeforePct} %`, `${b.machineBusyBeforePct} %`, ""],
  ]));
  const names = [...new Set([...a.dbWork, ...b.dbWork].map((x) => x.name))];
  const get = (r: HeldRunOutcome, n: string) => r.dbWork.find((x) => x.name === n);
  const work = names.map((n) => ({ n, a: get(a, n), b: get(b, n) }))
    .sort((x, y) => Math.max(y.a?.rows ?? 0, y.b?.rows ?? 0) - Math.max(x.a?.rows ?? 0, x.b?.rows ?? 0)).slice(0, 8);
  out(`\nrows Postgres read during the active workload (pg_stat_user_tables/indexes), per active delivery — the 8 largest:`);
  out(table([
    ["", "A rows/delivery", "B rows/delivery", "A scans", "B scans"],
    ...work.map((w) => [`  ${w.n}`, fmt((w.a?.rows ?? 0) / a.expected, 1), fmt((w.b?.rows ?? 0) / b.expected, 1), fmt(w.a?.scans ?? 0), fmt(w.b?.scans ?? 0)]),
  ]));

  const h = b.held;
  let untouched = false;
  if (h) {
    const queued = (h.atEnd.byStatus.queued ?? 0) + (h.atEnd.byStatus.retry_scheduled ?? 0);
    out(`\n${h.kind} destinations in run B: ${fmt(h.destinations)} × ${fmt(h.perDestination)} held = ${fmt(h.deliveries)} deliveries` +
      `${h.schedule ? `; delivery_schedule ${JSON.stringify(h.schedule)} (window ends ${h.windowEnd})` : ""}`);
    out(`  set-up: created in ${fmt(h.createS, 1)} s; backlog published in ${fmt(h.backlogPublishS, 1)} s; none ready ${fmt(h.settleS, 1)} s later ${h.settled ? "✓" : "✗ (never)"}; ` +
      `meanwhile ${fmt(h.claimsWhileSettling?.claims)} claims, ${fmt(h.destinationUpdatesWhileSettling)} destinations-row updates, ${fmt(h.requestsWhileSettling)} requests to the receiver`);
    out(`  during the active workload: ${fmt(h.duringRun.requests)} requests reached them; ${fmt(h.duringRun.rowsLocked)} of their rows were locked and ` +
      `${fmt(h.duringRun.rowsRewritten)} rewritten (xmax / xmin changed: a claim touched them); at most ${fmt(h.duringRun.maxReady)} of them ready at once`);
    out(`  at the end: deliveries ${JSON.stringify(h.atEnd.byStatus)} (${fmt(queued)} of ${fmt(h.deliveries)} still queued); attempts ${fmt(h.atEnd.attempts)}; ` +
      `ready_at ${h.kind === "quiet" ? `= window end: ${fmt(h.atEnd.readyAtWindowEnd)}, ` : ""}NULL: ${fmt(h.atEnd.readyAtNull)}, <= now: ${fmt(h.atEnd.readyNow)}, other future: ${fmt(h.atEnd.readyOther)}`);
    const st = (s: unknown): string => {
      const d = s as { status?: string; queued_events?: number; quiet_until?: string | null; paused_at?: string | null } | null;
      return d ? `status ${JSON.stringify(d.status)}, queued_events ${fmt(d.queued_events)}, ${h.kind === "quiet" ? `quiet_until ${d.quiet_until}` : `paused_at ${d.paused_at}`}` : "–";
    };
    out(`  GET /v1/destinations/{id} of the first one, before the workload: ${st(h.statusAtStart)}`);
    out(`                                              after it:             ${st(h.statusAtEnd)}`);
    untouched = h.duringRun.requests === 0 && h.atEnd.attempts === 0 && queued === h.deliveries && h.duringRun.rowsLocked === 0 && h.duringRun.rowsRewritten === 0;
  }
  const mark = (ok: boolean | null): string => (ok === null ? "?" : ok ? "✓" : "✗");
  out(`\nverdict:`);
  out(`  active throughput B/A = ${fmt(tput, 3)} ${mark(tput === null ? null : tput >= 0.95)} (target ≥ 0.95; steady-state B/A ${fmt(steady, 3)})`);
  if (h) {
    out(`  ${h.kind} destinations untouched during the workload (0 requests, 0 attempts, backlog queued, rows neither locked nor rewritten): ${mark(untouched)}`);
    if (h.kind === "quiet") out(`  quiet destinations parked until their window's end (ready_at = quiet_until): ${fmt(h.atEnd.readyAtWindowEnd)}/${fmt(h.destinations)} ${mark(h.atEnd.readyAtWindowEnd === h.destinations)}`);
    else out(`  paused destinations idle (ready_at NULL): ${fmt(h.atEnd.readyAtNull)}/${fmt(h.destinations)} ${mark(h.atEnd.readyAtNull === h.destinations)}`);
  }
  if (!a.complete || !b.complete) out(`  ✗ a run did not receive its whole workload before the timeout: the figures are partial`);
  if (!a.publish.finishedBeforeDue || !b.publish.finishedBeforeDue) out(`  ✗ in a run publishing outlasted deliver_at: delivery overlapped ingest there`);
  return { throughputRatio: tput, steadyThroughputRatio: steady, throughputOk: tput !== null && tput >= 0.95, heldUntouched: untouched };
}
