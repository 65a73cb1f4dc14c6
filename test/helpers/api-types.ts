import type { Static } from "@sinclair/typebox";
import type { ErrorBody } from "../../src/schemas/common.js";
import type { Delivery as DeliverySchema } from "../../src/schemas/deliveries.js";
import type {
  Attempt as AttemptSchema,
  AttemptTimeline as AttemptTimelineSchema,
  Destination as DestinationSchema,
  DestinationSecret as DestinationSecretSchema,
} from "../../src/schemas/destinations.js";
import type {
  Event as EventSchema,
  EventAccepted as EventAcceptedSchema,
  EventBatchAccepted as EventBatchAcceptedSchema,
} from "../../src/schemas/events.js";
import type { Tenant as TenantSchema, TenantCreated as TenantCreatedSchema } from "../../src/schemas/tenants.js";

// The API's answer bodies as tests read them, derived from the schemas in src/schemas/ (the one
// source of each shape), under short names for `s.api<T>()`: e.g. `s.api<Page<Delivery>>(...)`.

export type Destination = Static<typeof DestinationSchema>;
export type DestinationSecret = Static<typeof DestinationSecretSchema>;
export type Attempt = Static<typeof AttemptSchema>;
export type AttemptTimeline = Static<typeof AttemptTimelineSchema>;
export type Delivery = Static<typeof DeliverySchema>;
export type Event = Static<typeof EventSchema>;
export type EventAccepted = Static<typeof EventAcceptedSchema>;
export type EventBatchAccepted = Static<typeof EventBatchAcceptedSchema>;
export type Tenant = Static<typeof TenantSchema>;
export type TenantCreated = Static<typeof TenantCreatedSchema>;

/** A page of a list endpoint (common.ts `Page(item)`). */
export type Page<T> = { data: T[]; next_cursor: string | null };

/** Every 4xx/5xx answer. */
export type ApiError = Static<typeof ErrorBody>;
/** `error.details` of a 422: one entry per invalid field. */
export type FieldErrors = { field: string; message: string }[];
/** A 422 SLUICE_VALIDATION_FAILED answer, whose details name each invalid field. */
export type ValidationFailed = ApiError & { error: { details: FieldErrors } };
