import type { DestinationRow, DestinationCounts } from "../db/queries/destinations.js";
import type { DeliveryRow, AttemptRowOut } from "../db/queries/deliveries.js";
import type { EventRow } from "../db/queries/events.js";
import type { TenantRow } from "../db/queries/tenants.js";
import { currentQuietWindow, nextQuietStartMs, type DeliverySchedule } from "../policy/quiet-hours.js";
import { healthView } from "../policy/health.js";
import { holdReason, type HoldFacts } from "../policy/hold-reason.js";
import { isWaiting, type ApiDeliveryStatus, type DestinationStatus, type WaitingStatus } from "../policy/statuses.js";

// Rows → API objects. Live state that is not stored per delivery (held because the destination
// is paused or throttled) is derived here, at read time: holding a destination writes nothing
// to its deliveries.

const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);

export function tenantView(t: TenantRow) {
  return { id: t.id, name: t.name, alert_email: t.alert_email, created_at: iso(t.created_at), updated_at: iso(t.updated_at) };
}

type StatusInput = Pick<DestinationRow, "paused_at" | "throttled_until" | "rate_limited" | "rate_limit" | "delivery_schedule" | "now">;

export function destinationStatus(row: StatusInput, quiet = quietWindowOf(row), waiting = 1): DestinationStatus {
  if (row.paused_at) return "paused";
  if (row.throttled_until && row.throttled_until > row.now) return "throttled";
  if (quiet) return "quiet";
  // The flag is the last claim's finding; with nothing left waiting it is stale.
  if (row.rate_limited && row.rate_limit && waiting > 0) return "rate_limited";
  return "active";
}

function quietWindowOf(row: Pick<DestinationRow, "delivery_schedule" | "now">) {
  return row.delivery_schedule ? currentQuietWindow(row.delivery_schedule, row.now.getTime()) : null;
}

function healthOf(row: DestinationRow) {
  return healthView({
    window: row.health_window,
    consecutiveFailures: row.consecutive_failures,
    consecutiveAuthFailures: row.consecutive_auth_failures,
    status: row.health_status,
  });
}

export function destinationView(row: DestinationRow, counts: DestinationCounts | undefined, opts: { withSecret?: boolean } = {}) {
  const throttled = row.throttled_until !== null && row.throttled_until > row.now;
  const quiet = quietWindowOf(row);
  const nextQuiet = row.delivery_schedule ? nextQuietStartMs(row.delivery_schedule, row.now.getTime()) : null;
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    event_types: row.event_types,
    ...(opts.withSecret ? { secret: row.secrets[0]?.secret } : {}),
    timeout_seconds: row.timeout_seconds,
    max_concurrency: row.max_concurrency,
    ordered: row.ordered,
    rate_limit: row.rate_limit,
    delivery_schedule: row.delivery_schedule,
    retry_schedule_seconds: row.retry_schedule_seconds,
    throttle_schedule_seconds: row.throttle_schedule_seconds,
    probe_interval_seconds: row.probe_interval_seconds,
    replay_on_resume: row.replay_on_resume,
    paused_retention_hours: row.paused_retention_hours,
    status: destinationStatus(row, quiet, (counts?.queued ?? 0) - (counts?.inflight ?? 0)),
    throttled_until: throttled ? iso(row.throttled_until) : null,
    throttle_reason: throttled ? row.throttle_reason : null,
    paused_at: iso(row.paused_at),
    pause_reason: row.paused_at ? row.pause_reason : null,
    quiet_until: quiet ? iso(new Date(quiet.endMs)) : null,
    next_quiet_at: nextQuiet === null ? null : iso(new Date(nextQuiet)),
    next_probe_at: row.paused_at && row.pause_cause === "transient" ? iso(row.next_probe_at) : null,
    ramp_limit: row.paused_at ? null : row.ramp_limit,
    queued_events: counts?.queued ?? 0,
    inflight: counts?.inflight ?? 0,
    health: healthOf(row),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function deliveryView(r: DeliveryRow) {
  const waiting = isWaiting(r.status);
  const reason = isWaiting(r.status) ? holdReason(deliveryHoldFacts(r, r.status)) : null;
  const status: ApiDeliveryStatus = reason ? "held" : r.status;
  return {
    id: r.id,
    event_id: r.event_id,
    destination_id: r.destination_id,
    status,
    attempts: r.attempts,
    next_attempt_at: waiting ? iso(r.next_attempt_at) : null,
    hold_reason: reason,
    last_error: r.last_error,
    last_status_code: r.last_status_code,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

/** What holds a waiting delivery back, from its row and its destination's live state at the row's `now`. */
export function deliveryHoldFacts(r: DeliveryRow, status: WaitingStatus): HoldFacts {
  const due = r.next_attempt_at <= r.now;
  return {
    status,
    attempted: r.attempts > 0,
    due,
    paused: r.d_paused_at !== null,
    throttled: r.d_throttled_until !== null && r.d_throttled_until > r.now,
    quiet:
      r.quiet_hold &&
      r.d_delivery_schedule !== null &&
      currentQuietWindow(r.d_delivery_schedule as DeliverySchedule, r.now.getTime()) !== null,
    behind: r.behind,
    atCap: r.at_cap,
    rateLimited: r.d_rate_limited,
  };
}

export function eventView(e: EventRow) {
  return {
    id: e.id,
    type: e.type,
    payload: e.payload,
    occurred_at: iso(e.occurred_at),
    deliver_at: iso(e.deliver_at),
    created_at: iso(e.created_at),
  };
}

export function attemptView(a: AttemptRowOut) {
  return {
    delivery_id: a.delivery_id.startsWith("prb_") ? null : a.delivery_id,
    kind: a.delivery_id.startsWith("prb_") ? "probe" : "delivery",
    class: a.class,
    attempt: a.attempt_no,
    started_at: iso(a.started_at),
    latency_ms: a.latency_ms,
    outcome: a.outcome,
    status_code: a.status_code,
    error_class: a.error_class,
    error_message: a.error_message,
    response_body: a.response_body,
  };
}

/** Opaque page cursors: the last id of the page, base64url-encoded. */
export function encodeCursor(id: string): string {
  return Buffer.from(id, "utf8").toString("base64url");
}

export function decodeCursor(cursor: string | undefined): string | null | undefined {
  if (cursor === undefined || cursor === "") return null;
  const id = Buffer.from(cursor, "base64url").toString("utf8");
  return /^[a-z]{3}_[0-9a-f]{27}$/.test(id) ? id : undefined; // undefined: not a cursor of ours
}

export function page<T extends { id: string }>(rows: T[], limit: number) {
  const last = rows[rows.length - 1];
  return { data: rows, next_cursor: rows.length === limit && last ? encodeCursor(last.id) : null };
}
