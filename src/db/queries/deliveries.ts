import type { Queryable } from "../db.js";
import { UNSENT_STATUSES, WAITING_STATUSES, type AttemptOutcome, type DeliveryStatus } from "../../policy/statuses.js";
import { readyAtLaterThan, readyAtOutsideHold, wakeable } from "./ready-at.js";

export interface DeliveryRow {
  id: string;
  destination_id: string;
  event_id: string;
  tenant_id: string;
  status: DeliveryStatus;
  attempts: number;
  failures: number;
  occurred_at: Date;
  next_attempt_at: Date;
  lease_expires_at: Date | null;
  last_error: string | null;
  last_status_code: number | null;
  finished_at: Date | null;
  created_at: Date;
  updated_at: Date;
  // the destination's live state, for deriving hold_reason
  d_paused_at: Date | null;
  d_throttled_until: Date | null;
  d_rate_limited: boolean;
  d_delivery_schedule: unknown;
  quiet_hold: boolean;
  /** Waiting and due, but the destination's live leases fill its cap (ramp included). */
  at_cap: boolean;
  /** Waiting in an ordered destination behind an earlier unfinished delivery. */
  behind: boolean;
  now: Date;
  /** Its event's stored trace context (docs/tracing.md). */
  traceparent: string | null;
}

// A leased delivery (a row in leases) shows as `delivering`, with the attempt under way counted.
const SHOWN_STATUS = "CASE WHEN ls.token IS NOT NULL THEN 'delivering' ELSE dl.status END";
const LEASED = "EXISTS (SELECT 1 FROM leases x WHERE x.destination_id = dl.destination_id AND x.delivery_id = dl.id)";
const SELECT = `SELECT dl.destination_id, dl.id, dl.event_id, dl.tenant_id, ${SHOWN_STATUS} AS status,
                       dl.attempts + (ls.token IS NOT NULL)::int AS attempts, dl.failures, dl.occurred_at, dl.next_attempt_at,
                       ls.expires_at AS lease_expires_at, dl.last_error, dl.last_status_code, dl.finished_at, dl.created_at,
                       dl.updated_at, dl.quiet_hold,
                       d.paused_at AS d_paused_at, d.throttled_until AS d_throttled_until, d.rate_limited AS d_rate_limited,
                       d.delivery_schedule AS d_delivery_schedule, now() AS now,
                       (SELECT e.traceparent FROM events e WHERE e.id = dl.event_id) AS traceparent,
                       (dl.status IN ('queued', 'retry_scheduled') AND ls.token IS NULL AND
                        (SELECT count(*) FROM leases x WHERE x.destination_id = dl.destination_id)
                          >= CASE WHEN d.ordered THEN 1 ELSE least(d.max_concurrency, coalesce(d.ramp_limit, d.max_concurrency)) END) AS at_cap,
                       (d.ordered AND dl.status IN ('queued', 'retry_scheduled') AND ls.token IS NULL AND EXISTS (
                          SELECT 1 FROM deliveries x WHERE x.destination_id = dl.destination_id
                             AND x.status IN ('queued', 'retry_scheduled') AND (x.occurred_at, x.id) < (dl.occurred_at, dl.id))) AS behind
                  FROM deliveries dl JOIN destinations d ON d.id = dl.destination_id
                  LEFT JOIN leases ls ON ls.destination_id = dl.destination_id AND ls.delivery_id = dl.id`;

export async function getDelivery(q: Queryable, tenantId: string, id: string): Promise<DeliveryRow | null> {
  return (await q.query<DeliveryRow>(`${SELECT} WHERE dl.id = $1 AND dl.tenant_id = $2`, [id, tenantId]))[0] ?? null;
}

export interface DeliveryFilter {
  destinationId?: string | undefined;
  eventId?: string | undefined;
  /** Statuses to include, as shown (`delivering`: leased; the API's "held" maps onto the waiting ones). */
  statuses?: readonly DeliveryStatus[] | undefined;
  /** Only deliveries to these destinations (a portal session's scope); null/absent: any. */
  destinationIds?: readonly string[] | null | undefined;
}

/** Newest first, by id; `before` is the last id of the previous page. */
export async function listDeliveries(
  q: Queryable,
  tenantId: string,
  f: DeliveryFilter,
  limit: number,
  before: string | null,
): Promise<DeliveryRow[]> {
  const where = ["dl.tenant_id = $1", "($2::text IS NULL OR dl.id < $2)"];
  const params: unknown[] = [tenantId, before, limit];
  if (f.destinationId) {
    params.push(f.destinationId);
    where.push(`dl.destination_id = $${params.length}`);
  }
  if (f.eventId) {
    params.push(f.eventId);
    where.push(`dl.event_id = $${params.length}`);
  }
  if (f.statuses) where.push(...statusFilter(f.statuses, params));
  if (f.destinationIds) {
    params.push(f.destinationIds);
    where.push(`dl.destination_id = ANY($${params.length}::text[])`);
  }
  return q.query<DeliveryRow>(`${SELECT} WHERE ${where.join(" AND ")} ORDER BY dl.id DESC LIMIT $3`, params);
}

/**
 * The conditions that keep the deliveries shown with one of `statuses` (SHOWN_STATUS), adding
 * their parameter to `params`. Written so that Postgres can estimate how many rows they keep from
 * the column's statistics: through the CASE it guessed 0.5 %, and for a status most rows have it
 * read and sorted every row of the tenant for a page (66 ms at 30,000 queued). A status few rows
 * have is also named by the literal set of a partial index that holds it — waiting (0001) or
 * unsent (0018) — since `ANY($n)` proves no index predicate in a generic plan: without an index,
 * a page of the dead letters walked every delivery the tenant has.
 */
function statusFilter(statuses: readonly DeliveryStatus[], params: unknown[]): string[] {
  // A leased delivery keeps its waiting status (0014); `delivering` is stored by no row.
  if (statuses.length === 1 && statuses[0] === "delivering") return [LEASED, IS_WAITING];
  params.push(statuses);
  const shown = `dl.status = ANY($${params.length}::text[]) AND NOT ${LEASED}`;
  const out = [statuses.includes("delivering") ? `(${shown} OR ${LEASED})` : shown];
  const within = (set: readonly string[]) => statuses.every((s) => set.includes(s));
  if (within([...WAITING_STATUSES, "delivering"])) out.push(IS_WAITING);
  else if (within(UNSENT_STATUSES)) out.push(statusIn(UNSENT_STATUSES));
  return out;
}

/** `dl.status IN ('a', 'b')`: the statuses as literals (names from statuses.ts, no quotes in them). */
const statusIn = (statuses: readonly DeliveryStatus[]): string => `dl.status IN (${statuses.map((s) => `'${s}'`).join(", ")})`;
const IS_WAITING = statusIn(WAITING_STATUSES);

export interface AttemptRowOut {
  delivery_id: string;
  class: string | null;
  attempt_no: number;
  started_at: Date;
  latency_ms: number;
  outcome: AttemptOutcome;
  status_code: number | null;
  error_class: string | null;
  error_message: string | null;
  response_body: string | null;
}

export async function listAttempts(q: Queryable, destinationId: string, deliveryId: string): Promise<AttemptRowOut[]> {
  return q.query<AttemptRowOut>(
    `SELECT delivery_id, class, attempt_no, started_at, latency_ms, outcome, status_code, error_class, error_message, response_body
       FROM attempts WHERE destination_id = $1 AND delivery_id = $2 ORDER BY attempt_no`,
    [destinationId, deliveryId],
  );
}

/** A destination's attempts (deliveries and probes), newest first. */
export async function destinationTimeline(
  q: Queryable,
  destinationId: string,
  limit: number,
  before: Date | null,
): Promise<AttemptRowOut[]> {
  return q.query<AttemptRowOut>(
    `SELECT delivery_id, class, attempt_no, started_at, latency_ms, outcome, status_code, error_class, error_message, response_body
       FROM attempts WHERE destination_id = $1 AND ($2::timestamptz IS NULL OR started_at < $2)
      ORDER BY started_at DESC LIMIT $3`,
    [destinationId, before, limit],
  );
}

/**
 * The SET list that queues a finished delivery again (a retry, a recovery): due now, with a fresh
 * retry schedule (failures 0); `attempts` keeps counting, so its attempt rows stay numbered.
 */
export const REQUEUE_SET = "status = 'queued', failures = 0, next_attempt_at = now(), finished_at = NULL, updated_at = now()";

/** Queues a dead or discarded delivery again with a fresh retry schedule. Caller holds the destination lock. */
export async function requeueDelivery(q: Queryable, destinationId: string, id: string): Promise<boolean> {
  const rows = await q.query(
    `UPDATE deliveries SET ${REQUEUE_SET}
      WHERE destination_id = $1 AND id = $2 AND status IN ('dead', 'discarded') RETURNING id`,
    [destinationId, id],
  );
  if (rows.length === 0) return false;
  await wakeForRequeued(q, destinationId);
  return true;
}

/** After deliveries were queued again: the destination is ready now (outside a throttle hold), unless paused, deleted or due sooner. */
export async function wakeForRequeued(q: Queryable, destinationId: string): Promise<void> {
  await q.query(
    `UPDATE destinations SET ready_at = ${readyAtOutsideHold("now()")}
      WHERE id = $1 AND ${wakeable()} AND ${readyAtLaterThan("now()")}`,
    [destinationId],
  );
}
