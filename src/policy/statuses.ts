// Every status-like value Sluice stores or shows, named once. SQL text may spell them as literals;
// migrations/0005_checks.sql holds the database to the same sets with CHECK constraints, and
// test/unit/statuses.test.ts keeps the two in step.

/**
 * A delivery's status as read. Waiting: queued, retry_scheduled; in flight: delivering (a row in
 * `leases`, not a stored status since migrations/0014); final: delivered, dead, discarded.
 */
export const DELIVERY_STATUSES = ["queued", "retry_scheduled", "delivering", "delivered", "dead", "discarded"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The statuses deliveries.status may hold (migrations/0014_leases.sql's CHECK). */
export const STORED_DELIVERY_STATUSES = DELIVERY_STATUSES.filter((s) => s !== "delivering");

/** Stored statuses of deliveries that wait for a claim (the partial indexes of 0001 list the same). */
export const WAITING_STATUSES = ["queued", "retry_scheduled"] as const satisfies readonly DeliveryStatus[];
export type WaitingStatus = (typeof WAITING_STATUSES)[number];

export function isWaiting(status: string): status is WaitingStatus {
  return (WAITING_STATUSES as readonly string[]).includes(status);
}

/** Stored statuses of deliveries that ended without arriving (migrations/0018's partial index lists the same). */
export const UNSENT_STATUSES = ["dead", "discarded"] as const satisfies readonly DeliveryStatus[];

/** The statuses a result write-back may set (leaving `delivering`). */
export type ResultStatus = Exclude<DeliveryStatus, "delivering" | "discarded">;

/** What the API shows: a stored status, or "held" for a waiting delivery something holds back. */
export const API_DELIVERY_STATUSES = ["queued", "held", "delivering", "retry_scheduled", "delivered", "dead", "discarded"] as const;
export type ApiDeliveryStatus = (typeof API_DELIVERY_STATUSES)[number];

/** Why a waiting delivery is held, in the order they are tested (see hold-reason.ts). */
export const HOLD_REASONS = ["paused", "throttled", "quiet_hours", "scheduled", "ordering", "concurrency", "rate_limited"] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

/** An attempt's outcome, as stored in attempts.outcome. */
export const ATTEMPT_OUTCOMES = ["success", "failure", "throttled"] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** A destination's health status (destinations.health_status), best first. */
export const HEALTH_STATUSES = ["healthy", "degraded", "critical", "unhealthy"] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/** Why a destination is paused (destinations.pause_cause): by a person, or automatically (probed or not). */
export const PAUSE_CAUSES = ["manual", "transient", "permanent"] as const;
export type PauseCauseStored = (typeof PAUSE_CAUSES)[number];

/** A destination's status as the API shows it (derived from its live state, never stored). */
export const DESTINATION_STATUSES = ["active", "throttled", "rate_limited", "quiet", "paused"] as const;
export type DestinationStatus = (typeof DESTINATION_STATUSES)[number];

/** alerts.type: the destination.* events a health transition publishes. */
export const ALERT_TYPES = [
  "destination.degraded",
  "destination.paused",
  "destination.resumed",
  "destination.backlog_growing",
  "destination.backlog_stale",
  "destination.backlog_recovered",
] as const;
export type AlertTypeName = (typeof ALERT_TYPES)[number];

/** alerts.type too: the events about one delivery (`delivery.dead`: its retries are spent). */
export const DELIVERY_ALERT_TYPES = ["delivery.dead"] as const;
export type DeliveryAlertTypeName = (typeof DELIVERY_ALERT_TYPES)[number];

/**
 * Every type Sluice publishes itself, and so every alerts.type (migrations/0009 widens 0005's
 * CHECK to these): tenants may not publish them, and they reach only destinations that name them.
 */
export const SYSTEM_EVENT_TYPES = [...ALERT_TYPES, ...DELIVERY_ALERT_TYPES] as const;
export type SystemEventType = (typeof SYSTEM_EVENT_TYPES)[number];

/** alerts.email_state, and alert_digests.state (the hourly e-mail of delivery.dead alerts). */
export const EMAIL_STATES = ["pending", "sent", "skipped", "failed"] as const;
export type EmailState = (typeof EMAIL_STATES)[number];

/** recoveries.status: a recovery is requeueing page by page, or has passed the end of its range. */
export const RECOVERY_STATUSES = ["running", "done"] as const;
export type RecoveryStatus = (typeof RECOVERY_STATUSES)[number];

/** The delivery statuses a recovery may queue again (the final ones), and those it takes by default. */
export const RECOVERABLE_STATUSES = ["dead", "discarded", "delivered"] as const satisfies readonly DeliveryStatus[];
export type RecoverableStatus = (typeof RECOVERABLE_STATUSES)[number];
export const DEFAULT_RECOVER_STATUSES: readonly RecoverableStatus[] = ["dead", "discarded"];
