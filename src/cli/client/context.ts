import type { Sluice } from "../../../sdk/src/index.js";
import type { Options } from "./options.js";
import { table, type Column } from "./output.js";

// What each API command gets: the SDK client, its options and arguments, and where to write.
// stdout carries the answer (a table, or --json's one document); stderr carries notes for people.

export interface ClientContext {
  sluice: Sluice;
  opts: Options;
  /** The arguments after the subcommand (the ID of `get ID`), as many as the command table says. */
  args: string[];
  /** --json: print the API's document instead of a table. */
  json: boolean;
  /** A line (or lines) of the answer, on stdout. */
  print(text: string): void;
  /** A hint for people, on stderr: never mixed into what a script reads. */
  note(text: string): void;
}

export type Handler = (ctx: ClientContext) => Promise<void>;

export function printJson(ctx: ClientContext, doc: unknown): void {
  ctx.print(JSON.stringify(doc, null, 2));
}

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/**
 * A list command: one page (--limit, --cursor), or with --all every page, following next_cursor.
 * --json prints the page as the API answered it; with --all, one page holding every item.
 */
export async function showList<T>(
  ctx: ClientContext,
  noun: string,
  fetchPage: (query: { limit?: number; cursor?: string }) => Promise<Page<T>>,
  columns: Column<T>[],
): Promise<void> {
  const all = ctx.opts.flag("all");
  const limit = ctx.opts.int("limit", 1, 1000);
  let cursor = ctx.opts.text("cursor");
  const items: T[] = [];
  let next: string | null;
  // Only a person watching a terminal wants to see a long listing progress.
  const progress = all && process.stderr.isTTY;
  do {
    const page = await fetchPage({ ...(limit !== undefined ? { limit } : {}), ...(cursor !== undefined ? { cursor } : {}) });
    items.push(...page.data);
    next = page.next_cursor;
    cursor = next ?? undefined;
    if (progress && next) process.stderr.write(`\r${items.length} ${noun} so far…`);
  } while (all && next);
  if (progress) process.stderr.write("\r\x1b[K");
  if (ctx.json) return printJson(ctx, { data: items, next_cursor: next });
  ctx.print(items.length ? table(items, columns) : `no ${noun}`);
  if (next) ctx.note(`more ${noun}: --all for every page, or --cursor ${next} for the next one`);
}
