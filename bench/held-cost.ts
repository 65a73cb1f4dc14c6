// Shared by bench/quiet.ts (its "cost" part), bench/paused.ts and bench/isolation.ts: what do
// destinations holding a backlog they may not send — inside quiet hours, paused, or throttled by
// 429s — cost the active destinations beside them? One run = a fresh database with `sluice api` +
// N × `sluice worker`:
//   1. the active destinations and (in the run "with") the held ones are created through the API:
//      quiet ones with a quiet window open for the whole run, paused ones paused through the API;
//   2. the workers start and the same warm-up goes through in both runs;
//   3. ("with" only) the held backlog is published through the API, round-robin over the held
//      destinations, and the bench waits until none of them is ready (quiet: parked until their
//      window's end; paused: ready_at NULL; throttled: status "throttled");
//   4. VACUUM ANALYZE, CHECKPOINT, a quiet machine; snapshots of the held destinations' row
//      versions, of pg_stat_user_tables/indexes and of the workers' metrics;
//   5. the active workload is published with deliver_at = T, a moment after publishing will have
//      finished: every active delivery becomes due at once with the workers warm and idle, so only
//      delivery is timed (first → last arrival at the receiver), not ingest. (Isolation instead
//      publishes it while timing: first publish → last arrival, latency from each batch's publish.)
import type pg from "pg";
import { DateTime } from "luxon";
import { connect, deliveriesByStatus, diffStats, tableStats, withDatabase } from "./pg.js";
import { CpuSampler, sleep, waitQuiet } from "./procs.js";
import type { Receiver } from "./receiver.js";
import { cpuPct, dbWorkTable, fmt, mark, rates, ratio, table } from "./report.js";
import { SluiceCluster } from "./sluice.js";

export const BATCH = 1000;

/**
 * --order: the runs, in order; the comparison uses the LAST run of each label and every run is
 * saved. Default "AAB": a pilot run of the baseline, then A and B back to back — on a 2-core VM the
 * first run on a fresh server measured 5-15 % slower than the next whatever its kind (cold
 * receiver, Postgres server and OS caches), which would flatter B. "AB", "BA", "ABAB", … to check.
 */
export function parseRunOrder(v: string): ("A" | "B")[] {
  const o = v.toUpperCase();
  if (!/^[AB]+$/.test(o) || !o.includes("A") || !o.includes("B"))
    throw new Error(`--order takes a string of A and B runs with at least one of each (AAB, AB, BA, ABAB, …), not '${v}'`);
  return [...o] as ("A" | "B")[];
}

/** The runs a comparison uses: the last of each label. */
export function lastRuns<T extends { label: string }>(runs: T[]): [T, T] {
  const a = runs.filter((r) => r.label === "A").pop();
  const b = runs.filter((r) => r.label === "B").pop();
  if (!a || !b) throw new Error("a comparison needs a run A and a run B");
  return [a, b];
}

/** Wall clock `offsetMs` from now in `zone`, as the HH:MM:SS a delivery_schedule takes. */
export function wallTime(zone: string, offsetMs: number): string {
  return DateTime.now().plus({ milliseconds: offsetMs }).setZone(zone).toFormat("HH:mm:ss");
}

/** Row versions: a claim that locks a row (FOR UPDATE) sets its xmax, one that writes it makes a new xmin. */
async function rowVersions(db: pg.Client, namePattern: string): Promise<Map<string, { xmin: string; xmax: string }>> {
  const rows = (
    await db.query<{ id: string; xmin: string; xmax: string }>(
      "SELECT id, xmin::text AS xmin, xmax::text AS xmax FROM destinations WHERE name LIKE $1",
      [namePattern],
    )
  ).rows;
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
  return {
    claims,
    claimAvgMs: claims > 0 ? Math.round((10 * ms) / claims) / 10 : null,
    attempts,
    deliveriesPerClaim: claims > 0 ? Math.round((10 * attempts) / claims) / 10 : null,
  };
}

// ---- one run ---------------------------------------------------------------------------------

export interface HeldSpec {
  /** quiet: a quiet window open for the whole run; paused: paused through the API; throttled: its path answers 429 (bench/isolation.ts). */
  kind: "quiet" | "paused" | "throttled";
  destinations: number;
  perDestination: number;
  /** Quiet only: the zone of the window (open from 1 min before creation for `windowHours`). */
  timezone?: string;
  windowHours?: number;
}

export type HeldRunOutcome = Awaited<ReturnType<typeof heldRun>>;

/**
 * The runs of a held-cost bench in `order`, each on a fresh database `<name>_<run>` of
 * `serverUrl`: A with the active destinations only, B with `held` beside them. `describeB` says
 * what run B adds, for the progress line; logs go to `<name>-<run>[-<n>]` under `logPrefix`.
 */
export async function heldRuns(o: {
  name: string;
  serverUrl: string;
  order: readonly ("A" | "B")[];
  held: HeldSpec;
  describeB: string;
  logPrefix: (name: string) => string;
  run: Omit<Parameters<typeof heldRun>[0], "label" | "url" | "held" | "logPrefix">;
}): Promise<HeldRunOutcome[]> {
  const runs: HeldRunOutcome[] = [];
  for (const [i, run] of o.order.entries()) {
    const pilot = o.order.lastIndexOf(run) !== i ? " (pilot)" : "";
    process.stderr.write(`\n▶ run ${run}${pilot}: ${run === "A" ? "active destinations only" : o.describeB}\n`);
    const logName = `${o.name.replace(/_/g, "-")}-${run}${o.order.length > 2 ? `-${i + 1}` : ""}`;
    const r = await withDatabase(o.serverUrl, `${o.name}_${run.toLowerCase()}`, (url) =>
      heldRun({ ...o.run, label: run, url, held: run === "B" ? o.held : null, logPrefix: o.logPrefix(logName) }),
    );
    runs.push(r);
    const p99 = r.latencyMs ? `, p99 ${fmt(r.latencyMs.p99)} ms` : "";
    process.stderr.write(`  run ${r.label}: ${fmt(r.received)}/${fmt(r.expected)} received, ${fmt(r.deliveriesPerSec)}/s${p99}\n`);
  }
  return runs;
}

export async function heldRun(o: {
  label: string;
  url: string;
  receiver: Receiver;
  active: number;
  activeEvents: number;
  held: HeldSpec | null;
  workers: number;
  warmup: number;
  timeoutMs: number;
  waitQuietMs: number;
  logPrefix: string;
  postmaster: () => number | null;
  /** Publish the active workload while timing (at `publishRate`/s; 0 = as fast as the API takes it), each batch's sent_at its publish time — instead of with one deliver_at after publishing. */
  timed?: { publishRate: number };
}) {
  const { receiver, held } = o;
  const cluster = new SluiceCluster({ databaseUrl: o.url, logPrefix: o.logPrefix });
  const db = await connect(o.url);
  const heldPattern = held ? `${held.kind}-%` : "held-none-%";
  const log = (s: string): void => void process.stderr.write(`  [${o.label}] ${s}\n`);
  const status = async (id: string): Promise<{ status?: string; quiet_until?: string | null }> =>
    (await cluster.call("GET", `/v1/destinations/${id}`)).json as { status?: string };
  try {
    await cluster.startApi();
    const ids = await cluster.createDestinations(o.active, (i) => ({ url: receiver.url(`/d/${i}`), name: `active-${i}` }));

    // Held destinations: the receiver counts any request to them as "malformed" (no "seq").
    let heldIds: string[] = [];
    let createS = 0;
    const schedule =
      held?.kind === "quiet"
        ? {
            timezone: held.timezone,
            quiet_start: wallTime(held.timezone!, -60_000),
            quiet_end: wallTime(held.timezone!, held.windowHours! * 3_600_000),
          }
        : null;
    if (held) {
      const t0 = Date.now();
      heldIds = await cluster.createDestinations(
        held.destinations,
        (i) => ({
          url: receiver.url(held.kind === "throttled" ? "/throttled" : `/d/${held.kind}-${i}`),
          name: `${held.kind}-${i}`,
          ...(schedule ? { delivery_schedule: schedule } : {}),
        }),
        async (id) => {
          if (held.kind !== "paused") return;
          const res = await cluster.call("POST", `/v1/destinations/${id}/pause`, { reason: "bench" });
          if (res.status !== 200) throw new Error(`pause answered ${res.status}: ${JSON.stringify(res.json)}`);
        },
      );
      createS = (Date.now() - t0) / 1000;
    }
    await cluster.startWorkers(o.workers, true);
    log(
      `${fmt(o.active)} active destinations${held ? ` + ${fmt(held.destinations)} ${held.kind} (created in ${createS.toFixed(1)} s)` : ""}; sluice api + ${o.workers} workers running`,
    );

    // Warm-up, the same in every run (API, workers, connection pools, JIT) — in run B the backlog
    // would otherwise warm them for B alone; its publish rate sizes the lead before deliver_at.
    await receiver.reset(0);
    const w0 = Date.now();
    await cluster.publishAll(o.warmup, (i) => ({ type: "bench.warmup", payload: { warmup: i }, destination_ids: [ids[i % o.active]!] }));
    const warmupPublishMs = Date.now() - w0;
    for (const until = Date.now() + 120_000; (await receiver.progress()).total < o.warmup; await sleep(200)) {
      if (Date.now() > until) throw new Error("the warm-up deliveries did not all arrive within 120 s");
    }

    let backlog = null;
    if (held) {
      await receiver.reset(0);
      await sleep(1100); // table statistics are flushed at most once a second
      const updBefore = await destinationUpdates(db);
      const mBefore = await cluster.engineMetrics();
      const total = held.destinations * held.perDestination;
      const t0 = Date.now();
      await cluster.publishAll(total, (i) => ({
        type: "bench.held",
        payload: { held: i },
        destination_ids: [heldIds[i % held.destinations]!],
      }));
      const published = Date.now();
      // Settled: quiet ones parked until their window's end, paused ones idle, the throttled one showing status "throttled".
      const what = held.kind === "throttled" ? `status "throttled"` : `no ${held.kind} destination is ready`;
      log(`held backlog: ${fmt(total)} deliveries published in ${((published - t0) / 1000).toFixed(1)} s; waiting until ${what}`);
      let settled = false;
      for (const until = published + (held.kind === "throttled" ? 60_000 : 300_000); !settled && Date.now() < until; await sleep(200)) {
        settled =
          held.kind === "throttled"
            ? (await status(heldIds[0]!)).status === "throttled"
            : (
                await db.query<{ n: number }>("SELECT count(*)::int AS n FROM destinations WHERE name LIKE $1 AND ready_at <= now()", [
                  heldPattern,
                ])
              ).rows[0]!.n === 0;
      }
      const settleS = (Date.now() - published) / 1000;
      if (!settled && held.kind === "throttled")
        throw new Error(`the 429 destination did not show status "throttled" within 60 s: ${JSON.stringify(await status(heldIds[0]!))}`);
      if (!settled) log(`✗ ${held.kind} destinations still ready ${settleS.toFixed(0)} s after their backlog was published`);
      await sleep(1100);
      const mAfter = await cluster.engineMetrics();
      backlog = {
        deliveries: total,
        createS,
        publishS: (published - t0) / 1000,
        settleS,
        settled,
        claimsWhileSettling: claimDiff(mBefore, mAfter),
        /** destinations rows updated (n_tup_upd) while the backlog was published and settled. */
        destinationUpdatesWhileSettling: (await destinationUpdates(db)) - updBefore,
        requestsWhileSettling: held.kind === "throttled" ? 0 : (await receiver.progress()).total,
      };
    }

    const busy = await prepare(db, o.waitQuietMs);
    const throttledBefore = (await receiver.progress()).throttledAll;
    const versionsBefore = await rowVersions(db, heldPattern);
    const statusAtStart = held ? await status(heldIds[0]!) : null;
    // A /metrics scrape runs database-wide queries (held deliveries by reason, …): before the
    // counters are read, so that its rows are not charged to the workload.
    const mBefore = await cluster.engineMetrics();
    await sleep(1100); // table statistics are flushed at most once a second
    const statsBefore = await tableStats(db);
    await receiver.reset(o.activeEvents);
    const cpu = new CpuSampler(() => ({
      sluice: { pids: cluster.pids(), tree: true },
      postgres: { pids: [o.postmaster() ?? -1], tree: true },
      receiver: { pids: [receiver.pid], tree: false },
      bench: { pids: [process.pid], tree: false },
    }));
    // Ready destinations, and whether the held ones are held (throttled_until > now), twice a
    // second (the partial index on ready_at, a few rows: cheap; GET /v1/destinations/{id} would count a whole backlog).
    const samples: { all: number; held: number; throttled: boolean }[] = [];
    let sampling = true;
    const sampler = async (): Promise<void> => {
      for (; sampling; await sleep(500)) {
        const r = (
          await db.query<{ n_all: number; n_held: number; throttled: boolean }>(
            `SELECT count(*) FILTER (WHERE ready_at <= now())::int AS n_all, count(*) FILTER (WHERE ready_at <= now() AND name LIKE $1)::int AS n_held,
                  coalesce(bool_or(throttled_until > now()) FILTER (WHERE name LIKE $1), false) AS throttled FROM destinations`,
            [heldPattern],
          )
        ).rows[0]!;
        samples.push({ all: r.n_all, held: r.n_held, throttled: r.throttled });
      }
    };

    const publishStart = Date.now();
    let dueMs = publishStart,
      leadMs = 0;
    let sampled = Promise.resolve();
    if (o.timed) {
      cpu.begin();
      sampled = sampler();
      for (let off = 0; off < o.activeEvents && Date.now() < publishStart + o.timeoutMs; off += BATCH) {
        const due = publishStart + (off / o.timed.publishRate) * 1000;
        if (o.timed.publishRate > 0 && due > Date.now()) await sleep(due - Date.now());
        const sentAt = Date.now();
        await cluster.publishBatch(
          Array.from({ length: Math.min(BATCH, o.activeEvents - off) }, (_, k) => ({
            type: "bench.event",
            payload: { seq: off + k, sent_at: sentAt },
            destination_ids: [ids[(off + k) % o.active]!],
          })),
        );
      }
    } else {
      // deliver_at: long enough after now for the whole workload to be published (twice the
      // warm-up's publish rate says, + 2 s), so that nothing is due while publishing.
      const warmRate = o.warmup / Math.max(0.001, warmupPublishMs / 1000);
      leadMs = Math.round(Math.min(120_000, Math.max(3000, ((2 * o.activeEvents) / warmRate) * 1000 + 2000)));
      dueMs = publishStart + leadMs;
      const deliverAt = new Date(dueMs).toISOString();
      await cluster.publishAll(o.activeEvents, (seq) => ({
        type: "bench.event",
        payload: { seq, sent_at: dueMs },
        destination_ids: [ids[seq % o.active]!],
        deliver_at: deliverAt,
      }));
    }
    const publishMs = Date.now() - publishStart;
    const finishedBeforeDue = o.timed ? true : Date.now() < dueMs;
    log(
      `active workload: ${fmt(o.activeEvents)} events published in ${(publishMs / 1000).toFixed(1)} s` +
        (o.timed
          ? ""
          : ` with deliver_at ${(leadMs / 1000).toFixed(1)} s after the first` +
            `${finishedBeforeDue ? "" : " — ✗ publishing outlasted deliver_at: delivery overlapped ingest"}`),
    );
    if (!o.timed) {
      if (finishedBeforeDue) await sleep(Math.max(0, dueMs - Date.now() - 500));
      cpu.begin();
      sampled = sampler();
    }
    await receiver.waitFor(
      (p) => p.unique >= o.activeEvents,
      (o.timed ? publishStart : dueMs) + o.timeoutMs,
      (p) =>
        `  [${o.label}] received ${fmt(p.unique)}/${fmt(o.activeEvents)}${held?.kind === "throttled" ? `, 429s ${p.throttled}` : ""}  t=${((Date.now() - dueMs) / 1000).toFixed(0)}s${o.timed ? "" : " after deliver_at"}`,
    );
    const cpuUse = cpu.end();
    sampling = false;
    await sampled;
    const rep = await receiver.report();
    await sleep(1100);
    const dbWork = diffStats(statsBefore, await tableStats(db));
    const mAfter = await cluster.engineMetrics();
    const r = rates(rep, o.timed ? publishStart : (rep.firstAt ?? dueMs));

    let heldOut = null;
    if (held && backlog) {
      const after = await rowVersions(db, heldPattern);
      let locked = 0,
        rewritten = 0;
      for (const [id, v] of versionsBefore) {
        const a = after.get(id);
        if (!a || a.xmin !== v.xmin) rewritten++;
        else if (a.xmax !== v.xmax) locked++;
      }
      const byStatus: Record<string, number> = {};
      for (const row of (
        await db.query<{ status: string; n: number }>(
          `SELECT x.status, count(*)::int AS n FROM deliveries x JOIN destinations d ON d.id = x.destination_id
          WHERE d.name LIKE $1 GROUP BY x.status ORDER BY x.status`,
          [heldPattern],
        )
      ).rows)
        byStatus[row.status] = row.n;
      const attempts = (
        await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM attempts a JOIN destinations d ON d.id = a.destination_id WHERE d.name LIKE $1",
          [heldPattern],
        )
      ).rows[0]!.n;
      /** Quiet: the end of the open window, as GET /v1/destinations/{id} shows quiet_until. */
      const windowEnd = statusAtStart?.quiet_until ?? null;
      const ready = (
        await db.query<{ at_end: number; at_null: number; now: number; other: number }>(
          `SELECT (count(*) FILTER (WHERE ready_at = $2::timestamptz))::int AS at_end,
                (count(*) FILTER (WHERE ready_at IS NULL))::int AS at_null,
                (count(*) FILTER (WHERE ready_at <= now()))::int AS now,
                (count(*) FILTER (WHERE ready_at > now() AND ready_at IS DISTINCT FROM $2::timestamptz))::int AS other
           FROM destinations WHERE name LIKE $1`,
          [heldPattern, windowEnd],
        )
      ).rows[0]!;
      // The throttled destination's 429s during the workload (first publish → last active arrival),
      // in bursts: requests less than 1 s apart belong together; the gaps between bursts should be ≈ Retry-After.
      const phaseEnd = rep.lastAt ?? Date.now();
      const phaseS = (phaseEnd - publishStart) / 1000;
      const during = rep.throttled.filter((at) => at >= publishStart && at <= phaseEnd);
      const bursts: number[][] = [];
      for (const at of during) {
        const last = bursts[bursts.length - 1];
        if (last && at - last[last.length - 1]! < 1000) last.push(at);
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
          rowsLocked: locked,
          rowsRewritten: rewritten,
          maxReady: Math.max(0, ...samples.map((s) => s.held)),
        },
        atEnd: {
          byStatus,
          attempts,
          readyAtWindowEnd: ready.at_end,
          readyAtNull: ready.at_null,
          readyNow: ready.now,
          readyOther: ready.other,
        },
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
    const all = samples.map((s) => s.all);
    return {
      label: o.label,
      activeDestinations: o.active,
      held: heldOut,
      warmup: { events: o.warmup, publishMs: warmupPublishMs },
      machineBusyBeforePct: busy,
      publish: {
        ms: publishMs,
        eventsPerSec: o.activeEvents / Math.max(0.001, publishMs / 1000),
        deliverAt: o.timed ? null : new Date(dueMs).toISOString(),
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
      fromDuePerSec: o.timed ? null : rates(rep, dueMs).perSec,
      firstArrivalAfterDueMs: rep.firstAt === null || o.timed ? null : rep.firstAt - dueMs,
      latencyMs: rep.latencyMs,
      ready: {
        samples: all.length,
        max: Math.max(0, ...all),
        mean: all.length ? all.reduce((a, b) => a + b, 0) / all.length : 0,
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

/** The same preparation before every timed workload: fresh statistics, no pending checkpoint, a quiet machine (its busy %). */
async function prepare(db: pg.Client, waitQuietMs: number): Promise<number> {
  await db.query("VACUUM ANALYZE destinations, events, deliveries, attempts");
  await db.query("CHECKPOINT");
  return waitQuiet(waitQuietMs);
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
  const tput = ratio(b.deliveriesPerSec, a.deliveriesPerSec);
  const steady = ratio(b.steadyPerSec, a.steadyPerSec);
  const cpu = (r: HeldRunOutcome, k: string): string => cpuPct(r.cpu, k);
  out(
    `\nruns in order: ${all.map((r) => `${r.label}${r === a || r === b ? "" : " (pilot)"} ${fmt(r.deliveriesPerSec)}/s (steady ${fmt(r.steadyPerSec)})`).join(", ")}; compared: the last A and the last B`,
  );
  out(
    table([
      ["active workload", "A: active only", `B: + ${what}`, "B/A"],
      ["received", `${fmt(a.received)}/${fmt(a.expected)}`, `${fmt(b.received)}/${fmt(b.expected)}`, ""],
      [
        "publish (s, with deliver_at; not timed)",
        fmt(a.publish.ms / 1000, 1),
        fmt(b.publish.ms / 1000, 1),
        fmt(ratio(b.publish.ms, a.publish.ms), 2),
      ],
      ["deliveries/s (first → last arrival)", fmt(a.deliveriesPerSec), fmt(b.deliveriesPerSec), fmt(tput, 3)],
      ["deliveries/s (steady: middle 80 %)", fmt(a.steadyPerSec), fmt(b.steadyPerSec), fmt(steady, 3)],
      [
        "deliveries/s (deliver_at → last arrival)",
        fmt(a.fromDuePerSec),
        fmt(b.fromDuePerSec),
        fmt(ratio(b.fromDuePerSec, a.fromDuePerSec), 3),
      ],
      ["first arrival after deliver_at (ms)", fmt(a.firstArrivalAfterDueMs), fmt(b.firstArrivalAfterDueMs), ""],
      [
        "latency after deliver_at p50 / p99 (ms)",
        `${fmt(a.latencyMs?.p50)} / ${fmt(a.latencyMs?.p99)}`,
        `${fmt(b.latencyMs?.p50)} / ${fmt(b.latencyMs?.p99)}`,
        "",
      ],
      [
        "destinations ready (ready_at <= now), max / mean",
        `${fmt(a.ready.max)} / ${fmt(a.ready.mean, 1)}`,
        `${fmt(b.ready.max)} / ${fmt(b.ready.mean, 1)}`,
        "",
      ],
      [
        "claims during the workload (worker metrics)",
        fmt(a.claims?.claims),
        fmt(b.claims?.claims),
        fmt(ratio(b.claims?.claims, a.claims?.claims), 2),
      ],
      [
        "claim transaction avg ms",
        fmt(a.claims?.claimAvgMs, 1),
        fmt(b.claims?.claimAvgMs, 1),
        fmt(ratio(b.claims?.claimAvgMs, a.claims?.claimAvgMs), 2),
      ],
      ["deliveries per claim", fmt(a.claims?.deliveriesPerClaim, 1), fmt(b.claims?.deliveriesPerClaim, 1), ""],
      ["CPU sluice (% of one core)", cpu(a, "sluice"), cpu(b, "sluice"), ""],
      ["CPU postgres", cpu(a, "postgres"), cpu(b, "postgres"), ""],
      ["CPU other processes", cpu(a, "(other processes, kernel)"), cpu(b, "(other processes, kernel)"), ""],
      ["machine busy before the run", `${a.machineBusyBeforePct} %`, `${b.machineBusyBeforePct} %`, ""],
    ]),
  );
  out(dbWorkTable("active", a, b));

  const h = b.held;
  let untouched = false;
  if (h) {
    const queued = (h.atEnd.byStatus.queued ?? 0) + (h.atEnd.byStatus.retry_scheduled ?? 0);
    out(
      `\n${h.kind} destinations in run B: ${fmt(h.destinations)} × ${fmt(h.perDestination)} held = ${fmt(h.deliveries)} deliveries` +
        `${h.schedule ? `; delivery_schedule ${JSON.stringify(h.schedule)} (window ends ${h.windowEnd})` : ""}`,
    );
    out(
      `  set-up: created in ${fmt(h.createS, 1)} s; backlog published in ${fmt(h.publishS, 1)} s; none ready ${fmt(h.settleS, 1)} s later ${h.settled ? "✓" : "✗ (never)"}; ` +
        `meanwhile ${fmt(h.claimsWhileSettling?.claims)} claims, ${fmt(h.destinationUpdatesWhileSettling)} destinations-row updates, ${fmt(h.requestsWhileSettling)} requests to the receiver`,
    );
    out(
      `  during the active workload: ${fmt(h.duringRun.requests)} requests reached them; ${fmt(h.duringRun.rowsLocked)} of their rows were locked and ` +
        `${fmt(h.duringRun.rowsRewritten)} rewritten (xmax / xmin changed: a claim touched them); at most ${fmt(h.duringRun.maxReady)} of them ready at once`,
    );
    out(
      `  at the end: deliveries ${JSON.stringify(h.atEnd.byStatus)} (${fmt(queued)} of ${fmt(h.deliveries)} still queued); attempts ${fmt(h.atEnd.attempts)}; ` +
        `ready_at ${h.kind === "quiet" ? `= window end: ${fmt(h.atEnd.readyAtWindowEnd)}, ` : ""}NULL: ${fmt(h.atEnd.readyAtNull)}, <= now: ${fmt(h.atEnd.readyNow)}, other future: ${fmt(h.atEnd.readyOther)}`,
    );
    const st = (s: unknown): string => {
      const d = s as { status?: string; queued_events?: number; quiet_until?: string | null; paused_at?: string | null } | null;
      return d
        ? `status ${JSON.stringify(d.status)}, queued_events ${fmt(d.queued_events)}, ${h.kind === "quiet" ? `quiet_until ${d.quiet_until}` : `paused_at ${d.paused_at}`}`
        : "–";
    };
    out(`  GET /v1/destinations/{id} of the first one, before the workload: ${st(h.statusAtStart)}`);
    out(`                                              after it:             ${st(h.statusAtEnd)}`);
    untouched =
      h.duringRun.requests === 0 &&
      h.atEnd.attempts === 0 &&
      queued === h.deliveries &&
      h.duringRun.rowsLocked === 0 &&
      h.duringRun.rowsRewritten === 0;
  }
  out(`\nverdict:`);
  out(
    `  active throughput B/A = ${fmt(tput, 3)} ${mark(tput === null ? null : tput >= 0.95)} (target ≥ 0.95; steady-state B/A ${fmt(steady, 3)})`,
  );
  if (h) {
    out(
      `  ${h.kind} destinations untouched during the workload (0 requests, 0 attempts, backlog queued, rows neither locked nor rewritten): ${mark(untouched)}`,
    );
    if (h.kind === "quiet")
      out(
        `  quiet destinations parked until their window's end (ready_at = quiet_until): ${fmt(h.atEnd.readyAtWindowEnd)}/${fmt(h.destinations)} ${mark(h.atEnd.readyAtWindowEnd === h.destinations)}`,
      );
    else
      out(
        `  paused destinations idle (ready_at NULL): ${fmt(h.atEnd.readyAtNull)}/${fmt(h.destinations)} ${mark(h.atEnd.readyAtNull === h.destinations)}`,
      );
  }
  if (!a.complete || !b.complete) out(`  ✗ a run did not receive its whole workload before the timeout: the figures are partial`);
  if (!a.publish.finishedBeforeDue || !b.publish.finishedBeforeDue)
    out(`  ✗ in a run publishing outlasted deliver_at: delivery overlapped ingest there`);
  return { throughputRatio: tput, steadyThroughputRatio: steady, throughputOk: tput !== null && tput >= 0.95, heldUntouched: untouched };
}
