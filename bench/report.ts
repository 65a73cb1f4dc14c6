// How the benches print and save what they measured: number formats, tables, the header every
// bench starts with, the results file, and `npm run bench`'s runs and comparison table.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, hostname, release, totalmem } from "node:os";
import { join } from "node:path";
import { startPostgres } from "./pg.js";
import type { CpuFigures } from "./procs.js";
import type { ReceiverReport } from "./receiver.js";
import { REPO, sourceState } from "./sluice.js";

export const fmt = (n: number | null | undefined, digits = 0): string =>
  n === null || n === undefined || !Number.isFinite(n)
    ? "–"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
export const ratio = (x: number | null | undefined, y: number | null | undefined): number | null => (x && y ? x / y : null);
export const mark = (ok: boolean | null): string => (ok === null ? "?" : ok ? "✓" : "✗");
/** Columns aligned: the first to the left, the others to the right; or a Markdown table. */
export function table(rows: string[][], markdown = false): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  if (markdown) {
    const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
    return [line(rows[0]!), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.slice(1).map(line)].join("\n");
  }
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
}

/**
 * The start every bench shares: its title, the machine and the Sluice source on stdout, a logs
 * directory; then `postgres()` starts the throwaway server and `finish()` saves the results.
 */
export function benchStart(title: string, sluiceDir = REPO) {
  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  const logDir = join(REPO, "bench", "results", "logs");
  mkdirSync(logDir, { recursive: true });
  const startedAt = new Date();
  const source = sourceState(sluiceDir);
  const cpu = cpus();
  const machine = {
    hostname: hostname(),
    cores: cpu.length,
    cpuModel: cpu[0]?.model ?? "?",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
  const changes = source.localChanges.length === 0 ? "src/ and migrations/ clean" : `LOCAL CHANGES: ${source.localChanges.join("; ")}`;
  out(`Sluice ${title} benchmark — ${startedAt.toISOString()}`);
  out(`machine: ${machine.cores} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}`);
  out(
    `Sluice source${sluiceDir === REPO ? "" : ` (${sluiceDir})`}: commit ${source.commit}, ${changes} (fingerprint ${source.fingerprint})`,
  );
  return {
    out,
    log: (name: string): string => join(logDir, name),
    async postgres(fsync: boolean, statStatements = false, icuLocale?: string) {
      const pg = await startPostgres({ fsync, statStatements, icuLocale: icuLocale || undefined });
      const s = pg.settings;
      out(
        `Postgres ${s.server_version} (throwaway, started by scripts/pg-server.mjs): fsync=${s.fsync}, synchronous_commit=${s.synchronous_commit}, ` +
          `full_page_writes=${s.full_page_writes}, wal_sync_method=${s.wal_sync_method}, shared_buffers=${s.shared_buffers}, max_connections=${s.max_connections}, ` +
          `default collation ${icuLocale ? `ICU ${icuLocale}` : "C"}` +
          (s.fsync === "on" && s.synchronous_commit === "on" ? " — durable defaults: every commit is flushed to disk" : " — NOT durable"),
      );
      return pg;
    },
    /**
     * Saves the run as bench/results/<name>-<start, UTC>-<commit>.json: a new file per run, so a
     * figure quoted in the docs can name the file it came from (those files are committed).
     */
    finish(name: string, data: Record<string, unknown>): void {
      const stamp = startedAt.toISOString().slice(0, 19).replace(/:/g, "-");
      const file = join(REPO, "bench", "results", `${name}-${stamp}Z-${source.commit}.json`);
      const results = { startedAt: startedAt.toISOString(), finishedAt: new Date().toISOString(), machine, source, ...data };
      writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
      out(`results: ${file} (process logs: ${logDir})`);
    },
  };
}

// ---- npm run bench ---------------------------------------------------------------------------

export type Scenario = "0ms" | "50ms" | "embedded";
export type System = "sluice" | "graphile-worker" | "pg-boss";
export type RunResult = ReturnType<typeof newRun>;

/**
 * A run of `npm run bench` before it measured anything. deliveriesPerSec: distinct deliveries ÷
 * (last received − first publish sent); steadyStatePerSec: those first received after publishing
 * ended, per second until the last one; perDestinationCap: the limit checked at the receiver.
 */
export function newRun(o: {
  system: System;
  scenario: Scenario;
  store: "postgres" | "pglite";
  destinations: number;
  events: number;
  receiverDelayMs: number;
  perDestinationCap: number | null;
}) {
  return {
    ...o,
    settings: {} as Record<string, string | number | boolean | null>,
    status: "error" as "complete" | "timeout" | "error",
    error: null as string | null,
    publish: null as { ms: number; eventsPerSec: number; batches: number } | null,
    ...deriveFigures(null, 0, 0),
    cpu: {} as CpuFigures,
    /** Start of its processes → everything stopped. */
    wallMs: 0,
    /** Deliveries or jobs by state and attempts, and the system's connections by state (server store only). */
    endState: null as Record<string, number> | null,
    pgActivity: null as Record<string, number> | null,
    engineMetrics: null as Record<string, number> | null,
    notes: [] as string[],
  };
}

/** The figures of a run from what the receiver saw and when publishing ran. */
export function deriveFigures(r: ReceiverReport | null, publishStartAt: number, publishEndAt: number) {
  const measuredMs = r?.lastAt == null ? null : r.lastAt - publishStartAt;
  const tailMs = r?.lastAt == null ? 0 : r.lastAt - publishEndAt;
  return {
    received: r?.unique ?? 0,
    duplicates: r?.duplicates ?? 0,
    misrouted: r?.misrouted ?? 0,
    totalRequests: r?.total ?? 0,
    measuredMs,
    deliveriesPerSec: measuredMs !== null && measuredMs > 0 ? r!.unique / (measuredMs / 1000) : null,
    // Under ~0.5 s of tail the "rate" is mostly noise.
    steadyStatePerSec: r && tailMs >= 500 ? r.receivedAfterPublish / (tailMs / 1000) : null,
    latencyMs: r?.latencyMs ?? null,
    maxInflight: r?.maxInflight ?? 0,
    maxInflightPerDestination: r?.maxInflightPerDestination ?? 0,
    receiverConnections: r?.connections ?? 0,
    peakOpenConnections: r?.peakOpenConnections ?? 0,
    overCapRequests: r?.overCapRequests ?? 0,
    destinationsOverCap: r?.destinationsOverCap ?? 0,
  };
}

const fmtMs = (n: number | null | undefined): string =>
  n === null || n === undefined ? "—" : n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;
const statusMark = (r: RunResult): string => (r.status === "complete" ? "" : r.status === "timeout" ? " (TIMED OUT: partial)" : " (ERROR)");
const list = (o: Record<string, number>, show: (v: number) => string = fmt, sep = " "): string =>
  Object.entries(o)
    .map(([k, v]) => `${k}${sep}${show(v)}`)
    .join(", ");

/** A detailed block for one run. */
export function describeRun(r: RunResult): string {
  const lat = r.latencyMs;
  const lines = [
    `${r.system} · ${r.scenario} · ${r.store}: ${fmt(r.destinations)} destinations, ${fmt(r.events)} events, receiver delay ${r.receiverDelayMs} ms${statusMark(r)}`,
    ...(r.error ? [`  error: ${r.error}`] : []),
    ...(r.publish ? [`  published in ${fmtMs(r.publish.ms)} (${fmt(r.publish.eventsPerSec)} events/s, ${r.publish.batches} batches)`] : []),
    `  received ${fmt(r.received)}/${fmt(r.events)} distinct${r.duplicates ? `, ${fmt(r.duplicates)} DUPLICATES` : ", 0 duplicates"}` +
      `${r.misrouted ? `, ${fmt(r.misrouted)} MISROUTED` : ""} (${fmt(r.totalRequests)} requests)`,
    `  deliveries/s: ${fmt(r.deliveriesPerSec)} first publish → last receive over ${fmtMs(r.measuredMs)}` +
      `; after publishing ended: ${r.steadyStatePerSec === null ? "— (tail < 0.5 s)" : `${fmt(r.steadyStatePerSec)}/s`}`,
    `  publish→receive latency: p50 ${fmtMs(lat?.p50)}, p90 ${fmtMs(lat?.p90)}, p99 ${fmtMs(lat?.p99)}, max ${fmtMs(lat?.max)}`,
    `  at the receiver: at most ${fmt(r.maxInflight)} requests at once, at most ${fmt(r.maxInflightPerDestination)} to one destination, ` +
      `${fmt(r.receiverConnections)} connections opened (at most ${fmt(r.peakOpenConnections)} open at once)`,
  ];
  const cap = r.perDestinationCap;
  if (cap !== null && r.totalRequests > 0) {
    lines.push(
      r.overCapRequests === 0
        ? `  max_concurrency ${cap}: never exceeded at the receiver`
        : `  max_concurrency ${cap} EXCEEDED: ${fmt(r.overCapRequests)} requests arrived while their destination already had ${cap} in flight ` +
            `(${fmt(r.destinationsOverCap)} destinations; peak ${r.maxInflightPerDestination})`,
    );
  }
  const cpu = Object.entries(r.cpu).map(([k, v]) => `${k} ${v.pctOfOneCore}%`);
  if (cpu.length) lines.push(`  CPU over the measured span (% of one core; 2 cores = 200%): ${cpu.join(", ")}`);
  if (r.endState) lines.push(`  end state in the database: ${list(r.endState, fmt, "=")}`);
  if (r.pgActivity && Object.keys(r.pgActivity).length > 0) {
    // The states that matter; the long tail of rare wait events would only hide them.
    const shown = Object.fromEntries(Object.entries(r.pgActivity).filter(([, v]) => v >= 0.05));
    const rest = Object.values(r.pgActivity).reduce((n, v) => (v < 0.05 ? n + v : n), 0);
    lines.push(
      `  its Postgres connections, average over the run: ${list(shown, String)}${rest > 0 ? `, other ${Math.round(rest * 100) / 100}` : ""}`,
    );
  }
  if (r.engineMetrics)
    lines.push(`  ${r.system}'s own metrics: ${list(r.engineMetrics, (v) => (Number.isInteger(v) ? fmt(v) : String(v)))}`);
  lines.push(`  run wall time (incl. setup/teardown): ${fmtMs(r.wallMs)}`, ...r.notes.map((n) => `  note: ${n}`));
  return lines.join("\n");
}

/** The issue's targets: Sluice ≥ 5,000 deliveries/s with the 0 ms receiver, and Sluice/baseline ≥ 1.0. */
const TARGET = { perSec0ms: 5000, ratio: 1.0 };

/** The side-by-side table: Sluice against the baseline (graphile-worker) and pg-boss, with the issue's targets marked. */
export function comparisonTable(results: RunResult[]): string {
  const rows = [
    [
      "scenario",
      "Sluice deliveries/s",
      "baseline deliveries/s",
      "ratio S/B",
      "pg-boss (group concurrency) deliveries/s",
      "ratio S/P",
      "Sluice p50 / p99",
      "baseline p50 / p99",
      "pg-boss p50 / p99",
      "Sluice recv",
      "baseline recv",
      "pg-boss recv",
    ],
  ];
  for (const scenario of ["0ms", "50ms", "embedded"] as const) {
    const s = results.find((r) => r.system === "sluice" && r.scenario === scenario);
    const b = results.find((r) => r.system === "graphile-worker" && r.scenario === scenario);
    const p = results.find((r) => r.system === "pg-boss" && r.scenario === scenario);
    if (!s && !b && !p) continue;
    const sRate = s?.deliveriesPerSec ?? null;
    const r = ratio(sRate, b?.deliveriesPerSec);
    const rp = ratio(sRate, p?.deliveriesPerSec);
    const sTarget = scenario === "0ms" && sRate !== null ? ` ${mark(sRate >= TARGET.perSec0ms)} (≥ ${fmt(TARGET.perSec0ms)})` : "";
    const rTarget = r !== null && scenario !== "embedded" ? ` ${mark(r >= TARGET.ratio)} (≥ ${TARGET.ratio.toFixed(1)})` : "";
    const rate = (x: RunResult | undefined): string => (x ? fmt(x.deliveriesPerSec) + statusMark(x) : "—");
    const lat = (x: RunResult | undefined): string => (x ? `${fmtMs(x.latencyMs?.p50)} / ${fmtMs(x.latencyMs?.p99)}` : "—");
    const recv = (x: RunResult | undefined): string => (x ? `${fmt(x.received)}${x.duplicates ? ` (+${x.duplicates} dup)` : ""}` : "—");
    // pg-boss promises a per-group cap: say so when the receiver saw it broken.
    const overCap = (x: RunResult | undefined): string => (x && x.overCapRequests > 0 ? ` (${fmt(x.overCapRequests)} over cap)` : "");
    const any = s ?? b ?? p!;
    rows.push([
      `${scenario} (${fmt(any.destinations)} dst, ${fmt(any.events)} ev${any.store === "pglite" ? ", PGlite" : ""})`,
      s ? rate(s) + sTarget : "—",
      rate(b),
      r === null ? "—" : r.toFixed(2) + rTarget,
      rate(p) + overCap(p),
      rp === null ? "—" : rp.toFixed(2),
      lat(s),
      lat(b),
      lat(p),
      recv(s),
      recv(b),
      recv(p),
    ]);
  }
  return table(rows, true);
}
