import type { Queryable } from "../db.js";
import { STATS_ROLLUP_LOCK } from "../locks.js";
import { BOUNDS_MS, emptyHistogram, merge } from "../../policy/latency-histogram.js";
import type { HeldCount } from "./stats.js";

// The dashboard's numbers (migrations/0010_stats.sql): attempts counted per destination and
// minute, kept in stats_minutes by the workers' janitor (dispatch/stats-rollup.ts), and counted
// live from attempts for the minutes the rollups have not reached yet; held backlog samples.

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
  const got = await q.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock($1) AS ok", [STATS_ROLLUP_LOCK]);
  return got[0]?.ok ?? false;
}

/** The store's clock, and the end of the minutes rolled up so far (null: never). */
export async function rollupClock(q: Queryable): Promise<{ now: Date; rolledUntil: Date | null }> {
  const rows = await q.query<{ now: Date; rolled_until: Date | null }>(
    "SELECT now() AS now, (SELECT rolled_until FROM stats_rollup_state) AS rolled_until",
  );
  return { now: rows[0]!.now, rolledUntil: rows[0]!.rolled_until };
}

/** When the oldest attempt at or after `since` started (probes included), or null if none did. */
export async function oldestAttemptSince(q: Queryable, since: Date): Promise<Date | null> {
  const rows = await q.query<{ at: Date | null }>("SELECT min(started_at) AS at FROM attempts WHERE started_at >= $1", [since]);
  return rows[0]?.at ?? null;
}

/** Moves the rollups' end forward (never back). */
export async function setRolledUntil(q: Queryable, at: Date): Promise<void> {
  await q.query(
    `INSERT INTO stats_rollup_state (id, rolled_until) VALUES (true, $1)
     ON CONFLICT (id) DO UPDATE SET rolled_until = greatest(stats_rollup_state.rolled_until, EXCLUDED.rolled_until)`,
    [at],
  );
}

interface AttemptGroup {
  destination_id: string;
  tenant_id: string;
  minute: Date;
  outcome: string;
  error_class: string | null;
  /** Latency bucket of a success whose delivery row is still there, else null. */
  bucket: number | null;
  n: number;
}

/**
 * Attempts started in [since, until) counted per destination, minute, outcome, error class and
 * latency bucket — of `destinationIds`, or of every destination when null. The rollup (null)
 * walks attempts_started_idx; a dashboard's live tail (ids) walks attempts_destination_time_idx.
 * Publish→delivery = the attempt's start + its latency − the delivery's created_at (the publish
 * transaction's time); a retried delivery counts from its publish, a deliver_at wait included.
 */
export async function countAttempts(
  q: Queryable,
  since: Date,
  until: Date | null,
  destinationIds: string[] | null,
): Promise<MinuteStats[]> {
  const groups = await q.query<AttemptGroup>(
    `SELECT a.destination_id, d.tenant_id, date_trunc('minute', a.started_at, 'UTC') AS minute, a.outcome, a.error_class,
            CASE WHEN a.outcome = 'success' AND dl.created_at IS NOT NULL
                 THEN width_bucket(greatest(0, extract(epoch FROM a.started_at - dl.created_at) * 1000 + a.latency_ms)::float8, $3::float8[])
            END AS bucket,
            count(*)::int AS n
       FROM attempts a
       JOIN destinations d ON d.id = a.destination_id
       LEFT JOIN deliveries dl ON a.outcome = 'success' AND dl.destination_id = a.destination_id AND dl.id = a.delivery_id
      WHERE a.started_at >= $1 AND ($2::timestamptz IS NULL OR a.started_at < $2)
        AND left(a.delivery_id, 4) <> 'prb_'
        ${destinationIds === null ? "" : "AND a.destination_id = ANY($4::text[])"}
      GROUP BY 1, 2, 3, 4, 5, 6`,
    destinationIds === null ? [since, until, BOUNDS_MS] : [since, until, BOUNDS_MS, destinationIds],
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

/**
 * Replaces the rollups of the minutes in [since, until) with `rows`: deleted and written again in
 * the caller's transaction, so a pass is idempotent and a minute recomputed later (attempts
 * written late) keeps nothing of its earlier count.
 */
export async function replaceStatsMinutes(q: Queryable, since: Date, until: Date, rows: readonly MinuteStats[]): Promise<void> {
  await q.query("DELETE FROM stats_minutes WHERE minute >= $1 AND minute < $2", [since, until]);
  if (rows.length === 0) return;
  await q.query(
    `INSERT INTO stats_minutes (destination_id, tenant_id, minute, delivered, failed, rate_limited, timeouts, by_class, latency_hist)
     SELECT r.destination_id, r.tenant_id, r.minute, r.delivered, r.failed, r.rate_limited, r.timeouts, r.by_class, r.latency_hist
       FROM json_to_recordset($1::json) AS r(destination_id text, tenant_id text, minute timestamptz, delivered int, failed int,
                                              rate_limited int, timeouts int, by_class jsonb, latency_hist int[])`,
    [JSON.stringify(rows)],
  );
}

/** Rolled-up minutes of `destinationIds` in [since, until), oldest first. */
export async function statsMinutes(q: Queryable, destinationIds: string[], since: Date, until: Date): Promise<MinuteStats[]> {
  if (destinationIds.length === 0 || until <= since) return [];
  return q.query<MinuteStats>(
    `SELECT destination_id, tenant_id, minute, delivered, failed, rate_limited, timeouts, by_class, latency_hist
       FROM stats_minutes WHERE destination_id = ANY($1::text[]) AND minute >= $2 AND minute < $3
      ORDER BY minute`,
    [destinationIds, since, until],
  );
}

/**
 * Rolled-up minutes of `destinationIds` in [since, until) summed over the destinations in SQL (one
 * row per minute, histograms added bucket by bucket; destination_id and by_class left empty): a
 * tenant-wide day is 1,440 rows to send, however many destinations it has.
 */
export async function statsMinutesSummed(q: Queryable, destinationIds: string[], since: Date, until: Date): Promise<MinuteStats[]> {
  if (destinationIds.length === 0 || until <= since) return [];
  const where = "destination_id = ANY($1::text[]) AND minute >= $2 AND minute < $3";
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
  until: Date,
): Promise<{ destination_id: string; delivered: number; failed: number }[]> {
  if (destinationIds.length === 0 || until <= since) return [];
  return q.query(
    `SELECT destination_id, sum(delivered)::int AS delivered, sum(failed)::int AS failed
       FROM stats_minutes WHERE destination_id = ANY($1::text[]) AND minute >= $2 AND minute < $3
      GROUP BY destination_id`,
    [destinationIds, since, until],
  );
}

export interface RecentMinutes {
  /** Rolled-up rows (per destination, or summed per minute) followed by the live tail's, per destination. */
  rows: MinuteStats[];
  /** The live tail alone (minutes from liveFrom on), per destination. */
  live: MinuteStats[];
  /** The first minute's start, where the live count starts, and the store's clock. */
  since: Date;
  liveFrom: Date;
  now: Date;
}

/**
 * The last `minutes` minutes of `destinationIds` (the current one included): rolled up where the
 * rollups reach, counted from attempts after that (normally the current minute and the one
 * before). `summed`: rolled-up minutes come summed over the destinations (statsMinutesSummed).
 */
export async function recentMinuteStats(q: Queryable, destinationIds: string[], minutes: number, summed = false): Promise<RecentMinutes> {
  const { now, rolledUntil } = await rollupClock(q);
  const since = new Date((Math.floor(now.getTime() / 60_000) - (minutes - 1)) * 60_000);
  const liveFrom = rolledUntil === null || rolledUntil < since ? since : rolledUntil;
  if (destinationIds.length === 0) return { rows: [], live: [], since, liveFrom, now };
  const rolled = await (summed ? statsMinutesSummed : statsMinutes)(q, destinationIds, since, liveFrom);
  const live = await countAttempts(q, liveFrom, null, destinationIds);
  return { rows: [...rolled, ...live], live, since, liveFrom, now };
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
