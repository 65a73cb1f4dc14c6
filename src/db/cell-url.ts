import { createHash } from "node:crypto";
import { cellNameProblem } from "../config.js";

// How a connection reaches a cell (cells.ts): the cell as the session's whole search_path, set at
// login through the URL's `options`. And the notification channels a cell's processes use, which
// are the database's, shared with every other cell, unless named apart.

/**
 * `databaseUrl` with `cell` as the session's whole search_path (`options=-c search_path=<cell>`,
 * sent at login; node-postgres and libpq both pass it). Nothing resolves outside the cell:
 * Postgres's and Citus's own functions are in pg_catalog, which is always searched.
 */
export function cellUrl(databaseUrl: string, cell: string): string {
  const problem = cellNameProblem(cell);
  if (problem) throw new Error(problem);
  const url = new URL(databaseUrl);
  url.searchParams.set("options", `-c search_path=${cell}`);
  return url.toString();
}

/** The cell a URL's `options` puts first on the search_path, or null. */
export function cellOfUrl(databaseUrl: string): string | null {
  let options: string | null;
  try {
    options = new URL(databaseUrl).searchParams.get("options");
  } catch {
    return null;
  }
  const m = options === null ? null : /(?:^|\s)-c\s*search_path=([a-z_][a-z0-9_]*)/.exec(options);
  return m?.[1] ?? null;
}

/**
 * The name notifications on `channel` travel under for the cell a store's URL reaches (null: no
 * cell, the name as it is). Channels belong to the database, which cells share: named apart, one
 * cell's publishes do not wake every other cell's workers. A name past Postgres's 63 bytes takes
 * a hash of the cell instead.
 */
export function cellChannel(channel: string, cell: string | null): string {
  if (cell === null) return channel;
  const named = `${channel}_${cell}`;
  if (Buffer.byteLength(named) <= 63) return named;
  return `${channel}_${createHash("sha256")
    .update(cell)
    .digest("hex")
    .slice(0, 63 - channel.length - 1)}`;
}
