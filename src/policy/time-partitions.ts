// Which time partitions of `attempts` (migrations/0024_attempts_by_time.sql) the janitor creates and
// drops. Pure: the partitions there are and the store's clock in, what to create and what to drop
// out; db/queries/partitions.ts reads and applies it.
//
// Why partitions: retention empties attempts by time alone, so a partition whose whole range has
// passed retention can go at once — a file unlinked, where deleting its rows cost an index delete
// per row in three B-trees, WAL for each, and indexes left at twice their packed size.
//
// How wide: a quarter of the retention period, on a ladder of round widths (1 minute to a year),
// so that a store holds about five partitions of attempts whatever its retention, and an attempt
// outlives retention by at most a quarter of it. Ranges start on multiples of their width since
// the epoch, so every worker plans the same names; a range after a change of retention starts
// where the last one ended and ends on the next multiple of the new width.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The widths a partition may have, narrowest first. */
export const PARTITION_WIDTHS_MS = [
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
  7 * DAY,
  30 * DAY,
  91 * DAY,
  365 * DAY,
] as const;

/** Partitions are made this many widths ahead of the clock, so that attempts find one made for them. */
export const AHEAD_WIDTHS = 2;

/** At most this many partitions made or dropped in one round: a bound on the DDL a round can issue. */
export const MAX_CHANGES_PER_ROUND = 8;

/** A range partition: [fromMs, toMs); fromMs null for one open below (MINVALUE). */
export interface TimePartition {
  name: string;
  fromMs: number | null;
  toMs: number;
}

export interface PartitionPlan {
  create: { name: string; fromMs: number; toMs: number }[];
  drop: string[];
}

/** The widest width on the ladder no wider than a quarter of retention (the narrowest if none is). */
export function partitionWidthMs(retentionHours: number): number {
  const quarter = (retentionHours * HOUR) / 4;
  let width: number = PARTITION_WIDTHS_MS[0];
  for (const w of PARTITION_WIDTHS_MS) if (w <= quarter) width = w;
  return width;
}

/** `attempts_<start, UTC, to the second>`: 20261207t2030 for 2026-12-07 20:30:00Z. */
export function partitionName(table: string, fromMs: number): string {
  const iso = new Date(fromMs).toISOString(); // 2026-12-07T20:30:00.000Z
  return `${table}_${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}t${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

/**
 * What one round does: the partitions to make so that ranges reach AHEAD_WIDTHS widths past `nowMs`
 * (from the end of the last range; from the width's multiple at or before now when there is none or
 * it ended before that, the gap between left to the default partition), and the partitions to drop,
 * those ending at or before `nowMs` − retention — oldest first, MAX_CHANGES_PER_ROUND of each at most.
 */
export function planPartitions(table: string, existing: readonly TimePartition[], nowMs: number, retentionHours: number): PartitionPlan {
  const width = partitionWidthMs(retentionHours);
  const cutoffMs = nowMs - retentionHours * HOUR;
  const drop = existing
    .filter((p) => p.toMs <= cutoffMs)
    .sort((a, b) => a.toMs - b.toMs)
    .slice(0, MAX_CHANGES_PER_ROUND)
    .map((p) => p.name);
  const lastEnd = existing.reduce((m, p) => Math.max(m, p.toMs), -Infinity);
  const create: PartitionPlan["create"] = [];
  let from = Math.max(lastEnd, Math.floor(nowMs / width) * width);
  while (from < nowMs + AHEAD_WIDTHS * width && create.length < MAX_CHANGES_PER_ROUND) {
    const to = (Math.floor(from / width) + 1) * width;
    create.push({ name: partitionName(table, from), fromMs: from, toMs: to });
    from = to;
  }
  return { create, drop };
}
