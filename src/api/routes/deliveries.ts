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
import { deliveryView, attemptView, decodeCursor, page } from "../serialize.js";
import { badCursor } from "./destinations.js";
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
        const rows = await listDeliveries(
          ctx.db,
          req.tenant.id,
          {
            destinationId: req.query.destination_id,
            eventId: req.query.event_id,
            statuses: status ? STORED[status] : undefined,
            destinationIds: destinationScope(req),
          },
          limit,
          before,
        );
        // Filter on the derived status too (a stored "queued" may read as "held"); the cursor
        // still advances over the raw page, so paging stays correct.
        const views = rows.map(deliveryView);
        const out = page(views, limit);
        return status ? { data: out.data.filter((d) => d.status === status), next_cursor: out.next_cursor } : out;
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
