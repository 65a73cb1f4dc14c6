import { RoutingCache } from "../events/publish.js";
import Fastify, { type FastifyInstance, type FastifyError, type FastifyBaseLogger } from "fastify";
import swagger from "@fastify/swagger";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { SluiceError, StoreUnavailableError, ValidationError, type FieldError } from "../errors.js";
import { registry } from "../metrics.js";
import { ping } from "../db/queries/stats.js";
import type { ApiContext } from "./context.js";
import { registerAuth } from "./auth.js";
import { tenantRoutes } from "./routes/tenants.js";
import { apiKeyRoutes } from "./routes/api-keys.js";
import { TIME_OF_DAY, EVENT_TYPE, EVENT_TYPE_PATTERN, URL_PATTERN, SECRET_PATTERN } from "../schemas/common.js";
import { addNamedSchemas, openApiDocument } from "./openapi.js";
import { destinationRoutes } from "./routes/destinations.js";
import { eventRoutes } from "./routes/events.js";
import { deliveryRoutes } from "./routes/deliveries.js";
import { recoveryRoutes } from "./routes/recoveries.js";
import { statsRoutes } from "./routes/stats.js";
import { portalSessionRoutes } from "./routes/portal-sessions.js";
import { CSS_COLOUR, FONT_FAMILY } from "../schemas/portal-sessions.js";
import { uiRoutes } from "./ui.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's body may be absent; it is then validated as {}. */
    optionalBody?: boolean;
  }
}

// Bodies are validated strictly (no type coercion: "5" is not 5; unknown fields refused);
// query strings and path params are strings on the wire, so those coerce.
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes: coerce, useDefaults: true, removeAdditional: false, strict: false });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

export async function buildApi(ctx: ApiContext): Promise<FastifyInstance> {
  ctx.routing ??= new RoutingCache();
  const app = Fastify({
    // Per-request logs stay off at info level; errors are logged by the error handler.
    loggerInstance: ctx.log.child(
      { component: "api" },
      { level: ctx.log.level === "info" ? "warn" : ctx.log.level },
    ) as unknown as FastifyBaseLogger,
    bodyLimit: ctx.config.maxPayloadBytes + 64 * 1024,
    return503OnClosing: true,
    forceCloseConnections: true,
  });

  const bodyAjv = makeAjv(false);
  const paramAjv = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === "body" ? bodyAjv : paramAjv).compile(schema));

  await app.register(swagger, {
    openapi: openApiDocument(ctx.version),
    // Named schemas keep their names (components/schemas/Destination, not def-3).
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
  });
  addNamedSchemas(app);

  app.setErrorHandler((err: FastifyError, _req, reply) => {
    const { status, body } = toErrorBody(err);
    // The store's outage is logged once by whoever watches the store, not once per request.
    if (err instanceof StoreUnavailableError) void reply.header("retry-after", String(err.retryAfterSeconds));
    else if (status >= 500) ctx.log.error({ err }, "request failed");
    void reply.status(status).send(body);
  });
  app.setNotFoundHandler((req, reply) => {
    const { status, body } = toErrorBody(new SluiceError("SLUICE_ROUTE_NOT_FOUND", { method: req.method, path: req.url.split("?")[0]! }));
    void reply.status(status).send(body);
  });

  // Optional bodies (pause, resume, …) arrive empty: treat that as {}.
  app.addHook("preValidation", async (req) => {
    if (req.body === undefined && req.routeOptions.config?.optionalBody) {
      req.body = {};
    }
  });

  if (ctx.ready) {
    const ready = ctx.ready;
    let open = false;
    void ready.finally(() => (open = true)).catch(() => undefined);
    app.addHook("onRequest", async () => {
      if (!open) await ready.catch(() => undefined);
    });
  }

  // After the start-up wait above: the default tenant's key must exist before it is looked up.
  const keys = await registerAuth(app, ctx);

  // Ready = the API serves, migrations ran (before listen) and the store answers now.
  app.get("/healthz", { schema: { hide: true } }, async (_req, reply) => {
    try {
      await ping(ctx.db);
      return { status: "ok" };
    } catch (err) {
      const { status, body } = toErrorBody(err as Error);
      if (err instanceof StoreUnavailableError) void reply.header("retry-after", String(err.retryAfterSeconds));
      return reply.status(status).send({ status: "unavailable", ...body });
    }
  });
  if (ctx.config.metricsPort === undefined) {
    app.get("/metrics", { schema: { hide: true } }, async (_req, reply) => {
      void reply.header("content-type", registry.contentType);
      return registry.metrics();
    });
  }
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  // The API reference (Scalar), rendered in the browser from /openapi.json; its script is served
  // from the package, not a CDN. Imported here so worker-only processes never load it.
  const { default: apiReference } = await import("@scalar/fastify-api-reference");
  await app.register(apiReference, { routePrefix: "/docs", configuration: { url: "/openapi.json", pageTitle: "Sluice API reference" } });

  await app.register(tenantRoutes(ctx));
  await app.register(apiKeyRoutes(ctx, keys));
  await app.register(destinationRoutes(ctx));
  await app.register(eventRoutes(ctx));
  await app.register(deliveryRoutes(ctx));
  await app.register(recoveryRoutes(ctx));
  await app.register(statsRoutes(ctx));
  await app.register(portalSessionRoutes(ctx));
  await app.register(uiRoutes(ctx));
  return app;
}

/** Maps any error to the contract's error body. Bad input is never a 500. */
export function toErrorBody(err: FastifyError | Error): {
  status: number;
  body: { error: { code: string; message: string; details?: unknown } };
} {
  if (err instanceof SluiceError) {
    const e: { code: string; message: string; details?: unknown } = { code: err.code, message: err.message };
    if (err.details !== undefined) e.details = err.details;
    return { status: err.statusCode, body: { error: e } };
  }
  const fe = err as FastifyError & { validation?: AjvLikeError[] };
  if (fe.validation) {
    const details = dedupe(usefulErrors(fe.validation).map((v) => fieldError(v, fe.validationContext)));
    return toErrorBody(new ValidationError("request", details));
  }
  const code = fe.code ?? "";
  if (code === "FST_ERR_CTP_BODY_TOO_LARGE") return toErrorBody(new SluiceError("SLUICE_REQUEST_TOO_LARGE"));
  if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") return toErrorBody(new SluiceError("SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE"));
  if (code === "FST_ERR_CTP_EMPTY_JSON_BODY") return toErrorBody(new SluiceError("SLUICE_REQUEST_EMPTY_BODY"));
  if (fe.statusCode === 400 || err instanceof SyntaxError || code.startsWith("FST_ERR_CTP")) {
    return toErrorBody(new SluiceError("SLUICE_REQUEST_MALFORMED_JSON", { reason: err.message }));
  }
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    // Fastify's own 4xx (a more exact status than the code's 400) keeps its status.
    const refused = toErrorBody(new SluiceError("SLUICE_REQUEST_INVALID", { reason: err.message.replace(/\.$/, "") }));
    return { ...refused, status: fe.statusCode };
  }
  return toErrorBody(new SluiceError("SLUICE_INTERNAL"));
}

/**
 * A nullable object that fails inside reports "must be null" and "must match a schema in anyOf"
 * beside the real problem; keep only the real one when there is one.
 */
function usefulErrors(errors: AjvLikeError[]): AjvLikeError[] {
  const noise = (e: AjvLikeError) => e.keyword === "anyOf" || (e.keyword === "type" && e.params.type === "null");
  const useful = errors.filter((e) => !noise(e));
  return useful.length ? useful : errors.filter((e) => e.keyword !== "anyOf");
}

function dedupe(list: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return list.filter((f) => {
    const k = `${f.field}\u0000${f.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

// Regular expressions mean little to a reader: say what the field takes instead.
const PATTERN_HINTS: Record<string, string> = {
  [TIME_OF_DAY]: "must be a 24-hour time HH:MM or HH:MM:SS, e.g. 22:00 or 06:30:15",
  [EVENT_TYPE]: "must be 1–200 characters of letters, digits and . _ : / - (no spaces or *), e.g. order.created",
  [EVENT_TYPE_PATTERN]: "must be an event type, optionally ending in * to match a prefix (e.g. order.*)",
  [URL_PATTERN]: "must be an http:// or https:// URL",
  [SECRET_PATTERN]: "must be a Standard Webhooks secret: whsec_ followed by base64 (omit it to have one generated)",
  [CSS_COLOUR]: "must be a CSS colour #rgb or #rrggbb, e.g. #4f46e5",
  [FONT_FAMILY]: "must be a CSS font-family list of letters, digits, spaces, commas, hyphens and quotes, e.g. Inter, sans-serif",
};

interface AjvLikeError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

function fieldError(v: AjvLikeError, part?: string): FieldError {
  const path = v.instancePath
    .replace(/^\//, "")
    .split("/")
    .filter(Boolean)
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : s))
    .join(".")
    .replace(/\.\[/g, "[");
  const prefix = part && part !== "body" ? `${part === "querystring" ? "query" : part}.` : "";
  if (v.keyword === "required") {
    const f = String(v.params.missingProperty);
    return { field: prefix + (path ? `${path}.${f}` : f), message: "is required" };
  }
  if (v.keyword === "additionalProperties") {
    const f = String(v.params.additionalProperty);
    return { field: prefix + (path ? `${path}.${f}` : f), message: "is not a known field; check its spelling against the API reference" };
  }
  if (v.keyword === "enum") {
    const allowed = (v.params.allowedValues as unknown[]).map(String).join(", ");
    return { field: prefix + (path || "body"), message: `must be one of: ${allowed}` };
  }
  if (v.keyword === "minProperties") return { field: prefix + (path || "body"), message: "must set at least one field" };
  if (v.keyword === "pattern") {
    const hint = PATTERN_HINTS[String(v.params.pattern)];
    if (hint) return { field: prefix + (path || "body"), message: hint };
  }
  return { field: prefix + (path || "body"), message: v.message ?? "is invalid" };
}
