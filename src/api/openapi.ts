import { Type, type TSchema } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { FastifyDynamicSwaggerOptions } from "@fastify/swagger";
import { ErrorBody } from "../schemas/common.js";
import { Destination, DestinationSecret, Attempt } from "../schemas/destinations.js";
import { Delivery } from "../schemas/deliveries.js";
import { Event, EventAccepted } from "../schemas/events.js";
import { Tenant, TenantCreated } from "../schemas/tenants.js";
import { ApiKey, ApiKeyCreated } from "../schemas/api-keys.js";
import { Recovery, RecoveryAccepted } from "../schemas/recoveries.js";
import { Stats, DestinationStats } from "../schemas/stats.js";
import { PortalSession, PortalSessionCreated } from "../schemas/portal-sessions.js";

// The OpenAPI side of the routes: the named schemas every route may refer to (components/schemas
// in /openapi.json, and named types in the SDK) and the error answers each operation documents.

/** Registered with addSchema: routes refer to them with Type.Ref, OpenAPI names them by `$id`. */
export const NAMED_SCHEMAS: TSchema[] = [
  ErrorBody,
  Tenant,
  TenantCreated,
  ApiKey,
  ApiKeyCreated,
  Destination,
  DestinationSecret,
  Attempt,
  Delivery,
  EventAccepted,
  Event,
  RecoveryAccepted,
  Recovery,
  Stats,
  DestinationStats,
  PortalSessionCreated,
  PortalSession,
];

export function addNamedSchemas(app: FastifyInstance): void {
  for (const s of NAMED_SCHEMAS) app.addSchema(s);
}

// What each answer means, for the document (OpenAPI requires a description per answer).
const MEANING: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "Done; no body",
  400: "Malformed request (not JSON, empty body)",
  401: "Missing or unknown API key, or a portal link that expired or was revoked",
  403: "Not allowed for this caller (a portal link, a read-only one, a key that is not the admin key) or this configuration",
  404: "No such object for this API key",
  409: "Conflicts with the object's state or an earlier request",
  413: "Body too large",
  415: "Body is not application/json",
  422: "Invalid fields; details names each",
  503: "The store is unreachable; retry after the Retry-After header's seconds",
};

const described = <T extends TSchema>(schema: T, status: number): T => ({ ...schema, description: MEANING[status] ?? "Answer" });

/**
 * A route's `response` map: its success answers, and the error body for every 4xx and 5xx it can
 * give. Every /v1 route can answer 400/422 (bad input), 401 (key), 403 (a portal link where it may
 * not go, a Sluice-Tenant the key may not name) and 503 (store away); `more` adds e.g. 404 for
 * routes that take an id. A 204 is `Type.Null()` (no body).
 */
export function answers<R extends Record<number, TSchema>>(ok: R, more: readonly (403 | 404 | 409 | 413 | 415)[] = []) {
  const out: Record<number, TSchema> = {};
  for (const [status, schema] of Object.entries(ok)) out[Number(status)] = described(schema, Number(status));
  for (const s of [400, 401, 403, ...more, 422, 503]) out[s] = described(Type.Ref(ErrorBody), s);
  return out as R & Record<number, TSchema>;
}

/** The errors a route with a JSON body adds to the usual ones. */
export const BODY_ERRORS = [413, 415] as const;

export function openApiDocument(version: string): FastifyDynamicSwaggerOptions["openapi"] {
  return {
    openapi: "3.1.0",
    info: {
      title: "Sluice API",
      version,
      summary: "Outbound webhooks with per-destination flow control",
      description:
        "Publish events; Sluice delivers them to each destination as webhooks, at the pace each destination can take " +
        "(429 throttling, concurrency caps, rate limits, quiet hours, health). Errors are `{error: {code, message, details?}}` " +
        "with a stable SLUICE_* code. Lists are paged with `cursor` and `next_cursor`.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: "/", description: "the Sluice that serves this document" }],
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "a tenant's API key (sk_…); a consumer-portal token (sp_…) on the routes portals may use; or the admin key, for /v1/tenants or with a Sluice-Tenant header naming the tenant to act for",
        },
      },
    },
    security: [{ bearer: [] }],
    tags: [
      { name: "destinations", description: "Where webhooks go, and how fast" },
      { name: "events", description: "What happened; each event fans out to deliveries" },
      { name: "deliveries", description: "One event to one destination, and its attempts" },
      { name: "tenants", description: "Accounts and their keys" },
      { name: "stats", description: "Delivery numbers per minute and per second, held backlog and token buckets, for dashboards" },
      {
        name: "portal",
        description: "Consumer-portal links: a short-lived token that shows a tenant's customer its destinations, without the API key",
      },
      {
        name: "api-keys",
        description: "A tenant's API keys: create more, list them (never the keys), delete one (it stops working at once)",
      },
    ],
  };
}
