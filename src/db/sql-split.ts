// Splits a migration file into its statements, so each goes to the store as a query of its own.
// Citus forwards the whole query text of some DDL (CREATE INDEX, ALTER TABLE with several
// subcommands) to the node holding the table, over the extended protocol, which refuses a text
// of several statements; sent one by one, the same statements apply. Plain Postgres and PGlite
// do not mind either way.
//
// A statement ends at a semicolon outside quotes, comments and dollar-quoted bodies. The
// lexer knows what Postgres's does about where a statement may end: '…' strings (with ''
// inside), E'…' strings (with backslash escapes), "…" identifiers, $tag$…$tag$ bodies,
// -- line comments and nested /* */ comments. A part holding nothing but comments and blanks is
// dropped.

/** The statements of `sql`, in order, each without its closing semicolon. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let start = 0;
  let meaningful = false; // the current part holds more than comments and blanks
  let i = 0;
  const n = sql.length;
  const push = (end: number) => {
    if (meaningful) out.push(sql.slice(start, end).trim());
    start = end + 1;
    meaningful = false;
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === "-" && next === "-") {
      const eol = sql.indexOf("\n", i);
      i = eol === -1 ? n : eol + 1;
    } else if (c === "/" && next === "*") {
      i = blockCommentEnd(sql, i);
    } else if (c === "'") {
      meaningful = true;
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && (i < 2 || !/[\w$]/.test(sql[i - 2]!));
      i = quotedEnd(sql, i, "'", escapes);
    } else if (c === '"') {
      meaningful = true;
      i = quotedEnd(sql, i, '"', false);
    } else if (c === "$" && (i === 0 || !/[\w$]/.test(sql[i - 1]!))) {
      const tag = /^\$([A-Za-z_][\w]*)?\$/.exec(sql.slice(i, i + 64));
      if (tag) {
        meaningful = true;
        const close = sql.indexOf(tag[0], i + tag[0].length);
        if (close === -1) throw new Error(`unterminated dollar-quoted string ${tag[0]} at offset ${i}`);
        i = close + tag[0].length;
      } else {
        meaningful = true;
        i += 1;
      }
    } else if (c === ";") {
      push(i);
      i += 1;
    } else {
      if (!/\s/.test(c)) meaningful = true;
      i += 1;
    }
  }
  push(n);
  return out;
}

/** Index just past the quote that closes the one at `open`; a doubled quote is one quote inside. */
function quotedEnd(sql: string, open: number, quote: string, backslashEscapes: boolean): number {
  let i = open + 1;
  for (;;) {
    if (i >= sql.length) throw new Error(`unterminated ${quote === "'" ? "string" : "quoted identifier"} at offset ${open}`);
    const c = sql[i]!;
    if (backslashEscapes && c === "\\") {
      i += 2;
    } else if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i += 1;
    }
  }
}

/** Index just past the end of the block comment at `open`; Postgres's block comments nest. */
function blockCommentEnd(sql: string, open: number): number {
  let depth = 0;
  let i = open;
  while (i < sql.length) {
    if (sql[i] === "/" && sql[i + 1] === "*") {
      depth += 1;
      i += 2;
    } else if (sql[i] === "*" && sql[i + 1] === "/") {
      depth -= 1;
      i += 2;
      if (depth === 0) return i;
    } else {
      i += 1;
    }
  }
  throw new Error(`unterminated block comment at offset ${open}`);
}
