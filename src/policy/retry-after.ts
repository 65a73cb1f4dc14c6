// Parses a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).

/**
 * The shortest wait after a Retry-After that says "now" (0, or a date not in the future). A
 * receiver answering "429, retry now" to every request must not get a tight loop of requests:
 * one second keeps it at about one request a second while still retrying at once in human terms.
 */
export const RETRY_NOW_FLOOR_SECONDS = 1;

/**
 * Seconds to wait from `nowMs`: 0 for "0" or a date not in the future ("retry now"), null when
 * absent or unparsable (the caller's own schedule applies).
 */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | null {
  if (header == null) return null;
  const value = header.trim();
  if (value === "") return null;
  if (/^\d+$/.test(value)) {
    const seconds = Number(value);
    return Number.isSafeInteger(seconds) ? seconds : null;
  }
  if (!isHttpDate(value)) return null;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
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
