// What bench/mixed.ts samples to tell a long run flat or not — each process's memory, the tables' and indexes' size and
// live rows, dead rows, autovacuums, WAL per event — and, for `npm run bench:soak` (mixed.ts --soak), the verdicts and the chart.
import { readFileSync } from "node:fs";
import type pg from "pg";
import { percentiles } from "./procs.js";
import { fmt } from "./report.js";

export type Sample = Awaited<ReturnType<typeof sample>>;
export type Spans = { early: number[]; late: number[] };
type Row = { atMin: number; seconds: number; askedPerSec: number; healthyPerSec: number; latencyMs: { p50: number; p99: number } | null };
export type SoakRow = Row & { soak: Sample & { walPerEventKB: number; autovacuums: number } };

// A partitioned table (attempts: migrations/0024) counts as one, its partitions' figures summed.
const SQL = `
  SELECT r.relname AS name, sum(pg_table_size(s.relid))::float8 AS heap, sum(pg_indexes_size(s.relid))::float8 AS idx,
         sum(n_live_tup)::float8 AS live, sum(n_dead_tup)::float8 AS dead, sum(n_tup_del)::float8 AS deleted,
         (pg_current_wal_lsn() - '0/0')::float8 AS wal, (SELECT array_agg(pid) FROM pg_stat_activity) AS pids
    FROM pg_stat_user_tables s JOIN pg_class r ON r.oid = coalesce(pg_partition_root(s.relid), s.relid)
   GROUP BY r.relname`;
const TABLES = ["events", "deliveries", "attempts"]; // those that grow with the workload, and that only retention deletes from
// Each of their indexes' size (a partitioned index's: its partitions'), and when the janitor last rebuilt (or first
// measured) it: where a table's growth is, and whether the rebuilds keep up. A store migrated before index_rebuilds
// (--sluice-dir) has no such times.
const INDEXES = `
  SELECT r.relname AS name, sum(pg_relation_size(c.oid))::float8 AS bytes
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid)
    JOIN pg_class t ON t.oid = coalesce(pg_partition_root(i.indrelid), i.indrelid)
   WHERE t.relname = ANY($1) AND t.relnamespace = to_regnamespace(current_schema())
   GROUP BY r.relname`;
// Each table's autovacuums by oid: a dropped partition takes its count with it, so a window's
// are counted table by table, over the tables there at its end.
const AUTOVACUUMS = `SELECT relid::text AS oid, autovacuum_count::int AS n FROM pg_stat_user_tables`;
const REBUILT = `SELECT index_name AS name, (extract(epoch FROM measured_at) * 1000)::float8 AS "atMs" FROM index_rebuilds`;
type Stat = Record<"heap" | "idx" | "live" | "dead" | "deleted" | "wal", number> & { name: string; pids: number[] };
const procMB = (pid: number, field: string): number => {
  try {
    return Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
  } catch {
    return 0; // gone
  }
};

// sluiceMB: each Sluice process's VmRSS; postgresMB: all Postgres processes' private memory (RssAnon,
// shared_buffers left out); pruned: rows deleted from events, deliveries, attempts — only retention does; kept: their live rows.
export async function sample(db: pg.Client, sluicePids: number[], postmaster: number | null) {
  const stats = (await db.query<Stat>(SQL)).rows;
  const indexes = (await db.query<{ name: string; bytes: number }>(INDEXES, [TABLES])).rows;
  const hasRebuilds = (await db.query<{ has: boolean }>(`SELECT to_regclass('index_rebuilds') IS NOT NULL AS has`)).rows[0]?.has;
  const rebuilt = new Map(hasRebuilds ? (await db.query<{ name: string; atMs: number }>(REBUILT)).rows.map((r) => [r.name, r.atMs]) : []);
  const autovacuums = (await db.query<{ oid: string; n: number }>(AUTOVACUUMS)).rows;
  const sum = (f: (r: Stat) => number): number => stats.reduce((n, r) => n + f(r), 0);
  return {
    sluiceMB: sluicePids.map((p) => procMB(p, "VmRSS")),
    postgresMB: [postmaster ?? 0, ...(stats[0]?.pids ?? [])].reduce((n, p) => n + procMB(p, "RssAnon"), 0),
    tables: Object.fromEntries(stats.map((r) => [r.name, [r.heap, r.idx]])) as Record<string, [number, number]>,
    indexes: Object.fromEntries(indexes.map((r) => [r.name, [r.bytes, rebuilt.get(r.name) ?? null]])) as Record<
      string,
      [number, number | null]
    >,
    kept: sum((r) => (TABLES.includes(r.name) ? r.live : 0)),
    tablesMB: sum((r) => r.heap + r.idx) / 2 ** 20,
    deadRows: sum((r) => r.dead),
    pruned: sum((r) => (TABLES.includes(r.name) ? r.deleted : 0)),
    autovacuumsEver: Object.fromEntries(autovacuums.map((r) => [r.oid, r.n])) as Record<string, number>,
    walBytes: stats[0]?.wal ?? 0,
  };
}

/** A window's figures: its last sample, with the autovacuums and the WAL per event published since the one before. */
export const soakFigures = (now: Sample, last: Sample, published: number): SoakRow["soak"] => ({
  ...now,
  autovacuums: Object.entries(now.autovacuumsEver).reduce((n, [oid, ever]) => n + ever - (last.autovacuumsEver[oid] ?? 0), 0),
  walPerEventKB: (now.walBytes - last.walBytes) / 1024 / published, // Infinity, shown as –, for a drain window
});

/** The verdict compares minutes T/6–T/3 (5–10 of 30) with the last T/6: the span of a window ending at `atMin`. */
export const spanOf = (atMin: number, T: number): keyof Spans | null =>
  atMin > T - T / 6 ? "late" : atMin > T / 6 && atMin <= T / 3 + 1e-6 ? "early" : null;

const sumOf = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
const minutes = (m: number): string => fmt(m, m % 1 ? 1 : 0);

// The claim, part by part: healthy deliveries/s within ±10 % of the early span; p99 and Sluice's median RSS ≤ 10 % higher;
// a plateau: tables + indexes at their largest in the last third < 5 % above their largest in the middle one (index rebuilds
// make the size a saw), retention deleting before it — in MB, and per row kept (held deliveries grow by design).
export function flatness(rows: SoakRow[], T: number, spans: Spans): [string, boolean][] {
  const publishing = rows.filter((r) => r.askedPerSec > 0);
  const span = (s: keyof Spans) => publishing.filter((r) => spanOf(r.atMin, T) === s);
  const [early, late] = [span("early"), span("late")];
  const rate = (rs: SoakRow[]) => sumOf(rs.map((r) => r.healthyPerSec * r.seconds)) / sumOf(rs.map((r) => r.seconds));
  const rss = (rs: SoakRow[]) => percentiles(rs.map((r) => sumOf(r.soak.sluiceMB)))?.p50 ?? NaN; // the median: GC swings it ±25 %
  const [p99early, p99late] = [percentiles(spans.early)?.p99 ?? NaN, percentiles(spans.late)?.p99 ?? NaN];
  const [inLast, inEarly] = [`in the last ${minutes(T / 6)} min`, `in minutes ${minutes(T / 6)}–${minutes(T / 3)}`];
  const pct = (x: number, y: number) => `${fmt(100 * (x / y - 1), 1)} %`; // NaN (✗) when a third had no window
  const vs = (x: number, y: number, u: string) => `${fmt(x)} ${u} ${inLast}, ${fmt(y)} ${inEarly}: ${pct(x, y)}`;
  const largest = (from: number, to: number, f: (r: SoakRow) => number): number =>
    Math.max(...publishing.filter((r) => r.atMin > from + 1e-6 && r.atMin <= to + 1e-6).map(f));
  // The last third to the last publishing window, whose end comes a few ms after minute T.
  const plateau = (f: (r: SoakRow) => number) => [largest(T / 3, (2 * T) / 3, f), largest((2 * T) / 3, Infinity, f)] as const;
  const [middle, last] = plateau((r) => r.soak.tablesMB);
  const [perMiddle, perLast] = plateau((r) => (1000 * r.soak.tablesMB) / r.soak.kept); // NaN (✗) in runs before `kept`
  const pruning = publishing.find((r) => r.soak.pruned > 0);
  const pruned = pruning !== undefined && pruning.atMin <= (2 * T) / 3;
  const since = `retention deleting from ${pruning ? `minute ${minutes(pruning.atMin)}` : "– (never)"}`;
  const sizes = `largest ${fmt(middle)} MB in the middle third, ${fmt(last)} MB in the last (${pct(last, middle)}); ${since}`;
  return [
    [`healthy deliveries/s within ±10 %: ${vs(rate(late), rate(early), "/s")}`, Math.abs(rate(late) / rate(early) - 1) <= 0.1],
    [`publish → delivery p99 at most 10 % higher: ${vs(p99late, p99early, "ms")}`, p99late <= 1.1 * p99early],
    [`tables + indexes at a plateau (< 5 % higher at their largest): ${sizes}`, last < 1.05 * middle && pruned],
    [
      `and per 1,000 rows kept: ${fmt(perMiddle, 2)} → ${fmt(perLast, 2)} MB (${pct(perLast, perMiddle)})`,
      perLast < 1.05 * perMiddle && pruned,
    ],
    [`Sluice RSS (median) at most 10 % higher: ${vs(rss(late), rss(early), "MB")}`, rss(late) <= 1.1 * rss(early)],
  ];
}

type Source = Record<"commit" | "fingerprint", string>;
type Run = { rows: SoakRow[]; options: Record<"minutes" | "rate" | "retention-minutes", number>; source?: Source };
const COLORS = ["#111827", "#2563eb", "#16a34a", "#dc2626"];
const tableMB = (t: string) => (r: SoakRow) => sumOf(r.soak.tables[t] ?? []) / 2 ** 20;
const PANELS: [string, Record<string, (r: SoakRow) => number>][] = [
  ["healthy deliveries/s", { "delivered/s": (r) => r.healthyPerSec }],
  ["publish → delivery, ms", { p99: (r) => r.latencyMs?.p99 ?? 0, p50: (r) => r.latencyMs?.p50 ?? 0 }],
  ["memory, MB", { "Sluice RSS": (r) => sumOf(r.soak.sluiceMB), "Postgres private": (r) => r.soak.postgresMB }],
  ["tables + indexes, MB", { all: (r) => r.soak.tablesMB, ...Object.fromEntries(TABLES.map((t) => [t, tableMB(t)])) }],
];

/** A soak's results as an SVG of four panels over its minutes: deliveries/s, latency, memory, table sizes. */
export function chart(run: Run): string {
  const rows = run.rows.filter((r) => r.askedPerSec > 0);
  const [W, H, T] = [460, 170, run.options.minutes];
  const text = (x: number, y: number, s: string, anchor = "start") => `<text x="${x}" y="${y}" text-anchor="${anchor}">${s}</text>`;
  const body = PANELS.map(([title, byName], i) => {
    const series = Object.entries(byName);
    const [x0, y0] = [50 + (i % 2) * (W + 60), 50 + Math.floor(i / 2) * (H + 60)];
    const top = 1.1 * Math.max(1, ...series.flatMap(([, f]) => rows.map(f)));
    const [x, y] = [(m: number) => (x0 + (W * m) / T).toFixed(1), (v: number) => (y0 + H - (H * v) / top).toFixed(1)];
    const lines = series.map(([name, f], j) => {
      const color = COLORS[(j + (series.length < 4 ? 1 : 0)) % 4]!;
      const line = `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${rows.map((r) => `${x(r.atMin)},${y(f(r))}`).join(" ")}"/>`;
      return `${line}<g fill="${color}">${text(x0 + W - 4, y0 + 14 + 14 * j, name, "end")}</g>`;
    });
    const ticks = [0, T / 3, (2 * T) / 3, T].map((m) => text(Number(x(m)), y0 + H + 14, `${minutes(m)} min`, "middle"));
    const frame = `<rect x="${x0}" y="${y0}" width="${W}" height="${H}" fill="none" stroke="#d1d5db"/>`;
    const axis = `${text(x0 - 4, y0 + 10, fmt(top), "end")}${text(x0 - 4, y0 + H, "0", "end")}${ticks.join("")}`;
    return `${frame}${text(x0, y0 - 8, `<tspan font-weight="bold">${title}</tspan>`)}${axis}${lines.join("")}`;
  });
  const { rate, "retention-minutes": retention } = run.options;
  const source = run.source ? `, commit ${run.source.commit}, source ${run.source.fingerprint}` : "";
  const caption = `Sluice soak: ${fmt(rate)} events/s, retention ${retention} min, ${T} min${source}`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W + 130}" height="${2 * H + 150}" font-family="sans-serif" font-size="11">`;
  return `${svg}<rect width="100%" height="100%" fill="#fff"/>${text(50, 22, caption)}${body.join("")}</svg>\n`;
}
