import { parseRetryAfter } from "./retry-after.js";

// What an attempt's answer means, decided in one place. An outcome is data, not an exception.

export type ErrorClass =
  | "http_3xx"
  | "http_4xx"
  | "http_5xx"
  | "http_410"
  | "http_429"
  | "timeout"
  | "connection"
  | "dns"
  | "tls"
  | "blocked"
  | "invalid_response";

export interface Outcome {
  kind: "success" | "throttled" | "gone" | "failure";
  statusCode: number | null;
  errorClass: ErrorClass | null;
  /** From Retry-After (429 and 503 only), in seconds from now; 0 = "retry now" (0 or a date not in the future). */
  retryAfterSeconds: number | null;
  /** The Retry-After header as received (trimmed) when retryAfterSeconds came from it, for reasons that quote it. */
  retryAfterHeader?: string | null;
}

export interface RawResult {
  statusCode: number | null;
  errorClass: Exclude<ErrorClass, `http_${string}`> | null;
  retryAfter: string | null;
}

/** `nowMs` is the clock an HTTP-date Retry-After is read against. */
export function classify(result: RawResult, nowMs: number): Outcome {
  const status = result.statusCode;
  const none = { retryAfterSeconds: null, retryAfterHeader: null };
  if (status === null) {
    return { kind: "failure", statusCode: null, errorClass: result.errorClass ?? "connection", ...none };
  }
  if (status >= 200 && status < 300) return { kind: "success", statusCode: status, errorClass: null, ...none };
  if (status === 429) return { kind: "throttled", statusCode: status, errorClass: "http_429", ...retryAfter(result.retryAfter, nowMs) };
  if (status === 410) return { kind: "gone", statusCode: status, errorClass: "http_410", ...none };
  if (status >= 500) {
    // A 503's Retry-After moves that one delivery's next attempt; it never throttles the destination.
    return {
      kind: "failure",
      statusCode: status,
      errorClass: "http_5xx",
      ...(status === 503 ? retryAfter(result.retryAfter, nowMs) : none),
    };
  }
  if (status >= 400) return { kind: "failure", statusCode: status, errorClass: "http_4xx", ...none };
  if (status >= 300) return { kind: "failure", statusCode: status, errorClass: "http_3xx", ...none };
  return { kind: "failure", statusCode: status, errorClass: "invalid_response", ...none };
}

function retryAfter(header: string | null, nowMs: number): { retryAfterSeconds: number | null; retryAfterHeader: string | null } {
  const seconds = parseRetryAfter(header, nowMs);
  return { retryAfterSeconds: seconds, retryAfterHeader: seconds === null ? null : (header ?? "").trim() };
}
