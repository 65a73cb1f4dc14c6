// How the benches print and save what they measured: number formats, tables, the header every
// bench starts with, the results file, and `npm run bench`'s run blocks and comparison table.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { serverSettings, startPostgres } from "./pg.js";
import type { ReceiverReport } from "./receiver.js";
import { REPO, sourceState } from "./sluice.js";

export const fmt = (n: number | null | undefined, digits = 0): string =>
  n === null || n === undefined || !Number.isFinite(n)
    ? "–"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
export const ratio = (x: number | null | undefined, y: number | null | undefined): number | null => (x && y ? x / y : null);
export const mark = (ok: boolean | null): string => (ok === null ? "?" : ok ? "✓" : "✗");
export const cpuPct = (cpu: Record<string, { pctOfOneCore: number }>, k: string): string => `${fmt(cpu[k]?.pctOfOneCore)} %`;

/** Columns aligned: the first to the left, the others to the right. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
}

export function writeJson(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
}

/** First arrival (or publish) → last arrival, and the middle 80 % of the distinct deliveries. */
export function rates(r: ReceiverReport, from: number): { perSec: number | null; steadyPerSec: number | null; spanS: number | null } {
  if (r.lastAt === null || r.unique === 0) return { perSec: null, steadyPerSec: null, spanS: null };
  const spanS = Math.max(0.001, (r.lastAt - from) / 1000);
  const steady =
    r.p10At !== null && r.p90At !== null && r.p90At > r.p10At
      ? (Math.floor(0.9 * r.expected) - Math.floor(0.1 * r.expected)) / ((r.p90At - r.p10At) / 1000)
      : null;
  return { perSec: r.unique / spanS, steadyPerSec: steady, spanS };
}

/** Where Postgres read rows in runs A and B, per delivery of each: the 8 largest. */
export function dbWorkTable(
  what: string,
  a: { dbWork: { name: string; rows: number; scans: number }[]; expected: number },
  b: typeof a,
): string {
  const names = [...new Set([...a.dbWork, ...b.dbWork].map((x) => x.name))];
  const work = names
    .map((n) => ({ n, a: a.dbWork.find((x) => x.name === n), b: b.dbWork.find((x) => x.name === n) }))
    .sort((x, y) => Math.max(y.a?.rows ?? 0, y.b?.rows ?? 0) - Math.max(x.a?.rows ?? 0, x.b?.rows ?? 0))
    .slice(0, 8);
  return (
    `\nrows Postgres read during the ${what} workload (pg_stat_user_tables/indexes), per ${what} delivery — the 8 largest:\n` +
    table([
      ["", "A rows/delivery", "B rows/delivery", "A scans", "B scans"],
      ...work.map((w) => [
        `  ${w.n}`,
        fmt((w.a?.rows ?? 0) / a.expected, 1),
        fmt((w.b?.rows ?? 0) / b.expected, 1),
        fmt(w.a?.scans ?? 0),
        fmt(w.b?.scans ?? 0),
      ]),
    ])
  );
}

/**
 * The start every bench shares: its title, the machine and the Sluice source on stdout, a logs
 * directory; then `postgres()` starts the throwaway server and `finish()` saves the results.
 */
export function benchStart(title: string) {
  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  const logDir = join(REPO, "bench", "results", "logs");
  mkdirSync(logDir, { recursive: true });
  const startedAt = new Date();
  const source = sourceState(REPO);
  out(`Sluice ${title} benchmark — ${startedAt.toISOString()}`);
  out(
    `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; Sluice ${source.commit}` +
      `${source.localChanges.length ? ` + local changes (${source.localChanges.length} files)` : ""} (fingerprint ${source.fingerprint})`,
  );
  return {
    out,
    logDir,
    startedAt,
    source,
    log: (name: string): string => join(logDir, name),
    async postgres(fsync: boolean) {
      const server = await startPostgres({ fsync });
      const settings = await serverSettings(server.url);
      out(
        `Postgres ${settings.server_version} (throwaway): fsync=${settings.fsync}, synchronous_commit=${settings.synchronous_commit}, shared_buffers=${settings.shared_buffers}`,
      );
      return { server, settings };
    },
    finish(name: string, data: Record<string, unknown>): void {
      const file = join(REPO, "bench", "results", `${name}.json`);
      writeJson(file, { startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString(), source, ...data });
      out(`results: ${file} (process logs: ${logDir})`);
    },
  };
}

// ---- npm run bench ---------------------------------------------------------------------------

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

/** The figures of a run from what the receiver saw and when publishing ran. */
export function deriveFigures(r: ReceiverReport, publishStartAt: number, publishEndAt: number): Partial<RunResult> {
  const measuredMs = r.lastAt === null ? null : r.lastAt - publishStartAt;
  const tailMs = r.lastAt === null ? 0 : r.lastAt - publishEndAt;
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
const fmtMs = (n: number | null | undefined): string =>
  n === null || n === undefined ? "—" : n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;
const statusMark = (r: RunResult): string => (r.status === "complete" ? "" : r.status === "timeout" ? " (TIMED OUT: partial)" : " (ERROR)");

/** A detailed block for one run. */
export function describeRun(r: RunResult): string {
  const lines = [
    `${r.system} · ${r.scenario} · ${r.store}: ${fmtInt(r.destinations)} destinations, ${fmtInt(r.events)} events, receiver delay ${r.receiverDelayMs} ms${statusMark(r)}`,
  ];
  if (r.error) lines.push(`  error: ${r.error}`);
  if (r.publish)
    lines.push(`  published in ${fmtMs(r.publish.ms)} (${fmtInt(r.publish.eventsPerSec)} events/s, ${r.publish.batches} batches)`);
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
    lines.push(
      r.overCapRequests === 0
        ? `  max_concurrency ${r.perDestinationCap}: never exceeded at the receiver`
        : `  max_concurrency ${r.perDestinationCap} EXCEEDED: ${fmtInt(r.overCapRequests)} requests arrived while their destination already had ${r.perDestinationCap} in flight (${fmtInt(r.destinationsOverCap)} destinations; peak ${r.maxInflightPerDestination})`,
    );
  }
  const cpu = Object.entries(r.cpu)
    .map(([k, v]) => `${k} ${v.pctOfOneCore}%`)
    .join(", ");
  if (cpu) lines.push(`  CPU over the measured span (% of one core; 2 cores = 200%): ${cpu}`);
  if (r.endState)
    lines.push(
      `  end state in the database: ${Object.entries(r.endState)
        .map(([k, v]) => `${k}=${fmtInt(v)}`)
        .join(", ")}`,
    );
  if (r.pgActivity && Object.keys(r.pgActivity).length > 0) {
    // The states that matter; the long tail of rare wait events would only hide them.
    const shown = Object.entries(r.pgActivity).filter(([, v]) => v >= 0.05);
    const rest = Object.entries(r.pgActivity)
      .filter(([, v]) => v < 0.05)
      .reduce((n, [, v]) => n + v, 0);
    lines.push(
      `  its Postgres connections, average over the run: ${shown.map(([k, v]) => `${k} ${v}`).join(", ")}${rest > 0 ? `, other ${Math.round(rest * 100) / 100}` : ""}`,
    );
  }
  if (r.engineMetrics)
    lines.push(
      `  ${r.system}'s own metrics: ${Object.entries(r.engineMetrics)
        .map(([k, v]) => `${k} ${Number.isInteger(v) ? v.toLocaleString("en-US") : String(v)}`)
        .join(", ")}`,
    );
  lines.push(`  run wall time (incl. setup/teardown): ${fmtMs(r.wallMs)}`);
  for (const n of r.notes) lines.push(`  note: ${n}`);
  return lines.join("\n");
}

export const TARGETS = { sluicePerSec0ms: 5000, ratio: 1.0 };

/** The side-by-side table: Sluice against the baseline, with the issue's targets marked. */
export function comparisonTable(results: RunResult[]): string {
  const rows: string[][] = [];
  for (const scenario of ["0ms", "50ms", "embedded"] as const) {
    const s = results.find((r) => r.system === "sluice" && r.scenario === scenario);
    const b = results.find((r) => r.system === "graphile-worker" && r.scenario === scenario);
    if (!s && !b) continue;
    const sRate = s?.deliveriesPerSec ?? null;
    const bRate = b?.deliveriesPerSec ?? null;
    const r = sRate !== null && bRate !== null && bRate > 0 ? sRate / bRate : null;
    let sCell = fmtInt(sRate) + (s ? statusMark(s) : "");
    if (scenario === "0ms" && sRate !== null) sCell += ` ${mark(sRate >= TARGETS.sluicePerSec0ms)} (≥ ${fmtInt(TARGETS.sluicePerSec0ms)})`;
    let ratioCell = r === null ? "—" : r.toFixed(2);
    if (r !== null && scenario !== "embedded") ratioCell += ` ${mark(r >= TARGETS.ratio)} (≥ ${TARGETS.ratio.toFixed(1)})`;
    const label = s
      ? `${scenario} (${fmtInt(s.destinations)} dst, ${fmtInt(s.events)} ev${s.store === "pglite" ? ", PGlite" : ""})`
      : scenario;
    const recv = (x: RunResult | undefined): string => (x ? `${fmtInt(x.received)}${x.duplicates ? ` (+${x.duplicates} dup)` : ""}` : "—");
    rows.push([
      label,
      sCell,
      b ? fmtInt(bRate) + statusMark(b) : "—",
      ratioCell,
      `${fmtMs(s?.latencyMs?.p50)} / ${fmtMs(s?.latencyMs?.p99)}`,
      b ? `${fmtMs(b.latencyMs?.p50)} / ${fmtMs(b.latencyMs?.p99)}` : "—",
      recv(s),
      recv(b),
    ]);
  }
  const header = [
    "scenario",
    "Sluice deliveries/s",
    "baseline deliveries/s",
    "ratio S/B",
    "Sluice p50 / p99",
    "baseline p50 / p99",
    "Sluice recv",
    "baseline recv",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}
