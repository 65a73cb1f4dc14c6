import client from "prom-client";
import type { Db } from "./db/db.js";
import { inflightByDestination, heldByReason, destinationsByHealth, scheduledDestinations } from "./db/queries/stats.js";
import { currentQuietWindow } from "./policy/quiet-hours.js";
import { HEALTH_STATUSES, HOLD_REASONS } from "./policy/statuses.js";

// Process-wide Prometheus metrics. One registry per process; /metrics serves it.

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: "sluice_process_" });

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
  leaseLost: new client.Counter({
    name: "sluice_lease_lost_total",
    help: "Results that arrived after their lease had moved on (not applied)",
    registers: [registry],
  }),
  paused: new client.Counter({
    name: "sluice_paused_total",
    help: "Destinations paused, by reason (manual, consecutive_failures, score, gone, dns, blocked, auth)",
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
    help: "Health alerts recorded, by type",
    labelNames: ["type"] as const,
    registers: [registry],
  }),
  alertEmails: new client.Counter({
    name: "sluice_alert_emails_total",
    help: "Alert e-mails, by outcome",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  sendsInflight: new client.Gauge({
    name: "sluice_worker_sends_inflight",
    help: "Requests in flight from this process",
    registers: [registry],
  }),
};

// Gauges read from the database when /metrics is scraped (at most every SAMPLE_MS): the truth
// across every worker process, not one process's view.
const SAMPLE_MS = 5_000;

export function registerDatabaseGauges(db: Db): void {
  // One process may start Sluice more than once (tests): the latest store wins.
  for (const name of ["sluice_inflight", "sluice_held", "sluice_oldest_held_age_seconds", "sluice_destination_health"])
    registry.removeSingleMetric(name);
  let last = 0;
  let pending: Promise<void> | null = null;
  const inflight = new client.Gauge({
    name: "sluice_inflight",
    help: "Deliveries in flight per destination (live leases, all workers; sampled)",
    labelNames: ["destination"] as const,
    registers: [registry],
  });
  const held = new client.Gauge({
    name: "sluice_held",
    help: "Deliveries held, by reason (sampled)",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const oldest = new client.Gauge({
    name: "sluice_oldest_held_age_seconds",
    help: "Age of the oldest held delivery, by reason (sampled)",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const health = new client.Gauge({
    name: "sluice_destination_health",
    help: "Destinations by health status (sampled)",
    labelNames: ["status"] as const,
    registers: [registry],
  });
  const sample = async () => {
    const nowMs = Date.now();
    const quietIds = (await scheduledDestinations(db))
      .filter((d) => currentQuietWindow(d.delivery_schedule, nowMs) !== null)
      .map((d) => d.id);
    const [rows, holds, byHealth] = await Promise.all([inflightByDestination(db), heldByReason(db, quietIds), destinationsByHealth(db)]);
    for (const status of HEALTH_STATUSES) health.set({ status }, byHealth.find((h) => h.status === status)?.n ?? 0);
    inflight.reset();
    for (const r of rows) inflight.set({ destination: r.destination_id }, r.n);
    for (const reason of HOLD_REASONS) {
      const h = holds.find((x) => x.reason === reason);
      held.set({ reason }, h?.n ?? 0);
      oldest.set({ reason }, h?.oldest_age_s ?? 0);
    }
  };
  // prom-client collects the metrics of a scrape concurrently: all three wait on one sample.
  const refresh = async () => {
    if (Date.now() - last < SAMPLE_MS) return;
    pending ??= sample()
      .catch(() => undefined) // a failed sample keeps the previous values
      .finally(() => {
        last = Date.now();
        pending = null;
      });
    await pending;
  };
  for (const g of [inflight, held, oldest, health]) (g as unknown as { collect: () => Promise<void> }).collect = refresh;
}
