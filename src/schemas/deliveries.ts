import { Type, type Static } from "@sinclair/typebox";
import { API_DELIVERY_STATUSES, HOLD_REASONS } from "../policy/statuses.js";
import { Enum, ListQueryWith, Nullable, Timestamp } from "./common.js";

export const Delivery = Type.Object(
  {
    id: Type.String({ description: "dlv_…" }),
    event_id: Type.String(),
    destination_id: Type.String(),
    status: Enum(API_DELIVERY_STATUSES),
    attempts: Type.Integer(),
    next_attempt_at: Nullable(Timestamp("waiting: when it is next due")),
    hold_reason: Nullable(Enum(HOLD_REASONS)),
    last_error: Nullable(Type.String()),
    last_status_code: Nullable(Type.Integer()),
    created_at: Timestamp(),
    updated_at: Timestamp(),
    trace_id: Nullable(
      Type.String({ description: "the W3C trace id of its event (32 hex digits), which its attempts belong to; null: none" }),
    ),
  },
  { $id: "Delivery" },
);
export type Delivery = Static<typeof Delivery>;

export const DeliveryListQuery = ListQueryWith({
  destination_id: Type.Optional(Type.String({ maxLength: 100 })),
  event_id: Type.Optional(Type.String({ maxLength: 100 })),
  status: Type.Optional(Enum(API_DELIVERY_STATUSES)),
});
