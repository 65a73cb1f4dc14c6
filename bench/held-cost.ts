// What destinations holding a backlog they may not send — in quiet hours, paused, or throttled by
// 429s — cost the active destinations beside them: bench:quiet's cost part, bench:paused and
// bench:isolation (docs/benchmarks.md says how each run goes). Run A has the active destinations
// only, run B the held ones beside them; each run on a fresh database with `sluice api` + N ×
// `sluice worker`. The active workload is published with one deliver_at after publishing ends, so
// that only delivery is timed — or, `timed`, while timing (isolation: latency from each publish).
import { DateTime } from "luxon";
import type pg from "pg";
import { connect, deliveriesByStatus, diffStats, tableStats, withDatabase } from "./pg.js";
import { CpuSampler, sleep, waitQuiet } from "./procs.js";
import type { Receiver } from "./receiver.js";
import { compareTable, cpuRows, dbWorkTable, fmt, mark, rates, ratio, type Row } from "./report.js";
import { SluiceCluster } from "./sluice.js";

export const BATCH = 1000;

/** --order: the runs in order, with at least one A and one B; the last of each are compared. */
export function parseRunOrder(v: string): ("A" | "B")[] {
  const o = v.toUpperCase();
  if (!/^[AB]+$/.test(o) || !o.includes("A") || !o.includes("B"))
    throw new Error(`--order takes a string of A and B runs with at least one of each (AAB, AB, BA, ABAB, …), not '${v}'`);
  return [...o] as ("A" | "B")[];
}

/** Warm-up deliveries before every run's workload: 5 % of it, 1,000 to 5,000. */
export const warmupFor = (events: number): number => Math.min(5000, Math.max(BATCH, Math.round(events / 20 / BATCH) * BATCH));

/** Wall clock `offsetMs` from now in `zone`, as the HH:MM:SS a delivery_schedule takes. */
export function wallTime(zone: string, offsetMs: number): string {
  return DateTime.now().plus({ milliseconds: offsetMs }).setZone(zone).toFormat("HH:mm:ss");
}

/** Row versions: a claim that locks a row (FOR UPDATE) sets its xmax, one that writes it makes a new xmin. */
async function rowVersions(db: pg.Client, pattern: string): Promise<Map<string, string>> {
  const rows = await db.query<{ id: string; v: string }>(
    "SELECT id, xmin::text || '/' || xmax::text AS v FROM destinations WHERE name LIKE $1",
    [pattern],
  );
  return new Map(rows.rows.map((r) => [r.id, r.v]));
}

/** Claims, their average transaction time (from the workers' rounded averages: ±0.1 ms) and attempts between two /metrics readings. */
function claimDiff(a: Record<string, number> | null, b: Record<string, number> | null) {
  if (!a || !b) return null;
  const d = (f: (m: Record<string, number>) => number): number => f(b) - f(a);
  const claims = d((m) => m.claims ?? 0);
  const ms = d((m) => (m["claim avg ms"] ?? 0) * (m.claims ?? 0));
  const attempts = d((m) => (m["attempts ok"] ?? 0) + (m["attempts failed"] ?? 0));
  const per = (x: number): number | null => (claims > 0 ? Math.round((10 * x) / claims) / 10 : null);
  return { claims, claimAvgMs: per(ms), attempts, deliveriesPerClaim: per(attempts) };
}

export interface HeldSpec {
  kind: "quiet" | "paused" | "throttled";
  destinations: number;
  perDestination: number;
  /** Quiet only: the zone of the window, open from 1 min before creation for `windowHours`. */
  timezone?: string;
  windowHours?: number;
}

type RunOptions = {
  receiver: Receiver;
  active: number;
  activeEvents: number;
  flags: { workers: number; "timeout-s": number; "wait-quiet-s": number };
  pg: { server: { url: string }; postmaster: () => number | null };
  /** Publish the active workload while timing, at `publishRate`/s (0: as fast as the API takes it), sent_at = each batch's publish time. */
  timed?: { publishRate: number };
};

export type HeldRunOutcome = Awaited<ReturnType<typeof heldRun>>;
type Status = {
  status?: string;
  queued_events?: number;
  quiet_until?: string | null;
  paused_at?: string | null;
  throttle_reason?: string | null;
};

/**
 * The runs in `order`, each on a fresh database `<name>_<run>`: A with the active destinations
 * only, B with `held` beside them; logs go to `log(<name>-<run>[-<n>])`.
 */
export async function heldRuns(
  o: RunOptions & { name: string; order: ("A" | "B")[]; held: HeldSpec; describeB: string; log: (name: string) => string },
): Promise<HeldRunOutcome[]> {
  const runs: HeldRunOutcome[] = [];
  for (const [i, label] of o.order.entries()) {
    const pilot = o.order.lastIndexOf(label) !== i ? " (pilot)" : "";
    process.stderr.write(`\n▶ run ${label}${pilot}: ${label === "A" ? "active destinations only" : o.describeB}\n`);
    const logPrefix = o.log(`${o.name.replace(/_/g, "-")}-${label}${o.order.length > 2 ? `-${i + 1}` : ""}`);
    const held = label === "B" ? o.held : null;
    const r = await withDatabase(o.pg.server.url, `${o.name}_${label.toLowerCase()}`, (url) =>
      heldRun({ ...o, label, url, held, logPrefix }),
    );
    runs.push(r);
    const p99 = r.latencyMs ? `, p99 ${fmt(r.latencyMs.p99)} ms` : "";
    process.stderr.write(`  run ${label}: ${fmt(r.received)}/${fmt(r.expected)} received, ${fmt(r.deliveriesPerSec)}/s${p99}\n`);
  }
  return runs;
}

async function heldRun(o: RunOptions & { label: string; url: string; held: HeldSpec | null; logPrefix: string }) {
  const { receiver, held, timed } = o;
  const warmup = warmupFor(o.activeEvents);
  const timeoutMs = o.flags["timeout-s"] * 1000;
  const cluster = new SluiceCluster({ databaseUrl: o.url, logPrefix: o.logPrefix });
  const db = await connect(o.url);
  const pattern = held ? `${held.kind}-%` : "held-none-%";
  const log = (s: string): void => void process.stderr.write(`  [${o.label}] ${s}\n`);
  const status = async (id: string): Promise<Status> => (await cluster.call("GET", `/v1/destinations/${id}`)).json as Status;
  try {
    await cluster.startApi();
    const ids = await cluster.createDestinations(o.active, (i) => ({ url: receiver.url(`/d/${i}`), name: `active-${i}` }));

    // The held destinations: the receiver counts any request to them as "malformed" (no "seq").
    const schedule =
      held?.kind === "quiet"
        ? {
            timezone: held.timezone,
            quiet_start: wallTime(held.timezone!, -60_000),
            quiet_end: wallTime(held.timezone!, held.windowHours! * 3_600_000),
          }
        : null;
    const pause = (id: string) => cluster.must(200, "POST", `/v1/destinations/${id}/pause`, { reason: "bench" });
    const t0 = Date.now();
    const heldIds = !held
      ? []
      : await cluster.createDestinations(
          held.destinations,
          (i) => ({
            url: receiver.url(held.kind === "throttled" ? "/throttled" : `/d/${held.kind}-${i}`),
            name: `${held.kind}-${i}`,
            ...(schedule ? { delivery_schedule: schedule } : {}),
          }),
          held.kind === "paused" ? pause : undefined,
        );
    const createS = (Date.now() - t0) / 1000;
    await cluster.startWorkers(o.flags.workers, true);
    const heldLine = held ? ` + ${fmt(held.destinations)} ${held.kind} (created in ${createS.toFixed(1)} s)` : "";
    log(`${fmt(o.active)} active destinations${heldLine}; sluice api + ${o.flags.workers} workers running`);

    // Warm-up, the same in every run (API, workers, connection pools, JIT) — in run B the backlog
    // would otherwise warm them for B alone; its publish rate sizes the lead before deliver_at.
    await receiver.reset(0);
    const w0 = Date.now();
    await cluster.publishAll(warmup, (i) => ({ type: "bench.warmup", payload: { warmup: i }, destination_ids: [ids[i % o.active]!] }));
    const warmupPublishMs = Date.now() - w0;
    if ((await receiver.waitFor((p) => p.total >= warmup, Date.now() + 120_000)).total < warmup)
      throw new Error("the warm-up deliveries did not all arrive within 120 s");

    let backlog = null;
    if (held) {
      await receiver.reset(0);
      await sleep(1100); // table statistics are flushed at most once a second
      const updBefore = await destinationUpdates(db);
      const mBefore = await cluster.engineMetrics();
      const deliveries = held.destinations * held.perDestination;
      const p0 = Date.now();
      await cluster.publishAll(deliveries, (i) => ({
        type: "bench.held",
        payload: { held: i },
        destination_ids: [heldIds[i % held.destinations]!],
      }));
      const published = Date.now();
      // Settled: quiet ones parked until their window's end, paused ones idle, the throttled one showing status "throttled".
      const throttled = held.kind === "throttled";
      log(
        `held backlog: ${fmt(deliveries)} deliveries published in ${((published - p0) / 1000).toFixed(1)} s; waiting until ` +
          (throttled ? `status "throttled"` : `no ${held.kind} destination is ready`),
      );
      const readySql = "SELECT count(*)::int AS n FROM destinations WHERE name LIKE $1 AND ready_at <= now()";
      const isSettled = async (): Promise<boolean> =>
        throttled
          ? (await status(heldIds[0]!)).status === "throttled"
          : (await db.query<{ n: number }>(readySql, [pattern])).rows[0]!.n === 0;
      let settled = false;
      for (const until = published + (throttled ? 60_000 : 300_000); !settled && Date.now() < until; await sleep(200))
        settled = await isSettled();
      const settleS = (Date.now() - published) / 1000;
      if (!settled && throttled)
        throw new Error(`the 429 destination did not show status "throttled" within 60 s: ${JSON.stringify(await status(heldIds[0]!))}`);
      if (!settled) log(`✗ ${held.kind} destinations still ready ${settleS.toFixed(0)} s after their backlog was published`);
      await sleep(1100);
      backlog = {
        deliveries,
        createS,
        publishS: (published - p0) / 1000,
        settleS,
        settled,
        claimsWhileSettling: claimDiff(mBefore, await cluster.engineMetrics()),
        /** destinations rows updated (n_tup_upd) while the backlog was published and settled. */
        destinationUpdatesWhileSettling: (await destinationUpdates(db)) - updBefore,
        requestsWhileSettling: throttled ? 0 : (await receiver.progress()).total,
      };
    }

    // The same preparation before every timed workload: fresh statistics, no pending checkpoint, a quiet machine.
    await db.query("VACUUM ANALYZE destinations, events, deliveries, attempts");
    await db.query("CHECKPOINT");
    const busy = await waitQuiet(o.flags["wait-quiet-s"] * 1000);
    const throttledBefore = (await receiver.progress()).throttledAll;
    const versionsBefore = await rowVersions(db, pattern);
    const statusAtStart = held ? await status(heldIds[0]!) : null;
    // A /metrics scrape runs database-wide queries (held deliveries by reason, …): before the
    // counters are read, so that its rows are not charged to the workload.
    const mBefore = await cluster.engineMetrics();
    await sleep(1100);
    const statsBefore = await tableStats(db);
    await receiver.reset(o.activeEvents);
    const cpu = new CpuSampler({ system: "sluice", pids: () => cluster.pids(), postmaster: o.pg.postmaster, receiver: receiver.pid });
    // Ready destinations, and whether the held ones are held (throttled_until > now), twice a second
    // (the partial index on ready_at: cheap; GET /v1/destinations/{id} would count a whole backlog).
    const samples: { all: number; held: number; throttled: boolean }[] = [];
    let sampling = true;
    let sampled = Promise.resolve();
    const startSampling = (): void => {
      cpu.begin();
      sampled = (async () => {
        for (; sampling; await sleep(500)) {
          const r = await db.query<{ all: number; held: number; throttled: boolean }>(
            `SELECT count(*) FILTER (WHERE ready_at <= now())::int AS "all", count(*) FILTER (WHERE ready_at <= now() AND name LIKE $1)::int AS held,
                    coalesce(bool_or(throttled_until > now()) FILTER (WHERE name LIKE $1), false) AS throttled FROM destinations`,
            [pattern],
          );
          samples.push(r.rows[0]!);
        }
      })();
    };

    // Not timed: one deliver_at long enough after now for the whole workload to be published (twice
    // what the warm-up's publish rate says, + 2 s), so that nothing is due while publishing.
    const publishStart = Date.now();
    const warmRate = warmup / Math.max(0.001, warmupPublishMs / 1000);
    const leadMs = timed ? 0 : Math.round(Math.min(120_000, Math.max(3000, ((2 * o.activeEvents) / warmRate) * 1000 + 2000)));
    const dueMs = publishStart + leadMs;
    const deliverAt = timed ? {} : { deliver_at: new Date(dueMs).toISOString() };
    if (timed) startSampling();
    for (let off = 0; off < o.activeEvents && Date.now() < publishStart + timeoutMs; off += BATCH) {
      if (timed?.publishRate) await sleep(Math.max(0, publishStart + (off / timed.publishRate) * 1000 - Date.now()));
      const sentAt = timed ? Date.now() : dueMs;
      await cluster.publishBatch(
        Array.from({ length: Math.min(BATCH, o.activeEvents - off) }, (_, k) => ({
          type: "bench.event",
          payload: { seq: off + k, sent_at: sentAt },
          destination_ids: [ids[(off + k) % o.active]!],
          ...deliverAt,
        })),
      );
    }
    const publishMs = Date.now() - publishStart;
    const finishedBeforeDue = timed ? true : Date.now() < dueMs;
    const lead = ` with deliver_at ${(leadMs / 1000).toFixed(1)} s after the first`;
    const overlapped = finishedBeforeDue ? "" : " — ✗ publishing outlasted deliver_at: delivery overlapped ingest";
    log(`active workload: ${fmt(o.activeEvents)} events published in ${(publishMs / 1000).toFixed(1)} s${timed ? "" : lead + overlapped}`);
    if (!timed) {
      if (finishedBeforeDue) await sleep(Math.max(0, dueMs - Date.now() - 500));
      startSampling();
    }
    await receiver.waitFor(
      (p) => p.unique >= o.activeEvents,
      (timed ? publishStart : dueMs) + timeoutMs,
      (p) =>
        `  [${o.label}] received ${fmt(p.unique)}/${fmt(o.activeEvents)}${held?.kind === "throttled" ? `, 429s ${p.throttled}` : ""}` +
        `  t=${((Date.now() - dueMs) / 1000).toFixed(0)}s${timed ? "" : " after deliver_at"}`,
    );
    const cpuUse = cpu.end();
    sampling = false;
    await sampled;
    const rep = await receiver.report();
    await sleep(1100);
    const dbWork = diffStats(statsBefore, await tableStats(db));
    const mAfter = await cluster.engineMetrics();
    const r = rates(rep, timed ? publishStart : (rep.firstAt ?? dueMs));

    let heldOut = null;
    if (held && backlog) {
      const versionsAfter = await rowVersions(db, pattern);
      const changed = [...versionsBefore].filter(([id, v]) => versionsAfter.get(id) !== v);
      const rewritten = changed.filter(([id, v]) => versionsAfter.get(id)?.split("/")[0] !== v.split("/")[0]).length;
      // Quiet: the end of the open window, as GET /v1/destinations/{id} shows quiet_until.
      const windowEnd = statusAtStart?.quiet_until ?? null;
      type AtEnd = {
        byStatus: Record<string, number>;
        attempts: number;
        readyAtWindowEnd: number;
        readyAtNull: number;
        readyNow: number;
        readyOther: number;
      };
      const atEnd = await db.query<AtEnd>(
        `SELECT coalesce((SELECT json_object_agg(status, n ORDER BY status) FROM (SELECT x.status, count(*)::int AS n FROM deliveries x
                  JOIN destinations d ON d.id = x.destination_id WHERE d.name LIKE $1 GROUP BY x.status) s), '{}') AS "byStatus",
                (SELECT count(*)::int FROM attempts a JOIN destinations d ON d.id = a.destination_id WHERE d.name LIKE $1) AS attempts,
                (count(*) FILTER (WHERE ready_at = $2::timestamptz))::int AS "readyAtWindowEnd",
                (count(*) FILTER (WHERE ready_at IS NULL))::int AS "readyAtNull",
                (count(*) FILTER (WHERE ready_at <= now()))::int AS "readyNow",
                (count(*) FILTER (WHERE ready_at > now() AND ready_at IS DISTINCT FROM $2::timestamptz))::int AS "readyOther"
           FROM destinations WHERE name LIKE $1`,
        [pattern, windowEnd],
      );
      // The throttled destination's 429s during the workload (first publish → last active arrival),
      // in bursts: requests less than 1 s apart belong together; the gaps between bursts should be ≈ Retry-After.
      const phaseEnd = rep.lastAt ?? Date.now();
      const phaseS = (phaseEnd - publishStart) / 1000;
      const during = rep.throttled.filter((at) => at >= publishStart && at <= phaseEnd);
      const bursts: number[][] = [];
      for (const at of during) {
        const last = bursts.at(-1);
        if (last && at - last.at(-1)! < 1000) last.push(at);
        else bursts.push([at]);
      }
      heldOut = {
        kind: held.kind,
        destinations: held.destinations,
        perDestination: held.perDestination,
        id: heldIds[0]!,
        schedule,
        windowEnd,
        ...backlog,
        requestsBeforeWorkload: throttledBefore,
        statusAtStart,
        statusAtEnd: await status(heldIds[0]!),
        /** During the timed active workload. */
        duringRun: {
          requests: rep.malformed,
          rowsLocked: changed.length - rewritten,
          rowsRewritten: rewritten,
          maxReady: Math.max(0, ...samples.map((s) => s.held)),
        },
        atEnd: atEnd.rows[0]!,
        throttled: {
          requests: during.length,
          phaseS,
          requestsPer5s: phaseS > 0 ? (5 * during.length) / phaseS : 0,
          requestsPerBurst: bursts.map((bu) => bu.length),
          burstGapsS: bursts.slice(1).map((bu, i) => Math.round((bu[0]! - bursts[i]![0]!) / 100) / 10),
          heldShare: samples.length ? samples.filter((x) => x.throttled).length / samples.length : 0,
        },
      };
    }
    const ready = samples.map((s) => s.all);
    return {
      label: o.label,
      activeDestinations: o.active,
      held: heldOut,
      warmup: { events: warmup, publishMs: warmupPublishMs },
      machineBusyBeforePct: busy,
      publish: {
        ms: publishMs,
        eventsPerSec: o.activeEvents / Math.max(0.001, publishMs / 1000),
        deliverAt: timed ? null : new Date(dueMs).toISOString(),
        leadMs,
        finishedBeforeDue,
      },
      received: rep.unique,
      expected: o.activeEvents,
      duplicates: rep.duplicates,
      complete: rep.unique >= o.activeEvents,
      deliveriesPerSec: r.perSec,
      steadyPerSec: r.steadyPerSec,
      spanS: r.spanS,
      fromDuePerSec: timed ? null : rates(rep, dueMs).perSec,
      firstArrivalAfterDueMs: rep.firstAt === null || timed ? null : rep.firstAt - dueMs,
      latencyMs: rep.latencyMs,
      ready: {
        samples: ready.length,
        max: Math.max(0, ...ready),
        mean: ready.length ? ready.reduce((a, b) => a + b, 0) / ready.length : 0,
        maxHeld: Math.max(0, ...samples.map((s) => s.held)),
      },
      claims: claimDiff(mBefore, mAfter),
      engine: mAfter,
      cpu: cpuUse,
      dbWork,
      endState: await deliveriesByStatus(db),
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

type R = HeldRunOutcome;

/**
 * Prints the A/B table of the last A and the last B (run B labelled `bLabel`), where Postgres read
 * rows, the held destinations' figures and the verdict; returns the verdict. `timed`: isolation's
 * healthy workload, timed from its first publish, with latency percentiles.
 */
export function printComparison(out: (s: string) => void, all: R[], bLabel: string, timed = false) {
  const workload = timed ? "healthy" : "active";
  const a = all.filter((r) => r.label === "A").at(-1)!;
  const b = all.filter((r) => r.label === "B").at(-1)!;
  const tput = ratio(b.deliveriesPerSec, a.deliveriesPerSec);
  const steady = ratio(b.steadyPerSec, a.steadyPerSec);
  const p99 = ratio(b.latencyMs?.p99, a.latencyMs?.p99);
  const p50 = ratio(b.latencyMs?.p50, a.latencyMs?.p50);
  const runs = all.map(
    (r) => `${r.label}${r === a || r === b ? "" : " (pilot)"} ${fmt(r.deliveriesPerSec)}/s (steady ${fmt(r.steadyPerSec)})`,
  );
  out(`\nruns in order: ${runs.join(", ")}; compared: the last A and the last B`);
  const cpu = cpuRows<R>();
  const timedRows: Row<R>[] = [
    ["latency p50 (ms)", (r) => r.latencyMs?.p50, 0, 3],
    ["latency p90 (ms)", (r) => r.latencyMs?.p90, 0, 3],
    ["latency p99 (ms)", (r) => r.latencyMs?.p99, 0, 3],
    ["latency max (ms)", (r) => r.latencyMs?.max],
    ...cpu,
    ["claims (worker metrics)", (r) => r.engine?.claims],
    ["claim avg ms", (r) => r.engine?.["claim avg ms"], 1],
    ["deliveries per claim", (r) => r.engine?.["deliveries per claim"], 1],
  ];
  const deliverAtRows: Row<R>[] = [
    ["deliveries/s (deliver_at → last arrival)", (r) => r.fromDuePerSec, 0, 3],
    ["first arrival after deliver_at (ms)", (r) => r.firstArrivalAfterDueMs],
    ["latency after deliver_at p50 / p99 (ms)", (r) => `${fmt(r.latencyMs?.p50)} / ${fmt(r.latencyMs?.p99)}`],
    ["destinations ready (ready_at <= now), max / mean", (r) => `${fmt(r.ready.max)} / ${fmt(r.ready.mean, 1)}`],
    ["claims during the workload (worker metrics)", (r) => r.claims?.claims, 0, 2],
    ["claim transaction avg ms", (r) => r.claims?.claimAvgMs, 1, 2],
    ["deliveries per claim", (r) => r.claims?.deliveriesPerClaim, 1],
    ...cpu,
  ];
  const rows: Row<R>[] = [
    ["received", (r) => `${fmt(r.received)}/${fmt(r.expected)}`],
    [timed ? "publish (s)" : "publish (s, with deliver_at; not timed)", (r) => r.publish.ms / 1000, 1, 2],
    [`deliveries/s (first ${timed ? "publish " : ""}→ last arrival)`, (r) => r.deliveriesPerSec, 0, 3],
    ["deliveries/s (steady: middle 80 %)", (r) => r.steadyPerSec, 0, 3],
    ...(timed ? timedRows : deliverAtRows),
  ];
  out(compareTable([`${workload} workload`, timed ? "A: baseline" : "A: active only", bLabel, "B/A"], [a, b], rows));
  out(dbWorkTable(workload, a, b));

  const h = b.held;
  const queued = h ? (h.atEnd.byStatus.queued ?? 0) + (h.atEnd.byStatus.retry_scheduled ?? 0) : 0;
  const untouched =
    !!h &&
    h.duringRun.requests === 0 &&
    h.atEnd.attempts === 0 &&
    queued === h.deliveries &&
    h.duringRun.rowsLocked + h.duringRun.rowsRewritten === 0;
  if (h?.kind === "throttled") {
    const t = h.throttled;
    const range = (xs: number[], d = 0): string => (xs.length ? `${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)}` : "–");
    const st = (s: Status | null): string =>
      s
        ? `status ${JSON.stringify(s.status)}, queued_events ${fmt(s.queued_events)}, throttle_reason ${JSON.stringify(s.throttle_reason)}`
        : "–";
    out(`\nthrottled destination in run B (${h.id}):`);
    out(
      `  backlog: ${fmt(h.deliveries)} deliveries published in ${fmt(h.publishS, 1)} s with the workers running; ` +
        `status "throttled" ${fmt(h.settleS, 1)} s after that; ${fmt(h.requestsBeforeWorkload)} requests reached it before the healthy workload`,
    );
    out(
      `  during the healthy workload (${fmt(t.phaseS, 1)} s): ${fmt(t.requests)} requests (429) = ${fmt(t.requestsPer5s, 1)} per 5 s, ` +
        `in bursts of ${range(t.requestsPerBurst)} every ${range(t.burstGapsS, 1)} s; held (throttled_until > now) in ${fmt(100 * t.heldShare)} % of 0.5 s samples`,
    );
    out(`  GET /v1/destinations/{id} at the start of the healthy workload: ${st(h.statusAtStart)}`);
    out(`  GET /v1/destinations/{id} at its end:                        ${st(h.statusAtEnd)}`);
    out(
      `  its attempts recorded in the whole run: ${fmt(h.atEnd.attempts)}; its deliveries still queued: ${fmt(queued)} of ${fmt(h.deliveries)}`,
    );
  } else if (h) {
    const st = (s: Status | null): string =>
      s
        ? `status ${JSON.stringify(s.status)}, queued_events ${fmt(s.queued_events)}, ` +
          (h.kind === "quiet" ? `quiet_until ${s.quiet_until}` : `paused_at ${s.paused_at}`)
        : "–";
    const schedule = h.schedule ? `; delivery_schedule ${JSON.stringify(h.schedule)} (window ends ${h.windowEnd})` : "";
    out(
      `\n${h.kind} destinations in run B: ${fmt(h.destinations)} × ${fmt(h.perDestination)} held = ${fmt(h.deliveries)} deliveries${schedule}`,
    );
    out(
      `  set-up: created in ${fmt(h.createS, 1)} s; backlog published in ${fmt(h.publishS, 1)} s; none ready ${fmt(h.settleS, 1)} s later ${h.settled ? "✓" : "✗ (never)"}; ` +
        `meanwhile ${fmt(h.claimsWhileSettling?.claims)} claims, ${fmt(h.destinationUpdatesWhileSettling)} destinations-row updates, ${fmt(h.requestsWhileSettling)} requests to the receiver`,
    );
    out(
      `  during the active workload: ${fmt(h.duringRun.requests)} requests reached them; ${fmt(h.duringRun.rowsLocked)} of their rows were locked and ` +
        `${fmt(h.duringRun.rowsRewritten)} rewritten (xmax / xmin changed: a claim touched them); at most ${fmt(h.duringRun.maxReady)} of them ready at once`,
    );
    const windowEnd = h.kind === "quiet" ? `= window end: ${fmt(h.atEnd.readyAtWindowEnd)}, ` : "";
    out(
      `  at the end: deliveries ${JSON.stringify(h.atEnd.byStatus)} (${fmt(queued)} of ${fmt(h.deliveries)} still queued); attempts ${fmt(h.atEnd.attempts)}; ` +
        `ready_at ${windowEnd}NULL: ${fmt(h.atEnd.readyAtNull)}, <= now: ${fmt(h.atEnd.readyNow)}, other future: ${fmt(h.atEnd.readyOther)}`,
    );
    out(`  GET /v1/destinations/{id} of the first one, before the workload: ${st(h.statusAtStart)}`);
    out(`                                              after it:             ${st(h.statusAtEnd)}`);
  }

  out(`\nverdict${timed ? " (targets from the issue)" : ""}:`);
  out(
    `  ${workload} throughput B/A = ${fmt(tput, 3)} ${mark(tput === null ? null : tput >= 0.95)} (target ≥ 0.95; steady-state B/A ${fmt(steady, 3)})`,
  );
  if (timed) {
    out(`  healthy p99 latency B/A = ${fmt(p99, 3)} ${mark(p99 === null ? null : p99 <= 1.1)} (target ≤ 1.1; p50 B/A ${fmt(p50, 3)})`);
    out(
      `  throttled destination shows status "throttled": ${mark(h ? h.statusAtStart?.status === "throttled" && h.statusAtEnd.status === "throttled" : null)}`,
    );
  } else if (h) {
    out(
      `  ${h.kind} destinations untouched during the workload (0 requests, 0 attempts, backlog queued, rows neither locked nor rewritten): ${mark(untouched)}`,
    );
    const [what, n] =
      h.kind === "quiet"
        ? ["parked until their window's end (ready_at = quiet_until)", h.atEnd.readyAtWindowEnd]
        : ["idle (ready_at NULL)", h.atEnd.readyAtNull];
    out(`  ${h.kind} destinations ${what}: ${fmt(n)}/${fmt(h.destinations)} ${mark(n === h.destinations)}`);
  }
  if (!a.complete || !b.complete) out(`  ✗ a run did not receive its whole workload before the timeout: the figures are partial`);
  if (!a.publish.finishedBeforeDue || !b.publish.finishedBeforeDue)
    out(`  ✗ in a run publishing outlasted deliver_at: delivery overlapped ingest there`);
  const throughput = { throughputRatio: tput, steadyThroughputRatio: steady };
  return timed
    ? { ...throughput, p99Ratio: p99, p50Ratio: p50, throughputOk: tput !== null && tput >= 0.95, p99Ok: p99 !== null && p99 <= 1.1 }
    : { ...throughput, throughputOk: tput !== null && tput >= 0.95, heldUntouched: untouched };
}
