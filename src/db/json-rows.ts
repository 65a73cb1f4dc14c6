// Batches go to Postgres as ONE JSON parameter read with json_to_recordset: JSON.stringify is
// native and fast, where per-element array literals are escaped in JavaScript by the driver.

/** A JSON array text of `rows`; `raw` keys hold JSON text spliced in as is (already valid JSON). */
export function jsonRows<T extends object>(rows: readonly T[], raw: readonly (keyof T)[] = []): string {
  if (raw.length === 0) return JSON.stringify(rows);
  // By hand, as JSON.stringify would write it but for the raw values: one string built as it
  // goes, each key's text made once (this is a publish's hot loop: ~1 µs an event with
  // Object.entries and joins, a quarter of that so).
  const rawKeys = new Set<PropertyKey>(raw);
  const keyText = new Map<string, string>();
  let out = "[";
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>;
    out += i === 0 ? "{" : ",{";
    let sep = "";
    for (const k in row) {
      const v = row[k];
      if (v === undefined) continue;
      let key = keyText.get(k);
      if (key === undefined) keyText.set(k, (key = `${JSON.stringify(k)}:`));
      out += sep + key + (v !== null && rawKeys.has(k) ? (v as string) : JSON.stringify(v));
      sep = ",";
    }
    out += "}";
  }
  return `${out}]`;
}

/**
 * `json_to_recordset` as a FROM item that tells the planner how many rows it holds. Postgres
 * guesses 100 rows for any set-returning function; against a table of a few thousand rows that
 * guess makes a hash join over the whole table look cheaper than `count` lookups by key. A
 * `LIMIT` (a literal, never user input) corrects the estimate: `count` rounded up to a power of
 * two, so it never cuts a row, is within 2× of the truth, and a statement has a dozen texts at
 * most — each one named and planned once per connection (db.ts StatementNames).
 */
export function recordset(param: string, columns: string, count: number): string {
  return `(SELECT * FROM json_to_recordset(${param}::json) AS r(${columns}) LIMIT ${limitFor(count)})`;
}

/** The least power of two ≥ count (1 for none). */
export function limitFor(count: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(1, Math.trunc(count))));
}
