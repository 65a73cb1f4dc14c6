import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { API_DELIVERY_STATUSES, DESTINATION_STATUSES, HEALTH_STATUSES } from "../policy/statuses.js";

// Request and response schemas: the same objects validate requests (ajv, all errors at once,
// unknown fields refused) and generate the OpenAPI document at /openapi.json.

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const DAY_NAMES = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export const TIME_OF_DAY = "^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$";
// Event types: no spaces, no `*` (reserved for patterns).
export const EVENT_TYPE = "^[A-Za-z0-9_.:/\\-]{1,200}$";
export const EVENT_TYPE_PATTERN = "^[A-Za-z0-9_.:/\\-]{0,200}\\*?$";
export const URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://";
export const SECRET_PATTERN = "^whsec_[A-Za-z0-9+/=]{16,200}$";

const Seconds = (min: number, max: number) => Type.Integer({ minimum: min, maximum: max });

export const RateLimit = Type.Object(
  {
    max_per_second: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 100_000 })),
    max_per_minute: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 6_000_000 })),
    burst_capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  },
  { additionalProperties: false, description: "Token buckets; null = unlimited" },
);

export const DeliverySchedule = Type.Object(
  {
    timezone: Type.String({ minLength: 1, maxLength: 64, description: "IANA zone name, e.g. Europe/Berlin" }),
    quiet_start: Type.String({ pattern: TIME_OF_DAY, description: "HH:MM[:SS] local time the quiet window starts" }),
    quiet_end: Type.String({
      pattern: TIME_OF_DAY,
      description: "HH:MM[:SS] local time it ends; may be before quiet_start (crosses midnight)",
    }),
    days: Type.Optional(Type.Array(Type.Union(DAY_NAMES.map((d) => Type.Literal(d))), { minItems: 1, maxItems: 7, uniqueItems: true })),
    applies_to: Type.Optional(Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), { maxItems: 200, uniqueItems: true })),
    bypass_event_types: Type.Optional(Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), { maxItems: 200, uniqueItems: true })),
  },
  { additionalProperties: false, description: "Quiet hours" },
);

const destinationConfig = {
  name: Type.String({ maxLength: 200 }),
  url: Type.String({ minLength: 1, maxLength: 2048, pattern: URL_PATTERN, description: "http or https URL deliveries POST to" }),
  event_types: Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), { maxItems: 500, uniqueItems: true }),
  secret: Type.String({ pattern: SECRET_PATTERN, description: "Standard Webhooks secret whsec_<base64>" }),
  timeout_seconds: Seconds(1, 60),
  max_concurrency: Type.Integer({ minimum: 1, maximum: 1000 }),
  ordered: Type.Boolean(),
  rate_limit: Nullable(RateLimit),
  delivery_schedule: Nullable(DeliverySchedule),
  retry_schedule_seconds: Type.Array(Seconds(0, 7 * 86400), { maxItems: 50 }),
  throttle_schedule_seconds: Type.Array(Seconds(1, 7 * 86400), { minItems: 1, maxItems: 50 }),
  probe_interval_seconds: Seconds(1, 86400),
  replay_on_resume: Type.Boolean(),
  paused_retention_hours: Type.Integer({
    minimum: 1,
    maximum: 8760,
    description: "how long deliveries wait for a paused destination before they are discarded",
  }),
};

export const DestinationCreate = Type.Object(
  {
    url: destinationConfig.url,
    name: Type.Optional(destinationConfig.name),
    event_types: Type.Optional(destinationConfig.event_types),
    secret: Type.Optional(destinationConfig.secret),
    timeout_seconds: Type.Optional(destinationConfig.timeout_seconds),
    max_concurrency: Type.Optional(destinationConfig.max_concurrency),
    ordered: Type.Optional(destinationConfig.ordered),
    rate_limit: Type.Optional(destinationConfig.rate_limit),
    delivery_schedule: Type.Optional(destinationConfig.delivery_schedule),
    retry_schedule_seconds: Type.Optional(destinationConfig.retry_schedule_seconds),
    throttle_schedule_seconds: Type.Optional(destinationConfig.throttle_schedule_seconds),
    probe_interval_seconds: Type.Optional(destinationConfig.probe_interval_seconds),
    replay_on_resume: Type.Optional(destinationConfig.replay_on_resume),
    paused_retention_hours: Type.Optional(destinationConfig.paused_retention_hours),
  },
  { additionalProperties: false },
);
export type DestinationCreate = Static<typeof DestinationCreate>;

export const DestinationPatch = Type.Partial(DestinationCreate, { additionalProperties: false, minProperties: 1 });
export type DestinationPatch = Static<typeof DestinationPatch>;

export const Health = Type.Object({
  status: Type.Union(HEALTH_STATUSES.map((s) => Type.Literal(s))),
  score: Type.Number(),
  consecutive_failures: Type.Integer(),
});

export const Destination = Type.Object({
  id: Type.String(),
  ...destinationConfig,
  secret: Type.Optional(destinationConfig.secret),
  status: Type.Union(DESTINATION_STATUSES.map((s) => Type.Literal(s))),
  throttled_until: Nullable(Type.String({ format: "date-time" })),
  throttle_reason: Nullable(Type.String()),
  paused_at: Nullable(Type.String({ format: "date-time" })),
  pause_reason: Nullable(Type.String()),
  quiet_until: Nullable(Type.String({ format: "date-time", description: "while a quiet window is open: when it ends" })),
  next_quiet_at: Nullable(Type.String({ format: "date-time", description: "when the next quiet window starts" })),
  next_probe_at: Nullable(Type.String({ format: "date-time", description: "paused for a transient cause: when the next probe goes" })),
  ramp_limit: Nullable(
    Type.Integer({ description: "recovering after a probe: the concurrency it may use now, rising to max_concurrency" }),
  ),
  queued_events: Type.Integer(),
  inflight: Type.Integer(),
  health: Health,
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
});

export const PauseBody = Type.Object({ reason: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false });
export const ResumeBody = Type.Object({ replay: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
export const RotateSecretBody = Type.Object(
  {
    secret: Type.Optional(destinationConfig.secret),
    grace_seconds: Type.Optional(Seconds(0, 7 * 86400)),
  },
  { additionalProperties: false },
);

export const EventIn = Type.Object(
  {
    type: Type.String({ pattern: EVENT_TYPE, description: "Event type, e.g. order.created" }),
    payload: Type.Unknown({ description: "Any JSON value; at most SLUICE_MAX_PAYLOAD_BYTES" }),
    occurred_at: Type.Optional(Type.String({ format: "date-time" })),
    deliver_at: Type.Optional(Type.String({ format: "date-time" })),
    destination_ids: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 1000, uniqueItems: true }),
    ),
  },
  { additionalProperties: false, required: ["type", "payload"] },
);
export type EventIn = Static<typeof EventIn>;

export const EventBatch = Type.Object({ events: Type.Array(EventIn, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });
export type EventBatch = Static<typeof EventBatch>;

export const EventAccepted = Type.Object({ id: Type.String(), deliveries: Type.Integer() });

export const Delivery = Type.Object({
  id: Type.String(),
  event_id: Type.String(),
  destination_id: Type.String(),
  status: Type.Union(API_DELIVERY_STATUSES.map((s) => Type.Literal(s))),
  attempts: Type.Integer(),
  next_attempt_at: Nullable(Type.String({ format: "date-time" })),
  hold_reason: Nullable(Type.String()),
  last_error: Nullable(Type.String()),
  last_status_code: Nullable(Type.Integer()),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
});

export const TenantCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    alert_email: Type.Optional(Nullable(Type.String({ format: "email", maxLength: 320 }))),
  },
  { additionalProperties: false },
);
export const TenantPatch = Type.Partial(TenantCreate, { additionalProperties: false, minProperties: 1 });

export const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);

export const DeliveryListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    cursor: Type.Optional(Type.String({ maxLength: 200 })),
    destination_id: Type.Optional(Type.String({ maxLength: 100 })),
    event_id: Type.Optional(Type.String({ maxLength: 100 })),
    status: Type.Optional(Type.Union(API_DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
  },
  { additionalProperties: false },
);

export const TimelineQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    before: Type.Optional(
      Type.String({
        format: "date-time",
        description: "only attempts started before this time (the last started_at of the previous page)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const ErrorBody = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String(), details: Type.Optional(Type.Unknown()) }),
});
