import http from "node:http";
import type { AddressInfo } from "node:net";

// A small OTLP/HTTP trace receiver (a collector's /v1/traces) on loopback: it decodes what an
// exporter sends — OTLP's JSON encoding, which @opentelemetry/exporter-trace-otlp-http uses — into
// flat spans, so a test asserts on what really left the process, not on a mocked exporter.

export type AttrValue = string | number | boolean | AttrValue[] | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttrValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttrValue>;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>, what OTEL_EXPORTER_OTLP_ENDPOINT names (the exporter adds /v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (a batch of spans each). */
  requests: number;
  close(): Promise<void>;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpAnyValue[] };
}
interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpKeyValue[];
  status?: { code?: number };
}
interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function value(v: OtlpAnyValue): AttrValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(value);
  return null;
}

const attributes = (kvs: OtlpKeyValue[] | undefined): Record<string, AttrValue> =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, value(kv.value)]));

const ms = (nanos: string | number): number => Number(BigInt(nanos) / 1_000_000n);

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const out: OtlpReceiver = { url: "", spans: [], requests: 0, close: () => Promise.resolve() };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      if (!(req.headers["content-type"] ?? "").startsWith("application/json")) {
        res.writeHead(415, { "content-type": "text/plain" }).end("this receiver decodes OTLP's JSON encoding only");
        return;
      }
      out.requests++;
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport;
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            out.spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              name: s.name,
              kind: s.kind,
              startMs: ms(s.startTimeUnixNano),
              endMs: ms(s.endTimeUnixNano),
              attributes: attributes(s.attributes),
              statusCode: s.status?.code ?? 0,
              resource,
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  out.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  out.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return out;
}
