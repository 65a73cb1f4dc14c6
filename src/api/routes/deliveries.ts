import type { FastifyInstance, FastifyRequest } from "fastify";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import { NotFoundError, SluiceError } from "../../errors.js";
import { getDelivery, listDeliveries, listAttempts, requeueDelivery, type DeliveryRow } from "../../db/queries/deliveries.js";
import type { Queryable } from "../../db/db.js";
import { lockDestination } from "../../db/queries/destinations.js";
import { WORK_CHANNEL } from "../../db/channels.js";
import { IdParams, Page } from "../../schemas/common.js";
import { Delivery, DeliveryListQuery } from "../../schemas/deliveries.js";
import { Attempt } from "../../schemas/destinations.js";
import { answers } from "../openapi.js";
import { deliveryView, attemptView, decodeCursor, encodeCursor, page, badCursor } from "../serialize.js";
import { WAITING_STATUSES, type ApiDeliveryStatus, type DeliveryStatus } from "../../policy/statuses.js";
import { canSeeDestination, destinationScope } from "../access.js";

// API status → stored statuses it can come from ("held" is derived from the destination).
const STORED: Record<ApiDeliveryStatus, readonly DeliveryStatus[]> = {
  queued: ["queued"],
  held: WAITING_STATUSES,
  retry_scheduled: ["retry_scheduled"],
  delivering: ["delivering"],
  delivered: ["delivered"],
  dead: ["dead"],
  discarded: ["discarded"],
};

/** Rows one page of a status may read: ten pages' worth, 2,000 at most (a page is at most 1,000). */
const scanBudget = (limit: number): number => Math.min(limit * 10, 2000);

/**
 * A page of the deliveries shown with `status`. The query reads stored statuses (`STORED`); a
 * stored `queued` one may read as `held` (hold_reason is worked out per delivery), so rows are
 * read and the ones that do not read as `status` dropped. Behind a paused destination's backlog
 * a page of `queued` would then come back empty: it reads on, a window at a time, up to
 * scanBudget rows, and its cursor is where it stopped — the last delivery kept when the page is
 * full, else the last one read (still a correct place to go on from: ids are unique and the
 * order is by id).
 */
async function statusPage(
  read: (window: number, before: string | null) => Promise<DeliveryRow[]>,
  status: ApiDeliveryStatus,
  limit: number,
  before: string | null,
): Promise<{ data: ReturnType<typeof deliveryView>[]; next_cursor: string | null }> {
  const kept: ReturnType<typeof deliveryView>[] = [];
  let last = before;
  // A first page's worth, then the rest of the budget in one read.
  for (const window of [limit, scanBudget(limit) - limit]) {
    const rows = await read(window, last);
    for (const r of rows) {
      last = r.id;
      const v = deliveryView(r);
      if (v.status !== status) continue;
      kept.push(v);
      if (kept.length === limit) return { data: kept, next_cursor: encodeCursor(r.id) };
    }
    if (rows.length < window) return { data: kept, next_cursor: null }; // read to the end
  }
  return { data: kept, next_cursor: encodeCursor(last!) };
}

export function deliveryRoutes(ctx: ApiContext) {
  const tags = ["deliveries"];
  const One = Type.Ref(Delivery);
  return async (app: FastifyInstance) => {
    app.get<{ Querystring: Static<typeof DeliveryListQuery> }>(
      "/v1/deliveries",
      {
        schema: {
          operationId: "listDeliveries",
          summary: "List deliveries, newest first",
          tags,
          querystring: DeliveryListQuery,
          response: answers({ 200: Page(One) }),
        },
        config: { portal: "read" },
      },
      async (req) => {
        const before = decodeCursor(req.query.cursor);
        if (before === undefined) throw badCursor();
        const limit = req.query.limit ?? 100;
        const status = req.query.status;
        // Another destination's deliveries: as for an unknown destination, none.
        if (req.query.destination_id !== undefined && !canSeeDestination(req, req.query.destination_id)) {
          return { data: [], next_cursor: null };
        }
        const filter = {
          destinationId: req.query.destination_id,
          eventId: req.query.event_id,
          statuses: status ? STORED[status] : undefined,
          destinationIds: destinationScope(req),
        };
        if (!status) return page((await listDeliveries(ctx.db, req.tenant.id, filter, limit, before)).map(deliveryView), limit);
        return statusPage((window, after) => listDeliveries(ctx.db, req.tenant.id, filter, window, after), status, limit, before);
      },
    );

    app.get<{ Params: Static<typeof IdParams> }>(
      "/v1/deliveries/:id",
      {
        schema: { operationId: "getDelivery", summary: "Get a delivery", tags, params: IdParams, response: answers({ 200: One }, [404]) },
        config: { portal: "read" },
      },
      async (req) => {
        const d = await visibleDelivery(ctx.db, req, req.params.id);
        return deliveryView(d);
      },
    );

    app.get<{ Params: Static<typeof IdParams> }>(
      "/v1/deliveries/:id/attempts",
      {
        schema: {
          operationId: "listDeliveryAttempts",
          summary: "A delivery's attempts, first to last",
          tags,
          params: IdParams,
          response: answers({ 200: Page(Type.Ref(Attempt)) }, [404]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        const d = await visibleDelivery(ctx.db, req, req.params.id);
        const attempts = await listAttempts(ctx.db, d.destination_id, d.id);
        return { data: attempts.map(attemptView), next_cursor: null };
      },
    );

    app.post<{ Params: Static<typeof IdParams> }>(
      "/v1/deliveries/:id/retry",
      {
        schema: {
          operationId: "retryDelivery",
          summary: "Queue a dead or discarded delivery again",
          tags,
          params: IdParams,
          response: answers({ 202: One }, [404, 409]),
        },
        config: { portal: "write" },
      },
      async (req, reply) => {
        const out = await ctx.db.tx(async (q) => {
          const d = await visibleDelivery(q, req, req.params.id);
          // Waiting deliveries of a destination change only under its row lock.
          await lockDestination(q, d.destination_id);
          if (!(await requeueDelivery(q, d.destination_id, d.id))) {
            throw new SluiceError("SLUICE_DELIVERY_NOT_RETRYABLE", { id: d.id, status: d.status });
          }
          return deliveryView((await getDelivery(q, req.tenant.id, req.params.id))!);
        });
        await ctx.db.notify(WORK_CHANNEL);
        return reply.status(202).send(out);
      },
    );
  };
}

/** The tenant's delivery, if the caller may see its destination; else the 404 of an unknown id. */
async function visibleDelivery(q: Queryable, req: FastifyRequest, id: string): Promise<DeliveryRow> {
  const d = await getDelivery(q, req.tenant.id, id);
  if (!d || !canSeeDestination(req, d.destination_id)) throw new NotFoundError("delivery", id);
  return d;
}
