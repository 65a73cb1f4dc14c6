import type { FastifyInstance } from "fastify";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import { NotFoundError } from "../../errors.js";
import { assertDestinationVisible, destinationScope } from "../access.js";
import { backlogSince, readStats, recentMinuteStats, statsTotals, type MinuteStats } from "../../db/queries/rollups.js";
import { liveDestinationIds } from "../../db/queries/destinations.js";
import {
  arrivalsPerSecond,
  classifyHeld,
  destinationRateState,
  heldGroupsOn,
  quietNow,
  sumByReason,
  type HeldGroup,
} from "../../db/queries/stats.js";
import type { Db, Queryable } from "../../db/db.js";
import type { HoldReason } from "../../policy/statuses.js";
import { effectiveLimits } from "../../policy/adaptive-pace.js";
import { unlessFaulty } from "../../policy/stored-config.js";
import { IdParams } from "../../schemas/common.js";
import { DestinationStats, DestinationStatsQuery, Stats, StatsQuery } from "../../schemas/stats.js";
import { answers } from "../openapi.js";
import {
  bucketsNow,
  lastHourByDestination,
  latencyPercentiles,
  limitView,
  minuteSeries,
  oldestWaitingByDestination,
  secondSeries,
} from "../stats-view.js";

// The dashboard's numbers. Minutes come from the rollups (stats_minutes, added to every few
// seconds by the workers) plus a live count of the attempts written since the last pass, so an
// answer reads a few rows per destination and minute and a few seconds of attempts, whatever the
// traffic. Held counts are live (one pass over the waiting deliveries of the destinations asked
// about). Portal sessions may read both, limited to their destinations.

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
const HOUR_MINUTES = 60;

// Minutes are always read for at least the last hour, which the per-destination last-hour
// numbers need; the series shows the last `minutes` of them.
const atLeastAnHour = (minutes: number) => Math.max(minutes, HOUR_MINUTES);
const lastMinutesFrom = (since: Date, minutes: number) => new Date(since.getTime() + (atLeastAnHour(minutes) - minutes) * 60_000);

/** Delivered and failed per destination in the 60 minutes up to `now`: rolled-up totals plus the live tail's. */
async function lastHourTotals(q: Queryable, ids: string[], live: readonly MinuteStats[], liveFrom: Date | null, now: Date) {
  const hourFrom = new Date((Math.floor(now.getTime() / 60_000) - (HOUR_MINUTES - 1)) * 60_000);
  const totals = lastHourByDestination(live, now.getTime());
  for (const t of await statsTotals(q, ids, hourFrom, liveFrom)) {
    const sum = totals.get(t.destination_id) ?? { delivered: 0, failed: 0 };
    totals.set(t.destination_id, { delivered: sum.delivered + t.delivered, failed: sum.failed + t.failed });
  }
  return totals;
}

/**
 * The minutes of `ids` (at least the last hour's) and their last-hour totals, read in one snapshot:
 * a rollup pass committing between the reads would otherwise count its attempts twice.
 */
function minutesAndLastHour(db: Db, ids: string[], minutes: number, summed: boolean) {
  return readStats(db, async (q) => {
    const recent = await recentMinuteStats(q, ids, atLeastAnHour(minutes), summed);
    const lastHour = await lastHourTotals(q, ids, recent.live, recent.liveFrom, recent.now);
    return { ...recent, lastHour };
  });
}

/** Held groups of `ids` now (quiet windows judged at the store's clock). */
async function heldNow(db: Db, ids: string[], nowMs: number): Promise<HeldGroup[]> {
  if (ids.length === 0) return [];
  return db.tx(async (q) => heldGroupsOn(db.kind, q, await quietNow(q, ids, nowMs), ids));
}

const heldView = (counts: readonly { reason: HoldReason; n: number; oldest_age_s: number }[]) =>
  counts.map((c) => ({ reason: c.reason, n: c.n, oldest_age_seconds: Math.round(c.oldest_age_s * 1000) / 1000 }));

export function statsRoutes(ctx: ApiContext) {
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: StatsQuery }>(
      "/v1/stats",
      {
        schema: {
          operationId: "getStats",
          summary: "Delivery numbers of every destination the caller may see, per minute, for the dashboard",
          tags: ["stats"],
          querystring: StatsQuery,
          response: answers({ 200: Type.Ref(Stats) }),
        },
        config: { portal: "read" },
      },
      async (req): Promise<Stats> => {
        const minutes = req.query.minutes ?? 60;
        const ids = await liveDestinationIds(ctx.db, req.tenant.id, destinationScope(req));
        const { rows, since, now, lastHour } = await minutesAndLastHour(ctx.db, ids, minutes, true);
        const seriesSince = lastMinutesFrom(since, minutes);
        const groups = await heldNow(ctx.db, ids, now.getTime());
        const backlog = await backlogSince(ctx.db, ids, seriesSince);
        const oldest = oldestWaitingByDestination(groups);
        return {
          since: seriesSince.toISOString(),
          until: now.toISOString(),
          bucket_seconds: 60,
          series: minuteSeries(rows, seriesSince.getTime(), minutes).map((m) => ({
            at: m.minute.toISOString(),
            delivered: m.delivered,
            failed: m.failed,
            rate_limited: m.rate_limited,
            ...latencyPercentiles(m),
          })),
          backlog: backlog.map((b) => ({
            at: b.minute.toISOString(),
            reason: b.reason as HoldReason,
            n: b.n,
            oldest_age_seconds: Math.round(b.oldest_age_s * 1000) / 1000,
          })),
          held_now: heldView(sumByReason(classifyHeld(groups))),
          destinations: ids.map((id) => ({
            id,
            delivered_last_hour: lastHour.get(id)?.delivered ?? 0,
            failed_last_hour: lastHour.get(id)?.failed ?? 0,
            oldest_waiting_at: iso(oldest.get(id)),
          })),
        };
      },
    );

    app.get<{ Params: Static<typeof IdParams>; Querystring: DestinationStatsQuery }>(
      "/v1/destinations/:id/stats",
      {
        schema: {
          operationId: "getDestinationStats",
          summary: "One destination's numbers: outcomes per minute, arrivals per second, token buckets and held deliveries now",
          tags: ["stats"],
          params: IdParams,
          querystring: DestinationStatsQuery,
          response: answers({ 200: Type.Ref(DestinationStats) }, [404]),
        },
        config: { portal: "read" },
      },
      async (req): Promise<DestinationStats> => {
        assertDestinationVisible(req, req.params.id);
        const d = await destinationRateState(ctx.db, req.tenant.id, req.params.id);
        if (!d) throw new NotFoundError("destination", req.params.id);
        const minutes = req.query.minutes ?? 60;
        const rateSeconds = req.query.rate_seconds ?? 300;
        const ids = [req.params.id];
        const { rows, since, now, lastHour: totals } = await minutesAndLastHour(ctx.db, ids, minutes, false);
        const seriesSince = lastMinutesFrom(since, minutes);
        const nowMs = now.getTime();
        const lastHour = totals.get(req.params.id);
        const arrivalsSince = (Math.floor(nowMs / 1000) - (rateSeconds - 1)) * 1000;
        const arrivals = await arrivalsPerSecond(ctx.db, req.params.id, new Date(arrivalsSince));
        const groups = await heldNow(ctx.db, ids, nowMs);
        // The limits in force: adaptive pace's when it is on (and a recovery ramp's concurrency).
        const limits = unlessFaulty(() => effectiveLimits(d, nowMs), {
          rateLimit: d.rate_limit,
          maxConcurrency: d.max_concurrency,
          pace: null,
        });
        return {
          since: seriesSince.toISOString(),
          until: now.toISOString(),
          outcomes: minuteSeries(rows, seriesSince.getTime(), minutes).map((m) => ({
            at: m.minute.toISOString(),
            delivered: m.delivered,
            failed: m.failed,
            rate_limited: m.rate_limited,
            timeouts: m.timeouts,
            by_class: m.by_class,
          })),
          arrivals: secondSeries(arrivals, arrivalsSince, rateSeconds).map((a) => ({ at: a.at.toISOString(), n: a.n })),
          limit: limitView(limits.rateLimit, limits.maxConcurrency),
          buckets: bucketsNow(limits.rateLimit, d.bucket_state, nowMs, ctx.config.rateSendJitterMs),
          held: heldView(sumByReason(classifyHeld(groups))),
          delivered_last_hour: lastHour?.delivered ?? 0,
          failed_last_hour: lastHour?.failed ?? 0,
          oldest_waiting_at: iso(oldestWaitingByDestination(groups).get(req.params.id)),
        };
      },
    );
  };
}
