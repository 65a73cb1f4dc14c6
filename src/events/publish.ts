import type { Queryable } from "../db/db.js";
import { ValidationError, SluiceError, type FieldError } from "../errors.js";
import { newId } from "../ids.js";
import { matchesEventType, isSystemEventType } from "../policy/event-match.js";
import { scheduleApplies, currentQuietWindow } from "../policy/quiet-hours.js";
import { BOUNDS } from "../policy/bounds.js";
import { jsonDepth } from "../policy/json-depth.js";
import { unlessFaulty } from "../policy/stored-config.js";
import type { TraceContext } from "../policy/trace-context.js";
import {
  routingTargets,
  routingVersion,
  insertPublished,
  markQuietHolding,
  startsQuietHold,
  type NewEvent,
  type NewDelivery,
  type RoutingTarget,
  type QuietHoldStart,
} from "../db/queries/events.js";

// Fan-out: an event becomes one delivery per matching destination, all in the caller's
// transaction. Used by the API and by Sluice itself (destination.* and delivery.dead events).

export interface EventInput {
  type: string;
  payload: unknown;
  occurred_at?: string | undefined;
  deliver_at?: string | undefined;
  destination_ids?: string[] | undefined;
}

export interface Published {
  id: string;
  deliveries: number;
}

/**
 * The tenants' routing tables, kept in memory while unchanged. A publish routes with the table
 * it has and its write checks, in the same statement, that the tenant's routing version is still
 * the one the table was read at (insertPublished): no read before the write. A write that finds
 * a newer version writes nothing; the publish then reads the table again and retries.
 */
export class RoutingCache {
  private readonly tenants = new Map<string, RoutingTable>();
  constructor(private readonly maxTenants = 1000) {}

  /** The tenant's cached table; read from the store when there is none yet, or when `fresh`. */
  async get(q: Queryable, tenantId: string, fresh = false): Promise<RoutingTable> {
    const hit = fresh ? undefined : this.tenants.get(tenantId);
    if (hit) {
      this.tenants.delete(tenantId); // most recently used last
      this.tenants.set(tenantId, hit);
      return hit;
    }
    return this.load(q, tenantId);
  }

  private async load(q: Queryable, tenantId: string): Promise<RoutingTable> {
    // The version is read first: a change that commits between the two reads leaves the table
    // newer than its version, which the write's check then refuses once, at worst.
    const version = await routingVersion(q, tenantId);
    const targets = await routingTargets(q, tenantId);
    const entry = { version, targets, byId: new Map(targets.map((t) => [t.id, t])) };
    this.tenants.delete(tenantId);
    if (version !== null) {
      this.tenants.set(tenantId, entry);
      if (this.tenants.size > this.maxTenants) this.tenants.delete(this.tenants.keys().next().value!);
    }
    return entry;
  }
}

/** A tenant's live destinations, read at routing `version` (null: read without one). */
export interface RoutingTable {
  version: string | null;
  targets: RoutingTarget[];
  byId: Map<string, RoutingTarget>;
}

export interface PublishOptions {
  /** Keep routing tables in memory between calls (else every call reads them). */
  routing?: RoutingCache;
  maxPayloadBytes: number;
  /** Most deliveries one call may create (default: no bound, for Sluice's own events). */
  maxDeliveries?: number;
  /** Sluice's own events (destination.*, delivery.dead); tenants may not publish those types. */
  system?: boolean;
  /** Field-name prefix for error details (e.g. "events[3]."). */
  fieldPrefix?: (index: number) => string;
  /** The trace context stored with every event of the call (docs/tracing.md). */
  trace?: TraceContext | undefined;
}

/** A publish worked out and checked, not yet written (planPublish → writePublish). */
export interface PublishPlan {
  tenantId: string;
  /** The routing version the fan-out was worked out at; the write checks it (null: no check). */
  routingVersion: string | null;
  events: NewEvent[];
  deliveries: NewDelivery[];
  out: Published[];
}

/**
 * Validates, routes and fans out — then writes, in the caller's transaction. The API's publish
 * route runs the two halves apart so that the usual publish is one statement with no
 * transaction around it (see canWriteAlone).
 */
export async function publishEvents(q: Queryable, tenantId: string, inputs: EventInput[], opts: PublishOptions): Promise<Published[]> {
  const { plan } = await publishWith(q, (fresh) => planPublish(q, tenantId, inputs, { ...opts, freshRouting: fresh }), null);
  return plan.out;
}

/**
 * Plans and writes until the write finds the routing it was planned with (see RoutingCache):
 * `plan(fresh)` plans again, reading the routing table from the store when `fresh`.
 */
export async function publishWith(
  q: Queryable,
  plan: (fresh: boolean) => Promise<PublishPlan>,
  notifyChannel: string | null,
): Promise<{ plan: PublishPlan; quietHoldsStarted: QuietHoldStart[] }> {
  for (let fresh = false; ; fresh = true) {
    const p = await plan(fresh);
    const written = await writePublish(q, p, notifyChannel);
    if (written) return { plan: p, quietHoldsStarted: written };
  }
}

/**
 * The write is one statement unless a quiet window open now holds some of the deliveries (then
 * marking their destinations as holding is a second one): alone, it needs no transaction.
 */
export function canWriteAlone(plan: PublishPlan): boolean {
  return !startsQuietHold(plan.deliveries);
}

/**
 * Writes a planned publish: one statement (plus one when quiet holds start, see canWriteAlone).
 * `notifyChannel`: signal workers from the statement itself, as it commits. Returns the
 * destinations that began holding for quiet hours (to log after the commit), or null when the
 * tenant's routing changed since the plan was made: nothing was written, plan again.
 */
export async function writePublish(q: Queryable, plan: PublishPlan, notifyChannel: string | null): Promise<QuietHoldStart[] | null> {
  // A second statement will change destination rows: the first locks all of them, in id order.
  const lockAll = startsQuietHold(plan.deliveries);
  if (!(await insertPublished(q, plan.tenantId, plan.routingVersion, plan.events, plan.deliveries, notifyChannel, lockAll))) return null;
  return markQuietHolding(q, plan.deliveries);
}

/** Everything of a publish but the write: validation, routing (read through `q`), fan-out. */
export async function planPublish(
  q: Queryable,
  tenantId: string,
  inputs: EventInput[],
  opts: PublishOptions & { freshRouting?: boolean },
): Promise<PublishPlan> {
  const prefix = opts.fieldPrefix ?? (() => "");
  const problems: FieldError[] = [];
  const events: NewEvent[] = [];
  const nowMs = Date.now();
  for (const [i, e] of inputs.entries()) {
    problems.push(...timeProblems(e, nowMs, prefix(i)));
    if (!opts.system && isSystemEventType(e.type)) {
      problems.push({
        field: `${prefix(i)}type`,
        message: `'${e.type}' is published by Sluice itself (destination.* and delivery.dead are reserved); pick another type`,
      });
    }
    const payload = JSON.stringify(e.payload);
    if (Buffer.byteLength(payload) > opts.maxPayloadBytes) {
      throw new SluiceError("SLUICE_EVENT_PAYLOAD_TOO_LARGE", {
        field: `${prefix(i)}payload`,
        bytes: Buffer.byteLength(payload),
        limit: opts.maxPayloadBytes,
      });
    }
    const depth = jsonDepth(payload, BOUNDS.payload_depth.max);
    if (depth > BOUNDS.payload_depth.max) {
      problems.push({
        field: `${prefix(i)}payload`,
        message: `nests more than ${BOUNDS.payload_depth.max} levels deep; flatten it, or send the deep part as a string`,
      });
    }
    const ev: NewEvent = {
      id: newId("evt"),
      type: e.type,
      payload,
      occurredAt: e.occurred_at ? new Date(e.occurred_at) : null,
      deliverAt: e.deliver_at ? new Date(e.deliver_at) : null,
    };
    if (opts.trace) {
      ev.traceparent = opts.trace.traceparent;
      if (opts.trace.tracestate !== undefined) ev.tracestate = opts.trace.tracestate;
    }
    events.push(ev);
  }
  if (problems.length) throw invalid(problems);

  const table = (fresh: boolean): Promise<RoutingTable> =>
    opts.routing
      ? opts.routing.get(q, tenantId, fresh)
      : routingTargets(q, tenantId).then((targets) => ({ version: null, targets, byId: new Map(targets.map((t) => [t.id, t])) }));
  let { version, targets, byId } = await table(opts.freshRouting ?? false);
  const named = inputs.flatMap((e) => e.destination_ids ?? []);
  // A destination named that the cached table does not know may be newer than the table.
  if (opts.routing && !opts.freshRouting && named.some((id) => !byId.has(id))) ({ version, targets, byId } = await table(true));
  for (const [i, e] of inputs.entries()) {
    for (const id of e.destination_ids ?? []) {
      if (!byId.has(id)) problems.push({ field: `${prefix(i)}destination_ids`, message: `'${id}' is not a destination of this tenant` });
    }
  }
  if (problems.length) throw invalid(problems);

  const deliveries: NewDelivery[] = [];
  // The open quiet window's end per destination, worked out once per call.
  const quietEnds = new Map<string, number | null>();
  const quietEnd = (t: RoutingTarget): number | null => {
    let end = quietEnds.get(t.id);
    if (end === undefined) {
      // A schedule the policy cannot read holds nothing here: the claim sets its destination aside.
      const schedule = t.delivery_schedule;
      end = schedule ? unlessFaulty(() => currentQuietWindow(schedule, nowMs)?.endMs ?? null, null) : null;
      quietEnds.set(t.id, end);
    }
    return end;
  };
  const out: Published[] = [];
  // destination_ids targets those destinations directly; otherwise event_types decide.
  const reached = inputs.map((e) =>
    e.destination_ids ? e.destination_ids.map((id) => byId.get(id)!) : targets.filter((t) => matchesEventType(t.event_types, e.type)),
  );
  // Counted before any delivery is made: one request's fan-out is one transaction (and its memory).
  const fanOut = reached.reduce((n, to) => n + to.length, 0);
  if (opts.maxDeliveries !== undefined && fanOut > opts.maxDeliveries) {
    throw new SluiceError("SLUICE_EVENT_FANOUT_TOO_LARGE", { deliveries: fanOut, limit: opts.maxDeliveries });
  }
  for (const [i, e] of inputs.entries()) {
    const ev = events[i]!;
    const to = reached[i]!;
    for (const t of to) {
      const quietHold = t.delivery_schedule !== null && scheduleApplies(t.delivery_schedule, e.type);
      const delivery: NewDelivery = {
        id: newId("dlv"),
        destinationId: t.id,
        eventId: ev.id,
        occurredAt: ev.occurredAt,
        deliverAt: ev.deliverAt,
        quietHold,
      };
      if (quietHold) {
        const end = quietEnd(t);
        if (end !== null && end > (ev.deliverAt?.getTime() ?? nowMs)) delivery.wakeAt = new Date(end);
      }
      deliveries.push(delivery);
    }
    out.push({ id: ev.id, deliveries: to.length });
  }
  return { tenantId, routingVersion: version, events, deliveries, out };
}

const HOUR_MS = 3_600_000;

/**
 * occurred_at at most a day ahead (further is a clock gone wrong, or seconds sent as
 * milliseconds) and deliver_at at most a year ahead (policy/bounds.ts).
 */
function timeProblems(e: EventInput, nowMs: number, prefix: string): FieldError[] {
  const out: FieldError[] = [];
  const hoursAhead = BOUNDS.occurred_at_hours_ahead.max;
  if (e.occurred_at !== undefined && Date.parse(e.occurred_at) > nowMs + hoursAhead * HOUR_MS) {
    out.push({
      field: `${prefix}occurred_at`,
      message: `is more than ${hoursAhead} hours ahead of the server's clock (${new Date(nowMs).toISOString()}); send when the event happened, in UTC or with its offset`,
    });
  }
  const daysAhead = BOUNDS.deliver_at_days_ahead.max;
  if (e.deliver_at !== undefined && Date.parse(e.deliver_at) > nowMs + daysAhead * 24 * HOUR_MS) {
    out.push({
      field: `${prefix}deliver_at`,
      message: `is more than ${daysAhead} days ahead; schedule at most a year ahead, and publish later events nearer their time`,
    });
  }
  return out;
}

function invalid(problems: FieldError[]): ValidationError {
  return new ValidationError("event", problems);
}
