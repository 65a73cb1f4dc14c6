// How the API commands show answers to people: aligned tables for lists, `field  value` lines for
// one object. Scripts use --json instead, which prints the API's own document.

export interface Column<T> {
  head: string;
  value: (row: T) => unknown;
}

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** One value in one cell: no value is "-", a time loses its milliseconds, a flat object is `k=v k=v`. */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (typeof value === "string") return TIMESTAMP.test(value) ? value.replace(/\.\d+Z$/, "Z") : value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) {
    return value.length > 0 && value.every((v) => typeof v !== "object" || v === null) ? value.map(cell).join(", ") : JSON.stringify(value);
  }
  const entries = Object.entries(value);
  if (entries.length > 0 && entries.every(([, v]) => typeof v !== "object" || v === null)) {
    return entries.map(([k, v]) => `${k}=${cell(v)}`).join(" ");
  }
  return JSON.stringify(value);
}

/** Cut to `max` characters (tables stay one line a row). */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Columns padded to their widest cell; the last one is not padded, so long URLs do not widen the rest. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  const cells = [columns.map((c) => c.head), ...rows.map((r) => columns.map((c) => cell(c.value(r))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells.map((line) => line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i]!))).join("  ")).join("\n");
}

/** One object as `field  value` lines, in the API's field order. */
export function record(obj: object, skip: string[] = []): string {
  const entries = Object.entries(obj).filter(([k]) => !skip.includes(k));
  const width = Math.max(...entries.map(([k]) => k.length));
  return entries.map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`).join("\n");
}
