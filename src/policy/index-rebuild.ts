// When the janitor rebuilds one of Sluice's indexes (REINDEX CONCURRENTLY). Pure: each index's
// size and entry count, and its bytes per entry right after its last rebuild, in; what to drop and
// what to rebuild out. dispatch/index-rebuilds.ts applies it.
//
// Why rebuild at all: ids begin with their creation time (src/ids.ts), so the indexes of events
// and deliveries are ordered by time and new entries only ever go to their right-hand end.
// Retention deletes most of each minute's rows but must keep those still held — a paused
// destination's backlog, a failing one's retries, a throttled one's queue — and those are spread
// evenly over time. A B-tree page is reused only once it is empty, so every leaf keeps a few
// entries, and the index grows with all that was ever published instead of with what is kept, for
// as long as the holds last (`paused_retention_hours`, 72 h by default). Under the soak's mix the
// events and deliveries indexes grew without a plateau and were 27–37 % full (docs/benchmarks.md,
// bench:soak). Rebuilding packs what is kept into as few pages as it needs.
//
// How bloated an index is: its bytes per entry now against the same figure right after its last
// rebuild, when its leaves were packed. A healthy time-ordered index stays near 1 (its right-hand
// pages fill as a rebuild leaves them); a pinned one drifts up. An index never rebuilt is left
// alone until retention has deleted as many rows from its table as the table holds, then rebuilt
// once to learn its figure: by then a pinned index is about twice its packed size, and before it
// there is nothing for a rebuild to give back. (Rebuilding at first sight put a rebuild of every
// hot index into a million-delivery bulk load. Taking the figure as it was at first sight counted
// the entries of superseded row versions as packed: deliveries are updated as they go, none of
// those updates is HOT, and a soak's deliveries_pkey read 251 bytes per live row at first sight.)
//
// Its entries now: pg_class.reltuples is counted only by VACUUM and ANALYZE, and lags a table
// that grows between them: a table taking 1,000 rows/s can be a tenth larger than its count, and
// an index right after a rebuild counts what it held then, so its growth with the table would read
// as bloat. So a full index counts its table's live rows as pg_stat_all_tables keeps them
// (n_live_tup, moved by every commit), and a partial one its share of the rows at the last count,
// applied to the rows live now. Statistics lost to a crash restart at zero, so the live count is
// trusted only once the table has been counted since. Right after a rebuild a partial index's own
// count is exact (the build counted it), so its figure is read from that.

export interface IndexStats {
  /** As Postgres prints regclass (quoted where it must be). */
  index: string;
  table: string;
  bytes: number;
  /** pg_class.reltuples: −1 (never counted) or 0 say nothing. */
  entries: number;
  /** pg_index.indisvalid: false for a build that failed or is in progress. */
  valid: boolean;
  /** pg_index.indpred: it holds only the rows its WHERE admits. */
  partial: boolean;
  /** Its table's live rows and the rows ever deleted from it (pg_stat_all_tables n_live_tup, n_tup_del). */
  tableLive: number;
  tableDeleted: number;
  /** Its table's pg_class.reltuples: its live rows when VACUUM or ANALYZE last counted them. */
  tableCounted: number;
  /** The table was vacuumed or analyzed since the statistics were last reset, so tableLive is a count, not a tally from zero. */
  liveKnown: boolean;
}

export interface RebuildBaseline {
  index: string;
  /** Bytes per entry right after its last rebuild. */
  bytesPerEntry: number;
  measuredAtMs: number;
}

export interface RebuildPolicy {
  /** Rebuild once bytes per entry reach this many times the figure after the last rebuild; 0: never rebuild. */
  factor: number;
  /** Smaller indexes are left alone: a rebuild would give back too little to be worth its two table scans. */
  minBytes: number;
  /**
   * Not rebuilt again within this long, however its figures read: a floor against a loop of
   * rebuilds should the estimate of its entries be off (a partial index whose share moved). An
   * index pinned by held rows doubles in about one retention period, so the floor binds only below
   * that.
   */
  minIntervalMs: number;
}

export const DEFAULT_REBUILD_POLICY: RebuildPolicy = { factor: 2, minBytes: 16 * 1_048_576, minIntervalMs: 5 * 60_000 };

/** An index's entries now, as the comment at the top says; 0 or less when nothing is known. */
export function entriesNow(i: IndexStats): number {
  if (!i.liveKnown || !(i.tableLive > 0)) return i.entries;
  if (!i.partial) return i.tableLive;
  return i.tableCounted > 0 && i.entries > 0 ? (i.entries * i.tableLive) / i.tableCounted : i.entries;
}

/** Its baseline right after a rebuild, counted as it will be measured from then on; null when it has no entries. */
export function bytesPerEntryAfterRebuild(i: IndexStats): number | null {
  const entries = i.partial ? i.entries : entriesNow(i);
  return entries > 0 ? i.bytes / entries : null;
}

export type RebuildTask =
  /** What a REINDEX CONCURRENTLY leaves when it is interrupted: an invalid copy that every write still updates. */
  | { kind: "drop"; index: string }
  /** bloat: bytes per entry ÷ the baseline's; null when there is no baseline yet. */
  | { kind: "rebuild"; index: string; table: string; bytes: number; bloat: number | null };

/** The suffixes REINDEX CONCURRENTLY gives its new copy and the old index while it swaps them. */
const LEFTOVER = /_cc(new|old)\d*"?$/;

/**
 * The leftovers to drop, then the indexes to rebuild, the most bytes to win first (those never
 * rebuilt after those known to be bloated, largest first).
 */
export function rebuildPlan(
  indexes: readonly IndexStats[],
  baselines: readonly RebuildBaseline[],
  nowMs: number,
  policy: RebuildPolicy = DEFAULT_REBUILD_POLICY,
): RebuildTask[] {
  const drops: RebuildTask[] = indexes.filter((i) => !i.valid && LEFTOVER.test(i.index)).map((i) => ({ kind: "drop", index: i.index }));
  if (!(policy.factor > 0)) return drops;
  const known = new Map(baselines.map((b) => [b.index, b]));
  const rebuilds = indexes.flatMap((i): Extract<RebuildTask, { kind: "rebuild" }>[] => {
    const entries = entriesNow(i);
    if (!i.valid || LEFTOVER.test(i.index) || i.bytes < policy.minBytes || !(entries > 0)) return [];
    const rebuild = (bloat: number | null) => [{ kind: "rebuild" as const, index: i.index, table: i.table, bytes: i.bytes, bloat }];
    const base = known.get(i.index);
    // Never rebuilt: once retention has turned its table over, a rebuild learns its packed figure.
    if (!base) return i.tableDeleted > 0 && i.tableDeleted >= i.tableLive ? rebuild(null) : [];
    if (nowMs - base.measuredAtMs < policy.minIntervalMs) return [];
    const bloat = i.bytes / entries / base.bytesPerEntry;
    return bloat >= policy.factor ? rebuild(bloat) : [];
  });
  const wins = (t: (typeof rebuilds)[number]): number => (t.bloat === null ? -1 / t.bytes : t.bytes * (1 - 1 / t.bloat));
  return [...drops, ...rebuilds.sort((a, b) => wins(b) - wins(a))];
}
