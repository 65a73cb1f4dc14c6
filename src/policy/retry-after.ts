// Parses a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).

import { BOUNDS } from "./bounds.js";

/**
 * The longest wait a Retry-After can ask for: the longest throttle hold a destination may be
 * configured with (a week). A receiver's "come back in 30 years" is a week, not a date Postgres
 * cannot store — which would fail the write-back of every result it shared a batch with.
 */
export const MAX_RETRY_AFTER_SECONDS = BOUNDS.throttle_hold_seconds.max;

/**
 * The shortest wait after a Retry-After that says "now" (0, or a date not in the future). A
 * receiver answering "429, retry now" to every request must not get a tight loop of requests:
 * one second keeps it at about one request a second while still retrying at once in human terms.
 */
export const RETRY_NOW_FLOOR_SECONDS = 1;

/**
 * Seconds to wait from `nowMs`: 0 for "0" or a date not in the future ("retry now"), at most
 * MAX_RETRY_AFTER_SECONDS, null when absent or unparsable (the caller's own schedule applies).
 */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | null {
  if (header == null) return null;
  const value = header.trim();
  if (value === "") return null;
  if (/^\d+$/.test(value)) {
    // Any run of digits is a delay; one too long for a safe integer is simply a long one.
    return Math.min(Number(value), MAX_RETRY_AFTER_SECONDS);
  }
  if (!isHttpDate(value)) return null;
  const at = Date.parse(value);
  if (!Number.isFinite(at) || !Number.isFinite(nowMs)) return null;
  return Math.min(Math.max(0, Math.ceil((at - nowMs) / 1000)), MAX_RETRY_AFTER_SECONDS);
}

/**
 * Whether a Retry-After value is in date form. IMF-fixdate, RFC 850 and asctime forms all parse
 * with Date; a weekday or month name is required so that bare numbers with signs or decimals
 * ("-5", "1.5") are not read as dates.
 */
export function isHttpDate(value: string): boolean {
  return /[A-Za-z]{3}/.test(value);
}

/** Seconds to actually wait for a parsed Retry-After: as given, but never below the floor. */
export function retryAfterWaitSeconds(retryAfterSeconds: number): number {
  return Math.max(retryAfterSeconds, RETRY_NOW_FLOOR_SECONDS);
}
