import type { FastifyInstance, FastifyRequest } from "fastify";
import { createHash } from "node:crypto";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import { NotFoundError, SluiceError, ValidationError } from "../../errors.js";
import { retrying, withRetry, type Queryable } from "../../db/db.js";
import { findIdempotent, storeIdempotent, getEvent, listEvents, type QuietHoldStart } from "../../db/queries/events.js";
import { listDeliveries } from "../../db/queries/deliveries.js";
import { planPublish, publishWith, writePublish, canWriteAlone, type Published, type PublishPlan } from "../../events/publish.js";
import { WORK_CHANNEL } from "../../db/channels.js";
import { metrics } from "../../metrics.js";
import { IdParams, Page } from "../../schemas/common.js";
import { Event, EventAccepted, EventBatch, EventBatchAccepted, EventIn, EventListQuery, IdempotencyHeaders } from "../../schemas/events.js";
import { answers, BODY_ERRORS } from "../openapi.js";
import { eventView, deliveryView, decodeTimeCursor, encodeTimeCursor, badCursor } from "../serialize.js";
import { destinationScope } from "../access.js";
import { parseTraceContext, type TraceContext } from "../../policy/trace-context.js";
import { TRACING_OFF } from "../../tracing/tracing.js";

class IdempotentReplay extends Error {}

export function eventRoutes(ctx: ApiContext) {
  const tags = ["events"];
  const tracing = ctx.tracing ?? TRACING_OFF;

  /** Validates the Idempotency-Key header; returns it (or undefined) and the body's hash. */
  function idempotencyKey(req: FastifyRequest): { key: string; hash: string } | undefined {
    const key = req.headers["idempotency-key"];
    if (key === undefined) return undefined;
    if (typeof key !== "string" || key.length === 0 || key.length > 255) {
      throw new ValidationError("request", [{ field: "header.idempotency-key", message: "must be 1–255 characters" }]);
    }
    return { key, hash: createHash("sha256").update(JSON.stringify(req.body)).digest("hex") };
  }

  /** The stored first answer for this key, or undefined; 409 when the key came with another body. */
  async function replay(req: FastifyRequest, idem: { key: string; hash: string }): Promise<unknown> {
    const found = await findIdempotent(ctx.db, req.tenant.id, idem.key);
    if (!found) return undefined;
    if (found.request_hash !== idem.hash) {
      throw new SluiceError("SLUICE_IDEMPOTENCY_KEY_REUSED", { key: idem.key });
    }
    return found.response;
  }

  /** Publishes once per Idempotency-Key: a repeat (even a concurrent one) gets the first answer. */
  async function accept(req: FastifyRequest, inputs: Static<typeof EventIn>[], batch: boolean): Promise<unknown> {
    const idem = idempotencyKey(req);
    if (idem) {
      const first = await replay(req, idem);
      if (first !== undefined) return first;
    }
    // The caller's trace context is kept whether or not tracing is on: it is one header read, and
    // stored with the events it lets every attempt carry the caller's trace on to the receiver.
    const caller = req.headers.traceparent === undefined ? undefined : parseTraceContext(req.headers.traceparent, req.headers.tracestate);
    const span = tracing.on
      ? tracing.startPublish({ tenantId: req.tenant.id, route: batch ? "POST /v1/events/batch" : "POST /v1/events", caller })
      : null;
    try {
      const out = await run(req, inputs, batch, idem, span?.context ?? caller);
      span?.end({ events: out.length, deliveries: out.reduce((n, r) => n + r.deliveries, 0), eventId: batch ? undefined : out[0]?.id });
      return batch ? { events: out } : out[0];
    } catch (err) {
      if (err instanceof IdempotentReplay && idem) {
        span?.end({ events: 0, deliveries: 0 });
        return replay(req, idem);
      }
      span?.end({ error: err });
      throw err;
    }
  }

  async function run(
    req: FastifyRequest,
    inputs: Static<typeof EventIn>[],
    batch: boolean,
    idem: { key: string; hash: string } | undefined,
    trace: TraceContext | undefined,
  ): Promise<Published[]> {
    // Inside a transaction, plan through it: the embedded store's one session is busy with it.
    const plan = (q: Queryable, fresh: boolean) =>
      planPublish(q, req.tenant.id, inputs, {
        maxPayloadBytes: ctx.config.maxPayloadBytes,
        maxDeliveries: ctx.config.maxDeliveriesPerRequest,
        routing: ctx.routing,
        fieldPrefix: batch ? (i) => `events[${i}].` : undefined,
        freshRouting: fresh,
        trace,
      });
    // On the server store the write itself wakes the workers, as it commits.
    const notify = ctx.db.notifiesFromSql ? ctx.db.channel(WORK_CHANNEL) : null;
    const first = await plan(ctx.db, false);
    let written: { plan: PublishPlan; quietHoldsStarted: QuietHoldStart[] } | null = null;
    let stale = false;
    if (!idem && canWriteAlone(first)) {
      // The usual publish: one statement, atomic by itself — no BEGIN and COMMIT round trips.
      const holds = await retrying(() => writePublish(ctx.db, first, notify));
      if (holds) written = { plan: first, quietHoldsStarted: holds };
      else stale = true; // the tenant's routing changed since the cached table: nothing written
    }
    written ??= await withRetry(ctx.db, async (q) => {
      const w = await publishWith(q, (fresh) => (fresh || stale ? plan(q, true) : Promise.resolve(first)), notify);
      if (idem) {
        const response = batch ? { events: w.plan.out } : w.plan.out[0];
        // Another request with this key committed first: roll back, answer with its response.
        if (!(await storeIdempotent(q, req.tenant.id, idem.key, idem.hash, response))) throw new IdempotentReplay();
      }
      return w;
    });
    const result = written.plan.out;
    // The claim at the window's end logs the release (docs/logs.md).
    for (const h of written.quietHoldsStarted) {
      ctx.log.info(
        { tenant_id: req.tenant.id, destination_id: h.destinationId, quiet_until: h.until.toISOString() },
        "quiet hours: holding deliveries",
      );
    }
    metrics.eventsIngested.inc(result.length);
    metrics.deliveriesCreated.inc(result.reduce((n, r) => n + r.deliveries, 0));
    if (!notify) await ctx.db.notify(WORK_CHANNEL);
    return result;
  }

  return async (app: FastifyInstance) => {
    app.post<{ Body: Static<typeof EventIn> }>(
      "/v1/events",
      {
        schema: {
          operationId: "publishEvent",
          summary: "Publish an event; durable when answered",
          tags,
          headers: IdempotencyHeaders,
          body: EventIn,
          response: answers({ 202: Type.Ref(EventAccepted) }, [409, ...BODY_ERRORS]),
        },
      },
      async (req, reply) => {
        return reply.status(202).send(await accept(req, [req.body], false));
      },
    );

    app.post<{ Body: EventBatch }>(
      "/v1/events/batch",
      {
        schema: {
          operationId: "publishEventBatch",
          summary: "Publish up to 1,000 events in one transaction",
          tags,
          headers: IdempotencyHeaders,
          body: EventBatch,
          response: answers({ 202: EventBatchAccepted }, [409, ...BODY_ERRORS]),
        },
        bodyLimit: ctx.config.maxBatchBytes,
      },
      async (req, reply) => {
        return reply.status(202).send(await accept(req, req.body.events, true));
      },
    );

    app.get<{ Querystring: EventListQuery }>(
      "/v1/events",
      {
        schema: {
          operationId: "listEvents",
          summary: "Find events by type (order.* for a prefix) and time, newest first",
          tags,
          querystring: EventListQuery,
          response: answers({ 200: Page(Type.Ref(Event)) }),
        },
        config: { portal: "read" },
      },
      async (req) => {
        const after = decodeTimeCursor(req.query.cursor);
        if (after === undefined) throw badCursor();
        const since = req.query.since === undefined ? undefined : new Date(req.query.since);
        const until = req.query.until === undefined ? undefined : new Date(req.query.until);
        if (since && until && until <= since) {
          throw new ValidationError("request", [{ field: "query.until", message: "must be after query.since" }]);
        }
        const limit = req.query.limit ?? 100;
        const search = { type: req.query.type, since, until, destinationIds: destinationScope(req) };
        const rows = await listEvents(ctx.db, req.tenant.id, search, limit, after);
        const last = rows[rows.length - 1];
        return {
          data: rows.map(eventView),
          next_cursor: rows.length === limit && last ? encodeTimeCursor({ at: last.cursor_at, id: last.id }) : null,
        };
      },
    );

    app.get<{ Params: Static<typeof IdParams> }>(
      "/v1/events/:id",
      {
        schema: {
          operationId: "getEvent",
          summary: "Get an event and its deliveries",
          tags,
          params: IdParams,
          response: answers({ 200: Type.Ref(Event) }, [404]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        // A portal session sees an event only through a delivery to one of its destinations, and only those deliveries.
        const scope = destinationScope(req);
        const ev = await getEvent(ctx.db, req.tenant.id, req.params.id, scope);
        if (!ev) throw new NotFoundError("event", req.params.id);
        const deliveries = await listDeliveries(ctx.db, req.tenant.id, { eventId: ev.id, destinationIds: scope }, 1000, null);
        return { ...eventView(ev), deliveries: deliveries.map(deliveryView) };
      },
    );
  };
}
