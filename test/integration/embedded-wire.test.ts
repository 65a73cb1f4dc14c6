import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { PGlite, protocol } from "@electric-sql/pglite";
import { bindExecute, columnsOf, concat, readAnswer, type Column } from "../../src/db/embedded-wire.js";

// The embedded store writes Bind + Execute itself and reads answers from the wire bytes
// (src/db/embedded-wire.ts) instead of through PGlite's writer and reader. What must hold: the
// same statement with the same values gives the same rows, value for value and type for type, as
// PGlite's own query() — and the same error, field for field. Checked against a real PGlite.

const { serialize } = protocol;

let pg: PGlite;
before(async () => {
  pg = await PGlite.create();
  await pg.exec("CREATE TABLE uniq (k text CONSTRAINT uniq_pkey PRIMARY KEY, n int)");
});
after(async () => {
  await pg.close();
});

async function raw(...parts: Uint8Array[]): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  await pg.execProtocolRawStream(concat(parts), { syncToFs: false, onRawData: (c) => void chunks.push(c.slice()) });
  return concat(chunks);
}

/** Prepares `text` as `name`; its parameter types and columns. */
async function prepare(name: string, text: string): Promise<{ types: number[]; columns: Column[] | null }> {
  const described = await pg.execProtocolStream(
    concat([serialize.parse({ name, text }), serialize.describe({ type: "S", name }), serialize.sync()]),
  );
  const params = described.find((m) => m.name === "parameterDescription") as unknown as { dataTypeIDs: number[] };
  const rows = described.find((m) => m.name === "rowDescription") as unknown as
    { fields: { name: string; dataTypeID: number }[] } | undefined;
  return { types: params.dataTypeIDs, columns: rows ? columnsOf(rows.fields, pg.parsers) : null };
}

const SQL = `SELECT $1::text AS t, $2::int AS i, $3::jsonb AS j, $4::timestamptz AS ts, $5::bool AS b, $6::float8 AS f,
                    $7::text[] AS arr, NULL::text AS nothing, 1 AS dup, $1::text || '!' AS dup, '{"a":[1]}'::json AS js`;

test("rows read from the wire equal PGlite's query(), for any values (Bind written natively)", async () => {
  const p = await prepare("w1", SQL);
  const text = fc.option(
    fc.string({ unit: "grapheme", maxLength: 300 }).filter((s) => !s.includes("\u0000")),
    { nil: null },
  );
  await fc.assert(
    fc.asyncProperty(
      fc.tuple(
        text,
        fc.option(fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }), { nil: null }),
        fc.option(
          // (A string is taken as JSON text already, by PGlite's serializer as by this one.)
          fc.jsonValue().filter((v) => typeof v !== "string" && !JSON.stringify(v).includes("\\u0000")),
          { nil: null },
        ),
        fc.option(fc.date({ min: new Date("1970-01-01"), max: new Date("2200-01-01"), noInvalidDate: true }), { nil: null }),
        fc.option(fc.boolean(), { nil: null }),
        fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
        fc.option(
          fc.array(
            fc.string({ maxLength: 20 }).filter((s) => !s.includes("\u0000")),
            { maxLength: 5 },
          ),
          { nil: null },
        ),
      ),
      async (values) => {
        const params = values.map((v, i) => (v === null ? null : pg.serializers[p.types[i]!]!(v)));
        const answer = readAnswer(await raw(bindExecute("w1", params), serialize.sync()), 0, p.columns);
        const expected = await pg.query(SQL, values);
        assert.deepEqual(answer.rows, expected.rows);
        assert.deepEqual(answer.tags, ["SELECT 1"]);
      },
    ),
    { numRuns: 150 },
  );
});

test("the rows are those of the statement asked for; every statement's tag is read", async () => {
  const begin = await prepare("w_begin", "BEGIN");
  const sel = await prepare("w_sel", "SELECT g AS n FROM generate_series(1, $1::int) g");
  const settings = await prepare("w_set", "SELECT set_config('work_mem', '8MB', true) AS s");
  const commit = await prepare("w_commit", "COMMIT");
  assert.equal(begin.columns, null);
  const bytes = await raw(
    bindExecute("w_begin", []),
    bindExecute("w_set", []),
    bindExecute("w_sel", ["3"]),
    bindExecute("w_commit", []),
    serialize.sync(),
  );
  const answer = readAnswer(bytes, 2, sel.columns);
  assert.deepEqual(answer.rows, [{ n: 1 }, { n: 2 }, { n: 3 }]);
  assert.deepEqual(answer.tags, ["BEGIN", "SELECT 1", "SELECT 3", "COMMIT"]);
  assert.ok(settings.columns);
  assert.equal(commit.columns, null);
});

test("an error read from the wire carries what PGlite's does: message, SQLSTATE, constraint, detail, table", async () => {
  const ins = await prepare("w_ins", "INSERT INTO uniq VALUES ($1, $2)");
  readAnswer(await raw(bindExecute("w_ins", ["a", "1"]), serialize.sync()), 0, ins.columns);
  const ours = await Promise.resolve()
    .then(async () => readAnswer(await raw(bindExecute("w_ins", ["a", "2"]), serialize.sync()), 0, ins.columns))
    .then(
      () => assert.fail("a duplicate key was accepted"),
      (e: unknown) => e as Record<string, unknown>,
    );
  const theirs = await pg.query("INSERT INTO uniq VALUES ($1, $2)", ["a", 3]).then(
    () => assert.fail("a duplicate key was accepted"),
    (e: unknown) => e as Record<string, unknown>,
  );
  assert.ok(ours instanceof Error);
  for (const key of ["message", "name", "code", "severity", "constraint", "detail", "table", "schema", "routine", "file"])
    assert.equal(ours[key], theirs[key], key);
  assert.equal(ours.code, "23505");
  // The session is usable after it: the exchange ended with its Sync.
  assert.deepEqual((await pg.query("SELECT count(*)::int AS n FROM uniq")).rows, [{ n: 1 }]);
});

test("Bind with no values, NULLs, empty strings and multi-byte text", async () => {
  const p = await prepare("w_mb", "SELECT $1::text AS a, $2::text AS b, $3::text AS c, octet_length($3::text) AS len");
  const answer = readAnswer(await raw(bindExecute("w_mb", [null, "", "ça 🧪 日本"]), serialize.sync()), 0, p.columns);
  assert.deepEqual(answer.rows, [{ a: null, b: "", c: "ça 🧪 日本", len: Buffer.byteLength("ça 🧪 日本") }]);
});
