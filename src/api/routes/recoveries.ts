import type { FastifyInstance } from "fastify";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import { NotFoundError, ValidationError } from "../../errors.js";
import { newId } from "../../ids.js";
import { getDestination } from "../../db/queries/destinations.js";
import { countRecoverable, dbNow, getRecovery, insertRecovery, type RecoveryRange } from "../../db/queries/recoveries.js";
import { RECOVERY_CHANNEL } from "../../db/channels.js";
import { DEFAULT_RECOVER_STATUSES } from "../../policy/statuses.js";
import { IdParams } from "../../schemas/common.js";
import { RecoverBody, Recovery, RecoveryAccepted, RecoveryParams } from "../../schemas/recoveries.js";
import { answers, BODY_ERRORS } from "../openapi.js";
import { recoveryView } from "../serialize.js";
import { assertDestinationVisible } from "../access.js";

// Recovery over a time range: the request only counts and records it (one short transaction);
// the workers queue the deliveries again page by page (dispatch/recovery.ts).

export function recoveryRoutes(ctx: ApiContext) {
  const tags = ["destinations"];

  return async (app: FastifyInstance) => {
    app.post<{ Params: Static<typeof IdParams>; Body: RecoverBody }>(
      "/v1/destinations/:id/recover",
      {
        schema: {
          operationId: "recoverDestination",
          summary: "Queue again the dead, discarded (or delivered) deliveries whose events occurred in a time range",
          tags,
          params: IdParams,
          body: RecoverBody,
          response: answers({ 202: Type.Ref(RecoveryAccepted) }, [404, ...BODY_ERRORS]),
        },
        config: { portal: "write" },
      },
      async (req, reply) => {
        assertDestinationVisible(req, req.params.id);
        const row = await ctx.db.tx(async (q) => {
          const d = await getDestination(q, req.tenant.id, req.params.id);
          if (!d) throw new NotFoundError("destination", req.params.id);
          const since = new Date(req.body.since);
          // The store's clock, the one occurred_at defaults to when an event is published.
          const until = req.body.until === undefined ? await dbNow(q) : new Date(req.body.until);
          if (until <= since) {
            const message =
              req.body.until === undefined
                ? "must be after since; since is in the future, so give an until after it or an earlier since"
                : "must be after since";
            throw new ValidationError("recovery", [{ field: "until", message }]);
          }
          const range: RecoveryRange = { destinationId: d.id, since, until, statuses: req.body.statuses ?? DEFAULT_RECOVER_STATUSES };
          return insertRecovery(q, newId("rcv"), req.tenant.id, range, await countRecoverable(q, range));
        });
        ctx.log.info(
          { tenant_id: req.tenant.id, destination_id: row.destination_id, recovery_id: row.id, deliveries: row.deliveries },
          "recovery requested",
        );
        await ctx.db.notify(RECOVERY_CHANNEL);
        return reply.status(202).send({ id: row.id, deliveries: row.deliveries });
      },
    );

    app.get<{ Params: Static<typeof RecoveryParams> }>(
      "/v1/destinations/:id/recoveries/:rid",
      {
        schema: {
          operationId: "getRecovery",
          summary: "A recovery's progress",
          tags,
          params: RecoveryParams,
          response: answers({ 200: Type.Ref(Recovery) }, [404]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        assertDestinationVisible(req, req.params.id);
        const r = await getRecovery(ctx.db, req.tenant.id, req.params.id, req.params.rid);
        if (r) return recoveryView(r);
        // Which id is wrong: the destination's (404 destination), or the recovery's.
        if (!(await getDestination(ctx.db, req.tenant.id, req.params.id))) throw new NotFoundError("destination", req.params.id);
        throw new NotFoundError("recovery", req.params.rid);
      },
    );
  };
}
