import { createHash } from "node:crypto";
import { cellNameProblem } from "../config.js";

// How a connection reaches a cell (cells.ts): the cell as the session's whole search_path, set at
// login, either through the URL's `options`, or, where a pooler refuses that startup parameter
// (PgBouncer), by logging in as a role of the cell's whose default search_path is the cell: a URL
// with `{cell}` in it names that role. And the notification channels a cell's processes use,
// which are the database's, shared with every other cell, unless named apart.

/** What stands for the cell's name in a URL that logs in as a role per cell. */
export const CELL_PLACEHOLDER = "{cell}";
const PLACEHOLDER = /\{cell\}|%7Bcell%7D/gi;

/** True when the URL names its role per cell (`{cell}` in it), the way through a pooler. */
export function hasCellPlaceholder(databaseUrl: string): boolean {
  return new RegExp(PLACEHOLDER.source, "i").test(databaseUrl);
}

/**
 * The URL of `cell` in the database `databaseUrl` names: with `{cell}` in it, that replaced by the
 * cell's name (the role's default search_path is the cell); else `options=-c search_path=<cell>`,
 * sent at login (node-postgres and libpq both pass it). Either way nothing resolves outside the
 * cell: Postgres's and Citus's own functions are in pg_catalog, which is always searched.
 */
export function cellUrl(databaseUrl: string, cell: string): string {
  const problem = cellNameProblem(cell);
  if (problem) throw new Error(problem);
  if (hasCellPlaceholder(databaseUrl)) return databaseUrl.replace(PLACEHOLDER, cell);
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
