import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { splitStatements } from "../../src/db/sql-split.js";
import { loadMigrations } from "../../src/db/migrate.js";

// migrate() sends a file's statements one at a time (Citus refuses several in one text for some
// DDL), so the split must end a statement exactly where Postgres would: never inside a string,
// an identifier, a comment or a dollar-quoted body.

test("statements end at semicolons outside quotes, comments and dollar quotes", () => {
  const sql = `-- a comment; not an end
CREATE TABLE "odd;name" (x text DEFAULT 'a;b''c;');
/* block; /* nested; */ still comment; */
INSERT INTO t VALUES (E'back\\';slash;', $$dollar; body$$, $tag$ a $$ ; b $tag$);
SELECT $1::int;;
-- trailing comment only`;
  assert.deepEqual(splitStatements(sql), [
    `-- a comment; not an end\nCREATE TABLE "odd;name" (x text DEFAULT 'a;b''c;')`,
    `/* block; /* nested; */ still comment; */\nINSERT INTO t VALUES (E'back\\';slash;', $$dollar; body$$, $tag$ a $$ ; b $tag$)`,
    "SELECT $1::int",
  ]);
});

test("a text without a final semicolon ends its last statement; blanks and comments alone are no statement", () => {
  assert.deepEqual(splitStatements("SELECT 1"), ["SELECT 1"]);
  assert.deepEqual(splitStatements("  \n-- only\n/* this */ ;  ; "), []);
  assert.deepEqual(splitStatements(""), []);
});

test("an unterminated string, identifier, comment or dollar quote is an error, not a guess", () => {
  for (const sql of ["SELECT 'a", 'SELECT "a', "SELECT 1 /* x", "SELECT $q$ x"]) {
    assert.throws(() => splitStatements(sql), /unterminated/, sql);
  }
});

test("statements joined with semicolons split back into themselves, whatever their quoted contents", () => {
  const text = fc.string({ unit: fc.constantFrom("a", ";", "'", '"', "$", "-", "*", "/", "\n", " ", "\\") });
  const literal = text.map((t) => `'${t.replaceAll("'", "''")}'`);
  const ident = text.map((t) => `"${t.replaceAll('"', '""')}"`);
  const dollar = text.filter((t) => !t.includes("$x$")).map((t) => `$x$${t}$x$`);
  const statement = fc
    .array(fc.oneof(literal, ident, dollar, fc.constantFrom("SELECT", "1", "x", "+")), { minLength: 1, maxLength: 6 })
    .map((parts) => parts.join(" "));
  fc.assert(
    fc.property(fc.array(statement, { maxLength: 6 }), (statements) => {
      assert.deepEqual(splitStatements(statements.join(";\n")), statements);
    }),
  );
});

test("every migration splits into statements, none of them empty", () => {
  for (const m of loadMigrations()) {
    const statements = splitStatements(m.sql);
    assert.ok(statements.length > 0, m.name);
    for (const s of statements) assert.match(s, /\S/, m.name);
  }
});
