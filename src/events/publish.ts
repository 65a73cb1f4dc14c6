import type { Queryable } from "../db/db.js";
import { ValidationError, SluiceError, type FieldError } from "../errors.js";
import { newId } from "../ids.js";
import { matchesEventType, isSystemEventType } from "../policy/event-match.js";
import { scheduleApplies, currentQuietWindow } from "../policy/quiet-hours.js";
import {
  routingTargets,
  routingVersion,
  insertEvents,
  insertDeliveries,
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
 * The tenants' routing tables, kept in memory while unchanged: publishing then reads one
 * version number instead of every destination of the tenant.
 */
export class RoutingCache {
  private readonly tenants = new Map<string, { version: string; targets: RoutingTarget[]; byId: Map<string, RoutingTarget> }>();
  constructor(private readonly maxTenants = 1000) {}

  async get(q: Queryable, tenantId: string): Promise<{ targets: RoutingTarget[]; byId: Map<string, RoutingTarget> }> {
    // The version is read first: a change that commits between the two reads is picked up by
    // the next publish, which sees a newer version.
    const version = await routingVersion(q, tenantId);
    const hit = this.tenants.get(tenantId);
    if (hit && version !== null && hit.version === version) {
      this.tenants.delete(tenantId); // most recently used last
      this.tenants.set(tenantId, hit);
      return hit;
    }
    const targets = await routingTargets(q, tenantId);
    const entry = { version: version ?? "", targets, byId: new Map(targets.map((t) => [t.id, t])) };
    if (version !== null) {
      this.tenants.delete(tenantId);
      this.tenants.set(tenantId, entry);
      if (this.tenants.size > this.maxTenants) this.tenants.delete(this.tenants.keys().next().value!);
    }
    return entry;
  }
}

export interface PublishOptions {
  /** Keep routing tables in memory between calls (else every call reads them). */
  routing?: RoutingCache;
  maxPayloadBytes: number;
  /** Sluice's own events (destination.*, delivery.dead); tenants may not publish those types. */
  system?: boolean;
  /** Field-name prefix for error details (e.g. "events[3]."). */
  fieldPrefix?: (index: number) => string;
  /** Receives the destinations that began holding for quiet hours (to log after the commit). */
  quietHoldsStarted?: QuietHoldStart[];
}

export async function publishEvents(q: Queryable, tenantId: string, inputs: EventInput[], opts: PublishOptions): Promise<Published[]> {
  const prefix = opts.fieldPrefix ?? (() => "");
  const problems: FieldError[] = [];
  const events: NewEvent[] = [];
  for (const [i, e] of inputs.entries()) {
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
    events.push({
      id: newId("evt"),
      type: e.type,
      payload,
      occurredAt: e.occurred_at ? new Date(e.occurred_at) : null,
      deliverAt: e.deliver_at ? new Date(e.deliver_at) : null,
    });
  }
  if (problems.length) throw invalid(problems);

  const { targets, byId } = opts.routing
    ? await opts.routing.get(q, tenantId)
    : await routingTargets(q, tenantId).then((targets) => ({ targets, byId: new Map(targets.map((t) => [t.id, t])) }));
  for (const [i, e] of inputs.entries()) {
    for (const id of e.destination_ids ?? []) {
      if (!byId.has(id)) problems.push({ field: `${prefix(i)}destination_ids`, message: `'${id}' is not a destination of this tenant` });
    }
  }
  if (problems.length) throw invalid(problems);

  const deliveries: NewDelivery[] = [];
  // The open quiet window's end per destination, worked out once per call.
  const nowMs = Date.now();
  const quietEnds = new Map<string, number | null>();
  const quietEnd = (t: RoutingTarget): number | null => {
    let end = quietEnds.get(t.id);
    if (end === undefined) {
      end = t.delivery_schedule ? (currentQuietWindow(t.delivery_schedule, nowMs)?.endMs ?? null) : null;
      quietEnds.set(t.id, end);
    }
    return end;
  };
  const out: Published[] = [];
  for (const [i, e] of inputs.entries()) {
    const ev = events[i]!;
    // destination_ids targets those destinations directly; otherwise event_types decide.
    const to = e.destination_ids
      ? e.destination_ids.map((id) => byId.get(id)!)
      : targets.filter((t) => matchesEventType(t.event_types, e.type));
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
  await insertEvents(q, tenantId, events);
  const started = await insertDeliveries(q, tenantId, deliveries);
  opts.quietHoldsStarted?.push(...started);
  return out;
}

function invalid(problems: FieldError[]): ValidationError {
  return new ValidationError("event", problems);
}
