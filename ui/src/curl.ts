// A ready-to-paste curl for a delivery's request: the body and headers Sluice sends (see
// buildDeliveryHeaders in src/delivery/sender.ts and Dispatcher.send in src/dispatch/dispatcher.ts),
// without one secret. Pure (no DOM), so the unit test can run it under Node.
//
// What stands in for a secret: the signature (only the destination's signing secret can make it),
// the value of every secret custom header (the API shows those as a mask), and the credentials of
// a URL's user-info (Sluice turns those into a Basic authorization header).

// The API's stand-in for a secret header value: the same constant, from the API's own policy code.
import { HEADER_MASK } from "../../src/policy/custom-headers.js";
export { HEADER_MASK };
export const SECRET_PLACEHOLDER = "<secret>";
export const SIGNATURE_PLACEHOLDER = "v1,<sign with your secret>";
export const TIMESTAMP_PLACEHOLDER = "<unix seconds>";

export interface CurlRequest {
  /** The destination's url. */
  url: string;
  /** The event's id: Sluice sends it as webhook-id. */
  eventId: string;
  type: string;
  /** The event's occurred_at (RFC 3339), the body's "timestamp". */
  occurredAt: string;
  payload: unknown;
  /** The destination's custom headers as the API shows them (secret values masked). */
  headers?: Record<string, string>;
  /** The destination's secret_headers: their values are never shown, whatever the API sent. */
  secretHeaders?: readonly string[];
  /** webhook-timestamp in seconds; omitted: a placeholder. */
  timestampSeconds?: number;
}

/** One shell word: single-quoted, each embedded ' closed, escaped and reopened (POSIX sh). */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The body exactly as Sluice builds it: {type, timestamp, data}, the payload as compact JSON. */
export function bodyFor(r: Pick<CurlRequest, "type" | "occurredAt" | "payload">): string {
  return `{"type":${JSON.stringify(r.type)},"timestamp":${JSON.stringify(r.occurredAt)},"data":${JSON.stringify(r.payload ?? null)}}`;
}

/** The URL with any user-info replaced by placeholders: it would be a Basic credential. */
export function redactUrl(url: string): string {
  return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#@]*@/, "$1<user>:<password>@");
}

function isSecret(name: string, value: string, secretHeaders: readonly string[]): boolean {
  const lower = name.toLowerCase();
  return value === HEADER_MASK || lower === "authorization" || secretHeaders.some((s) => s.toLowerCase() === lower);
}

/** The request's headers in the order Sluice sends them: the custom ones first, then its own. */
export function headersFor(r: CurlRequest): [string, string][] {
  const custom = Object.entries(r.headers ?? {}).map(([name, value]): [string, string] => [
    name,
    isSecret(name, value, r.secretHeaders ?? []) ? SECRET_PLACEHOLDER : value,
  ]);
  return [
    ...custom,
    ["content-type", "application/json"],
    ["webhook-id", r.eventId],
    ["webhook-timestamp", r.timestampSeconds === undefined ? TIMESTAMP_PLACEHOLDER : String(Math.floor(r.timestampSeconds))],
    ["webhook-signature", SIGNATURE_PLACEHOLDER],
  ];
}

export function curlFor(r: CurlRequest): string {
  const lines = [
    `curl -X POST ${shellQuote(redactUrl(r.url))}`,
    ...headersFor(r).map(([name, value]) => `  -H ${shellQuote(`${name}: ${value}`)}`),
    `  --data-raw ${shellQuote(bodyFor(r))}`,
  ];
  return lines.join(" \\\n");
}
