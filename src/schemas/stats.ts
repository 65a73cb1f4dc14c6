import { Type, type Static } from "@sinclair/typebox";
import { HOLD_REASONS } from "../policy/statuses.js";
import { Bounded, Enum, Nullable, Timestamp } from "./common.js";

// The dashboard's numbers: GET /v1/stats (the tenant, or a portal session's destinations) and
// GET /v1/destinations/{id}/stats. Counts are per minute from the rollups plus a live tail;
// docs/api.md "Stats" says where each number comes from and what it costs.

const Minutes = Bounded("stats_minutes", { default: 60, description: "how many minutes back, the current one included" });

export const StatsQuery = Type.Object({ minutes: Type.Optional(Minutes) }, { additionalProperties: false });
export type StatsQuery = Static<typeof StatsQuery>;

export const DestinationStatsQuery = Type.Object(
  {
    minutes: Type.Optional(Minutes),
    rate_seconds: Type.Optional(
      Bounded("stats_rate_seconds", { default: 300, description: "how many seconds of arrivals, the current one included" }),
    ),
  },
  { additionalProperties: false },
);
export type DestinationStatsQuery = Static<typeof DestinationStatsQuery>;

const Count = (description: string) => Type.Integer({ minimum: 0, description });
const LatencyMs = (p: string) =>
  Nullable(Type.Number({ description: `publish→delivery latency of the minute's deliveries, ${p}, in ms; null: none delivered` }));

const Held = Type.Object({
  reason: Enum(HOLD_REASONS),
  n: Count("deliveries held for this reason now"),
  oldest_age_seconds: Type.Number({ description: "since the oldest of them was published" }),
});

const ByClass = Type.Unsafe<Record<string, number>>({
  type: "object",
  additionalProperties: { type: "integer" },
  description:
    "attempts that did not deliver, by error class without its http_ prefix: 5xx, 4xx, 429, 410, 3xx, timeout, connection, dns, tls, …",
});

export const Stats = Type.Object(
  {
    since: Timestamp("start of the first minute of series"),
    until: Timestamp("now, by the store's clock: the last minute of series is still counting"),
    bucket_seconds: Type.Literal(60),
    series: Type.Array(
      Type.Object({
        at: Timestamp("the minute's start"),
        delivered: Count("attempts that delivered (2xx)"),
        failed: Count("attempts that failed (any error class; 429 not included)"),
        rate_limited: Count("attempts answered 429"),
        latency_p50_ms: LatencyMs("median"),
        latency_p95_ms: LatencyMs("95th percentile"),
        latency_p99_ms: LatencyMs("99th percentile"),
      }),
      { description: "one per minute, oldest first; minutes without attempts are zeros" },
    ),
    backlog: Type.Array(
      Type.Object({
        at: Timestamp("the minute the sample was taken in"),
        reason: Enum(HOLD_REASONS),
        n: Count("deliveries held for this reason"),
        oldest_age_seconds: Type.Number({ description: "since the oldest of them was published" }),
      }),
      {
        description:
          "held deliveries sampled once a minute, oldest first; a reason absent from a minute had none held (or no worker sampled)",
      },
    ),
    held_now: Type.Array(Held, { description: "held deliveries now, by reason (reasons with none left out)" }),
    destinations: Type.Array(
      Type.Object({
        id: Type.String(),
        delivered_last_hour: Count("attempts that delivered in the last 60 minutes, the current one included"),
        failed_last_hour: Count("attempts that failed in the last 60 minutes"),
        oldest_waiting_at: Nullable(Timestamp("publish time of its oldest delivery waiting (queued, held or to be retried); null: none")),
      }),
      { description: "every destination the caller may see, by id" },
    ),
  },
  { $id: "Stats", description: "A tenant's delivery numbers for the dashboard" },
);
export type Stats = Static<typeof Stats>;

const BucketNow = Nullable(
  Type.Object({
    capacity: Type.Number({ description: "the burst this window allows (burst_capacity, or the window's limit)" }),
    grant_capacity: Type.Number({
      description: "what the claim lets the bucket fill to: the capacity less the send-jitter headroom (SLUICE_RATE_SEND_JITTER_MS)",
    }),
    tokens: Type.Number({ description: "tokens in the bucket now (refilled to now; at most grant_capacity)" }),
    refill_per_second: Type.Number(),
  }),
);

export const DestinationStats = Type.Object(
  {
    since: Timestamp("start of the first minute of outcomes"),
    until: Timestamp("now, by the store's clock"),
    outcomes: Type.Array(
      Type.Object({
        at: Timestamp("the minute's start"),
        delivered: Count("attempts that delivered (2xx)"),
        failed: Count("attempts that failed (any error class)"),
        rate_limited: Count("attempts answered 429"),
        timeouts: Count("failed attempts that timed out"),
        by_class: ByClass,
      }),
      { description: "one per minute, oldest first, zero-filled; probes are not counted" },
    ),
    arrivals: Type.Array(Type.Object({ at: Timestamp("the second's start"), n: Count("attempts started in it, probes included") }), {
      description: "one per second over the last rate_seconds, oldest first, zero-filled: the rate the receiver saw",
    }),
    limit: Type.Object({
      max_per_second: Nullable(Type.Number()),
      max_per_minute: Nullable(Type.Number()),
      burst_capacity: Nullable(Type.Number({ description: "the burst in force: burst_capacity, or the finest window's limit" })),
      max_concurrency: Type.Integer(),
    }),
    buckets: Type.Object(
      { second: BucketNow, minute: BucketNow },
      { description: "the token buckets now; null: that window is not limited" },
    ),
    held: Type.Array(Held, { description: "its held deliveries now, by reason" }),
    delivered_last_hour: Count("attempts that delivered in the last 60 minutes, the current one included"),
    failed_last_hour: Count("attempts that failed in the last 60 minutes"),
    oldest_waiting_at: Nullable(Timestamp("publish time of its oldest delivery waiting (queued, held or to be retried); null: none")),
  },
  { $id: "DestinationStats", description: "One destination's numbers for the dashboard" },
);
export type DestinationStats = Static<typeof DestinationStats>;
