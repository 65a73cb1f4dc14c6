// What a run measured, the figures derived from it, and how they are printed and saved.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ReceiverReport } from "./receiver-process.js";

export type Scenario = "0ms" | "50ms" | "embedded";
export type System = "sluice" | "graphile-worker";

export interface RunResult {
  system: System;
  scenario: Scenario;
  store: "postgres" | "pglite";
  destinations: number;
  events: number;
  receiverDelayMs: number;
  settings: Record<string, string | number | boolean | null>;
  status: "complete" | "timeout" | "error";
  error: string | null;
  publish: { ms: number; eventsPerSec: number; batches: number } | null;
  received: number;
  duplicates: number;
  misrouted: number;
  totalRequests: number;
  /** First publish request sent → last distinct delivery received. */
  measuredMs: number | null;
  deliveriesPerSec: number | null;
  /** Deliveries received after publishing finished, per second, until the last one. */
  steadyStatePerSec: number | null;
  latencyMs: ReceiverReport["latencyMs"];
  maxInflight: number;
  maxInflightPerDestination: number;
  receiverConnections: number;
  peakOpenConnections: number;
  /** The per-destination limit checked at the receiver (null: none, e.g. the baseline has none). */
  perDestinationCap: number | null;
  overCapRequests: number;
  destinationsOverCap: number;
  cpu: Record<string, { cpuSeconds: number; pctOfOneCore: number }>;
  /** Whole run: start of its processes → everything stopped. */
  wallMs: number;
  /** Database-side tally at the end (server store only): deliveries or jobs by state, attempts. */
  endState: Record<string, number> | null;
  /** Its Postgres connections by state / wait event, averaged over the run (server store only). */
  pgActivity: Record<string, number> | null;
  /** The system's figures about itself (Sluice's /metrics). */
  engineMetrics: Record<string, number> | null;
  notes: string[];
}

/** Fills the derived figures of a run from what the receiver saw and when publishing ran. */
export function deriveFigures(
  r: ReceiverReport,
  times: { publishStartAt: number; publishEndAt: number },
): Pick<RunResult, "received" | "duplicates" | "misrouted" | "totalRequests" | "measuredMs" | "deliveriesPerSec" | "steadyStatePerSec" | "latencyMs" | "maxInflight" | "maxInflightPerDestination" | "receiverConnections" | "peakOpenConnections" | "overCapRequests" | "destinationsOverCap"> {
  const measuredMs = r.lastAt === null ? null : r.lastAt - times.publishStartAt;
  const tailMs = r.lastAt === null ? 0 : r.lastAt - times.publishEndAt;
  return {
    received: r.unique,
    duplicates: r.duplicates,
    misrouted: r.misrouted,
    totalRequests: r.total,
    measuredMs,
    deliveriesPerSec: measuredMs !== null && measuredMs > 0 ? r.unique / (measuredMs / 1000) : null,
    // Under ~0.5 s of tail the "rate" is mostly noise.
    steadyStatePerSec: tailMs >= 500 ? r.receivedAfterPublish / (tailMs / 1000) : null,
    latencyMs: r.latencyMs,
    maxInflight: r.maxInflight,
    maxInflightPerDestination: r.maxInflightPerDestination,
    receiverConnections: r.connections,
    peakOpenConnections: r.peakOpenConnections,
    overCapRequests: r.overCapRequests,
    destinationsOverCap: r.destinationsOverCap,
  };
}

const fmtInt = (n: number | null | undefined): string => (n === null || n === undefined ? "—" : Math.round(n).toLocaleString("en-US"));
const fmtNum = (n: number): string => (Number.isInteger(n) ? n.toLocaleString("en-US") : String(n));
const fmtMs = (n: number | null | undefined): string => (n === null || n === undefined ? "—" : n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`);

function statusMark(r: RunResult): string {
  if (r.status === "complete") return "";
  return r.status === "timeout" ? " (TIMED OUT: partial)" : " (ERROR)";
}

/** A detailed block for one run. */
export function describeRun(r: RunResult): string {
  const lines = [
    `${r.system} · ${r.scenario} · ${r.store}: ${fmtInt(r.destinations)} destinations, ${fmtInt(r.events)} events, receiver delay ${r.receiverDelayMs} ms${statusMark(r)}`,
  ];
  if (r.error) lines.push(`  error: ${r.error}`);
  if (r.publish) lines.push(`  published in ${fmtMs(r.publish.ms)} (${fmtInt(r.publish.eventsPerSec)} events/s, ${r.publish.batches} batches)`);
  lines.push(
    `  received ${fmtInt(r.received)}/${fmtInt(r.events)} distinct` +
      `${r.duplicates ? `, ${fmtInt(r.duplicates)} DUPLICATES` : ", 0 duplicates"}${r.misrouted ? `, ${fmtInt(r.misrouted)} MISROUTED` : ""}` +
      ` (${fmtInt(r.totalRequests)} requests)`,
    `  deliveries/s: ${fmtInt(r.deliveriesPerSec)} first publish → last receive over ${fmtMs(r.measuredMs)}` +
      `; after publishing ended: ${r.steadyStatePerSec === null ? "— (tail < 0.5 s)" : `${fmtInt(r.steadyStatePerSec)}/s`}`,
    `  publish→receive latency: p50 ${fmtMs(r.latencyMs?.p50)}, p90 ${fmtMs(r.latencyMs?.p90)}, p99 ${fmtMs(r.latencyMs?.p99)}, max ${fmtMs(r.latencyMs?.max)}`,
    `  at the receiver: at most ${fmtInt(r.maxInflight)} requests at once, at most ${fmtInt(r.maxInflightPerDestination)} to one destination, ${fmtInt(r.receiverConnections)} connections opened (at most ${fmtInt(r.peakOpenConnections)} open at once)`,
  );
  if (r.perDestinationCap !== null && r.totalRequests > 0) {
    lines.push(r.overCapRequests === 0
      ? `  max_concurrency ${r.perDestinationCap}: never exceeded at the receiver`
      : `  max_concurrency ${r.perDestinationCap} EXCEEDED: ${fmtInt(r.overCapRequests)} requests arrived while their destination already had ${r.perDestinationCap} in flight (${fmtInt(r.destinationsOverCap)} destinations; peak ${r.maxInflightPerDestination})`);
  }
  const cpu = Object.entries(r.cpu).map(([k, v]) => `${k} ${v.pctOfOneCore}%`).join(", ");
  if (cpu) lines.push(`  CPU over the measured span (% of one core; 2 cores = 200%): ${cpu}`);
  if (r.endState) lines.push(`  end state in the database: ${Object.entries(r.endState).map(([k, v]) => `${k}=${fmtInt(v)}`).join(", ")}`);
  if (r.pgActivity && Object.keys(r.pgActivity).length > 0) {
    // The states that matter; the long tail of rare wait events would only hide them.
    const shown = Object.entries(r.pgActivity).filter(([, v]) => v >= 0.05);
    const rest = Object.entries(r.pgActivity).filter(([, v]) => v < 0.05).reduce((n, [, v]) => n + v, 0);
    lines.push(`  its Postgres connections, average over the run: ${shown.map(([k, v]) => `${k} ${v}`).join(", ")}${rest > 0 ? `, other ${Math.round(rest * 100) / 100}` : ""}`);
  }
  if (r.engineMetrics) lines.push(`  ${r.system}'s own metrics: ${Object.entries(r.engineMetrics).map(([k, v]) => `${k} ${fmtNum(v)}`).join(", ")}`);
  lines.push(`  run wall time (incl. setup/teardown): ${fmtMs(r.wallMs)}`);
  for (const n of r.notes) lines.push(`  note: ${n}`);
  return lines.join("\n");
}

export const TARGETS = { sluicePerSec0ms: 5000, ratio: 1.0 };

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

/** The side-by-side table: Sluice against the baseline, with the issue's targets marked. */
export function comparisonTable(results: RunResult[]): string {
  const rows: string[][] = [];
  for (const scenario of ["0ms", "50ms", "embedded"] as const) {
    const s = results.find((r) => r.system === "sluice" && r.scenario === scenario);
    const b = results.find((r) => r.system === "graphile-worker" && r.scenario === scenario);
    if (!s && !b) continue;
    const sRate = s?.deliveriesPerSec ?? null;
    const bRate = b?.deliveriesPerSec ?? null;
    const ratio = sRate !== null && bRate !== null && bRate > 0 ? sRate / bRate : null;
    let sCell = fmtInt(sRate) + (s ? statusMark(s) : "");
    if (scenario === "0ms" && sRate !== null) sCell += ` ${sRate >= TARGETS.sluicePerSec0ms ? "✓" : "✗"} (≥ ${fmtInt(TARGETS.sluicePerSec0ms)})`;
    let ratioCell = ratio === null ? "—" : ratio.toFixed(2);
    if (ratio !== null && scenario !== "embedded") ratioCell += ` ${ratio >= TARGETS.ratio ? "✓" : "✗"} (≥ ${TARGETS.ratio.toFixed(1)})`;
    const label = s ? `${scenario} (${fmtInt(s.destinations)} dst, ${fmtInt(s.events)} ev${s.store === "pglite" ? ", PGlite" : ""})` : scenario;
    rows.push([
      label, sCell, b ? fmtInt(bRate) + statusMark(b) : "—", ratioCell,
      `${fmtMs(s?.latencyMs?.p50)} / ${fmtMs(s?.latencyMs?.p99)}`,
      b ? `${fmtMs(b.latencyMs?.p50)} / ${fmtMs(b.latencyMs?.p99)}` : "—",
      s ? `${fmtInt(s.received)}${s.duplicates ? ` (+${s.duplicates} dup)` : ""}` : "—",
      b ? `${fmtInt(b.received)}${b.duplicates ? ` (+${b.duplicates} dup)` : ""}` : "—",
    ]);
  }
  return table(
    ["scenario", "Sluice deliveries/s", "baseline deliveries/s", "ratio S/B", "Sluice p50 / p99", "baseline p50 / p99", "Sluice recv", "baseline recv"],
    rows,
  );
}

export function writeJson(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
}
