import type { FastifyInstance } from "fastify";
import type { ApiContext } from "../context.js";
import { newApiKey, newId } from "../../ids.js";
import { insertTenant, listTenants, updateTenant } from "../../db/queries/tenants.js";
import { insertApiKey } from "../../db/queries/api-keys.js";
import { placeTenant } from "../../db/queries/cell-directory.js";
import { Tenant, TenantCreate, TenantCreated, TenantPatch } from "../../schemas/tenants.js";
import { ListQuery, Page } from "../../schemas/common.js";
import { answers, BODY_ERRORS } from "../openapi.js";
import { decodeCursor, page, tenantView, badCursor } from "../serialize.js";
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
        config: { auth: "admin" },
      },
      async (req, reply) => {
        const apiKey = newApiKey();
        const t = await ctx.db.tx(async (q) => {
          const id = newId("ten");
          // In a cell, the directory learns where the tenant lives in the same transaction.
          if (ctx.cell !== undefined) await placeTenant(q, id, ctx.cell);
          const tenant = await insertTenant(q, { id, name: req.body.name, alertEmail: req.body.alert_email ?? null });
          // Listed by GET /v1/api-keys under this name; it can be deleted once the tenant has another.
          await insertApiKey(q, { id: newId("key"), tenantId: tenant.id, name: "initial", key: apiKey });
          return tenant;
        });
        return reply.status(201).send({ ...tenantView(t), api_key: apiKey });
      },
    );

    // The dashboard's tenant switcher: the admin key only, acting for no tenant (auth.ts).
    app.get<{ Querystring: Static<typeof ListQuery> }>(
      "/v1/tenants",
      {
        schema: {
          operationId: "listTenants",
          summary: "List every tenant, newest first (admin key)",
          tags: ["tenants"],
          querystring: ListQuery,
          response: answers({ 200: Page(Type.Ref(Tenant)) }, [403]),
        },
        config: { auth: "admin" },
      },
      async (req) => {
        const before = decodeCursor(req.query.cursor);
        if (before === undefined) throw badCursor();
        const limit = req.query.limit ?? 100;
        return page((await listTenants(ctx.db, limit, before)).map(tenantView), limit);
      },
    );

    app.get(
      "/v1/tenant",
      {
        schema: {
          operationId: "getTenant",
          summary: "The calling key's tenant",
          tags: ["tenants"],
          response: answers({ 200: Type.Ref(Tenant) }, [403]),
        },
        config: { portal: "read" },
      },
      async (req) => {
        const t = tenantView(req.tenant);
        // Where the platform's alerts go is the platform's business, not its customer's.
        return req.access.kind === "portal" ? { ...t, alert_email: null } : t;
      },
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
