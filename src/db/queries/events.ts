import type { Queryable } from "../db.js";
import { jsonRows } from "../json-rows.js";
import type { DeliverySchedule } from "../../policy/quiet-hours.js";
import { READY_AT_NOW, readyAtLaterThan, readyAtOutsideHold, wakeable } from "./ready-at.js";
import { lockedInIdOrder } from "./row-locks.js";
import { UNLEASED } from "./leases.js";
import { NOW } from "./sql-time.js";

// Durable ingest: events, their fan-out into deliveries, and waking the destinations — one
// transaction, so a 202 means every delivery exists.

export interface RoutingTarget {
  id: string;
  event_types: string[];
  delivery_schedule: DeliverySchedule | null;
}

/** The tenant's live destinations with their routing patterns. */
export async function routingTargets(q: Queryable, tenantId: string): Promise<RoutingTarget[]> {
  return q.query<RoutingTarget>("SELECT id, event_types, delivery_schedule FROM destinations WHERE tenant_id = $1 AND deleted_at IS NULL", [
    tenantId,
  ]);
}

/** Changes whenever the tenant's destinations change (see bumpRoutingVersion). */
export async function routingVersion(q: Queryable, tenantId: string): Promise<string | null> {
  const rows = await q.query<{ v: string }>("SELECT routing_version::text AS v FROM tenants WHERE id = $1", [tenantId]);
  return rows[0]?.v ?? null;
}

/** In the transaction that creates, changes or deletes one of the tenant's destinations. */
export async function bumpRoutingVersion(q: Queryable, tenantId: string): Promise<void> {
  await q.query("UPDATE tenants SET routing_version = routing_version + 1 WHERE id = $1", [tenantId]);
}

export interface NewEvent {
  id: string;
  type: string;
  payload: string; // JSON text
  occurredAt: Date | null; // null: now
  deliverAt: Date | null;
  /** The W3C trace context it was published in (docs/tracing.md); absent: none. */
  traceparent?: string;
  tracestate?: string;
}

export interface NewDelivery {
  id: string;
  destinationId: string;
  eventId: string;
  occurredAt: Date | null; // null: now (the event's default)
  deliverAt: Date | null;
  /** The destination's quiet hours hold this delivery's event type. */
  quietHold: boolean;
  /**
   * When the destination should next look at this delivery, if later than it is due: the end of
   * the quiet window holding it. A held delivery then does not wake its destination for a
   * claim that could only put it back to sleep.
   */
  wakeAt?: Date;
}

/** A time as unix seconds (to the millisecond), or null. */
const seconds = (at: Date | null): number | null => (at === null ? null : at.getTime() / 1000);

/**
 * Writes a publish in ONE statement (so, outside a transaction, one round trip that commits by
 * itself): the events, their deliveries, and each destination's ready_at moved forward to its
 * earliest new work (never inside a throttle hold, never for a paused destination; destinations
 * in id order, so concurrent writers lock them in the same order). With `notifyChannel`, the
 * statement also signals it: Postgres sends the notification as the statement commits, so a
 * worker is woken without another round trip. With `routingVersion`, it writes only if the
 * tenant's routing version is still that one, and returns false (having written nothing) if not.
 * Deliveries held by a quiet window open now are not handled here: see markQuietHolding.
 */
export async function insertPublished(
  q: Queryable,
  tenantId: string,
  routingVersion: string | null,
  events: NewEvent[],
  ds: NewDelivery[],
  notifyChannel: string | null,
  lockAll = false,
): Promise<boolean> {
  const earliest = new Map<string, Date | null>();
  for (const d of ds) {
    const prev = earliest.get(d.destinationId);
    const at = d.wakeAt ?? d.deliverAt; // null = now
    if (prev === undefined) earliest.set(d.destinationId, at);
    else if (prev !== null && (at === null || at < prev)) earliest.set(d.destinationId, at);
  }
  const ids = [...earliest.keys()].sort();
  // Each destination's new work, looked up by id in one JSON object ($4: id → unix seconds, null
  // = now). Not a json_to_recordset joined to the locked rows: in a statement Citus runs in steps,
  // a FOR UPDATE CTE so joined handed the next step rows it could not read; and seconds, not a
  // time's text, since reading that text depends on settings, which Citus refuses in COALESCE.
  const readyAt = readyAtOutsideHold(`coalesce(to_timestamp(($4::jsonb ->> d.id)::float8), ${NOW})`, "d.throttled_until");
  const wakes = JSON.stringify(Object.fromEntries(ids.map((id) => [id, seconds(earliest.get(id) ?? null)])));
  // The rows to wake, locked in id order (row-locks.ts) before the UPDATE touches them. All of the
  // publish's destinations when a quiet hold starts: markQuietHolding then changes rows of them in
  // the same transaction, and a lock taken later, out of order, could close a cycle.
  const toLock = lockedInIdOrder("$7", {
    where: lockAll ? "(SELECT ok FROM v)" : `(SELECT ok FROM v) AND ${wakeable("d.")} AND ${readyAtLaterThan(readyAt, "d.")}`,
  });
  const rows = await q.query<{ ok: boolean }>(
    `WITH v AS (
       SELECT $5::text IS NULL OR EXISTS (SELECT 1 FROM tenants WHERE id = $1 AND routing_version::text = $5::text) AS ok
     ), locked AS (
       ${toLock}
     ), ev AS (
       INSERT INTO events (id, tenant_id, type, payload, occurred_at, deliver_at, traceparent, tracestate)
       -- A JSON null payload reads as SQL NULL here: it is stored as JSON's null.
       SELECT e.id, $1, e.type, coalesce(e.payload, 'null'::json), coalesce(e."occurredAt", ${NOW}), e."deliverAt", e.traceparent, e.tracestate
         FROM json_to_recordset($2::json)
           AS e(id text, type text, payload json, "occurredAt" timestamptz, "deliverAt" timestamptz, traceparent text, tracestate text)
        WHERE (SELECT ok FROM v)
     ), dl AS (
       INSERT INTO deliveries (destination_id, id, event_id, tenant_id, status, occurred_at, next_attempt_at, quiet_hold)
       SELECT d."destinationId", d.id, d."eventId", $1, 'queued', coalesce(d."occurredAt", ${NOW}), coalesce(d."deliverAt", ${NOW}), d."quietHold"
         FROM json_to_recordset($3::json) AS d("destinationId" text, id text, "eventId" text, "occurredAt" timestamptz, "deliverAt" timestamptz, "quietHold" bool)
        WHERE (SELECT ok FROM v)
     ), ready AS (
       UPDATE destinations d
          SET ready_at = ${readyAt}, idle_recheck = false
         FROM locked l
        WHERE d.id = l.id AND ${wakeable("d.")} AND ${readyAtLaterThan(readyAt, "d.")} AND (SELECT ok FROM v)
     )
     -- ev, dl and ready run whether or not this reads them.
     ${notifyChannel === null ? "SELECT ok, $6::text AS channel FROM v" : "SELECT ok, CASE WHEN ok THEN pg_notify($6::text, '') END FROM v"}`,
    // The payload is already JSON text: spliced in, not encoded twice.
    [tenantId, jsonRows(events, ["payload"]), jsonRows(ds), wakes, routingVersion, notifyChannel, ids],
  );
  return rows[0]?.ok === true;
}

/**
 * Deliveries held by a quiet window that is open now: their destinations start holding, unless
 * they already were (then the claim at the window's end logs the release). Rare, so a statement
 * apart, in the publish's transaction, whose insertPublished(…, lockAll) locked these rows
 * already, in id order. Returns the destinations that began holding.
 */
export async function markQuietHolding(q: Queryable, ds: NewDelivery[]): Promise<QuietHoldStart[]> {
  const held = new Map<string, Date>();
  for (const d of ds) if (startsHolding(d)) held.set(d.destinationId, d.wakeAt);
  if (held.size === 0) return [];
  const started = await q.query<{ id: string }>(
    `UPDATE destinations SET quiet_holding = true
      WHERE id = ANY($1::text[]) AND NOT quiet_holding AND paused_at IS NULL AND deleted_at IS NULL
     RETURNING id`,
    [[...held.keys()].sort()],
  );
  return started.map((r) => ({ destinationId: r.id, until: held.get(r.id)! }));
}

/** True when publishing `ds` must also mark destinations as quiet-holding (a second statement). */
export function startsQuietHold(ds: NewDelivery[]): boolean {
  return ds.some(startsHolding);
}

/** Held by a quiet window open now: its destination starts holding (see markQuietHolding). */
function startsHolding(d: NewDelivery): d is NewDelivery & { wakeAt: Date } {
  return d.quietHold && d.wakeAt !== undefined;
}

/** A destination that began holding deliveries for its quiet hours with this publish. */
export interface QuietHoldStart {
  destinationId: string;
  /** The end of the quiet window. */
  until: Date;
}

export interface StoredIdempotency {
  request_hash: string;
  response: unknown;
}

/** A stored answer for this key from the last 24 hours, or null. */
export async function findIdempotent(q: Queryable, tenantId: string, key: string): Promise<StoredIdempotency | null> {
  const rows = await q.query<StoredIdempotency>(
    `SELECT request_hash, response FROM idempotency_keys
      WHERE tenant_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'`,
    [tenantId, key],
  );
  return rows[0] ?? null;
}

/**
 * Records the answer for a key. False when another request holding the same key committed
 * first (the caller then rolls back and answers with the stored response).
 */
export async function storeIdempotent(
  q: Queryable,
  tenantId: string,
  key: string,
  requestHash: string,
  response: unknown,
): Promise<boolean> {
  const rows = await q.query(
    `INSERT INTO idempotency_keys (tenant_id, key, request_hash, response) VALUES ($1, $2, $3, $4)
     ON CONFLICT (tenant_id, key) DO UPDATE
        -- EXCLUDED.created_at is now(), the column's default: Citus refuses now() itself in the
        -- update and its WHERE, and a difference of two times is immutable where now() less an
        -- interval is not.
        SET request_hash = EXCLUDED.request_hash, response = EXCLUDED.response, created_at = EXCLUDED.created_at
      WHERE EXCLUDED.created_at - idempotency_keys.created_at >= interval '24 hours'
     RETURNING key`,
    [tenantId, key, requestHash, JSON.stringify(response)],
  );
  return rows.length === 1;
}

export interface EventRow {
  id: string;
  tenant_id: string;
  type: string;
  payload: unknown;
  occurred_at: Date;
  deliver_at: Date | null;
  created_at: Date;
  traceparent: string | null;
}

/** The tenant's event; with `destinationIds` (not null), only if it has a delivery to one of them. */
export async function getEvent(
  q: Queryable,
  tenantId: string,
  id: string,
  destinationIds: readonly string[] | null = null,
): Promise<EventRow | null> {
  const rows = await q.query<EventRow>(
    `SELECT * FROM events e WHERE id = $1 AND tenant_id = $2
        AND ($3::text[] IS NULL OR EXISTS (SELECT 1 FROM deliveries x WHERE x.event_id = e.id AND x.destination_id = ANY($3::text[])))`,
    [id, tenantId, destinationIds],
  );
  return rows[0] ?? null;
}

/**
 * Safety net for a lost wake-up: idle destinations (ready_at NULL, not paused) that have due
 * deliveries waiting are made ready. One index probe per idle destination; the janitor runs it
 * every 15 s. (The claim's idle re-check closes the common race; this covers the rest, e.g. a
 * publish transaction that stayed open longer than the re-check delay.)
 */
export async function wakeStranded(q: Queryable): Promise<number> {
  // Locked in id order, skipping rows another transaction holds: whoever holds one sets its
  // ready_at, and this net looks again in 15 s anyway.
  const rows = await q.query<{ id: string }>(
    `WITH stranded AS (
       SELECT d.id FROM destinations d
        WHERE d.ready_at IS NULL AND ${wakeable("d.")}
          AND EXISTS (SELECT 1 FROM deliveries x
                       WHERE x.destination_id = d.id AND x.status IN ('queued', 'retry_scheduled') AND x.next_attempt_at <= now()
                         AND ${UNLEASED("x")})
        ORDER BY d.id FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE destinations d SET ready_at = ${READY_AT_NOW}
       FROM stranded s
      WHERE d.id = s.id AND d.ready_at IS NULL AND ${wakeable("d.")}
     RETURNING d.id`,
  );
  return rows.length;
}

export interface EventSearch {
  /** Exactly this type, or, ending in `*`, every type that starts with what comes before it. */
  type?: string | undefined;
  /** occurred_at at or after (inclusive). */
  since?: Date | undefined;
  /** occurred_at before (exclusive). */
  until?: Date | undefined;
  /** Only events with a delivery to one of these destinations (a portal session's scope); null/absent: any. */
  destinationIds?: readonly string[] | null | undefined;
}

/** Where the previous page ended: its last event's occurred_at, to the microsecond as Postgres writes it, and id. */
export interface EventCursor {
  at: string;
  id: string;
}

export type ListedEvent = EventRow & { cursor_at: string };

/**
 * How many of the newest events a type-prefix search reads before it looks type by type instead
 * (eventSearchStatements).
 */
export const PREFIX_WALK_ROWS = 1000;

const EVENT_COLUMNS = `id, tenant_id, type, payload, occurred_at, deliver_at, created_at, traceparent,
       to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at`;

/**
 * The statements behind listEvents (apart, so a test can EXPLAIN them): a tenant's events newest
 * first by (occurred_at, id), served by events_tenant_occurred_idx or, with a type,
 * events_tenant_type_idx (migrations/0007). A prefix is the byte range [prefix, prefix with its
 * last character incremented) in the "C" collation the index is built in.
 *
 * A prefix search is two statements, the second run only when the first does not fill the page.
 * Neither index gives the events of a range of types newest first: walking the tenant's events
 * newest first and keeping the matching ones is quick when they are common among the newest, but
 * reads every newer event first when they are not (106 ms past 1,000,000 newer events of another
 * type, measured by the retired bench:api-reads, `git show b03e5de:bench/api-reads.ts`). So the first statement walks only the
 * newest PREFIX_WALK_ROWS; the second finds the types in the range one index descent each (a loose
 * index scan) and takes the newest `limit` of each from the type index: its cost grows with the
 * number of types in the range, never with the events of other types. (Its page is then read by
 * primary key, a row at a time: `LIMIT 1` keeps the planner from hashing a small table instead.)
 */
export function eventSearchStatements(
  tenantId: string,
  f: EventSearch,
  limit: number,
  after: EventCursor | null,
): { sql: string; params: unknown[] }[] {
  const params: unknown[] = [tenantId, limit];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const type = f.type === undefined || f.type === "*" ? null : f.type; // "*" alone: every type
  let typeFilter: string[] = [];
  /** A prefix search: the range's upper bound, which the loose index scan below keeps to. */
  let belowRange: string | null = null;
  if (type?.endsWith("*")) {
    const range = prefixRange(type.slice(0, -1));
    belowRange = `type COLLATE "C" < ${p(range.to)}`;
    typeFilter = [`type COLLATE "C" >= ${p(range.from)}`, belowRange];
  } else if (type !== null) typeFilter = [`type COLLATE "C" = ${p(type)}`];
  const rest: string[] = [];
  if (f.since) rest.push(`occurred_at >= ${p(f.since)}`);
  if (f.until) rest.push(`occurred_at < ${p(f.until)}`);
  if (after) rest.push(`(occurred_at, id) < (${p(after.at)}::timestamptz, ${p(after.id)}::text)`);
  const scope = f.destinationIds
    ? [`EXISTS (SELECT 1 FROM deliveries x WHERE x.event_id = events.id AND x.destination_id = ANY(${p(f.destinationIds)}::text[]))`]
    : [];
  const newestFirst = "ORDER BY occurred_at DESC, id DESC";
  const where = (...conds: string[][]) => ["tenant_id = $1", ...conds.flat()].join(" AND ");
  if (belowRange === null)
    return [{ sql: `SELECT ${EVENT_COLUMNS} FROM events WHERE ${where(typeFilter, rest, scope)} ${newestFirst} LIMIT $2`, params }];
  const walk = `SELECT ${EVENT_COLUMNS}
                  FROM (SELECT * FROM events WHERE ${where(rest)} ${newestFirst} LIMIT ${PREFIX_WALK_ROWS}) events
                 WHERE ${[...typeFilter, ...scope].join(" AND ")} ${newestFirst} LIMIT $2`;
  const byType = `WITH RECURSIVE types (t) AS (
                    SELECT (SELECT min(type COLLATE "C") FROM events WHERE ${where(typeFilter)})
                    UNION ALL
                    SELECT (SELECT min(type COLLATE "C") FROM events WHERE ${where([`type COLLATE "C" > types.t`, belowRange])})
                      FROM types WHERE types.t IS NOT NULL
                  ), top AS (
                    SELECT k.occurred_at, k.id FROM types CROSS JOIN LATERAL (
                      SELECT occurred_at, id FROM events WHERE ${where([`type COLLATE "C" = types.t`], rest, scope)} ${newestFirst} LIMIT $2
                    ) k
                     WHERE types.t IS NOT NULL
                     ORDER BY k.occurred_at DESC, k.id DESC LIMIT $2
                  )
                  SELECT e.* FROM top CROSS JOIN LATERAL (SELECT ${EVENT_COLUMNS} FROM events WHERE events.id = top.id LIMIT 1) e
                   ORDER BY top.occurred_at DESC, top.id DESC`;
  return [
    { sql: walk, params },
    { sql: byType, params },
  ];
}

/** The byte range of the types that start with `prefix`: [prefix, prefix with its last character incremented). */
function prefixRange(prefix: string): { from: string; to: string } {
  return { from: prefix, to: prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1) };
}

/** A page of the tenant's events, newest first; `after` is where the previous page ended. */
export async function listEvents(
  q: Queryable,
  tenantId: string,
  f: EventSearch,
  limit: number,
  after: EventCursor | null,
): Promise<ListedEvent[]> {
  const [first, byType] = eventSearchStatements(tenantId, f, limit, after);
  const rows = await q.query<ListedEvent>(first!.sql, first!.params);
  return rows.length < limit && byType ? q.query<ListedEvent>(byType.sql, byType.params) : rows;
}
