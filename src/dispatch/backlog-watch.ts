import type { Queryable } from "../db/db.js";
import type { HeldGroup } from "../db/queries/stats.js";
import { backlogWatchRows, setBacklogWatch, type BacklogWatchRow } from "../db/queries/backlog-watch.js";
import { alertInput, recordAlerts, type AlertInput } from "../alerts/alerts.js";
import { expectedHoldSeconds, watchBacklog, type BacklogWatch } from "../policy/backlog-alerts.js";
import { holdReason } from "../policy/hold-reason.js";
import { healthStateOf, healthView } from "../policy/health.js";
import { throttleHoldSeconds } from "../policy/throttle.js";
import { effectiveLimits, ratePerSecond } from "../policy/adaptive-pace.js";
import { unlessFaulty } from "../policy/stored-config.js";

// Once a minute, with the backlog sample (stats-rollup.ts): each destination's backlog watch,
// and the backlog alerts its transitions make — written in the rollup's transaction, so an
// alert is recorded exactly when its finding is.

export interface BacklogLook {
  destinations: number;
  alerts: number;
}

/** `groups`: every waiting group (heldGroups); `quiet`: destinations whose quiet window is open now. */
export async function lookAtBacklogs(
  q: Queryable,
  groups: readonly HeldGroup[],
  quiet: ReadonlySet<string>,
  nowMs: number,
): Promise<BacklogLook> {
  // Waiting now, less deliveries scheduled for later: they are not late.
  const waiting = new Map<string, { n: number; oldestAgeS: number }>();
  for (const g of groups) {
    if (holdReason(g) === "scheduled") continue;
    const w = waiting.get(g.destination_id) ?? { n: 0, oldestAgeS: 0 };
    w.n += g.n;
    w.oldestAgeS = Math.max(w.oldestAgeS, g.oldest_age_s);
    waiting.set(g.destination_id, w);
  }
  const rows = await backlogWatchRows(q, [...waiting.keys()]);
  const updates: { id: string; watch: BacklogWatch | null }[] = [];
  const alerts: AlertInput[] = [];
  for (const d of rows) {
    const w = waiting.get(d.id);
    const n = w?.n ?? 0;
    // A row the policy cannot read is not watched this round (the claim sets it aside); the rest are.
    const looked = unlessFaulty(() => lookAt(d, w, n, quiet, nowMs), null);
    if (looked === null) continue;
    const { watch, transitions } = looked;
    if (!sameWatch(watch, d.backlog_watch)) updates.push({ id: d.id, watch });
    for (const t of transitions) {
      alerts.push(
        alertInput(d, t.type, t.reason, healthView(healthStateOf(d)), {
          queued_events: n,
          oldest_waiting_age_seconds: w ? Math.round(w.oldestAgeS) : null,
        }),
      );
    }
  }
  await setBacklogWatch(q, updates);
  return { destinations: rows.length, alerts: await recordAlerts(q, alerts) };
}

function lookAt(d: BacklogWatchRow, w: { oldestAgeS: number } | undefined, n: number, quiet: ReadonlySet<string>, nowMs: number) {
  return watchBacklog(
    d.backlog_watch,
    {
      nowMs,
      waiting: n,
      oldestAgeS: w ? w.oldestAgeS : null,
      paused: d.paused_at !== null,
      quiet: quiet.has(d.id),
      expectedHoldS: expectedHold(d, n, nowMs),
    },
    { growMinutes: d.backlog_alert_minutes, ageMinutes: d.backlog_alert_age_minutes },
  );
}

/** Field by field: jsonb keeps its own key order, so the JSON texts differ when the watches do not. */
function sameWatch(a: BacklogWatch | null, b: BacklogWatch | null): boolean {
  if (a === null || b === null) return a === b;
  return a.runSinceMs === b.runSinceMs && a.floor === b.floor && a.growing === b.growing && a.stale === b.stale;
}

function expectedHold(d: BacklogWatchRow, waiting: number, nowMs: number): number {
  return expectedHoldSeconds({
    nowMs,
    schedule: d.delivery_schedule,
    throttledUntilMs: d.throttled_until?.getTime() ?? null,
    throttleHoldS: throttleHoldSeconds(d.throttle_schedule_seconds, Math.max(1, d.consecutive_throttles), null),
    waiting,
    ratePerSecond: ratePerSecond(effectiveLimits(d, nowMs).rateLimit),
  });
}
