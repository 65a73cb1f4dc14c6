// The range of every number the API takes, in one table. The request schemas (src/schemas/) take
// their minimum and maximum from here, the stored-state check (stored-config.ts) holds what it
// reads to the same ranges, and docs/api.md's table lists them (a test keeps the two in step).
//
// A bound is not there to say "no" for its own sake: each keeps every figure derived from the
// number finite and sensible. A rate of 1e-320 per second made a token's wait Infinity (and the
// claim that computed it never ended); a timeout past the lease column's range broke every claim.

export interface NumberBound {
  /** The API fields it bounds, as docs/api.md's table names them. */
  fields: string;
  min: number;
  max: number;
  integer: boolean;
  /** The unit, for messages: "per second", "s", "ms", … */
  unit: string;
  /** Why these ends, for docs/api.md. */
  why: string;
}

const SECONDS_PER_DAY = 86_400;
const WEEK_SECONDS = 7 * SECONDS_PER_DAY;

export const BOUNDS = {
  timeout_seconds: {
    fields: "timeout_seconds",
    min: 1,
    max: 60,
    integer: true,
    unit: "s",
    why: "a lease is the timeout plus a margin; past a minute a receiver should answer 202 and work later",
  },
  max_concurrency: {
    fields: "max_concurrency",
    min: 1,
    max: 1000,
    integer: true,
    unit: "requests",
    why: "past a thousand in flight one destination would take every worker's send slots",
  },
  rate_per_second: {
    fields: "rate_limit.max_per_second",
    min: 0.001,
    max: 100_000,
    integer: false,
    unit: "per second",
    why: "slower than one per 1,000 s, use max_per_minute; faster than 100,000/s is beyond what a worker can send",
  },
  rate_per_minute: {
    fields: "rate_limit.max_per_minute",
    min: 0.001,
    max: 6_000_000,
    integer: false,
    unit: "per minute",
    why: "0.001 a minute is about one a day (1.44), the slowest rate with a meaning; the top is 100,000/s",
  },
  burst_capacity: {
    fields: "rate_limit.burst_capacity",
    min: 1,
    max: 1_000_000,
    integer: true,
    unit: "tokens",
    why: "a send takes one whole token; a million is more than any receiver takes at once",
  },
  adaptive_rate_per_second: {
    fields: "adaptive.min_per_second, adaptive.max_per_second",
    min: 0.001,
    max: 100_000,
    integer: false,
    unit: "per second",
    why: "the same range as rate_limit.max_per_second",
  },
  target_latency_ms: {
    fields: "adaptive.target_latency_ms",
    min: 1,
    max: 600_000,
    integer: true,
    unit: "ms",
    why: "up to ten minutes, well past the longest timeout",
  },
  retry_delay_seconds: {
    fields: "retry_schedule_seconds[]",
    min: 0,
    max: WEEK_SECONDS,
    integer: true,
    unit: "s",
    why: "0 retries at once; a week is past the longest default delay (a day)",
  },
  retry_schedule_length: {
    fields: "retry_schedule_seconds (length)",
    min: 0,
    max: 50,
    integer: true,
    unit: "retries",
    why: "[] never retries; 50 retries is past any useful schedule",
  },
  throttle_hold_seconds: {
    fields: "throttle_schedule_seconds[]; a Retry-After (longer is this)",
    min: 1,
    max: WEEK_SECONDS,
    integer: true,
    unit: "s",
    why: "at least a second between tries of a throttled destination; at most a week",
  },
  throttle_schedule_length: {
    fields: "throttle_schedule_seconds (length)",
    min: 1,
    max: 50,
    integer: true,
    unit: "holds",
    why: "the last hold repeats, so one is enough; 50 is past any useful escalation",
  },
  probe_interval_seconds: {
    fields: "probe_interval_seconds",
    min: 1,
    max: SECONDS_PER_DAY,
    integer: true,
    unit: "s",
    why: "a paused destination is probed at least once a day",
  },
  paused_retention_hours: {
    fields: "paused_retention_hours",
    min: 1,
    max: 8760,
    integer: true,
    unit: "h",
    why: "held deliveries of a paused destination are kept up to a year",
  },
  backlog_alert_minutes: {
    fields: "backlog_alert_minutes",
    min: 1,
    max: 1440,
    integer: true,
    unit: "min",
    why: "a backlog rising for up to a day",
  },
  backlog_alert_age_minutes: {
    fields: "backlog_alert_age_minutes",
    min: 1,
    max: 43_200,
    integer: true,
    unit: "min",
    why: "an oldest delivery waiting up to 30 days",
  },
  grace_seconds: {
    fields: "rotate-secret grace_seconds",
    min: 0,
    max: WEEK_SECONDS,
    integer: true,
    unit: "s",
    why: "a rotated secret keeps signing up to a week",
  },
  portal_ttl_seconds: {
    fields: "portal-sessions ttl_seconds",
    min: 60,
    max: SECONDS_PER_DAY,
    integer: true,
    unit: "s",
    why: "a portal link works a minute to a day",
  },
  page_limit: {
    fields: "limit (every list, the attempts timeline)",
    min: 1,
    max: 1000,
    integer: true,
    unit: "items",
    why: "a page is read in one statement",
  },
  stats_minutes: {
    fields: "stats minutes",
    min: 5,
    max: 1440,
    integer: true,
    unit: "min",
    why: "the rollups keep a day of minutes in view",
  },
  stats_rate_seconds: {
    fields: "destination stats rate_seconds",
    min: 10,
    max: 3600,
    integer: true,
    unit: "s",
    why: "arrivals per second over up to an hour",
  },
  deliver_at_days_ahead: {
    fields: "deliver_at (days ahead of now)",
    min: 0,
    max: 365,
    integer: true,
    unit: "days",
    why: "an event is scheduled at most a year ahead",
  },
  occurred_at_hours_ahead: {
    fields: "occurred_at (hours ahead of now)",
    min: 0,
    max: 24,
    integer: true,
    unit: "h",
    why: "a clock a day ahead is a clock gone wrong (or seconds sent as milliseconds)",
  },
  payload_depth: {
    fields: "an event payload (nesting)",
    min: 0,
    max: 128,
    integer: true,
    unit: "levels",
    why: "an event's payload is stored as jsonb; far deeper nesting overflows stacks (JSON.stringify at ~5,000 levels, the embedded store's parser hangs at ~12,000)",
  },
  body_depth: {
    fields: "a request body (nesting)",
    min: 0,
    max: 256,
    integer: true,
    unit: "levels",
    why: "a request body is refused unread past this: every body Sluice takes fits well inside it, the payload bound included",
  },
} as const satisfies Record<string, NumberBound>;

export type BoundName = keyof typeof BOUNDS;

/**
 * Instants the API takes (occurred_at, deliver_at, since, until, before) lie within these: every
 * one is a valid Postgres timestamptz and a finite JavaScript Date. Year 0000, which the
 * date-time format admits, is not a Postgres year.
 */
export const EARLIEST_INSTANT = "1970-01-01T00:00:00Z";
export const LATEST_INSTANT = "9999-12-31T23:59:59Z";
export const EARLIEST_MS = Date.parse(EARLIEST_INSTANT);
export const LATEST_MS = Date.parse(LATEST_INSTANT);

/** Whether `v` is a number inside the bound (an integer when the bound asks for one). */
export function withinBound(b: NumberBound, v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v) && v >= b.min && v <= b.max && (!b.integer || Number.isInteger(v));
}

/** "between 0.001 and 100000 per second" (or "a whole number between …"), for messages. */
export function describeBound(b: NumberBound): string {
  return `${b.integer ? "a whole number " : ""}between ${formatNumber(b.min)} and ${formatNumber(b.max)}${b.unit ? ` (${b.unit})` : ""}`;
}

/** Plain digits, never exponent notation (1e-7 or 1e+21 mean nothing to most readers). */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return n.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 20 });
}
