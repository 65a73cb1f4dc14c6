import client from "prom-client";

// Process-wide Prometheus metrics. One registry per process; /metrics serves it.

export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: "sluice_process_" });

export const metrics = {
  eventsIngested: new client.Counter({ name: "sluice_events_ingested_total", help: "Events accepted (202)", registers: [registry] }),
  deliveriesCreated: new client.Counter({ name: "sluice_deliveries_created_total", help: "Deliveries created by fan-out", registers: [registry] }),
  attempts: new client.Counter({
    name: "sluice_attempts_total", help: "HTTP attempts by outcome and error class", labelNames: ["outcome", "error_class"] as const, registers: [registry],
  }),
  deliveriesFinished: new client.Counter({
    name: "sluice_deliveries_finished_total", help: "Deliveries that reached a final state", labelNames: ["status"] as const, registers: [registry],
  }),
  deliveryLatency: new client.Histogram({
    name: "sluice_delivery_latency_seconds", help: "From publish (event accepted) to the 2xx answer",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600], registers: [registry],
  }),
  attemptDuration: new client.Histogram({
    name: "sluice_attempt_duration_seconds", help: "HTTP request duration of one attempt",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60], registers: [registry],
  }),
  claimDuration: new client.Histogram({
    name: "sluice_claim_duration_seconds", help: "Duration of one claim transaction",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1], registers: [registry],
  }),
  slotDenied: new client.Counter({
    name: "sluice_concurrency_slot_denied_total", help: "Claims that found a destination with due work at its concurrency cap", registers: [registry],
  }),
  throttled: new client.Counter({ name: "sluice_throttled_total", help: "429 answers that put a destination on hold", registers: [registry] }),
  leaseLost: new client.Counter({ name: "sluice_lease_lost_total", help: "Results that arrived after their lease had moved on (not applied)", registers: [registry] }),
  sendsInflight: new client.Gauge({ name: "sluice_worker_sends_inflight", help: "Requests in flight from this process", registers: [registry] }),
};
