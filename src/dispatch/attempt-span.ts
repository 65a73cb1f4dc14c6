// An attempt's span (docs/tracing.md): the context it continues, and why the delivery waited
// before it was sent, worked out at send time from what the claim read.
import type { Logger } from "pino";
import type { ClaimedDestination, LeasedDelivery } from "../db/queries/claim.js";
import type { TraceContext } from "../policy/trace-context.js";
import { explainWait, type WaitSegment } from "../policy/wait-reasons.js";
import type { AttemptSpan, Tracing } from "../tracing/tracing.js";

/** The attempt's span, with the wait before it explained (policy/wait-reasons.ts). */
export function startAttemptSpan(tracing: Tracing, log: Logger, d: LeasedDelivery, dest: ClaimedDestination, sendMs: number): AttemptSpan {
  const w = d.wait;
  const waitFromMs = w?.prev_ms ?? d.created_ms;
  let waits: WaitSegment[] = [];
  if (w) {
    try {
      waits = explainWait({
        fromMs: waitFromMs,
        sendMs,
        deliverAtMs: w.prev_ms === null ? w.deliver_at_ms : null,
        retryAtMs: w.retrying ? w.due_ms : null,
        throttledUntilMs: dest.throttled_until ? new Date(dest.throttled_until).getTime() : null,
        pause:
          dest.last_paused_at && dest.last_resumed_at
            ? { fromMs: new Date(dest.last_paused_at).getTime(), untilMs: new Date(dest.last_resumed_at).getTime() }
            : null,
        quiet: w.quiet_hold && dest.delivery_schedule ? { schedule: dest.delivery_schedule, eventType: d.type } : null,
        rateLimited: dest.rate_limited,
        ordered: dest.ordered,
      });
    } catch (err) {
      // A trace without its wait explained, rather than a send not made.
      log.debug({ err, delivery_id: d.id }, "could not explain an attempt's wait for its trace");
    }
  }
  return tracing.startAttempt({
    stored: d.traceparent === null ? null : storedContext(d),
    tenantId: dest.tenant_id,
    destinationId: d.destination_id,
    deliveryId: d.id,
    eventId: d.event_id,
    eventType: d.type,
    attempt: d.attempts,
    url: dest.url,
    sendMs,
    waitFromMs,
    waits,
  });
}

/** The trace context stored with a delivery's event (its traceparent is not null). */
export function storedContext(d: LeasedDelivery): TraceContext {
  return d.tracestate === null ? { traceparent: d.traceparent! } : { traceparent: d.traceparent!, tracestate: d.tracestate };
}
