import type { FastifyInstance, FastifyRequest } from "fastify";
import { timingSafeEqual } from "node:crypto";
import { SluiceError } from "../errors.js";
import { PORTAL_TOKEN_PREFIX } from "../ids.js";
import { getTenant, type TenantRow } from "../db/queries/tenants.js";
import { findApiKey, hashKey } from "../db/queries/api-keys.js";
import { findPortalSession } from "../db/queries/portal-sessions.js";
import { API_KEYS_CHANNEL } from "../db/channels.js";
import type { ApiContext } from "./context.js";
import { KeyCache } from "./key-cache.js";
import { recordRouteAccess, type Access } from "./access.js";

// Authentication for /v1: the Bearer token of a request is the admin key (acting for the tenant
// named by Sluice-Tenant), a consumer-portal token (sp_…) or a tenant's API key (through a short
// cache that deleted keys leave at once: key-cache.ts). It sets req.tenant and req.access, then
// refuses portal sessions on the routes not marked for them (access.ts).

declare module "fastify" {
  interface FastifyRequest {
    tenant: TenantRow;
  }
}

/** The header with which the admin key names the tenant it acts for. */
export const TENANT_HEADER = "sluice-tenant";

/** Authentication for /v1. Returns the key cache, which the route that deletes keys empties of them. */
export async function registerAuth(app: FastifyInstance, ctx: ApiContext): Promise<KeyCache> {
  const cache = new KeyCache();
  // Keys deleted through other API processes on the same store; "" = some may have been missed.
  const unlisten = await ctx.db.listen(API_KEYS_CHANNEL, (keyId) => (keyId ? cache.forget(keyId) : cache.clear()));
  app.addHook("onClose", async () => unlisten());
  app.decorateRequest("tenant", null as unknown as TenantRow);
  // (Cast to one member of the union: decorateRequest takes its type from the value.)
  app.decorateRequest("access", null as unknown as { kind: "key" });
  recordRouteAccess(app);
  // Hashed once here: each request's token is hashed once (hashKey) and compared with it.
  const adminHash = ctx.config.adminKey === undefined ? null : Buffer.from(hashKey(ctx.config.adminKey), "hex");
  const isAdmin = (tokenHash: string) => adminHash !== null && timingSafeEqual(Buffer.from(tokenHash, "hex"), adminHash);

  /** The tenant and access of a token that is not the admin key; throws 401 when it is neither a key nor a live portal link. */
  async function identify(token: string, tokenHash = hashKey(token)): Promise<{ tenant: TenantRow; access: Access }> {
    if (token.startsWith(PORTAL_TOKEN_PREFIX)) {
      // Not cached: a revoked or expired link must stop working at once, in every API process.
      const found = await findPortalSession(ctx.db, token);
      if (found) {
        if (found.expired) {
          throw new SluiceError("SLUICE_PORTAL_LINK_INVALID", { problem: `expired at ${found.session.expires_at.toISOString()}` });
        }
        const s = found.session;
        return {
          tenant: found.tenant,
          access: { kind: "portal", sessionId: s.id, destinationIds: s.destination_ids, readOnly: s.read_only },
        };
      }
    }
    const owner = await cache.lookup(tokenHash, () => findApiKey(ctx.db, token));
    if (owner) return { tenant: owner.tenant, access: { kind: "key" } };
    // A hand-picked SLUICE_API_KEY may start with sp_ too, so it was tried as a key first.
    if (token.startsWith(PORTAL_TOKEN_PREFIX)) {
      throw new SluiceError("SLUICE_PORTAL_LINK_INVALID", { problem: "is not known: it was revoked, or expired more than a day ago" });
    }
    throw new SluiceError("SLUICE_AUTH_INVALID_KEY", { problem: "This API key is not known (or was deleted)" });
  }

  /** The tenant the admin key acts for: the one Sluice-Tenant names. */
  async function actingTenant(req: FastifyRequest): Promise<TenantRow> {
    const id = req.headers[TENANT_HEADER];
    if (typeof id !== "string" || id.trim() === "") throw new SluiceError("SLUICE_AUTH_TENANT_REQUIRED");
    const tenant = await getTenant(ctx.db, id.trim());
    if (!tenant) throw new SluiceError("SLUICE_TENANT_NOT_FOUND", { id: id.trim() });
    return tenant;
  }

  /**
   * Admin-only routes: the admin key, else 403 for a key that is known (it is just not enough), 401
   * for one that is not. POST /v1/tenants answers 401 to every other key, as it always has.
   */
  async function admitAdmin(req: FastifyRequest): Promise<void> {
    if (!ctx.config.adminKey) throw new SluiceError("SLUICE_AUTH_ADMIN_DISABLED");
    const token = bearer(req);
    if (isAdmin(hashKey(token))) {
      req.access = { kind: "admin" };
      return;
    }
    const known =
      req.method !== "POST" &&
      (await identify(token).then(
        () => true,
        () => false,
      ));
    if (known) throw new SluiceError("SLUICE_AUTH_ADMIN_REQUIRED", { what: `${req.method} ${req.routeOptions.url ?? ""}` });
    throw new SluiceError("SLUICE_AUTH_INVALID_KEY", { problem: "This is not the admin key" });
  }

  app.addHook("onRequest", async (req) => {
    if (!req.url.startsWith("/v1/")) return;
    if (req.routeOptions.config?.auth === "admin") return admitAdmin(req);
    const token = bearer(req);
    const tokenHash = hashKey(token);
    if (isAdmin(tokenHash)) {
      req.tenant = await actingTenant(req);
      req.access = { kind: "admin" };
      return;
    }
    const { tenant, access } = await identify(token, tokenHash);
    const named = req.headers[TENANT_HEADER];
    if (typeof named === "string" && named.trim() !== "" && named.trim() !== tenant.id) {
      throw new SluiceError("SLUICE_AUTH_ADMIN_REQUIRED", { what: "Acting for another tenant (the Sluice-Tenant header)" });
    }
    req.tenant = tenant;
    req.access = access;
    // An unknown route answers 404 whoever asks.
    if (access.kind === "portal" && !req.is404) admitPortal(req, access);
  });
  return cache;
}

/** Portal sessions reach only the routes marked config.portal, and read-only ones only "read" routes. */
function admitPortal(req: FastifyRequest, access: Extract<Access, { kind: "portal" }>): void {
  const level = req.routeOptions.config?.portal;
  const where = { method: req.method, path: req.routeOptions.url ?? req.url.split("?")[0]! };
  if (!level) throw new SluiceError("SLUICE_PORTAL_FORBIDDEN", where);
  if (level === "write" && access.readOnly) throw new SluiceError("SLUICE_PORTAL_READ_ONLY", where);
}

export function bearer(req: FastifyRequest): string {
  const h = req.headers.authorization;
  const m = h ? /^Bearer\s+(\S+)\s*$/i.exec(h) : null;
  if (!m) throw new SluiceError("SLUICE_AUTH_INVALID_KEY", { problem: "No API key was sent" });
  return m[1]!;
}
