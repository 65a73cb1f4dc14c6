import { parseRetryAfter } from "./retry-after.js";

// What an attempt's answer means, decided in one place. An outcome is data, not an exception.

export type ErrorClass =
  | "http_3xx" | "http_4xx" | "http_5xx" | "http_410" | "http_429"
  | "timeout" | "connection" | "dns" | "tls" | "blocked" | "invalid_response";

export interface Outcome {
  kind: "success" | "throttled" | "gone" | "failure";
  statusCode: number | null;
  errorClass: ErrorClass | null;
  /** From Retry-After (429 and 503 only), in seconds from now. */
  retryAfterSeconds: number | null;
}

export interface RawResult {
  statusCode: number | null;
  errorClass: Exclude<ErrorClass, `http_${string}`> | null;
  retryAfter: string | null;
}

export function classify(result: RawResult, nowMs: number): Outcome {
  const status = result.statusCode;
  if (status === null) {
    return { kind: "failure", statusCode: null, errorClass: result.errorClass ?? "connection", retryAfterSeconds: null };
  }
  if (status >= 200 && status < 300) return { kind: "success", statusCode: status, errorClass: null, retryAfterSeconds: null };
  if (status === 429) {
    return { kind: "throttled", statusCode: status, errorClass: "http_429", retryAfterSeconds: parseRetryAfter(result.retryAfter, nowMs) };
  }
  if (status === 410) return { kind: "gone", statusCode: status, errorClass: "http_410", retryAfterSeconds: null };
  if (status >= 500) {
    // A 503's Retry-After moves that one delivery's next attempt; it never throttles the destination.
    const retryAfterSeconds = status === 503 ? parseRetryAfter(result.retryAfter, nowMs) : null;
    return { kind: "failure", statusCode: status, errorClass: "http_5xx", retryAfterSeconds };
  }
  if (status >= 400) return { kind: "failure", statusCode: status, errorClass: "http_4xx", retryAfterSeconds: null };
  if (status >= 300) return { kind: "failure", statusCode: status, errorClass: "http_3xx", retryAfterSeconds: null };
  return { kind: "failure", statusCode: status, errorClass: "invalid_response", retryAfterSeconds: null };
}
