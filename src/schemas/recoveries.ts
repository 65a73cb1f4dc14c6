import { Type, type Static } from "@sinclair/typebox";
import { RECOVERABLE_STATUSES, RECOVERY_STATUSES } from "../policy/statuses.js";
import { Enum, InstantIn, Nullable, Timestamp } from "./common.js";

// Recovery over a time range: POST /v1/destinations/{id}/recover queues a destination's finished
// deliveries again, in the background; GET …/recoveries/{rid} follows it.

export const RecoverBody = Type.Object(
  {
    since: InstantIn("deliveries whose event occurred at or after this time"),
    until: Type.Optional(InstantIn("… and before this time (exclusive); must be after since. Default: now")),
    statuses: Type.Optional(
      Type.Array(Enum(RECOVERABLE_STATUSES), {
        minItems: 1,
        maxItems: RECOVERABLE_STATUSES.length,
        uniqueItems: true,
        description: "the delivery statuses to queue again; default [dead, discarded]",
      }),
    ),
  },
  { additionalProperties: false, required: ["since"] },
);
export type RecoverBody = Static<typeof RecoverBody>;

export const RecoveryParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: "the destination" }),
  rid: Type.String({ minLength: 1, maxLength: 100, description: "the recovery, rcv_…" }),
});

export const RecoveryAccepted = Type.Object(
  {
    id: Type.String({ description: "rcv_…: GET /v1/destinations/{id}/recoveries/{rid} follows it" }),
    deliveries: Type.Integer({ description: "deliveries that matched when the recovery was requested" }),
  },
  { $id: "RecoveryAccepted" },
);

export const Recovery = Type.Object(
  {
    id: Type.String({ description: "rcv_…" }),
    destination_id: Type.String(),
    since: Timestamp(),
    until: Timestamp("exclusive; the request's time when none was given"),
    statuses: Type.Array(Enum(RECOVERABLE_STATUSES)),
    status: Enum(RECOVERY_STATUSES, "running: queueing page by page; done: the whole range was passed"),
    deliveries: Type.Integer({ description: "deliveries that matched when the recovery was requested" }),
    requeued: Type.Integer({ description: "deliveries queued again so far" }),
    created_at: Timestamp(),
    finished_at: Nullable(Timestamp()),
  },
  { $id: "Recovery" },
);
export type Recovery = Static<typeof Recovery>;
