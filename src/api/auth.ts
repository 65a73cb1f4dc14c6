import type { FastifyInstance, FastifyRequest } from "fastify";
import { SluiceError } from "../errors.js";
import type { TenantRow } from "../db/queries/tenants.js";
import { findApiKey, hashKey } from "../db/queries/api-keys.js";
import { API_KEYS_CHANNEL } from "../db/channels.js";
import type { ApiContext } from "./context.js";
import { KeyCache } from "./key-cache.js";

// API-key authentication: the Bearer token of a request, and the hook that turns it into the
// request's tenant (through a short cache that deleted keys leave at once: key-cache.ts).

declare module "fastify" {
  interface FastifyRequest {
    tenant: TenantRow;
  }
}

/**
 * Authentication for /v1 (the admin-only tenant creation authenticates itself). Returns the key
 * cache, which the route that deletes keys empties of them.
 */
export async function registerAuth(app: FastifyInstance, ctx: ApiContext): Promise<KeyCache> {
  const cache = new KeyCache();
  // Keys deleted through other API processes on the same store; "" = some may have been missed.
  const unlisten = await ctx.db.listen(API_KEYS_CHANNEL, (keyId) => (keyId ? cache.forget(keyId) : cache.clear()));
  app.addHook("onClose", async () => unlisten());
  app.decorateRequest("tenant", null as unknown as TenantRow);
  app.addHook("onRequest", async (req) => {
    if (!req.url.startsWith("/v1/") || (req.method === "POST" && req.url.split("?")[0] === "/v1/tenants")) return;
    const key = bearer(req);
    const owner = await cache.lookup(hashKey(key), () => findApiKey(ctx.db, key));
    if (!owner) throw new SluiceError("SLUICE_AUTH_INVALID_KEY", { problem: "This API key is not known (or was deleted)" });
    req.tenant = owner.tenant;
  });
  return cache;
}

export function bearer(req: FastifyRequest): string {
  const h = req.headers.authorization;
  const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  if (!m) throw new SluiceError("SLUICE_AUTH_INVALID_KEY", { problem: "No API key was sent" });
  return m[1]!;
}
