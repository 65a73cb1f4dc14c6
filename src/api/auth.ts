import type { FastifyInstance, FastifyRequest } from "fastify";
import { SluiceError } from "../errors.js";
import { tenantByKey, type TenantRow } from "../db/queries/tenants.js";
import type { ApiContext } from "./context.js";

// API-key authentication: the Bearer token of a request, and the hook that turns it into the
// request's tenant.

declare module "fastify" {
  interface FastifyRequest {
    tenant: TenantRow;
  }
}

/** Authentication for /v1 (the admin-only tenant creation authenticates itself). */
export function registerAuth(app: FastifyInstance, ctx: ApiContext): void {
  const cache = new Map<string, { tenant: TenantRow; until: number }>();
  app.decorateRequest("tenant", null as unknown as TenantRow);
  app.addHook("onRequest", async (req) => {
    if (!req.url.startsWith("/v1/") || (req.method === "POST" && req.url.split("?")[0] === "/v1/tenants")) return;
    const key = bearer(req);
    const hit = cache.get(key);
    if (hit && hit.until > Date.now()) {
      req.tenant = hit.tenant;
      return;
    }
    const tenant = await tenantByKey(ctx.db, key);
    if (!tenant) throw unauthorized("This API key is not known. Use the key printed at first start or returned by POST /v1/tenants.");
    if (cache.size > 10_000) cache.clear();
    cache.set(key, { tenant, until: Date.now() + 5_000 });
    req.tenant = tenant;
  });
}

export function bearer(req: FastifyRequest): string {
  const h = req.headers.authorization;
  const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  if (!m) throw unauthorized("Send the header 'Authorization: Bearer <api key>'.");
  return m[1]!;
}

function unauthorized(message: string): SluiceError {
  return new SluiceError("SLUICE_AUTH_INVALID_KEY", message);
}
