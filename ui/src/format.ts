// Display only: durations, times and numbers as people read them. No time-zone arithmetic here —
// Intl formats an instant in a zone; Sluice's server works out the windows.

export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return "—";
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function until(iso: string | null | undefined, now = Date.now()): string {
  return iso ? `in ${duration(Date.parse(iso) - now)}` : "—";
}

/** e.g. "14:03:07" today, else "2 Dec 14:03"; in the browser's zone unless one is given. */
export function time(iso: string | null | undefined, timeZone?: string): string {
  if (!iso) return "—";
  const d = new Date(iso);
  const sameDay = new Date().toDateString() === d.toDateString();
  const opts: Intl.DateTimeFormatOptions = sameDay
    ? { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false, timeZone }
    : { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit", hour12: false, timeZone };
  try {
    return new Intl.DateTimeFormat(undefined, opts).format(d);
  } catch {
    return d.toISOString();
  }
}

export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? "—" : new Intl.NumberFormat().format(n);
}

export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10_000 ? 0 : 1)} s` : `${Math.round(n)} ms`;
}
