import { Type, type Static } from "@sinclair/typebox";
import { EVENT_TYPE, EVENT_TYPE_PATTERN, InstantIn, ListQueryWith, Nullable, Timestamp } from "./common.js";
import { Delivery } from "./deliveries.js";

export const EventIn = Type.Object(
  {
    type: Type.String({ pattern: EVENT_TYPE, description: "Event type, e.g. order.created" }),
    payload: Type.Unknown({ description: "Any JSON value; at most SLUICE_MAX_PAYLOAD_BYTES" }),
    occurred_at: Type.Optional(InstantIn("when it happened (default: now); at most a day ahead of the server's clock")),
    deliver_at: Type.Optional(InstantIn("not delivered before this time; at most 365 days ahead")),
    destination_ids: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
        minItems: 1,
        maxItems: 1000,
        uniqueItems: true,
        description: "only these destinations (else every destination whose event_types match)",
      }),
    ),
  },
  { additionalProperties: false, required: ["type", "payload"] },
);
export type EventIn = Static<typeof EventIn>;

export const EventBatch = Type.Object({ events: Type.Array(EventIn, { minItems: 1, maxItems: 1000 }) }, { additionalProperties: false });
export type EventBatch = Static<typeof EventBatch>;

export const EventAccepted = Type.Object(
  { id: Type.String({ description: "evt_…" }), deliveries: Type.Integer({ description: "deliveries created" }) },
  { $id: "EventAccepted" },
);
export const EventBatchAccepted = Type.Object({ events: Type.Array(Type.Ref(EventAccepted)) });

export const IdempotencyHeaders = Type.Object({
  "idempotency-key": Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: "a repeat with the same key within 24 h gets the first answer" }),
  ),
});

export const Event = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    payload: Type.Unknown(),
    occurred_at: Timestamp(),
    deliver_at: Type.Union([Timestamp(), Type.Null()]),
    created_at: Timestamp(),
    trace_id: Nullable(Type.String({ description: "the W3C trace id it was published in (32 hex digits); null: none" })),
    deliveries: Type.Optional(Type.Array(Type.Ref(Delivery), { description: "GET /v1/events/{id} only" })),
  },
  { $id: "Event" },
);
export type Event = Static<typeof Event>;

/** GET /v1/events: newest first (occurred_at, then id), filtered by type and occurred_at. */
export const EventListQuery = ListQueryWith({
  type: Type.Optional(
    Type.String({ minLength: 1, pattern: EVENT_TYPE_PATTERN, description: "an event type, or a prefix ending in * (order.*)" }),
  ),
  since: Type.Optional(InstantIn("events that occurred at or after this time")),
  until: Type.Optional(InstantIn("events that occurred before this time (exclusive); must be after since")),
});
export type EventListQuery = Static<typeof EventListQuery>;
