import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { isStoreUnavailable } from "../db/db.js";
import { wakeStranded } from "../db/queries/events.js";
import {
  tryRetentionLock,
  pruneAttempts,
  pruneDeliveries,
  pruneEvents,
  discardHeldPastPausedRetention,
  discardLeftOfDeleted,
  pruneIdempotencyKeys,
  pruneAlerts,
} from "../db/queries/retention.js";
import { startStatsRollup } from "./stats-rollup.js";
import { startIndexRebuilds } from "./index-rebuilds.js";
import { startTimePartitions } from "./time-partitions.js";
import { DEFAULT_REBUILD_POLICY } from "../policy/index-rebuild.js";
import { everyRound } from "./rounds.js";
import { tableStats, vacuumTable } from "../db/queries/maintenance.js";
import { metrics } from "../metrics.js";
import { DEFAULT_VACUUM_POLICY, SERVER_VACUUM_POLICY, vacuumPlan, type VacuumPolicy, type VacuumTask } from "../policy/vacuum.js";

// Retention: finished deliveries, their attempts, events with nothing left to deliver, settled
// alerts and old idempotency keys are pruned; deliveries held too long for a paused destination,
// and those a deleted destination left waiting, are discarded — in small batches, by one worker
// at a time (advisory lock). Beside it the janitor starts the other upkeep: the stranded-destination
// sweep, the stats rollups, vacuuming and index rebuilds.

const BATCH = 5_000;

/**
 * One batch of each pruning statement, in one transaction. `round` carries what a round's
 * batches pass on: where the last batch of events stopped (retention.ts's pruneEvents).
 */
export async function pruneOnce(
  db: Db,
  retentionHours: number,
  round: { eventsAfter: string } = { eventsAfter: "" },
): Promise<{
  deliveries: number;
  attempts: number;
  events: number;
  keys: number;
  pausedDiscarded: number;
  deletedDiscarded: number;
  alerts: number;
} | null> {
  const r = await db.tx(async (q) => {
    if (!(await tryRetentionLock(q))) return null;
    const attempts = await pruneAttempts(q, retentionHours, BATCH);
    const deliveries = await pruneDeliveries(q, retentionHours, BATCH);
    const events = await pruneEvents(q, retentionHours, BATCH, round.eventsAfter);
    const pausedDiscarded = await discardHeldPastPausedRetention(q);
    const deletedDiscarded = await discardLeftOfDeleted(q);
    const keys = await pruneIdempotencyKeys(q);
    const alerts = await pruneAlerts(q, retentionHours, BATCH);
    return { deliveries, attempts, events, keys, pausedDiscarded, deletedDiscarded, alerts };
  });
  if (!r) return null;
  // Moved on once the batch has committed: one rolled back deleted nothing.
  if (r.events.last !== null) round.eventsAfter = r.events.last;
  return { ...r, events: r.events.n };
}

// Every 30 seconds: what passed retention in the last half-minute, a few batches a table. A round
// every 5 minutes (or half the retention period) deleted all of that time's traffic at once — at
// 1,000 events/s up to 300,000 rows of each of three tables, in a burst of transactions — and in
// the soak (2.5-minute rounds) the windows with a round had a publish → delivery p99 of 57–152 ms,
// against about 50 in most others. Nothing outlives retention by more than half a minute (the
// shortest retention, a minute, by half of it).
export function startJanitor(
  db: Db,
  { retentionHours, indexRebuildFactor }: { retentionHours: number; indexRebuildFactor: number },
  log: Logger,
  everyMs = 30_000,
): () => void {
  // Attempts go with their time partition (time-partitions.ts); the rounds below delete the rest.
  const stopPartitions = startTimePartitions(db, log, retentionHours);
  const stopPruning = everyRound("pruning", log, { firstMs: everyMs, everyMs }, async (stopped) => {
    // Keep going while full batches come back, each its own short transaction, so that a round
    // removes all that passed retention since the last, however busy Sluice was. A cap per round
    // would cap retention's pace (20 batches of 5,000 per 5 minutes is 333 rows/s a table), and
    // above that pace the tables would grow without end.
    const round = { eventsAfter: "" };
    while (!stopped()) {
      const r = await pruneOnce(db, retentionHours, round);
      if (!r) break;
      if (r.deliveries || r.attempts || r.events || r.keys || r.pausedDiscarded || r.deletedDiscarded || r.alerts)
        log.info(r, "pruned past retention");
      if (r.deliveries < BATCH && r.attempts < BATCH && r.events < BATCH && r.alerts < BATCH) break;
    }
  });
  // A wake-up lost to a race the claim's idle re-check did not cover is found here.
  const sweep = setInterval(() => {
    void db
      .tx((q) => wakeStranded(q))
      .then((n) => {
        if (n > 0) log.warn({ destinations: n }, "woke idle destinations that had due deliveries waiting");
      })
      .catch((err: unknown) =>
        log[isStoreUnavailable(err) ? "debug" : "warn"]({ err }, "stranded-destination sweep failed; will try again"),
      );
  }, 15_000);
  sweep.unref();
  // The dashboard's per-minute rollups (stats-rollup.ts) ride on the same workers.
  const stopStats = startStatsRollup(db, log);
  // The embedded store has no autovacuum, and on a server it comes once a minute: Sluice vacuums
  // all of the one, the small hot tables of the other (policy/vacuum.ts). A Citus cell is left to
  // the node that holds it: through the coordinator a cell's tables are empty shells, whose
  // counters say nothing of the shards, and the node's own autovacuum tends those.
  const stopVacuum = db.citus
    ? () => undefined
    : startVacuum(db, log, db.kind === "embedded" ? DEFAULT_VACUUM_POLICY : SERVER_VACUUM_POLICY);
  // What retention cannot give back: index pages that held deliveries keep mostly empty (policy/index-rebuild.ts).
  const stopRebuilds = db.citus ? () => undefined : startIndexRebuilds(db, log, { ...DEFAULT_REBUILD_POLICY, factor: indexRebuildFactor });
  return () => {
    stopPartitions();
    stopPruning();
    clearInterval(sweep);
    stopStats();
    stopVacuum();
    stopRebuilds();
  };
}

/** How often the tables' counters are looked at (a table is vacuumed only when the policy says). */
const VACUUM_EVERY_MS = 5_000;

/**
 * One round of vacuuming: every table the policy picks, one VACUUM at a time (on the embedded
 * store each holds the one session while it runs, so other work goes between them).
 */
export async function vacuumOnce(db: Db, policy: VacuumPolicy = DEFAULT_VACUUM_POLICY): Promise<{ task: VacuumTask; ms: number }[]> {
  const done: { task: VacuumTask; ms: number }[] = [];
  for (const task of vacuumPlan(await tableStats(db), policy)) {
    const startedAt = performance.now();
    await vacuumTable(db, task, policy);
    const ms = performance.now() - startedAt;
    metrics.vacuums.inc({ table: task.table });
    metrics.vacuumDuration.observe(ms / 1000);
    done.push({ task, ms: Math.round(ms) });
  }
  return done;
}

function startVacuum(db: Db, log: Logger, policy: VacuumPolicy): () => void {
  return everyRound("vacuuming", log, { firstMs: VACUUM_EVERY_MS, everyMs: VACUUM_EVERY_MS }, async () => {
    const done = await vacuumOnce(db, policy);
    if (done.length) log.debug({ vacuumed: done.map((d) => ({ ...d.task, ms: d.ms })) }, "vacuumed");
  });
}
