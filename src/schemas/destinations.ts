import { Type, type Static } from "@sinclair/typebox";
import { DAY_NAMES } from "../policy/quiet-hours.js";
import { ATTEMPT_OUTCOMES, DESTINATION_STATUSES, HEALTH_STATUSES } from "../policy/statuses.js";
import { HEADER_MASK, MAX_CUSTOM_HEADERS, MAX_HEADER_NAME_LENGTH, MAX_HEADER_VALUE_LENGTH } from "../policy/custom-headers.js";
import {
  Bounded,
  Loose,
  Enum,
  EVENT_TYPE_PATTERN,
  InstantIn,
  Nullable,
  SECRET_PATTERN,
  TIME_OF_DAY,
  Timestamp,
  URL_PATTERN,
} from "./common.js";
import { BOUNDS } from "../policy/bounds.js";

export const RateLimit = Type.Object(
  {
    max_per_second: Type.Optional(Bounded("rate_per_second")),
    max_per_minute: Type.Optional(Bounded("rate_per_minute")),
    burst_capacity: Type.Optional(Bounded("burst_capacity")),
  },
  { additionalProperties: false, description: "Token buckets; null = unlimited" },
);
export type RateLimit = Static<typeof RateLimit>;

export const AdaptivePace = Type.Object(
  {
    enabled: Type.Boolean({ description: "let Sluice find this destination's pace from its answers (429, 503, timeouts, latency)" }),
    min_per_second: Type.Optional(Bounded("adaptive_rate_per_second", { description: "never slower than this (default 1)" })),
    max_per_second: Type.Optional(
      Bounded("adaptive_rate_per_second", { description: "never faster than this (default 1000, and never above rate_limit when set)" }),
    ),
    target_latency_ms: Type.Optional(
      Bounded("target_latency_ms", {
        description: "slow down when recent latency is above this; default: when it is well above the destination's own baseline",
      }),
    ),
  },
  { additionalProperties: false, description: "Adaptive pace (AIMD); null = off" },
);
export type AdaptivePace = Static<typeof AdaptivePace>;

export const DeliverySchedule = Type.Object(
  {
    timezone: Type.String({ minLength: 1, maxLength: 64, description: "IANA zone name, e.g. Europe/Berlin" }),
    quiet_start: Type.String({ pattern: TIME_OF_DAY, description: "HH:MM[:SS] local time the quiet window starts" }),
    quiet_end: Type.String({
      pattern: TIME_OF_DAY,
      description: "HH:MM[:SS] local time it ends; may be before quiet_start (crosses midnight)",
    }),
    days: Type.Optional(Type.Array(Enum(DAY_NAMES), { minItems: 1, maxItems: 7, uniqueItems: true })),
    applies_to: Type.Optional(Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), { maxItems: 200, uniqueItems: true })),
    bypass_event_types: Type.Optional(Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), { maxItems: 200, uniqueItems: true })),
  },
  { additionalProperties: false, description: "Quiet hours" },
);
export type DeliverySchedule = Static<typeof DeliverySchedule>;

// Name and value rules beyond these bounds (token grammar, reserved names, no CR/LF) are checked
// in policy/custom-headers.ts, whose messages name the header without echoing a secret value.
const CustomHeaders = Type.Unsafe<Record<string, string>>({
  type: "object",
  additionalProperties: Type.String({ maxLength: MAX_HEADER_VALUE_LENGTH }),
  maxProperties: MAX_CUSTOM_HEADERS,
  description:
    "name → value, sent on every request (deliveries and probes). Names: RFC 9110 tokens, case-insensitive; webhook-*, " +
    "content-type, content-length, host, user-agent, expect and hop-by-hop names are reserved. Values: visible ASCII, space, tab. " +
    `Secret values show as ${HEADER_MASK}; a PATCH that sends ${HEADER_MASK} back keeps the stored value`,
});

/** The settable part of a destination; each is one column of destinations. */
const configFields = {
  name: Type.String({ maxLength: 200 }),
  url: Type.String({ minLength: 1, maxLength: 2048, pattern: URL_PATTERN, description: "http or https URL deliveries POST to" }),
  event_types: Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), { maxItems: 500, uniqueItems: true }),
  timeout_seconds: Bounded("timeout_seconds"),
  max_concurrency: Bounded("max_concurrency"),
  ordered: Type.Boolean(),
  rate_limit: Nullable(RateLimit),
  adaptive: Nullable(AdaptivePace),
  delivery_schedule: Nullable(DeliverySchedule),
  retry_schedule_seconds: Type.Array(Bounded("retry_delay_seconds"), {
    minItems: BOUNDS.retry_schedule_length.min,
    maxItems: BOUNDS.retry_schedule_length.max,
  }),
  throttle_schedule_seconds: Type.Array(Bounded("throttle_hold_seconds"), {
    minItems: BOUNDS.throttle_schedule_length.min,
    maxItems: BOUNDS.throttle_schedule_length.max,
  }),
  probe_interval_seconds: Bounded("probe_interval_seconds"),
  replay_on_resume: Type.Boolean(),
  paused_retention_hours: Bounded("paused_retention_hours", {
    description: "how long deliveries wait for a paused destination before they are discarded",
  }),
  backlog_alert_minutes: Nullable(
    Bounded("backlog_alert_minutes", {
      description: "destination.backlog_growing when the waiting deliveries have been rising this long (default 30); null: off",
    }),
  ),
  backlog_alert_age_minutes: Nullable(
    Bounded("backlog_alert_age_minutes", {
      description:
        "destination.backlog_stale when the oldest waiting delivery is older than this, or than twice the hold that explains it (default 60); null: off",
    }),
  ),
  headers: CustomHeaders,
  secret_headers: Type.Array(Type.String({ minLength: 1, maxLength: MAX_HEADER_NAME_LENGTH }), {
    maxItems: MAX_CUSTOM_HEADERS,
    description: `header names whose values are secret: API answers show ${HEADER_MASK} instead (authorization always is)`,
  }),
};
export const DestinationConfig = Type.Object(configFields);
/** A destination's whole config, defaults filled in (api/destination-config.ts). */
export type DestinationConfig = Static<typeof DestinationConfig>;

const Secret = Type.String({ pattern: SECRET_PATTERN, description: "Standard Webhooks secret whsec_<base64>" });

export const DestinationCreate = Type.Composite(
  [
    Type.Pick(DestinationConfig, ["url"]),
    Type.Partial(Type.Omit(DestinationConfig, ["url"])),
    Type.Object({ secret: Type.Optional(Secret) }),
  ],
  { additionalProperties: false },
);
export type DestinationCreate = Static<typeof DestinationCreate>;

export const DestinationPatch = Type.Partial(DestinationCreate, { additionalProperties: false, minProperties: 1 });
export type DestinationPatch = Static<typeof DestinationPatch>;

export const Health = Type.Object({
  status: Enum(HEALTH_STATUSES),
  score: Type.Number({ minimum: 0, maximum: 100 }),
  consecutive_failures: Type.Integer(),
});

export const Destination = Type.Composite(
  [
    Type.Object({ id: Type.String({ description: "dst_…" }) }),
    Loose(DestinationConfig),
    Type.Object({
      secret: Type.Optional(Type.String({ description: "on create only: the signing secret" })),
      status: Enum(DESTINATION_STATUSES),
      throttled_until: Nullable(Timestamp()),
      throttle_reason: Nullable(Type.String()),
      paused_at: Nullable(Timestamp()),
      pause_reason: Nullable(Type.String()),
      quiet_until: Nullable(Timestamp("while a quiet window is open: when it ends")),
      next_quiet_at: Nullable(Timestamp("when the next quiet window starts")),
      next_probe_at: Nullable(Timestamp("paused for a transient cause: when the next probe goes")),
      ramp_limit: Nullable(
        Type.Integer({ description: "recovering after a probe: the concurrency it may use now, rising to max_concurrency" }),
      ),
      effective_rate_per_second: Nullable(
        Type.Number({ description: "the pace sends go at now: adaptive pace's when enabled, else rate_limit's; null = unlimited" }),
      ),
      effective_concurrency: Type.Integer({
        description: "requests it may have in flight now: max_concurrency, lowered by adaptive pace or a recovery ramp",
      }),
      pace_reason: Nullable(Type.String({ description: "adaptive pace: why it last changed" })),
      pace_changed_at: Nullable(Timestamp("adaptive pace: when it last changed")),
      backlog_alerts: Type.Array(Enum(["growing", "stale"] as const), {
        description: "backlog alerts standing now (destination.backlog_growing, destination.backlog_stale), until backlog_recovered",
      }),
      queued_events: Type.Integer({ description: "deliveries not yet finished" }),
      inflight: Type.Integer({ description: "deliveries in flight now" }),
      health: Health,
      discarded: Type.Optional(Type.Integer({ description: "on resume only: held deliveries discarded" })),
      created_at: Timestamp(),
      updated_at: Timestamp(),
    }),
  ],
  { $id: "Destination" },
);
export type Destination = Static<typeof Destination>;

export const PauseBody = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false });
export const ResumeBody = Type.Object(
  { replay: Type.Optional(Type.Boolean({ description: "deliver what was held (true) or discard it; default replay_on_resume" })) },
  { additionalProperties: false },
);
export const RotateSecretBody = Type.Object(
  {
    secret: Type.Optional(Secret),
    grace_seconds: Type.Optional(Bounded("grace_seconds", { description: "how long the previous secrets keep signing (default 24 h)" })),
  },
  { additionalProperties: false },
);

export const DestinationSecret = Type.Object(
  {
    secret: Type.String({ description: "the current signing secret" }),
    previous: Type.Array(Type.Object({ secret: Type.String(), expires_at: Nullable(Timestamp()) }), {
      description: "earlier secrets that still sign until expires_at",
    }),
  },
  { $id: "DestinationSecret" },
);

export const Attempt = Type.Object(
  {
    delivery_id: Nullable(Type.String({ description: "null for a probe" })),
    kind: Enum(["delivery", "probe"] as const),
    class: Nullable(Type.String({ description: "how the answer was classified: 2xx, 4xx, 5xx, 429, timeout, dns, …" })),
    attempt: Type.Integer(),
    started_at: Timestamp(),
    latency_ms: Type.Number(),
    outcome: Enum(ATTEMPT_OUTCOMES),
    status_code: Nullable(Type.Integer()),
    error_class: Nullable(Type.String()),
    error_message: Nullable(Type.String()),
    response_body: Nullable(Type.String({ description: "at most 1 KiB of the answer" })),
  },
  { $id: "Attempt" },
);
export type Attempt = Static<typeof Attempt>;

export const TimelineQuery = Type.Object(
  {
    limit: Type.Optional(Bounded("page_limit", { default: 100 })),
    before: Type.Optional(InstantIn("only attempts started before this time (the next_before of the previous page)")),
  },
  { additionalProperties: false },
);

export const AttemptTimeline = Type.Object({
  data: Type.Array(Type.Ref(Attempt)),
  next_before: Nullable(Timestamp("pass as `before` for the next page")),
});
