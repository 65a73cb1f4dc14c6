import type { Queryable } from "../db.js";
import { jsonRows } from "../json-rows.js";

// The alerts outbox (see alerts/alerts.ts): rows recorded in the transaction of a health
// transition, then taken (row-locked, SKIP LOCKED) by one worker to publish and to e-mail.

import type { AlertTypeName } from "../../policy/statuses.js";

/** The alert types, named once in policy/statuses.ts. */
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

export interface NewAlert {
  id: string;
  tenantId: string;
  destinationId: string;
  type: AlertType;
  payload: AlertPayload;
}

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

/** Inserts alerts, in one statement, in the caller's transaction. */
export async function insertAlerts(q: Queryable, alerts: NewAlert[]): Promise<void> {
  await q.query(
    `INSERT INTO alerts (id, tenant_id, destination_id, type, payload)
     SELECT a.id, a."tenantId", a."destinationId", a.type, a.payload
       FROM json_to_recordset($1::json) AS a(id text, "tenantId" text, "destinationId" text, type text, payload jsonb)`,
    [jsonRows(alerts)],
  );
}

/** Up to 100 alerts not yet published, oldest first, row-locked until the caller's transaction ends. */
export async function lockUnpublishedAlerts(q: Queryable): Promise<PendingAlert[]> {
  return q.query<PendingAlert>(
    `SELECT a.id, a.tenant_id, a.destination_id, a.type, a.payload FROM alerts a
      WHERE a.published_at IS NULL ORDER BY a.created_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
  );
}

/** Records the event an alert was published as. */
export async function markAlertPublished(q: Queryable, id: string, eventId: string): Promise<void> {
  await q.query("UPDATE alerts SET published_at = now(), event_id = $2 WHERE id = $1", [id, eventId]);
}

/** Up to 20 alerts whose e-mail is pending, with their tenant's alert address, row-locked. */
export async function lockPendingAlertEmails(q: Queryable): Promise<PendingAlert[]> {
  return q.query<PendingAlert>(
    `SELECT a.id, a.type, a.payload, a.email_attempts, t.alert_email FROM alerts a JOIN tenants t ON t.id = a.tenant_id
      WHERE a.email_state = 'pending' ORDER BY a.created_at LIMIT 20 FOR UPDATE OF a SKIP LOCKED`,
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
