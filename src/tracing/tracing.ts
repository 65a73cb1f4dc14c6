import type { Logger } from "pino";
import type { TraceContext } from "../policy/trace-context.js";
import type { WaitSegment } from "../policy/wait-reasons.js";
import type { Outcome } from "../policy/outcome.js";

// OpenTelemetry traces (docs/tracing.md), behind one small interface so the rest of Sluice never
// imports the SDK. Off unless the standard OTEL_* variables ask for an exporter; then the SDK is
// never loaded (the import below is dynamic) and every caller's cost is one `tracing.on` check.

export interface PublishSpanStart {
  tenantId: string;
  /** The route, e.g. `POST /v1/events`. */
  route: string;
  /** The caller's context from its `traceparent`, when one came: the span joins that trace. */
  caller: TraceContext | undefined;
}

export interface PublishSpan {
  /** This span's context, stored with the events: their attempts are its children. */
  readonly context: TraceContext;
  end(result: { events: number; deliveries: number; eventId?: string } | { error: unknown }): void;
}

export interface AttemptSpanStart {
  /** The context stored with the event (null: none, e.g. Sluice's own events: a new trace). */
  stored: TraceContext | null;
  tenantId: string;
  destinationId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  /** 1-based. */
  attempt: number;
  url: string;
  sendMs: number;
  /** When the wait before this attempt began, and what held it (policy/wait-reasons.ts). */
  waitFromMs: number;
  waits: WaitSegment[];
}

export interface AttemptSpan {
  /** traceparent / tracestate for the request: this span's, so the receiver's spans are its children. */
  readonly headers: TraceContext;
  readonly traceId: string;
  readonly spanId: string;
  end(result: { statusCode: number | null; latencyMs: number; errorMessage: string | null }, outcome: Outcome): void;
}

export interface Tracing {
  /** False: nothing else here is called (the hot path's one check). */
  readonly on: boolean;
  startPublish(s: PublishSpanStart): PublishSpan;
  startAttempt(s: AttemptSpanStart): AttemptSpan;
  /** Exports what is buffered, then stops. */
  shutdown(): Promise<void>;
}

const unused = (): never => {
  throw new Error("tracing is off: check tracing.on first");
};

export const TRACING_OFF: Tracing = { on: false, startPublish: unused, startAttempt: unused, shutdown: () => Promise.resolve() };

/** The exporters Sluice can make from OTEL_TRACES_EXPORTER (the SDK's own names). */
export type TraceExporterName = "otlp" | "console";

/**
 * The exporters the environment asks for; none means tracing is off. OTEL_TRACES_EXPORTER names
 * them (`none` turns tracing off); unset, an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns OTLP on — unlike the spec's default of `otlp`, so a
 * Sluice with no OTEL_* variable set never tries to reach localhost:4318. OTEL_SDK_DISABLED wins.
 */
export function tracingExporters(env: NodeJS.ProcessEnv): { exporters: TraceExporterName[]; unknown: string[] } {
  const none = { exporters: [], unknown: [] };
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return none;
  const named = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");
  if (named.length === 0)
    return env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? { exporters: ["otlp"], unknown: [] } : none;
  if (named.includes("none")) return none;
  const exporters = [...new Set(named.filter((s): s is TraceExporterName => s === "otlp" || s === "console"))];
  return { exporters, unknown: named.filter((s) => s !== "otlp" && s !== "console") };
}

/**
 * Tracing as the environment configures it: TRACING_OFF, or the OpenTelemetry SDK loaded now.
 * The SDK reads its other settings (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
 * OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_* …) from the process environment itself.
 */
export async function startTracing(log: Logger, version: string, env: NodeJS.ProcessEnv = process.env): Promise<Tracing> {
  const { exporters, unknown } = tracingExporters(env);
  if (unknown.length > 0)
    log.warn({ exporters: unknown }, "OTEL_TRACES_EXPORTER names exporters Sluice does not have (it has otlp and console); ignored");
  if (exporters.length === 0) return TRACING_OFF;
  const { startOtel } = await import("./otel.js");
  return startOtel({ exporters, log, version, env });
}
