import type { FastifyInstance, FastifyRequest } from "fastify";
import { NotFoundError } from "../errors.js";

// Who is calling, beyond which tenant: a tenant API key, the admin key acting for a tenant (the
// dashboard's tenant switcher), or a consumer-portal session limited to some destinations and
// perhaps to reading. auth.ts sets it; routes ask it what the caller may see.

export type Access =
  | { kind: "key" }
  | { kind: "admin" }
  | {
      kind: "portal";
      sessionId: string;
      /** null = every destination of the tenant. */
      destinationIds: string[] | null;
      readOnly: boolean;
    };

declare module "fastify" {
  interface FastifyRequest {
    access: Access;
  }
  interface FastifyContextConfig {
    /**
     * Whether a portal session may call the route: "read" (any session), "write" (sessions that
     * are not read_only). Absent: portal sessions are refused (403 SLUICE_PORTAL_FORBIDDEN).
     */
    portal?: "read" | "write";
    /** "admin": only the admin key may call the route, and it acts for no tenant (GET /v1/tenants). */
    auth?: "admin";
  }
}

/** The destinations the caller may see: null = all of its tenant's. */
export function destinationScope(req: FastifyRequest): string[] | null {
  return req.access?.kind === "portal" ? req.access.destinationIds : null;
}

export function canSeeDestination(req: FastifyRequest, destinationId: string): boolean {
  const scope = destinationScope(req);
  return scope === null || scope.includes(destinationId);
}

/** Throws the same 404 as an unknown id when the destination is outside the caller's scope (no existence leak). */
export function assertDestinationVisible(req: FastifyRequest, destinationId: string): void {
  if (!canSeeDestination(req, destinationId)) throw new NotFoundError("destination", destinationId);
}

/** A route and who may call it, as registered: what the route-walk test checks. */
export interface RouteAccess {
  method: string;
  url: string;
  portal: "read" | "write" | null;
  adminOnly: boolean;
}

declare module "fastify" {
  interface FastifyInstance {
    /** Every route registered after recordRouteAccess (HEAD twins left out). */
    routeAccess: RouteAccess[];
  }
}

/**
 * Records each route's access decision as it is registered, so a test can walk them all: a new
 * route must be marked for portals (config.portal) or named as tenant/admin-only on purpose.
 */
export function recordRouteAccess(app: FastifyInstance): void {
  const routes: RouteAccess[] = [];
  app.decorate("routeAccess", routes);
  app.addHook("onRoute", (r) => {
    for (const method of [r.method].flat()) {
      if (method === "HEAD") continue;
      routes.push({ method, url: r.url, portal: r.config?.portal ?? null, adminOnly: r.config?.auth === "admin" });
    }
  });
}
