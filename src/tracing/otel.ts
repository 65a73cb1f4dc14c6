import type { Logger } from "pino";
import {
  createTraceState,
  diag,
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from "@opentelemetry/api";
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
} from "@opentelemetry/semantic-conventions";
import type { TraceContext } from "../policy/trace-context.js";
import type { AttemptSpan, AttemptSpanStart, PublishSpan, PublishSpanStart, TraceExporterName, Tracing } from "./tracing.js";

// The OpenTelemetry SDK behind src/tracing/tracing.ts, imported only when tracing is on. Spans and
// their attributes are listed in docs/tracing.md; every Sluice attribute is under `sluice.`.
// Times are passed as Dates: the SDK reads a number below the process's start as an offset from it,
// and a wait may have begun (in another process) long before this one started.

export function startOtel(opts: { exporters: TraceExporterName[]; log: Logger; version: string; env: NodeJS.ProcessEnv }): Tracing {
  const { log } = opts;
  // The exporter's failures (collector unreachable, refused) would otherwise vanish.
  diag.setLogger(
    {
      error: (msg, ...args) => log.warn({ component: "tracing", detail: args.map(String).join(" ") || undefined }, `tracing: ${msg}`),
      warn: (msg, ...args) => log.warn({ component: "tracing", detail: args.map(String).join(" ") || undefined }, `tracing: ${msg}`),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const protocol = opts.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? opts.env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol !== undefined && protocol !== "http/json" && opts.exporters.includes("otlp")) {
    log.warn({ protocol }, "OTLP traces are sent as http/json (every OTLP/HTTP collector takes it); the protocol asked for is not used");
  }
  const exporters: SpanExporter[] = opts.exporters.map((e) => (e === "otlp" ? new OTLPTraceExporter() : new ConsoleSpanExporter()));
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over Sluice's defaults.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: "sluice", [ATTR_SERVICE_VERSION]: opts.version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: exporters.map((e) => new BatchSpanProcessor(e)) });
  const tracer = provider.getTracer("sluice", opts.version);
  log.info(
    { exporters: opts.exporters, endpoint: opts.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? opts.env.OTEL_EXPORTER_OTLP_ENDPOINT ?? null },
    "tracing on",
  );
  return {
    on: true,
    startPublish: (s) => startPublish(tracer, s),
    startAttempt: (s) => startAttempt(tracer, s),
    shutdown: () => provider.shutdown(),
  };
}

function startPublish(tracer: Tracer, s: PublishSpanStart): PublishSpan {
  const span = tracer.startSpan(
    s.route,
    { kind: SpanKind.SERVER, attributes: { "sluice.tenant_id": s.tenantId, "http.route": s.route.replace(/^\S+ /, "") } },
    parentOf(s.caller ?? null),
  );
  return {
    context: contextOf(span.spanContext()),
    end(r) {
      if ("error" in r) {
        span.recordException(r.error instanceof Error ? r.error : String(r.error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: r.error instanceof Error ? r.error.message : String(r.error) });
      } else {
        span.setAttributes({ "sluice.events": r.events, "sluice.deliveries": r.deliveries });
        if (r.eventId) span.setAttribute("sluice.event_id", r.eventId);
      }
      span.end();
    },
  };
}

function startAttempt(tracer: Tracer, s: AttemptSpanStart): AttemptSpan {
  const parent = parentOf(s.stored);
  const ids = {
    "sluice.tenant_id": s.tenantId,
    "sluice.destination_id": s.destinationId,
    "sluice.delivery_id": s.deliveryId,
    "sluice.event_id": s.eventId,
    "sluice.attempt": s.attempt,
  };
  const waitedMs = s.sendMs - s.waitFromMs;
  const reasons = [...new Set(s.waits.map((w) => w.reason))];
  // A wait only for a send slot (a backlog) is said by the attempt's attributes alone: under load
  // that is most attempts, and two spans more each would triple what is exported.
  if (s.waits.some((w) => w.reason !== "concurrency")) {
    // The wait as a span of its own, from when the delivery could first have gone to the send,
    // with one child per hold: a trace view shows the hours, and what each of them was.
    const wait = tracer.startSpan(
      "sluice.wait",
      {
        kind: SpanKind.INTERNAL,
        startTime: new Date(s.waitFromMs),
        attributes: { ...ids, "sluice.wait.reasons": reasons, "sluice.waited_ms": waitedMs },
      },
      parent,
    );
    const inWait = trace.setSpan(parent, wait);
    for (const w of s.waits) {
      tracer
        .startSpan(
          `sluice.wait.${w.reason}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: new Date(w.fromMs),
            attributes: { "sluice.wait.reason": w.reason, "sluice.waited_ms": w.untilMs - w.fromMs },
          },
          inWait,
        )
        .end(new Date(w.untilMs));
    }
    wait.end(new Date(s.sendMs));
  }
  const target = hostAndPort(s.url);
  const span: Span = tracer.startSpan(
    "sluice.attempt",
    {
      kind: SpanKind.CLIENT,
      startTime: new Date(s.sendMs),
      attributes: {
        ...ids,
        "sluice.event_type": s.eventType,
        [ATTR_HTTP_REQUEST_METHOD]: "POST",
        // Host and port, never the full URL: a destination's URL may carry a token.
        ...(target ? { [ATTR_SERVER_ADDRESS]: target.host, [ATTR_SERVER_PORT]: target.port } : {}),
        "sluice.waited_ms": waitedMs,
        "sluice.wait.reasons": reasons,
      },
    },
    parent,
  );
  const sc = span.spanContext();
  return {
    headers: contextOf(sc),
    traceId: sc.traceId,
    spanId: sc.spanId,
    end(result, outcome) {
      span.setAttributes({
        "sluice.outcome": outcome.kind,
        "sluice.outcome_class": outcome.errorClass ?? "success",
        "sluice.latency_ms": Math.round(result.latencyMs),
      });
      if (result.statusCode !== null) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, result.statusCode);
      if (outcome.retryAfterSeconds !== null) span.setAttribute("sluice.retry_after_seconds", outcome.retryAfterSeconds);
      if (outcome.kind !== "success") {
        span.setAttribute(ATTR_ERROR_TYPE, outcome.errorClass ?? "error");
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.errorMessage ?? `${outcome.errorClass ?? "error"}` });
      }
      span.end(new Date(s.sendMs + result.latencyMs));
    },
  };
}

/** The context to start a child of `stored` in (a new trace when there is none). */
function parentOf(stored: TraceContext | null): Context {
  if (!stored) return ROOT_CONTEXT;
  const [, traceId, spanId, flags] = stored.traceparent.split("-") as [string, string, string, string];
  const sc: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & 0xff, isRemote: true };
  if (stored.tracestate) sc.traceState = createTraceState(stored.tracestate);
  return trace.setSpanContext(ROOT_CONTEXT, sc);
}

function contextOf(sc: SpanContext): TraceContext {
  const out: TraceContext = { traceparent: `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}` };
  const state = sc.traceState?.serialize();
  if (state) out.tracestate = state;
  return out;
}

function hostAndPort(url: string): { host: string; port: number } | null {
  try {
    const u = new URL(url);
    return { host: u.hostname, port: u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80 };
  } catch {
    return null;
  }
}
