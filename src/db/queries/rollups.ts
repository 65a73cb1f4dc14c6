import type { Db, Queryable } from "../db.js";
import { lockKey, STATS_ROLLUP_LOCK } from "../advisory-locks.js";
import { BOUNDS_MS, emptyHistogram, merge } from "../../policy/latency-histogram.js";
import type { HeldCount } from "./stats.js";

// The dashboard's numbers (migrations/0010_stats.sql, 0017): attempts counted per destination and
// minute, kept in stats_minutes by the workers' janitor (dispatch/stats-rollup.ts), and counted
// live from attempts for those its passes have not counted yet; held backlog samples.

/** One destination's attempts in one minute (probes left out). */
export interface MinuteStats {
  destination_id: string;
  tenant_id: string;
  minute: Date;
  delivered: number;
  failed: number;
  rate_limited: number;
  timeouts: number;
  /** Non-success attempts by error class without its http_ prefix ("5xx", "429", "timeout", …). */
  by_class: Record<string, number>;
  /** Publish→delivery latency of the successes (policy/latency-histogram.ts buckets). */
  latency_hist: number[];
}

/** Takes the rollup lock for the caller's transaction; false when another worker holds it. */
export async function tryStatsRollupLock(q: Queryable): Promise<boolean> {
  const got = await q.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${lockKey("$1")}) AS ok`, [STATS_ROLLUP_LOCK]);
  return got[0]?.ok ?? false;
}

/** How far the rollups reach, and the store's clock. */
export interface RollupClock {
  now: Date;
  /** The end of the minutes rolled up by start time (null: never); no longer moved once counting by transaction. */
  rolledUntil: Date | null;
  /** Every attempt written by a transaction below this one is in stats_minutes (null: not counting by transaction yet). */
  countedBelow: string | null;
  /** The oldest transaction still running: every attempt below it is written, or never will be. */
  xmin: string;
}

/**
 * The rollups' reach and the store's clock. The snapshot's xmin is read by a statement of its own
 * that reads no table, before any statement that does: in a Citus cell, an attempt's xact is the
 * coordinator's transaction id (Citus works out a write's defaults there), and only a statement
 * that touches none of the cell's tables runs on the coordinator; one that did would read the
 * xmin of the node holding the cell, a counter that does not compare. On every other store the
 * two statements read what the one did. (Citus commits a cell's write on its node before the
 * coordinator's transaction ends, so what is below the xmin is there to be counted.)
 */
export async function rollupClock(q: Queryable): Promise<RollupClock> {
  const [xmin, state] = await Promise.all([
    q.query<{ xmin: string }>("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin"),
    q.query<{ now: Date; rolled_until: Date | null; counted_below: string | null }>(
      `SELECT now() AS now, s.rolled_until, s.counted_below::text FROM (SELECT) AS one LEFT JOIN stats_rollup_state s ON true`,
    ),
  ]);
  const r = state[0]!;
  return { now: r.now, rolledUntil: r.rolled_until, countedBelow: r.counted_below, xmin: xmin[0]!.xmin };
}

/** When the oldest attempt at or after `since` started (probes included), or null if none did. */
export async function oldestAttemptSince(q: Queryable, since: Date): Promise<Date | null> {
  const rows = await q.query<{ at: Date | null }>("SELECT min(started_at) AS at FROM attempts WHERE started_at >= $1", [since]);
  return rows[0]?.at ?? null;
}

/**
 * Records how far the rollups reach: `rolledUntil` by start time (moved forward, never back), and
 * once counting by transaction, `countedBelow` (null keeps the value stored).
 */
export async function setRollupReach(q: Queryable, at: Date, countedBelow: string | null = null): Promise<void> {
  await q.query(
    `INSERT INTO stats_rollup_state (id, rolled_until, counted_below) VALUES (true, $1, $2::xid8)
     ON CONFLICT (id) DO UPDATE SET rolled_until = greatest(stats_rollup_state.rolled_until, EXCLUDED.rolled_until),
                                    counted_below = coalesce(EXCLUDED.counted_below, stats_rollup_state.counted_below)`,
    [at, countedBelow],
  );
}

/**
 * Where a pass from transaction `from` should stop so as to count about `limit` attempts, when
 * more than that were written below `below` (a pass after a long stop takes several), else null.
 * The bound is a transaction id, so a transaction's attempts are never split between passes.
 */
export async function xactBound(q: Queryable, from: string, below: string, limit: number): Promise<string | null> {
  const nth = await q.query<{ x: string | null }>(
    `SELECT (SELECT xact FROM attempts WHERE xact >= $1::xid8 AND xact < $2::xid8 ORDER BY xact OFFSET $3 LIMIT 1)::text AS x`,
    [from, below, limit],
  );
  const x = nth[0]?.x ?? null;
  if (x === null || x !== from) return x;
  // The first transaction alone wrote more than `limit`: take it whole.
  const next = await q.query<{ x: string | null }>("SELECT min(xact)::text AS x FROM attempts WHERE xact > $1::xid8 AND xact < $2::xid8", [
    from,
    below,
  ]);
  return next[0]?.x ?? null;
}

interface AttemptGroup {
  destination_id: string;
  tenant_id: string;
  minute: Date;
  outcome: string;
  error_class: string | null;
  /** Latency bucket of a success (null: written before 0017, and its delivery row is gone). */
  bucket: number | null;
  n: number;
}

/** Which attempts countAttempts counts. */
export type AttemptSpan =
  /** Started in [since, until) (until null: open); with `below`, only those of transactions below it, or of none. */
  | { by: "start"; since: Date; until: Date | null; below: string | null }
  /** Written by transactions in [from, below) (below null: every one from `from` on), started at or after `since`. */
  | { by: "xact"; from: string; below: string | null; since: Date };

/**
 * Attempts of `span` counted per destination, minute, outcome, error class and latency bucket — of
 * `destinationIds`, or of every destination when null. By transaction, the statement walks
 * attempts_xact_idx; by start time, attempts_started_idx (a first rollup pass), or
 * attempts_destination_time_idx (a dashboard's live tail before the first pass).
 * Publish→delivery = the attempt's queued_ms (from its event's publish to its start) + its
 * latency; a retried delivery counts from its publish, a deliver_at wait included. Attempts
 * written before migration 0017 have no queued_ms: their delivery's created_at (the publish
 * transaction's time) is looked up instead, and a success whose delivery is gone has no bucket.
 */
export async function countAttempts(q: Queryable, span: AttemptSpan, destinationIds: string[] | null): Promise<MinuteStats[]> {
  const params: unknown[] = [BOUNDS_MS];
  const param = (v: unknown, type: string) => {
    params.push(v);
    return `$${params.length}::${type}`;
  };
  const where =
    span.by === "start"
      ? [
          `a.started_at >= ${param(span.since, "timestamptz")}`,
          ...(span.until === null ? [] : [`a.started_at < ${param(span.until, "timestamptz")}`]),
          ...(span.below === null ? [] : [`(a.xact IS NULL OR a.xact < ${param(span.below, "xid8")})`]),
        ]
      : [
          `a.xact >= ${param(span.from, "xid8")}`,
          ...(span.below === null ? [] : [`a.xact < ${param(span.below, "xid8")}`]),
          `a.started_at >= ${param(span.since, "timestamptz")}`,
        ];
  if (destinationIds !== null) where.push(`a.destination_id = ANY(${param(destinationIds, "text[]")})`);
  const groups = await q.query<AttemptGroup>(
    `SELECT a.destination_id, d.tenant_id, date_trunc('minute', a.started_at, 'UTC') AS minute, a.outcome, a.error_class,
            CASE WHEN a.outcome = 'success'
                 THEN width_bucket(greatest(0, coalesce(a.queued_ms,
                        (SELECT extract(epoch FROM a.started_at - dl.created_at) * 1000
                           FROM deliveries dl WHERE dl.destination_id = a.destination_id AND dl.id = a.delivery_id)) + a.latency_ms)::float8,
                      $1::float8[])
            END AS bucket,
            count(*)::int AS n
       FROM attempts a
       JOIN destinations d ON d.id = a.destination_id
      WHERE ${where.join(" AND ")} AND left(a.delivery_id, 4) <> 'prb_'
      GROUP BY 1, 2, 3, 4, 5, 6`,
    params,
  );
  return foldGroups(groups);
}

/** Attempt groups into one row per destination and minute. */
function foldGroups(groups: readonly AttemptGroup[]): MinuteStats[] {
  const rows = new Map<string, MinuteStats>();
  for (const g of groups) {
    const key = `${g.destination_id}\u0000${g.minute.getTime()}`;
    let r = rows.get(key);
    if (!r) {
      r = { ...emptyMinute(g.destination_id, g.tenant_id, g.minute), latency_hist: emptyHistogram() };
      rows.set(key, r);
    }
    if (g.outcome === "success") {
      r.delivered += g.n;
      if (g.bucket !== null) r.latency_hist[g.bucket]! += g.n;
      continue;
    }
    if (g.outcome === "throttled") r.rate_limited += g.n;
    else r.failed += g.n;
    if (g.error_class === "timeout") r.timeouts += g.n;
    const cls = (g.error_class ?? g.outcome).replace(/^http_/, "");
    r.by_class[cls] = (r.by_class[cls] ?? 0) + g.n;
  }
  return [...rows.values()];
}

export function emptyMinute(destinationId: string, tenantId: string, minute: Date): MinuteStats {
  return {
    destination_id: destinationId,
    tenant_id: tenantId,
    minute,
    delivered: 0,
    failed: 0,
    rate_limited: 0,
    timeouts: 0,
    by_class: {},
    latency_hist: [],
  };
}

/** Two counts of the same span added (for summing destinations or minutes). */
export function addMinutes(a: MinuteStats, b: MinuteStats): MinuteStats {
  const by_class = { ...a.by_class };
  for (const [k, n] of Object.entries(b.by_class)) by_class[k] = (by_class[k] ?? 0) + n;
  return {
    ...a,
    delivered: a.delivered + b.delivered,
    failed: a.failed + b.failed,
    rate_limited: a.rate_limited + b.rate_limited,
    timeouts: a.timeouts + b.timeouts,
    by_class,
    latency_hist: merge(a.latency_hist, b.latency_hist),
  };
}

/** The columns of stats_minutes and MinuteStats rows as JSON ($1) to fill them. */
const MINUTE_ROWS = `(destination_id, tenant_id, minute, delivered, failed, rate_limited, timeouts, by_class, latency_hist)
     SELECT r.destination_id, r.tenant_id, r.minute, r.delivered, r.failed, r.rate_limited, r.timeouts, r.by_class, r.latency_hist
       FROM json_to_recordset($1::json) AS r(destination_id text, tenant_id text, minute timestamptz, delivered int, failed int,
                                              rate_limited int, timeouts int, by_class jsonb, latency_hist int[])`;

/**
 * Replaces the rollups of the minutes in [since, until) (until null: open) with `rows`: deleted and
 * written again in the caller's transaction, so a pass by start time is idempotent and a minute
 * recomputed later (attempts written late) keeps nothing of its earlier count.
 */
export async function replaceStatsMinutes(q: Queryable, since: Date, until: Date | null, rows: readonly MinuteStats[]): Promise<void> {
  await q.query("DELETE FROM stats_minutes WHERE minute >= $1 AND ($2::timestamptz IS NULL OR minute < $2)", [since, until]);
  if (rows.length === 0) return;
  await q.query(`INSERT INTO stats_minutes ${MINUTE_ROWS}`, [JSON.stringify(rows)]);
}

/**
 * Adds `rows` to the rollups of their destinations and minutes (a pass counting by transaction:
 * each attempt is counted once, into its minute however late it was written). Histograms are
 * added bucket by bucket, error classes key by key.
 */
export async function addStatsMinutes(q: Queryable, rows: readonly MinuteStats[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO stats_minutes AS s ${MINUTE_ROWS}
     ON CONFLICT (destination_id, minute) DO UPDATE SET
       delivered = s.delivered + EXCLUDED.delivered,
       failed = s.failed + EXCLUDED.failed,
       rate_limited = s.rate_limited + EXCLUDED.rate_limited,
       timeouts = s.timeouts + EXCLUDED.timeouts,
       by_class = (SELECT coalesce(jsonb_object_agg(k, n), '{}')
                     FROM (SELECT k, sum(v::int) AS n
                             FROM (SELECT * FROM jsonb_each_text(s.by_class) UNION ALL SELECT * FROM jsonb_each_text(EXCLUDED.by_class)) AS c(k, v)
                            GROUP BY k) AS t),
       latency_hist = (SELECT coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY i), '{}')
                         FROM unnest(s.latency_hist, EXCLUDED.latency_hist) WITH ORDINALITY AS u(x, y, i))`,
    [JSON.stringify(rows)],
  );
}

/** Nothing to read: no destinations, or an empty span of minutes. */
const nothing = (ids: readonly string[], since: Date, until: Date | null) => ids.length === 0 || (until !== null && until <= since);
const MINUTES_IN = "destination_id = ANY($1::text[]) AND minute >= $2 AND ($3::timestamptz IS NULL OR minute < $3)";

/** Rolled-up minutes of `destinationIds` in [since, until) (until null: open), oldest first. */
export async function statsMinutes(q: Queryable, destinationIds: string[], since: Date, until: Date | null): Promise<MinuteStats[]> {
  if (nothing(destinationIds, since, until)) return [];
  return q.query<MinuteStats>(
    `SELECT destination_id, tenant_id, minute, delivered, failed, rate_limited, timeouts, by_class, latency_hist
       FROM stats_minutes WHERE ${MINUTES_IN}
      ORDER BY minute`,
    [destinationIds, since, until],
  );
}

/**
 * Rolled-up minutes of `destinationIds` in [since, until) summed over the destinations in SQL (one
 * row per minute, histograms added bucket by bucket; destination_id and by_class left empty): a
 * tenant-wide day is 1,440 rows to send, however many destinations it has.
 */
export async function statsMinutesSummed(q: Queryable, destinationIds: string[], since: Date, until: Date | null): Promise<MinuteStats[]> {
  if (nothing(destinationIds, since, until)) return [];
  const where = MINUTES_IN;
  return q.query<MinuteStats>(
    `WITH m AS (
       SELECT minute, sum(delivered)::int AS delivered, sum(failed)::int AS failed,
              sum(rate_limited)::int AS rate_limited, sum(timeouts)::int AS timeouts
         FROM stats_minutes WHERE ${where} GROUP BY minute
     ), h AS (
       SELECT s.minute, u.i, sum(u.v)::int AS v
         FROM stats_minutes s CROSS JOIN LATERAL unnest(s.latency_hist) WITH ORDINALITY AS u(v, i)
        WHERE ${where} GROUP BY 1, 2
     ), hists AS (
       SELECT minute, array_agg(v ORDER BY i) AS latency_hist FROM h GROUP BY minute
     )
     SELECT '' AS destination_id, '' AS tenant_id, m.minute, m.delivered, m.failed, m.rate_limited, m.timeouts,
            '{}'::jsonb AS by_class, coalesce(hists.latency_hist, '{}'::int[]) AS latency_hist
       FROM m LEFT JOIN hists USING (minute) ORDER BY m.minute`,
    [destinationIds, since, until],
  );
}

/** Delivered and failed per destination over rolled-up minutes in [since, until). */
export async function statsTotals(
  q: Queryable,
  destinationIds: string[],
  since: Date,
  until: Date | null,
): Promise<{ destination_id: string; delivered: number; failed: number }[]> {
  if (nothing(destinationIds, since, until)) return [];
  return q.query(
    `SELECT destination_id, sum(delivered)::int AS delivered, sum(failed)::int AS failed
       FROM stats_minutes WHERE ${MINUTES_IN}
      GROUP BY destination_id`,
    [destinationIds, since, until],
  );
}

export interface RecentMinutes {
  /** Rolled-up rows (per destination, or summed per minute) followed by the live tail's, per destination. */
  rows: MinuteStats[];
  /** The live tail alone: the attempts no pass has counted yet, per destination and minute. */
  live: MinuteStats[];
  /** The first minute's start, and the store's clock. */
  since: Date;
  now: Date;
  /**
   * Where the rolled-up minutes end and the live count by start time begins; null once the
   * rollups count by transaction (rolled-up rows of every minute, the live tail added to them).
   */
  liveFrom: Date | null;
}

/**
 * The last `minutes` minutes of `destinationIds` (the current one included): what the rollups
 * have counted, plus the attempts written since the last pass (normally a few seconds of them),
 * counted live. `summed`: rolled-up minutes come summed over the destinations (statsMinutesSummed).
 * Run it in one snapshot (readStats), or a pass committing between its reads counts twice.
 */
export async function recentMinuteStats(q: Queryable, destinationIds: string[], minutes: number, summed = false): Promise<RecentMinutes> {
  const { now, rolledUntil, countedBelow } = await rollupClock(q);
  const since = new Date((Math.floor(now.getTime() / 60_000) - (minutes - 1)) * 60_000);
  const liveFrom = countedBelow !== null ? null : rolledUntil === null || rolledUntil < since ? since : rolledUntil;
  if (destinationIds.length === 0) return { rows: [], live: [], since, liveFrom, now };
  const rolled = await (summed ? statsMinutesSummed : statsMinutes)(q, destinationIds, since, liveFrom);
  const span: AttemptSpan =
    countedBelow !== null
      ? { by: "xact", from: countedBelow, below: null, since }
      : { by: "start", since: liveFrom!, until: null, below: null };
  const live = await countAttempts(q, span, destinationIds);
  return { rows: [...rolled, ...live], live, since, liveFrom, now };
}

/** Runs the stats reads of `fn` in one read-only snapshot: rolled-up rows and the live tail agree. */
export function readStats<T>(db: Db, fn: (q: Queryable) => Promise<T>): Promise<T> {
  return db.tx(async (q) => {
    await q.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
    return fn(q);
  });
}

/** Replaces the backlog sample of `minute` with `counts`. */
export async function replaceBacklogSample(q: Queryable, minute: Date, counts: readonly HeldCount[]): Promise<void> {
  await q.query("DELETE FROM backlog_samples WHERE minute = $1", [minute]);
  if (counts.length === 0) return;
  await q.query(
    `INSERT INTO backlog_samples (destination_id, tenant_id, minute, reason, n, oldest_age_s)
     SELECT r.destination_id, r.tenant_id, $2, r.reason, r.n, r.oldest_age_s
       FROM json_to_recordset($1::json) AS r(destination_id text, tenant_id text, reason text, n int, oldest_age_s float8)`,
    [JSON.stringify(counts), minute],
  );
}

/** Sampled held counts of `destinationIds` since `since`, summed per minute and reason, oldest first. */
export async function backlogSince(
  q: Queryable,
  destinationIds: string[],
  since: Date,
): Promise<{ minute: Date; reason: string; n: number; oldest_age_s: number }[]> {
  if (destinationIds.length === 0) return [];
  return q.query(
    `SELECT minute, reason, sum(n)::int AS n, max(oldest_age_s)::float8 AS oldest_age_s
       FROM backlog_samples WHERE destination_id = ANY($1::text[]) AND minute >= $2
      GROUP BY minute, reason ORDER BY minute, reason`,
    [destinationIds, since],
  );
}

/** Rollups and samples older than `hours`; returns the rows removed. */
export async function pruneStats(q: Queryable, hours: number): Promise<number> {
  const rows = await q.query<{ n: number }>(
    `WITH a AS (DELETE FROM stats_minutes WHERE minute < now() - make_interval(hours => $1) RETURNING 1),
          b AS (DELETE FROM backlog_samples WHERE minute < now() - make_interval(hours => $1) RETURNING 1)
     SELECT (SELECT count(*) FROM a)::int + (SELECT count(*) FROM b)::int AS n`,
    [hours],
  );
  return rows[0]!.n;
}
