import client from "prom-client";
import type { Db } from "./db/db.js";
import { inflightTotal, heldByReason, destinationsByHealth, scheduledDestinations, storeLocks } from "./db/queries/stats.js";
import { unlessFaulty } from "./policy/stored-config.js";
import { nextAskAfterMs } from "./policy/slow-answer.js";
import { backlogAlertsStanding } from "./db/queries/backlog-watch.js";
import { currentQuietWindow } from "./policy/quiet-hours.js";
import { HEALTH_STATUSES, HOLD_REASONS, SYSTEM_EVENT_TYPES } from "./policy/statuses.js";

// Process-wide Prometheus metrics. One registry per process; /metrics serves it. Names follow
// Prometheus conventions and are listed in docs/metrics.md: Sluice's own under `sluice_`, counters
// ending in `_total`, units in the name; prom-client's process and Node.js metrics under their
// standard names (`process_*`, `nodejs_*`), so stock dashboards and alerts work on them.

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });
// Gauges whose names end in `_total` (only counters may): `promtool check metrics` rejects them,
// and sum(nodejs_active_handles) etc. (by type, kept) give the same numbers.
for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"])
  registry.removeSingleMetric(name);

export const metrics = {
  eventsIngested: new client.Counter({ name: "sluice_events_ingested_total", help: "Events accepted (202)", registers: [registry] }),
  deliveriesCreated: new client.Counter({
    name: "sluice_deliveries_created_total",
    help: "Deliveries created by fan-out",
    registers: [registry],
  }),
  attempts: new client.Counter({
    name: "sluice_attempts_total",
    help: "HTTP attempts by outcome and error class",
    labelNames: ["outcome", "error_class"] as const,
    registers: [registry],
  }),
  deliveriesFinished: new client.Counter({
    name: "sluice_deliveries_finished_total",
    help: "Deliveries that reached a final state",
    labelNames: ["status"] as const,
    registers: [registry],
  }),
  deliveryLatency: new client.Histogram({
    name: "sluice_delivery_latency_seconds",
    help: "From publish (event accepted) to the 2xx answer",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers: [registry],
  }),
  attemptDuration: new client.Histogram({
    name: "sluice_attempt_duration_seconds",
    help: "HTTP request duration of one attempt",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60],
    registers: [registry],
  }),
  claimDuration: new client.Histogram({
    name: "sluice_claim_duration_seconds",
    help: "Duration of one claim transaction",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  }),
  slotDenied: new client.Counter({
    name: "sluice_concurrency_slot_denied_total",
    help: "Claims that found a destination with due work at its concurrency cap",
    registers: [registry],
  }),
  throttled: new client.Counter({
    name: "sluice_throttled_total",
    help: "429 answers that put a destination on hold",
    registers: [registry],
  }),
  paceChanges: new client.Counter({
    name: "sluice_pace_changes_total",
    help: "Adaptive pace changes: direction (up, down) and cause (429, 503, timeout, latency; fast for a raise)",
    labelNames: ["direction", "cause"] as const,
    registers: [registry],
  }),
  vacuums: new client.Counter({
    name: "sluice_vacuums_total",
    help: "VACUUMs the janitor ran (embedded: every table, in autovacuum's stead; server: leases and destinations, between its rounds), by table",
    labelNames: ["table"] as const,
    registers: [registry],
  }),
  vacuumDuration: new client.Histogram({
    name: "sluice_vacuum_duration_seconds",
    help: "Duration of one VACUUM the janitor ran",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30],
    registers: [registry],
  }),
  indexRebuilds: new client.Counter({
    name: "sluice_index_rebuilds_total",
    help: "Indexes the janitor rebuilt (REINDEX CONCURRENTLY) to give back the pages held deliveries kept half empty, by index",
    labelNames: ["index"] as const,
    registers: [registry],
  }),
  indexRebuildDuration: new client.Histogram({
    name: "sluice_index_rebuild_duration_seconds",
    help: "Duration of one index rebuild the janitor ran",
    buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 1800],
    registers: [registry],
  }),
  leaseLost: new client.Counter({
    name: "sluice_lease_lost_total",
    help: "Results that arrived after their lease had moved on (not applied)",
    registers: [registry],
  }),
  paused: new client.Counter({
    name: "sluice_paused_total",
    help: "Destinations paused, by reason (manual, consecutive_failures, score, gone, dns, blocked, auth, invalid_config, internal_error)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  storeDeadlocks: new client.Counter({
    name: "sluice_store_deadlocks_total",
    help: "Deadlocks Postgres detected in the store's database, any session's (sampled from pg_stat_database by API processes)",
    registers: [registry],
  }),
  transactionsAborted: new client.Counter({
    name: "sluice_transactions_aborted_total",
    help: "This process's transactions Postgres aborted and Sluice ran again, by reason: deadlock, serialization, cell_moved (Citus)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  probes: new client.Counter({
    name: "sluice_probes_total",
    help: "Probes of paused destinations, by outcome",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  alerts: new client.Counter({
    name: "sluice_alerts_total",
    help: "Alerts recorded (destination.* health and backlog transitions, delivery.dead deaths), by type",
    labelNames: ["type"] as const,
    registers: [registry],
  }),
  alertEmails: new client.Counter({
    name: "sluice_alert_emails_total",
    help: "Alert e-mails (one per destination.* alert, one per delivery.dead digest), by outcome",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  sendsInflight: new client.Gauge({
    name: "sluice_worker_sends_inflight",
    help: "Requests in flight from this process",
    registers: [registry],
  }),
};

const buildInfo = new client.Gauge({
  name: "sluice_build_info",
  help: "Always 1; its labels name the Sluice and Node.js versions this process runs",
  labelNames: ["version", "node_version"] as const,
  registers: [registry],
});

// Every alert type is exported from 0: increase() then sees a process's first alert after a start.
for (const type of SYSTEM_EVENT_TYPES) metrics.alerts.inc({ type }, 0);

/** Sets sluice_build_info: the version comes from package.json, which app.ts reads. */
export function setBuildInfo(version: string): void {
  buildInfo.reset(); // one series: a test process may start Sluice more than once
  buildInfo.set({ version, node_version: process.version }, 1);
}

// Gauges read from the database when /metrics is scraped (at most every SAMPLE_MS): the truth
// across every worker process, not one process's view. They describe the shared store, so only
// processes that run the API register them (app.ts): a worker's /metrics leaving them out keeps a
// sum() over every process from counting the store once per worker. Several API processes each
// report the same values: aggregate them with max() (docs/metrics.md).
const SAMPLE_MS = 5_000;
/** The longest a slow sample is reused (policy/slow-answer.ts). */
const MAX_SAMPLE_AGE_MS = 60_000;

/**
 * Runs `sample` when asked, unless the last one is fresh: younger than SAMPLE_MS, or than
 * SLOW_ANSWER_FACTOR times as long as it took (policy/slow-answer.ts: the held counts read every
 * waiting delivery, most of a second of the embedded store's one session at 1,000,000 waiting, and
 * a scrape every few seconds must not keep the store busy most of the time). Asks meanwhile wait
 * on the sample in flight. A failed sample keeps the previous values and counts as a sample.
 * `now`: the clock (tests).
 */
export function freshSampler(sample: () => Promise<void>, now: () => number = Date.now): () => Promise<void> {
  let endedAt = -Infinity;
  let tookMs = 0;
  let pending: Promise<void> | null = null;
  return async () => {
    if (pending) return pending;
    if (now() - endedAt < nextAskAfterMs(SAMPLE_MS, tookMs, MAX_SAMPLE_AGE_MS)) return;
    const startedAt = now();
    pending = sample()
      .catch(() => undefined)
      .finally(() => {
        endedAt = now();
        tookMs = endedAt - startedAt;
        pending = null;
      });
    return pending;
  };
}

/** Names of the gauges registerDatabaseGauges() adds. */
export const DATABASE_GAUGES = [
  "sluice_inflight",
  "sluice_held",
  "sluice_oldest_held_age_seconds",
  "sluice_destination_health",
  "sluice_backlog_alerts",
  "sluice_store_lock_waits",
  "sluice_store_lock_wait_seconds",
] as const;

/**
 * The gauges sampled from the store, or from each cell served (then with a `cell` label). The
 * lock and deadlock figures are the whole database's, sampled through the first store.
 */
export function registerDatabaseGauges(stores: readonly { db: Db; cell: string | null }[]): void {
  const cells = stores.some((s) => s.cell !== null);
  const withCell = <L extends string>(labels: readonly L[]): (L | "cell")[] => (cells ? [...labels, "cell"] : [...labels]);
  // One process may start Sluice more than once (tests): the latest store wins.
  for (const name of DATABASE_GAUGES) registry.removeSingleMetric(name);
  // No destination label: destination ids are unbounded (and churn), so each would be a new
  // series in Prometheus; per destination, GET /v1/destinations/{id} has `inflight`.
  const inflight = new client.Gauge({
    name: "sluice_inflight",
    help: "Deliveries in flight (live leases, all workers; sampled from the database)",
    labelNames: withCell([]),
    registers: [registry],
  });
  const held = new client.Gauge({
    name: "sluice_held",
    help: "Waiting deliveries held, by reason (sampled from the database)",
    labelNames: withCell(["reason"]),
    registers: [registry],
  });
  const oldest = new client.Gauge({
    name: "sluice_oldest_held_age_seconds",
    help: "Age of the oldest held delivery, by reason (sampled from the database)",
    labelNames: withCell(["reason"]),
    registers: [registry],
  });
  const health = new client.Gauge({
    name: "sluice_destination_health",
    help: "Destinations by health status (sampled from the database)",
    labelNames: withCell(["status"]),
    registers: [registry],
  });
  const backlog = new client.Gauge({
    name: "sluice_backlog_alerts",
    help: "Destinations with a backlog alert standing, by state: growing, stale (sampled from the database)",
    labelNames: withCell(["state"]),
    registers: [registry],
  });
  const lockWaits = new client.Gauge({
    name: "sluice_store_lock_waits",
    help: "Sessions of the store's database waiting for a lock now (sampled from pg_locks)",
    registers: [registry],
  });
  const lockWaitSeconds = new client.Gauge({
    name: "sluice_store_lock_wait_seconds",
    help: "The longest lock wait in the store's database now, seconds (sampled from pg_locks)",
    registers: [registry],
  });
  // pg_stat_database.deadlocks counts from the server's last statistics reset: the counter adds
  // what it moved between samples (the first sample sets the base).
  let deadlocksSeen: number | null = null;
  const sampleStore = async (db: Db, cell: string | null) => {
    const c = cell === null ? {} : { cell };
    const nowMs = Date.now();
    const quietIds = (await scheduledDestinations(db))
      // A schedule the policy cannot read (the claim sets its destination aside) is not quiet.
      .filter((d) => unlessFaulty(() => currentQuietWindow(d.delivery_schedule, nowMs) !== null, false))
      .map((d) => d.id);
    const [n, holds, byHealth, standing] = await Promise.all([
      inflightTotal(db),
      heldByReason(db, quietIds),
      destinationsByHealth(db),
      backlogAlertsStanding(db),
    ]);
    backlog.set({ state: "growing", ...c }, standing.growing);
    backlog.set({ state: "stale", ...c }, standing.stale);
    for (const status of HEALTH_STATUSES) health.set({ status, ...c }, byHealth.find((h) => h.status === status)?.n ?? 0);
    inflight.set(c, n);
    for (const reason of HOLD_REASONS) {
      const h = holds.find((x) => x.reason === reason);
      held.set({ reason, ...c }, h?.n ?? 0);
      oldest.set({ reason, ...c }, h?.oldest_age_s ?? 0);
    }
  };
  const sample = async () => {
    const [locks] = await Promise.all([storeLocks(stores[0]!.db), ...stores.map((s) => sampleStore(s.db, s.cell))]);
    if (deadlocksSeen !== null && locks.deadlocks > deadlocksSeen) metrics.storeDeadlocks.inc(locks.deadlocks - deadlocksSeen);
    deadlocksSeen = locks.deadlocks;
    lockWaits.set(locks.waiting);
    lockWaitSeconds.set(locks.longestWaitS);
  };
  // prom-client collects the metrics of a scrape concurrently: all of them wait on one sample.
  const refresh = freshSampler(sample);
  for (const g of [inflight, held, oldest, health, backlog, lockWaits, lockWaitSeconds])
    (g as unknown as { collect: () => Promise<void> }).collect = refresh;
}
