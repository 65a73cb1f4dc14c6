import { RoutingCache } from "../events/publish.js";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance, type FastifyError, type FastifyBaseLogger } from "fastify";
import swagger from "@fastify/swagger";
import { SluiceError, StoreUnavailableError, ValidationError } from "../errors.js";
import { registry } from "../metrics.js";
import { ping } from "../db/queries/stats.js";
import type { ApiContext } from "./context.js";
import { registerAuth } from "./auth.js";
import { tenantRoutes } from "./routes/tenants.js";
import { apiKeyRoutes } from "./routes/api-keys.js";
import { addNamedSchemas, openApiDocument } from "./openapi.js";
import { destinationRoutes } from "./routes/destinations.js";
import { eventRoutes } from "./routes/events.js";
import { deliveryRoutes } from "./routes/deliveries.js";
import { recoveryRoutes } from "./routes/recoveries.js";
import { statsRoutes } from "./routes/stats.js";
import { portalSessionRoutes } from "./routes/portal-sessions.js";
import { refusedStrings, registerBodyParser } from "./body.js";
import { dedupe, fieldError, makeAjv, MAX_FIELD_ERRORS, usefulErrors, type AjvLikeError } from "./field-errors.js";
import { uiRoutes } from "./ui.js";

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
    // A client gets two minutes to send its whole request (a 32 MiB batch at 2 Mbit/s): one that
    // trickles bytes for ever cannot hold a connection and a parser's buffer (Fastify's default: no limit).
    requestTimeout: 120_000,
    // Ids are bounded by their schemas (100 characters: a 422 that says so); the router's own
    // bound, past which it answers by itself, only stops what no schema will read.
    routerOptions: { maxParamLength: 2048 },
    // What the router and Node's HTTP parser refuse before any route runs gets the contract's
    // error body too, not Fastify's {"error", "message", "statusCode"}.
    frameworkErrors: (err, _req, reply) => {
      const { status, body } = toErrorBody(err);
      void (reply as unknown as { status(n: number): { send(b: unknown): void } }).status(status).send(body);
    },
    clientErrorHandler: answerClientError,
  });
  // Before any plugin: each copies the parsers it finds when it registers.
  registerBodyParser(app);

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
    // Path ids and query strings are text Postgres stores or compares too: no NUL, no half of a
    // surrogate pair (the body parser holds bodies to the same). No route: the 404 says so.
    if (req.is404) return;
    const refused = [
      ...refusedStrings(req.params).map((f) => ({ ...f, field: `params.${f.field}` })),
      ...refusedStrings(req.query).map((f) => ({ ...f, field: `query.${f.field}` })),
    ];
    if (refused.length > 0) throw new ValidationError("request", refused);
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
    const useful = usefulErrors(fe.validation.slice(0, 4 * MAX_FIELD_ERRORS));
    const details = dedupe(useful.map((v) => fieldError(v, fe.validationContext))).slice(0, MAX_FIELD_ERRORS);
    return toErrorBody(new ValidationError("request", details));
  }
  const code = fe.code ?? "";
  if (code === "FST_ERR_BAD_URL") {
    return {
      ...toErrorBody(
        new SluiceError("SLUICE_REQUEST_INVALID", { reason: "the path holds a malformed %-escape; encode a literal % as %25" }),
      ),
      status: 400,
    };
  }
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
 * Answers what Node's HTTP parser refuses before Fastify sees a request (a request line or
 * headers over 16 KiB, a request that did not arrive in time, bytes that are not HTTP) with the
 * contract's error body, then closes the connection, as Node would.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const error =
    err.code === "HPE_HEADER_OVERFLOW"
      ? new SluiceError("SLUICE_REQUEST_HEADERS_TOO_LARGE")
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new SluiceError("SLUICE_REQUEST_TIMEOUT")
        : new SluiceError("SLUICE_REQUEST_INVALID", { reason: "it is not a well-formed HTTP/1.1 request" });
  const { status, body } = toErrorBody(error);
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}
