import type { FastifyInstance, FastifyRequest } from "fastify";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import { SluiceError, ValidationError } from "../../errors.js";
import { newId, newPortalToken } from "../../ids.js";
import { liveDestinationIds } from "../../db/queries/destinations.js";
import {
  deletePortalSession,
  getPortalSession,
  insertPortalSession,
  pruneExpiredPortalSessions,
  type PortalSessionRow,
} from "../../db/queries/portal-sessions.js";
import { IdParams } from "../../schemas/common.js";
import { PortalSession, PortalSessionCreate, PortalSessionCreated } from "../../schemas/portal-sessions.js";
import { answers, BODY_ERRORS } from "../openapi.js";

// Consumer-portal links: a tenant (its API key, or the admin key acting for it) makes a
// short-lived link for its own customer; the portal page calls the API with the link's token,
// which auth.ts turns into a session limited to some destinations (access.ts). Revoking deletes
// the session: its token is looked up on every request (never cached), so it stops at once.

const DEFAULT_TTL_SECONDS = 3600;

export function portalSessionRoutes(ctx: ApiContext) {
  const tags = ["portal"];

  /** Where the portal is reached: SLUICE_PUBLIC_URL, else the address this request came to. */
  function baseUrl(req: FastifyRequest): string {
    return ctx.config.publicUrl ?? `${req.protocol}://${req.host}`;
  }

  return async (app: FastifyInstance) => {
    app.post<{ Body: PortalSessionCreate }>(
      "/v1/portal-sessions",
      {
        schema: {
          operationId: "createPortalSession",
          summary: "Make a consumer-portal link for this tenant's customer; the token is in this answer only",
          tags,
          body: PortalSessionCreate,
          response: answers({ 201: Type.Ref(PortalSessionCreated) }, BODY_ERRORS),
        },
        config: { optionalBody: true },
      },
      async (req, reply) => {
        const ids = req.body.destination_ids ?? null;
        const token = newPortalToken();
        const row = await ctx.db.tx(async (q) => {
          if (ids) {
            const live = new Set(await liveDestinationIds(q, req.tenant.id, ids));
            const bad = ids.flatMap((id, i) =>
              live.has(id)
                ? []
                : [{ field: `destination_ids[${i}]`, message: `'${id}' is not a destination of this tenant (or was deleted)` }],
            );
            if (bad.length) throw new ValidationError("request", bad);
          }
          await pruneExpiredPortalSessions(q, req.tenant.id);
          return insertPortalSession(q, {
            id: newId("pst"),
            tenantId: req.tenant.id,
            token,
            destinationIds: ids,
            readOnly: req.body.read_only ?? false,
            theme: req.body.theme ?? {},
            ttlSeconds: req.body.ttl_seconds ?? DEFAULT_TTL_SECONDS,
          });
        });
        // In the fragment: browsers send it to no server, so it stays out of access logs and Referer headers.
        const url = `${baseUrl(req)}/portal#token=${encodeURIComponent(token)}`;
        return reply.status(201).send({ ...sessionView(row), url, token });
      },
    );

    app.get(
      "/v1/portal-session",
      {
        schema: {
          operationId: "getPortalSession",
          summary: "The portal link this request is made with (portal token only): its scope, tenant and theme",
          tags,
          response: answers({ 200: Type.Ref(PortalSession) }, [403]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        const access = req.access;
        if (access.kind !== "portal") throw new SluiceError("SLUICE_PORTAL_SESSION_REQUIRED");
        const row = await getPortalSession(ctx.db, req.tenant.id, access.sessionId);
        // Revoked between the auth lookup and here: as if it had been a moment earlier.
        if (!row)
          throw new SluiceError("SLUICE_PORTAL_LINK_INVALID", { problem: "is not known: it was revoked, or expired more than a day ago" });
        return { ...sessionView(row), tenant: { id: req.tenant.id, name: req.tenant.name } };
      },
    );

    app.delete<{ Params: Static<typeof IdParams> }>(
      "/v1/portal-sessions/:id",
      {
        schema: {
          operationId: "deletePortalSession",
          summary: "Revoke a portal link: it stops working at once",
          tags,
          params: IdParams,
          response: answers({ 204: Type.Null() }, [404]),
        },
      },
      async (req, reply) => {
        if (!(await deletePortalSession(ctx.db, req.tenant.id, req.params.id))) {
          throw new SluiceError("SLUICE_PORTAL_SESSION_NOT_FOUND", { id: req.params.id });
        }
        return reply.status(204).send();
      },
    );
  };
}

function sessionView(r: PortalSessionRow) {
  return { id: r.id, destination_ids: r.destination_ids, read_only: r.read_only, expires_at: r.expires_at.toISOString(), theme: r.theme };
}
