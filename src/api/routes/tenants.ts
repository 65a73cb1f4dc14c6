import type { FastifyInstance } from "fastify";
import { timingSafeEqual, createHash } from "node:crypto";
import type { ApiContext } from "../context.js";
import { bearer } from "../auth.js";
import { SluiceError } from "../../errors.js";
import { newApiKey, newId } from "../../ids.js";
import { insertTenant, updateTenant } from "../../db/queries/tenants.js";
import { insertApiKey } from "../../db/queries/api-keys.js";
import { Tenant, TenantCreate, TenantCreated, TenantPatch } from "../../schemas/tenants.js";
import { answers, BODY_ERRORS } from "../openapi.js";
import { tenantView } from "../serialize.js";
import { Type, type Static } from "@sinclair/typebox";

export function tenantRoutes(ctx: ApiContext) {
  return async (app: FastifyInstance) => {
    app.post<{ Body: Static<typeof TenantCreate> }>(
      "/v1/tenants",
      {
        schema: {
          operationId: "createTenant",
          summary: "Create a tenant and its first API key (admin key)",
          tags: ["tenants"],
          body: TenantCreate,
          response: answers({ 201: Type.Ref(TenantCreated) }, [403, ...BODY_ERRORS]),
        },
      },
      async (req, reply) => {
        const admin = ctx.config.adminKey;
        if (!admin) {
          throw new SluiceError("SLUICE_AUTH_ADMIN_DISABLED");
        }
        if (!sameSecret(bearer(req), admin)) {
          throw new SluiceError("SLUICE_AUTH_INVALID_KEY", { problem: "This is not the admin key" });
        }
        const apiKey = newApiKey();
        const t = await ctx.db.tx(async (q) => {
          const tenant = await insertTenant(q, { id: newId("ten"), name: req.body.name, alertEmail: req.body.alert_email ?? null });
          // Listed by GET /v1/api-keys under this name; it can be deleted once the tenant has another.
          await insertApiKey(q, { id: newId("key"), tenantId: tenant.id, name: "initial", key: apiKey });
          return tenant;
        });
        return reply.status(201).send({ ...tenantView(t), api_key: apiKey });
      },
    );

    app.get(
      "/v1/tenant",
      {
        schema: {
          operationId: "getTenant",
          summary: "The calling key's tenant",
          tags: ["tenants"],
          response: answers({ 200: Type.Ref(Tenant) }),
        },
      },
      async (req) => tenantView(req.tenant),
    );

    app.patch<{ Body: Static<typeof TenantPatch> }>(
      "/v1/tenant",
      {
        schema: {
          operationId: "updateTenant",
          summary: "Change the calling key's tenant",
          tags: ["tenants"],
          body: TenantPatch,
          response: answers({ 200: Type.Ref(Tenant) }, BODY_ERRORS),
        },
      },
      async (req) => {
        const t = await updateTenant(ctx.db, req.tenant.id, req.body);
        return tenantView(t);
      },
    );
  };
}

function sameSecret(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a).digest();
  const hb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ha, hb);
}
