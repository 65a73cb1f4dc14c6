import type { Queryable } from "../db.js";
import { scheduleApplies } from "../../policy/quiet-hours.js";
import type { DeliverySchedule, DestinationConfig } from "../../schemas/destinations.js";
import { bumpRoutingVersion } from "./events.js";
import { emptyHealth } from "../../policy/health.js";
import { setHealth } from "./health.js";
import { READY_AT_IDLE, READY_AT_NOW, readyAtNoLaterThan, readyAtOutsideHold } from "./ready-at.js";
import { UNLEASED } from "./leases.js";
import type { HealthStatus, PauseCauseStored } from "../../policy/statuses.js";
import type { PaceState } from "../../policy/adaptive-pace.js";
import type { BacklogWatch } from "../../policy/backlog-alerts.js";
import { NOW } from "./sql-time.js";

// Destinations: their config as the API sets it (defaults and checks in api/destination-config.ts),
// their signing secrets, pause and resume, and the locks that guard their waiting deliveries.

export type { DestinationConfig };

export interface SecretEntry {
  secret: string;
  expires_at: string | null;
}

export interface DestinationRow extends DestinationConfig {
  id: string;
  tenant_id: string;
  secrets: SecretEntry[];
  ready_at: Date | null;
  paused_at: Date | null;
  pause_reason: string | null;
  throttled_until: Date | null;
  throttle_reason: string | null;
  consecutive_throttles: number;
  consecutive_failures: number;
  rate_limited: boolean;
  health_window: string;
  health_status: HealthStatus;
  consecutive_auth_failures: number;
  pause_cause: PauseCauseStored | null;
  next_probe_at: Date | null;
  ramp_limit: number | null;
  /** Adaptive pace's memory (policy/adaptive-pace.ts); null until its first answer, or when off. */
  pace_state: PaceState | null;
  /** The stats rollup's backlog watch (policy/backlog-alerts.ts, table backlog_watches); null: nothing waiting, nothing standing. */
  backlog_watch: BacklogWatch | null;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
  now: Date;
}

export interface DestinationCounts {
  queued: number;
  inflight: number;
}

/** Every destination read carries its backlog watch (its own table: the stats rollup rewrites it). */
const WATCH = "(SELECT w.watch FROM backlog_watches w WHERE w.destination_id = destinations.id) AS backlog_watch";
const WITH_WATCH = `${WATCH}, now() AS now`;

const CONFIG_COLUMNS = [
  "name",
  "url",
  "event_types",
  "timeout_seconds",
  "max_concurrency",
  "ordered",
  "rate_limit",
  "adaptive",
  "delivery_schedule",
  "retry_schedule_seconds",
  "throttle_schedule_seconds",
  "probe_interval_seconds",
  "replay_on_resume",
  "paused_retention_hours",
  "backlog_alert_minutes",
  "backlog_alert_age_minutes",
  "headers",
  "secret_headers",
] as const;

function configParams(c: DestinationConfig): unknown[] {
  return [
    c.name,
    c.url,
    c.event_types,
    c.timeout_seconds,
    c.max_concurrency,
    c.ordered,
    c.rate_limit === null ? null : JSON.stringify(c.rate_limit),
    c.adaptive === null ? null : JSON.stringify(c.adaptive),
    c.delivery_schedule === null ? null : JSON.stringify(c.delivery_schedule),
    c.retry_schedule_seconds,
    c.throttle_schedule_seconds,
    c.probe_interval_seconds,
    c.replay_on_resume,
    c.paused_retention_hours,
    c.backlog_alert_minutes,
    c.backlog_alert_age_minutes,
    JSON.stringify(c.headers),
    c.secret_headers,
  ];
}

export async function insertDestination(
  q: Queryable,
  id: string,
  tenantId: string,
  c: DestinationConfig,
  secrets: SecretEntry[],
): Promise<DestinationRow> {
  const cols = CONFIG_COLUMNS.join(", ");
  const params = CONFIG_COLUMNS.map((_, i) => `$${i + 4}`).join(", ");
  const rows = await q.query<DestinationRow>(
    // A new destination has no backlog watch yet; its now is the transaction's, as created_at
    // holds it (Citus refuses a subquery or now() in an INSERT's RETURNING, now() in an UPDATE's).
    `INSERT INTO destinations (id, tenant_id, secrets, ${cols}) VALUES ($1, $2, $3, ${params})
     RETURNING *, NULL::jsonb AS backlog_watch, created_at AS now`,
    [id, tenantId, JSON.stringify(secrets), ...configParams(c)],
  );
  await bumpRoutingVersion(q, tenantId);
  return rows[0]!;
}

/** One destination of the tenant (deleted ones are gone), optionally row-locked. */
export async function getDestination(q: Queryable, tenantId: string, id: string, lock = false): Promise<DestinationRow | null> {
  const rows = await q.query<DestinationRow>(
    `SELECT *, ${WITH_WATCH} FROM destinations WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL${lock ? " FOR UPDATE OF destinations" : ""}`,
    [id, tenantId],
  );
  return rows[0] ?? null;
}

/** Newest first; `before` is the last id of the previous page; `ids` (not null) keeps only those. */
export async function listDestinations(
  q: Queryable,
  tenantId: string,
  limit: number,
  before: string | null,
  ids: readonly string[] | null = null,
): Promise<DestinationRow[]> {
  return q.query<DestinationRow>(
    `SELECT *, ${WITH_WATCH} FROM destinations
      WHERE tenant_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR id < $2) AND ($4::text[] IS NULL OR id = ANY($4::text[]))
      ORDER BY id DESC LIMIT $3`,
    [tenantId, before, limit, ids],
  );
}

/** The tenant's live (not deleted) destination ids, by id; `ids` (not null) keeps only those. */
export async function liveDestinationIds(q: Queryable, tenantId: string, ids: readonly string[] | null): Promise<string[]> {
  const rows = await q.query<{ id: string }>(
    "SELECT id FROM destinations WHERE tenant_id = $1 AND deleted_at IS NULL AND ($2::text[] IS NULL OR id = ANY($2::text[])) ORDER BY id",
    [tenantId, ids],
  );
  return rows.map((r) => r.id);
}

/** Unfinished and in-flight deliveries per destination. */
export async function destinationCounts(q: Queryable, ids: string[]): Promise<Map<string, DestinationCounts>> {
  const rows = await q.query<{ destination_id: string; queued: number; inflight: number }>(
    `SELECT g.id AS destination_id,
            (SELECT count(*) FROM deliveries x WHERE x.destination_id = g.id AND x.status IN ('queued', 'retry_scheduled'))::int AS queued,
            (SELECT count(*) FROM leases l WHERE l.destination_id = g.id AND l.expires_at > now())::int AS inflight
       FROM unnest($1::text[]) AS g(id)`,
    [ids],
  );
  return new Map(rows.map((r) => [r.destination_id, { queued: r.queued, inflight: r.inflight }]));
}

/**
 * Writes a new config; the destination becomes ready at once so the next claim applies it
 * (a raised cap or a changed schedule takes effect within one dispatcher cycle).
 */
export async function updateDestinationConfig(
  q: Queryable,
  id: string,
  c: DestinationConfig,
  secrets: SecretEntry[] | null,
): Promise<DestinationRow> {
  const sets = CONFIG_COLUMNS.map((col, i) => `${col} = $${i + 3}`).join(", ");
  const adaptiveParam = `$${CONFIG_COLUMNS.indexOf("adaptive") + 3}`;
  const rows = await q.query<DestinationRow>(
    `UPDATE destinations SET ${sets}, secrets = coalesce($2::jsonb, secrets), updated_at = now(),
            -- adaptive pace turned off forgets its pace: turned on again, it starts afresh
            pace_state = CASE WHEN coalesce((${adaptiveParam}::jsonb->>'enabled')::boolean, false) THEN pace_state END,
            ready_at = CASE WHEN paused_at IS NULL THEN ${readyAtNoLaterThan(readyAtOutsideHold(NOW))}
                            ELSE ready_at END -- paused: keep its probe schedule
      WHERE id = $1 RETURNING *, ${WATCH}, updated_at AS now`,
    [id, secrets === null ? null : JSON.stringify(secrets), ...configParams(c)],
  );
  await bumpRoutingVersion(q, rows[0]!.tenant_id);
  return rows[0]!;
}

/** Soft-deletes; waiting deliveries are discarded (in-flight ones finish). The caller holds the row lock. */
export async function deleteDestination(q: Queryable, id: string): Promise<void> {
  const [d] = await q.query<{ tenant_id: string }>(
    `UPDATE destinations SET deleted_at = now(), ready_at = ${READY_AT_IDLE}, updated_at = now() WHERE id = $1 RETURNING tenant_id`,
    [id],
  );
  if (d) await bumpRoutingVersion(q, d.tenant_id);
  await q.query(
    `UPDATE deliveries x SET status = 'discarded', finished_at = now(), updated_at = now(), last_error = 'destination deleted'
      WHERE x.destination_id = $1 AND x.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("x")}`,
    [id],
  );
}

export async function pauseDestination(q: Queryable, id: string, reason: string): Promise<void> {
  await q.query(
    `UPDATE destinations SET paused_at = coalesce(paused_at, ${NOW}), pause_reason = $2, pause_cause = 'manual', next_probe_at = NULL,
            ready_at = ${READY_AT_IDLE}, updated_at = now() WHERE id = $1`,
    [id, reason],
  );
}

/** Un-pauses; without replay the held backlog is discarded (each still retryable by id). */
export async function resumeDestination(q: Queryable, id: string, replay: boolean): Promise<number> {
  let discarded = 0;
  if (!replay) {
    const rows = await q.query<{ n: number }>(
      `WITH d AS (
         UPDATE deliveries x SET status = 'discarded', finished_at = now(), updated_at = now(),
                last_error = 'discarded when the destination was resumed without replay'
          WHERE x.destination_id = $1 AND x.status IN ('queued', 'retry_scheduled') AND ${UNLEASED("x")} RETURNING 1)
       SELECT count(*)::int AS n FROM d`,
      [id],
    );
    discarded = rows[0]!.n;
  }
  // Fresh health: the old window and failure run would otherwise re-pause on the first failure.
  const health = setHealth(emptyHealth(), 2);
  await q.query(
    // The pause just ended is kept (SET reads the old row): a trace shows deliveries waiting for it.
    `UPDATE destinations SET paused_at = NULL, pause_reason = NULL, pause_cause = NULL, next_probe_at = NULL, ramp_limit = NULL,
            last_paused_at = paused_at, last_resumed_at = now(),
            ${health.sql},
            ready_at = ${READY_AT_NOW}, updated_at = now()
      WHERE id = $1`,
    [id, ...health.params],
  );
  return discarded;
}

/** Replaces the signing secrets (newest first); the caller holds the destination's row lock. */
export async function setDestinationSecrets(q: Queryable, id: string, secrets: SecretEntry[]): Promise<void> {
  await q.query("UPDATE destinations SET secrets = $2, updated_at = now() WHERE id = $1", [id, JSON.stringify(secrets)]);
}

/** Takes a destination's row lock (whoever changes its waiting deliveries holds it first). */
export async function lockDestination(q: Queryable, id: string): Promise<void> {
  await q.query("SELECT id FROM destinations WHERE id = $1 FOR UPDATE", [id]);
}

/**
 * After delivery_schedule changed: which unfinished deliveries its quiet hours hold is decided
 * again by event type (the caller holds the destination's row lock).
 */
export async function recomputeQuietHold(q: Queryable, id: string, schedule: DeliverySchedule | null): Promise<void> {
  const types = await q.query<{ type: string }>(
    `SELECT DISTINCT e.type FROM deliveries dl JOIN events e ON e.id = dl.event_id
      WHERE dl.destination_id = $1 AND dl.status IN ('queued', 'retry_scheduled')`,
    [id],
  );
  const held = schedule ? types.map((t) => t.type).filter((t) => scheduleApplies(schedule, t)) : [];
  await q.query(
    `UPDATE deliveries dl SET quiet_hold = (e.type = ANY($2::text[]))
       FROM events e
      WHERE e.id = dl.event_id AND dl.destination_id = $1 AND dl.status IN ('queued', 'retry_scheduled')
        AND dl.quiet_hold IS DISTINCT FROM (e.type = ANY($2::text[]))`,
    [id, held],
  );
}
