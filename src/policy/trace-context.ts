// W3C Trace Context (https://www.w3.org/TR/trace-context/): reading a caller's `traceparent` and
// `tracestate`. Pure and tiny, because a publish reads them whether or not tracing is on: the
// context is stored with the event and forwarded to the receiver either way (docs/tracing.md).

export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`, as sent on to receivers. */
  traceparent: string;
  /** The vendors' list that travels with it, when one came. */
  tracestate?: string;
}

// Version 00's four fields; a later version may append fields, which a version-00 reader drops.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** Longest tracestate kept: the spec lets a carrier cut it at 512 characters, list members whole. */
const TRACESTATE_MAX = 512;
// Printable ASCII only: the value goes out again as a header, where a control character would be refused.
const TRACESTATE = /^[\x20-\x7e]*$/;

/**
 * The caller's trace context, or undefined when `traceparent` is absent or not valid: the spec's
 * answer to a bad one is to start a new trace, never to refuse the request. Headers repeated are
 * arrays: a repeated traceparent is invalid, repeated tracestate lines are one list.
 */
export function parseTraceContext(
  traceparent: string | string[] | undefined,
  tracestate: string | string[] | undefined,
): TraceContext | undefined {
  if (typeof traceparent !== "string") return undefined;
  const m = TRACEPARENT.exec(traceparent.trim().toLowerCase());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  const out: TraceContext = { traceparent: `00-${traceId}-${spanId}-${flags}` };
  const state = cutTracestate(Array.isArray(tracestate) ? tracestate.join(",") : tracestate);
  if (state) out.tracestate = state;
  return out;
}

/** The tracestate to keep: at most TRACESTATE_MAX characters, cut between list members; printable ASCII. */
function cutTracestate(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const members = raw
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "");
  let out = "";
  for (const m of members) {
    const next = out === "" ? m : `${out},${m}`;
    if (next.length > TRACESTATE_MAX) break;
    out = next;
  }
  return out !== "" && TRACESTATE.test(out) ? out : undefined;
}

/** The trace id of a stored traceparent (32 hex digits), or null. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  return traceparent ? traceparent.slice(3, 35) : null;
}
