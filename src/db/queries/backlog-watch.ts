import type { Queryable } from "../db.js";
import type { BacklogWatch } from "../../policy/backlog-alerts.js";
import type { AdaptiveConfig, PaceState } from "../../policy/adaptive-pace.js";
import type { DeliverySchedule } from "../../policy/quiet-hours.js";
import type { RateLimit } from "../../policy/token-bucket.js";
import type { HealthStatus } from "../../policy/statuses.js";

// The backlog watch's reads and writes (dispatch/backlog-watch.ts, run by the stats rollup under
// its advisory lock: one writer of backlog_watch at a time).

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
    `SELECT id, tenant_id, name, url, paused_at, throttled_until, consecutive_throttles, throttle_schedule_seconds, delivery_schedule,
            rate_limit, adaptive, pace_state, max_concurrency, ramp_limit, backlog_alert_minutes, backlog_alert_age_minutes,
            backlog_watch, health_window, health_status, consecutive_failures, consecutive_auth_failures
       FROM destinations
      WHERE deleted_at IS NULL AND (id = ANY($1::text[]) OR backlog_watch IS NOT NULL)
      ORDER BY id`,
    [ids],
  );
}

export async function setBacklogWatch(q: Queryable, updates: { id: string; watch: BacklogWatch | null }[]): Promise<void> {
  if (updates.length === 0) return;
  // Row locks in id order first, as the write-backs take them: an UPDATE … FROM locks in whatever
  // order its join runs, and deadlocked with them (found by bench:adaptive).
  await q.query("SELECT id FROM destinations WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE", [updates.map((u) => u.id).sort()]);
  await q.query(
    `UPDATE destinations d SET backlog_watch = u.watch
       FROM jsonb_to_recordset($1::jsonb) AS u(id text, watch jsonb)
      WHERE d.id = u.id`,
    [JSON.stringify(updates)],
  );
}

/** Live destinations with a backlog alert standing, by kind (the sluice_backlog_alerts gauge). */
export async function backlogAlertsStanding(q: Queryable): Promise<{ growing: number; stale: number }> {
  const rows = await q.query<{ growing: number; stale: number }>(
    `SELECT (count(*) FILTER (WHERE (backlog_watch->>'growing')::boolean))::int AS growing,
            (count(*) FILTER (WHERE (backlog_watch->>'stale')::boolean))::int AS stale
       FROM destinations WHERE deleted_at IS NULL AND backlog_watch IS NOT NULL`,
  );
  return rows[0] ?? { growing: 0, stale: 0 };
}
