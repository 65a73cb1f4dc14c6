import type { Queryable } from "../db.js";
import { jsonRows } from "../json-rows.js";

// The alerts outbox (see alerts/alerts.ts): rows recorded in the transaction of a health
// transition or of a delivery's death, then taken (row-locked, SKIP LOCKED) by one worker to
// publish and to e-mail (delivery.dead ones in digests: queries/digests.ts).

import type { AlertTypeName, SystemEventType } from "../../policy/statuses.js";

/** The destination.* alert types, named once in policy/statuses.ts. */
export type AlertType = AlertTypeName;

export interface AlertPayload {
  destination_id: string;
  destination_name: string;
  url: string;
  /** degraded | paused | resumed */
  transition: string;
  reason: string;
  health: { status: string; score: number; consecutive_failures: number };
  /** RFC 3339 time of the transition. */
  at: string;
  [extra: string]: unknown;
}

/** The data of a `delivery.dead` event (docs/health.md shows it). */
export interface DeliveryDeadPayload {
  delivery_id: string;
  destination_id: string;
  destination_name: string;
  event_id: string;
  event_type: string;
  /** RFC 3339: the dead event's occurred_at. */
  occurred_at: string;
  /** Requests made for the delivery, over all its lives (a retry by id keeps counting). */
  attempts: number;
  last_error: string | null;
  last_status_code: number | null;
  /** RFC 3339 time of the write-back that gave up on it. */
  died_at: string;
}

export interface NewAlert {
  id: string;
  tenantId: string;
  destinationId: string;
  type: SystemEventType;
  payload: AlertPayload | DeliveryDeadPayload;
  /** For an alert about one delivery's death: which, and after how many attempts (the dedup key). */
  deliveryId?: string;
  deliveryAttempts?: number;
}

/** An alert to publish as an event. */
export interface UnpublishedAlert {
  id: string;
  tenant_id: string;
  type: SystemEventType;
  payload: AlertPayload | DeliveryDeadPayload;
}

/** A destination.* alert whose e-mail (one per alert) is pending. */
export interface PendingAlert {
  id: string;
  tenant_id: string;
  destination_id: string;
  type: AlertType;
  payload: AlertPayload;
  published_at: Date | null;
  email_state: string;
  email_attempts: number;
  alert_email: string | null;
}

/**
 * Inserts alerts, in one statement, in the caller's transaction. A death already recorded (same
 * type, delivery and attempt count) is skipped. Returns the types of the rows inserted.
 */
export async function insertAlerts(q: Queryable, alerts: NewAlert[]): Promise<SystemEventType[]> {
  const rows = await q.query<{ type: SystemEventType }>(
    `INSERT INTO alerts (id, tenant_id, destination_id, type, payload, delivery_id, delivery_attempts)
     SELECT a.id, a."tenantId", a."destinationId", a.type, a.payload, a."deliveryId", a."deliveryAttempts"
       FROM json_to_recordset($1::json) AS a(id text, "tenantId" text, "destinationId" text, type text, payload jsonb,
                                             "deliveryId" text, "deliveryAttempts" int)
     ON CONFLICT (type, delivery_id, delivery_attempts) DO NOTHING
     RETURNING type`,
    [jsonRows(alerts)],
  );
  return rows.map((r) => r.type);
}

/** What a `delivery.dead` alert says about one delivery, read in the write-back that killed it. */
export interface DeadDelivery {
  tenant_id: string;
  destination_id: string;
  destination_name: string;
  id: string;
  event_id: string;
  event_type: string;
  attempts: number;
  last_error: string | null;
  last_status_code: number | null;
  occurred_at: Date;
  finished_at: Date;
}

/** The deliveries among `keys` that are dead, with their event's type and their destination's name. */
export async function readDeadDeliveries(q: Queryable, keys: { destinationId: string; id: string }[]): Promise<DeadDelivery[]> {
  if (keys.length === 0) return [];
  return q.query<DeadDelivery>(
    `SELECT dl.tenant_id, dl.destination_id, d.name AS destination_name, dl.id, dl.event_id, e.type AS event_type,
            dl.attempts, dl.last_error, dl.last_status_code, dl.occurred_at, dl.finished_at
       FROM unnest($1::text[], $2::text[]) AS k(destination_id, id)
       JOIN deliveries dl ON dl.destination_id = k.destination_id AND dl.id = k.id AND dl.status = 'dead'
       JOIN events e ON e.id = dl.event_id
       JOIN destinations d ON d.id = dl.destination_id
      ORDER BY dl.occurred_at, dl.id`,
    [keys.map((k) => k.destinationId), keys.map((k) => k.id)],
  );
}

/** Up to 100 alerts not yet published, oldest first, row-locked until the caller's transaction ends. */
export async function lockUnpublishedAlerts(q: Queryable): Promise<UnpublishedAlert[]> {
  return q.query<UnpublishedAlert>(
    `SELECT a.id, a.tenant_id, a.type, a.payload FROM alerts a
      WHERE a.published_at IS NULL ORDER BY a.created_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
  );
}

/** Records the event an alert was published as. */
export async function markAlertPublished(q: Queryable, id: string, eventId: string): Promise<void> {
  await q.query("UPDATE alerts SET published_at = now(), event_id = $2 WHERE id = $1", [id, eventId]);
}

/**
 * Up to 20 destination.* alerts whose e-mail is pending, with their tenant's alert address,
 * row-locked. delivery.dead alerts are not mailed one by one but in digests (queries/digests.ts).
 */
export async function lockPendingAlertEmails(q: Queryable): Promise<PendingAlert[]> {
  return q.query<PendingAlert>(
    `SELECT a.id, a.type, a.payload, a.email_attempts, t.alert_email FROM alerts a JOIN tenants t ON t.id = a.tenant_id
      WHERE a.email_state = 'pending' AND a.type <> 'delivery.dead'
      ORDER BY a.created_at LIMIT 20 FOR UPDATE OF a SKIP LOCKED`,
  );
}

/** No e-mail for this alert: SMTP is not set up or the tenant has no alert address. */
export async function markAlertEmailSkipped(q: Queryable, id: string): Promise<void> {
  await q.query("UPDATE alerts SET email_state = 'skipped' WHERE id = $1", [id]);
}

export async function markAlertEmailSent(q: Queryable, id: string): Promise<void> {
  await q.query("UPDATE alerts SET email_state = 'sent', email_attempts = email_attempts + 1, email_error = NULL WHERE id = $1", [id]);
}

/** A failed send: `state` is pending (to try again) or failed (given up), `attempts` the new count. */
export async function markAlertEmailFailed(q: Queryable, id: string, state: string, attempts: number, error: string): Promise<void> {
  await q.query("UPDATE alerts SET email_state = $2, email_attempts = $3, email_error = $4 WHERE id = $1", [id, state, attempts, error]);
}
