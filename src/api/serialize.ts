import { ValidationError } from "../errors.js";
// The views are typed by the response schemas: a view that drifts from its schema fails to compile.
import type { Static } from "@sinclair/typebox";
import type { Tenant } from "../schemas/tenants.js";
import type { ApiKey } from "../schemas/api-keys.js";
import type { Attempt, Destination } from "../schemas/destinations.js";
import type { Delivery } from "../schemas/deliveries.js";
import type { Event } from "../schemas/events.js";
import type { Recovery } from "../schemas/recoveries.js";
import type { DestinationRow, DestinationCounts } from "../db/queries/destinations.js";
import type { DeliveryRow, AttemptRowOut } from "../db/queries/deliveries.js";
import type { EventRow, EventCursor } from "../db/queries/events.js";
import type { RecoveryRow } from "../db/queries/recoveries.js";
import type { TenantRow } from "../db/queries/tenants.js";
import type { ApiKeyRow } from "../db/queries/api-keys.js";
import { currentQuietWindow, nextQuietStartMs, type DeliverySchedule } from "../policy/quiet-hours.js";
import { healthStateOf, healthView } from "../policy/health.js";
import { adaptiveOn, effectiveLimits, fmt, ratePerSecond } from "../policy/adaptive-pace.js";
import { maskHeaders } from "../policy/custom-headers.js";
import { holdReason, type HoldFacts } from "../policy/hold-reason.js";
import { storedDestinationProblem, unlessFaulty } from "../policy/stored-config.js";
import { isWaiting, type ApiDeliveryStatus, type DestinationStatus, type WaitingStatus } from "../policy/statuses.js";
import { traceIdOf } from "../policy/trace-context.js";

// Rows → API objects. Live state that is not stored per delivery (held because the destination
// is paused or throttled) is derived here, at read time: holding a destination writes nothing
// to its deliveries.

/** RFC 3339 in UTC; null stays null (the overloads keep a non-null Date's type non-null). */
function iso(d: Date): string;
function iso(d: Date | null | undefined): string | null;
function iso(d: Date | null | undefined): string | null {
  return d ? d.toISOString() : null;
}

export function tenantView(t: TenantRow): Static<typeof Tenant> {
  return { id: t.id, name: t.name, alert_email: t.alert_email, created_at: iso(t.created_at), updated_at: iso(t.updated_at) };
}

/** An API key as listed: never the key, nor its hash (the row holds neither). */
export function apiKeyView(k: ApiKeyRow): Static<typeof ApiKey> {
  return { id: k.id, name: k.name, prefix: k.prefix, created_at: iso(k.created_at) };
}

type StatusInput = Pick<
  DestinationRow,
  "paused_at" | "throttled_until" | "rate_limited" | "rate_limit" | "adaptive" | "delivery_schedule" | "now"
>;

export function destinationStatus(row: StatusInput, quiet = quietWindowOf(row), waiting = 1): DestinationStatus {
  if (row.paused_at) return "paused";
  if (row.throttled_until && row.throttled_until > row.now) return "throttled";
  if (quiet) return "quiet";
  // The flag is the last claim's finding; with nothing left waiting it is stale.
  if (row.rate_limited && (row.rate_limit || adaptiveOn(row.adaptive)) && waiting > 0) return "rate_limited";
  return "active";
}

function quietWindowOf(row: Pick<DestinationRow, "delivery_schedule" | "now">) {
  return row.delivery_schedule ? currentQuietWindow(row.delivery_schedule, row.now.getTime()) : null;
}

export function destinationView(
  row: DestinationRow,
  counts: DestinationCounts | undefined,
  opts: { withSecret?: boolean } = {},
): Static<typeof Destination> {
  const throttled = row.throttled_until !== null && row.throttled_until > row.now;
  const { quiet, nextQuiet, limits, paceStarted } = derivedState(row);
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
    adaptive: row.adaptive,
    delivery_schedule: row.delivery_schedule,
    retry_schedule_seconds: row.retry_schedule_seconds,
    throttle_schedule_seconds: row.throttle_schedule_seconds,
    probe_interval_seconds: row.probe_interval_seconds,
    replay_on_resume: row.replay_on_resume,
    paused_retention_hours: row.paused_retention_hours,
    backlog_alert_minutes: row.backlog_alert_minutes,
    backlog_alert_age_minutes: row.backlog_alert_age_minutes,
    // Secret values never leave through the API: authorization and secret_headers show the mask.
    headers: maskHeaders(row.headers, row.secret_headers),
    secret_headers: row.secret_headers,
    status: destinationStatus(row, quiet, (counts?.queued ?? 0) - (counts?.inflight ?? 0)),
    throttled_until: throttled ? iso(row.throttled_until) : null,
    throttle_reason: throttled ? row.throttle_reason : null,
    paused_at: iso(row.paused_at),
    pause_reason: row.paused_at ? row.pause_reason : null,
    quiet_until: quiet ? iso(new Date(quiet.endMs)) : null,
    next_quiet_at: nextQuiet === null ? null : iso(new Date(nextQuiet)),
    next_probe_at: row.paused_at && row.pause_cause === "transient" ? iso(row.next_probe_at) : null,
    ramp_limit: row.paused_at ? null : row.ramp_limit,
    effective_rate_per_second: ratePerSecond(limits.rateLimit),
    effective_concurrency: limits.maxConcurrency,
    pace_reason: limits.pace === null ? null : paceStarted ? limits.pace.reason : `adaptive pace starts at ${fmt(limits.pace.rate)}/s`,
    pace_changed_at: paceStarted ? iso(new Date(limits.pace!.changedAtMs)) : null,
    backlog_alerts: [...(row.backlog_watch?.growing ? ["growing" as const] : []), ...(row.backlog_watch?.stale ? ["stale" as const] : [])],
    queued_events: counts?.queued ?? 0,
    inflight: counts?.inflight ?? 0,
    health: healthView(healthStateOf(row)),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/**
 * What the destination's policy makes of its config now: the quiet window, adaptive pace's limits.
 * A row the workers would set aside (stored-config.ts) is shown as stored, with no derived state:
 * reading it must never fail, so its owner can see what to mend.
 */
function derivedState(row: DestinationRow): {
  quiet: ReturnType<typeof quietWindowOf>;
  nextQuiet: number | null;
  limits: ReturnType<typeof effectiveLimits>;
  paceStarted: boolean;
} {
  const asStored = {
    quiet: null,
    nextQuiet: null,
    limits: { rateLimit: null, maxConcurrency: row.max_concurrency, pace: null },
    paceStarted: false,
  };
  if (storedDestinationProblem(row) !== null) return asStored;
  try {
    const quiet = quietWindowOf(row);
    const nextQuiet = row.delivery_schedule ? nextQuietStartMs(row.delivery_schedule, row.now.getTime()) : null;
    // A paused destination's ramp is history: resuming starts a new one.
    const limits = effectiveLimits({ ...row, ramp_limit: row.paused_at ? null : row.ramp_limit }, row.now.getTime());
    const paceStarted = limits.pace !== null && row.pace_state !== null;
    if (!Number.isSafeInteger(limits.maxConcurrency) || (paceStarted && !Number.isFinite(limits.pace!.changedAtMs))) return asStored;
    return { quiet, nextQuiet, limits, paceStarted };
  } catch {
    return asStored;
  }
}

export function deliveryView(r: DeliveryRow): Static<typeof Delivery> {
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
    trace_id: traceIdOf(r.traceparent),
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
      unlessFaulty(() => currentQuietWindow(r.d_delivery_schedule as DeliverySchedule, r.now.getTime()) !== null, false),
    behind: r.behind,
    atCap: r.at_cap,
    rateLimited: r.d_rate_limited,
  };
}

export function eventView(e: EventRow): Static<typeof Event> {
  return {
    id: e.id,
    type: e.type,
    payload: e.payload,
    occurred_at: iso(e.occurred_at),
    deliver_at: iso(e.deliver_at),
    created_at: iso(e.created_at),
    trace_id: traceIdOf(e.traceparent),
  };
}

export function attemptView(a: AttemptRowOut): Static<typeof Attempt> {
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
/** A list's `cursor` that no page gave out (decodeCursor / decodeTimeCursor answered undefined). */
export function badCursor(): ValidationError {
  return new ValidationError("request", [
    { field: "query.cursor", message: "is not a cursor returned by a previous page; pass next_cursor as is" },
  ]);
}

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

/** Cursors of lists ordered by time, then id (events): the last item's time to the microsecond and id. */
export function encodeTimeCursor(c: EventCursor): string {
  return Buffer.from(`${c.at} ${c.id}`, "utf8").toString("base64url");
}

export function decodeTimeCursor(cursor: string | undefined): EventCursor | null | undefined {
  if (cursor === undefined || cursor === "") return null;
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) ([a-z]{3}_[0-9a-f]{27})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  // A real time (no 30 February), or Postgres would refuse it: the round trip keeps the text.
  const real = m && new Date(Date.parse(m[1]!) || 0).toISOString().slice(0, 19) === m[1]!.slice(0, 19);
  return m && real ? { at: m[1]!, id: m[2]! } : undefined; // undefined: not a cursor of ours
}

export function recoveryView(r: RecoveryRow): Static<typeof Recovery> {
  return {
    id: r.id,
    destination_id: r.destination_id,
    since: iso(r.since),
    until: iso(r.until),
    statuses: r.statuses,
    status: r.status,
    deliveries: r.deliveries,
    requeued: r.requeued,
    created_at: iso(r.created_at),
    finished_at: iso(r.finished_at),
  };
}
