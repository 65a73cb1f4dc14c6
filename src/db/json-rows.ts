// Batches go to Postgres as ONE JSON parameter read with json_to_recordset: JSON.stringify is
// native and fast, where per-element array literals are escaped in JavaScript by the driver.

/** A JSON array text of `rows`; `raw` keys hold JSON text spliced in as is (already valid JSON). */
export function jsonRows<T extends object>(rows: readonly T[], raw: readonly (keyof T)[] = []): string {
  if (raw.length === 0) return JSON.stringify(rows);
  const parts: string[] = [];
  for (const row of rows) {
    const fields: string[] = [];
    for (const [k, v] of Object.entries(row)) {
      if (v === undefined) continue;
      fields.push(`${JSON.stringify(k)}:${raw.includes(k as keyof T) && v !== null ? (v as string) : JSON.stringify(v)}`);
    }
    parts.push(`{${fields.join(",")}}`);
  }
  return `[${parts.join(",")}]`;
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
