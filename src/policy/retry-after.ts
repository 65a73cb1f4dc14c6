// Parses a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).

/** Seconds to wait from `nowMs`, or null when absent, unparsable, or a date not in the future. */
export function parseRetryAfter(header: string | null | undefined, nowMs: number): number | null {
  if (header == null) return null;
  const value = header.trim();
  if (value === "") return null;
  if (/^\d+$/.test(value)) {
    const seconds = Number(value);
    return Number.isSafeInteger(seconds) ? seconds : null;
  }
  // HTTP-date: IMF-fixdate, RFC 850 and asctime forms all parse with Date; require a weekday or
  // month name so that bare numbers with signs or decimals are not read as dates.
  if (!/[A-Za-z]{3}/.test(value)) return null;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  const seconds = Math.ceil((at - nowMs) / 1000);
  return seconds > 0 ? seconds : null;
}
