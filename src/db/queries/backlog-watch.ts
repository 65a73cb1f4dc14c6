import type { Queryable } from "../db.js";
import type { BacklogWatch } from "../../policy/backlog-alerts.js";
import type { AdaptiveConfig, PaceState } from "../../policy/adaptive-pace.js";
import type { DeliverySchedule } from "../../policy/quiet-hours.js";
import type { RateLimit } from "../../policy/token-bucket.js";
import type { HealthStatus } from "../../policy/statuses.js";

// The backlog watch's reads and writes (dispatch/backlog-watch.ts, run by the stats rollup under
// its advisory lock: one writer of backlog_watches at a time). Destination rows are only read,
// never locked: they are what every claim and write-back locks.

export interface BacklogWatchRow {
  id: string;
  tenant_id: string;
  name: string;
  url: string;
  paused_at: Date | null;
  throttled_until: Date | null;
  consecutive_throttles: number;
  throttle_schedule_seconds: number[];
  delivery_schedule: DeliverySchedule | null;
  rate_limit: RateLimit | null;
  adaptive: AdaptiveConfig | null;
  pace_state: PaceState | null;
  max_concurrency: number;
  ramp_limit: number | null;
  backlog_alert_minutes: number | null;
  backlog_alert_age_minutes: number | null;
  backlog_watch: BacklogWatch | null;
  health_window: string;
  health_status: HealthStatus;
  consecutive_failures: number;
  consecutive_auth_failures: number;
}

/** Live destinations with deliveries waiting (`ids`) or a watch stored from an earlier look. */
export async function backlogWatchRows(q: Queryable, ids: string[]): Promise<BacklogWatchRow[]> {
  return q.query<BacklogWatchRow>(
    `SELECT d.id, d.tenant_id, d.name, d.url, d.paused_at, d.throttled_until, d.consecutive_throttles, d.throttle_schedule_seconds,
            d.delivery_schedule, d.rate_limit, d.adaptive, d.pace_state, d.max_concurrency, d.ramp_limit, d.backlog_alert_minutes,
            d.backlog_alert_age_minutes, w.watch AS backlog_watch, d.health_window, d.health_status, d.consecutive_failures,
            d.consecutive_auth_failures
       FROM destinations d LEFT JOIN backlog_watches w ON w.destination_id = d.id
      WHERE d.deleted_at IS NULL AND (d.id = ANY($1::text[]) OR w.destination_id IS NOT NULL)
      ORDER BY d.id`,
    [ids],
  );
}

export async function setBacklogWatch(q: Queryable, updates: { id: string; watch: BacklogWatch | null }[]): Promise<void> {
  if (updates.length === 0) return;
  const kept = updates.filter((u) => u.watch !== null);
  const gone = updates.filter((u) => u.watch === null).map((u) => u.id);
  if (kept.length > 0) {
    await q.query(
      `INSERT INTO backlog_watches (destination_id, watch)
       SELECT u.id, u.watch FROM jsonb_to_recordset($1::jsonb) AS u(id text, watch jsonb)
       ON CONFLICT (destination_id) DO UPDATE SET watch = excluded.watch`,
      [JSON.stringify(kept)],
    );
  }
  if (gone.length > 0) await q.query("DELETE FROM backlog_watches WHERE destination_id = ANY($1::text[])", [gone]);
  // Watches of deleted destinations go with their next look.
  await q.query(`DELETE FROM backlog_watches w USING destinations d WHERE d.id = w.destination_id AND d.deleted_at IS NOT NULL`);
}

/** Live destinations with a backlog alert standing, by kind (the sluice_backlog_alerts gauge). */
export async function backlogAlertsStanding(q: Queryable): Promise<{ growing: number; stale: number }> {
  const rows = await q.query<{ growing: number; stale: number }>(
    `SELECT (count(*) FILTER (WHERE (w.watch->>'growing')::boolean))::int AS growing,
            (count(*) FILTER (WHERE (w.watch->>'stale')::boolean))::int AS stale
       FROM backlog_watches w JOIN destinations d ON d.id = w.destination_id WHERE d.deleted_at IS NULL`,
  );
  return rows[0] ?? { growing: 0, stale: 0 };
}
