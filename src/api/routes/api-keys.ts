import type { FastifyInstance } from "fastify";
import { Type, type Static } from "@sinclair/typebox";
import type { ApiContext } from "../context.js";
import type { KeyCache } from "../key-cache.js";
import { SluiceError } from "../../errors.js";
import { newApiKey, newId } from "../../ids.js";
import { API_KEYS_CHANNEL } from "../../db/channels.js";
import { deleteApiKey, insertApiKey, listApiKeys, lockApiKeys } from "../../db/queries/api-keys.js";
import { IdParams, ListQuery, Page } from "../../schemas/common.js";
import { ApiKey, ApiKeyCreate, ApiKeyCreated } from "../../schemas/api-keys.js";
import { answers, BODY_ERRORS } from "../openapi.js";
import { apiKeyView, decodeCursor, page, badCursor } from "../serialize.js";

// The calling key's tenant's API keys: make another (shown once), list them (never the keys),
// delete one — which stops working at once, in this process and in every other API process.

export function apiKeyRoutes(ctx: ApiContext, keys: KeyCache) {
  const tags = ["api-keys"];

  return async (app: FastifyInstance) => {
    app.post<{ Body: Static<typeof ApiKeyCreate> }>(
      "/v1/api-keys",
      {
        schema: {
          operationId: "createApiKey",
          summary: "Create another API key for this tenant; the key is in this answer only",
          tags,
          body: ApiKeyCreate,
          response: answers({ 201: Type.Ref(ApiKeyCreated) }, BODY_ERRORS),
        },
      },
      async (req, reply) => {
        const key = newApiKey();
        const row = await ctx.db.tx((q) => insertApiKey(q, { id: newId("key"), tenantId: req.tenant.id, name: req.body.name, key }));
        // A fresh random key cannot exist already; null would mean the key was not stored.
        if (!row) throw new Error("a newly generated API key already existed");
        return reply.status(201).send({ ...apiKeyView(row), key });
      },
    );

    app.get<{ Querystring: Static<typeof ListQuery> }>(
      "/v1/api-keys",
      {
        schema: {
          operationId: "listApiKeys",
          summary: "List this tenant's API keys, newest first (names and prefixes, never the keys)",
          tags,
          querystring: ListQuery,
          response: answers({ 200: Page(Type.Ref(ApiKey)) }),
        },
      },
      async (req) => {
        const before = decodeCursor(req.query.cursor);
        if (before === undefined) throw badCursor();
        const limit = req.query.limit ?? 100;
        const rows = await listApiKeys(ctx.db, req.tenant.id, limit, before);
        return page(rows.map(apiKeyView), limit);
      },
    );

    app.delete<{ Params: Static<typeof IdParams> }>(
      "/v1/api-keys/:id",
      {
        schema: {
          operationId: "deleteApiKey",
          summary: "Delete an API key: it stops working at once (not the tenant's last key)",
          tags,
          params: IdParams,
          response: answers({ 204: Type.Null() }, [404, 409]),
        },
      },
      async (req, reply) => {
        const id = req.params.id;
        await ctx.db.tx(async (q) => {
          const ids = await lockApiKeys(q, req.tenant.id);
          if (!ids.includes(id)) {
            throw new SluiceError("SLUICE_API_KEY_NOT_FOUND", { id });
          }
          if (ids.length === 1) {
            throw new SluiceError("SLUICE_API_KEY_LAST", { id });
          }
          await deleteApiKey(q, req.tenant.id, id);
        });
        // Before the answer: the next request with the key, here, is looked up and refused.
        keys.forget(id);
        // The other API processes drop it when this arrives. Should it fail (the store went away
        // right after the commit), they keep it for at most the cache's TTL; the delete itself
        // stands, so the answer is still 204.
        await ctx.db.notify(API_KEYS_CHANNEL, id).catch((err: unknown) => {
          ctx.log.warn(
            { err, tenant_id: req.tenant.id, api_key_id: id },
            "API key deleted, but other API processes could not be told; they drop it within 5 s",
          );
        });
        return reply.status(204).send();
      },
    );
  };
}
