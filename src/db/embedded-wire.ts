// Reading the embedded store's answers straight from Postgres's wire bytes, on PGlite's thread,
// and writing its most frequent message, Bind + Execute of a prepared statement.
//
// PGlite's JavaScript was ~17 % of its thread, the embedded store's bottleneck (a CPU profile of
// `npm run bench:profile -- --embedded`); with this, ~7 %. Its writer measures and copies each
// parameter string one character at a time (a publish binds hundreds of kilobytes of JSON), and
// its reader turns every backend message into an object, each DataRow field copied out of the
// answer, then decoded. EmbeddedSession needs much less of an answer: the rows of one statement
// in it (the others — BEGIN, the generic plan settings, COMMIT — answer with tags only), each
// statement's tag, and the error, if any. This reads exactly that, decoding each field once from
// the answer's own bytes, and builds the same values as PGlite's parser (the same type parsers,
// by type OID; null for NULL; one object per row keyed by column name, a later duplicate name
// winning).

/** Text → value, by type OID (PGlite's `parsers`). */
export type Parsers = Record<number, ((text: string, type: number) => unknown) | undefined>;

/** A column of a prepared statement's rows, from its RowDescription, with its type's parser. */
export interface Column {
  name: string;
  /** The type's OID. */
  type: number;
  /** Text → value for that type; none: the text as it is. */
  parse: ((text: string, type: number) => unknown) | undefined;
}

/** A RowDescription's fields as columns, each with its parser looked up once (not per row). */
export function columnsOf(fields: readonly { name: string; dataTypeID: number }[], parsers: Parsers): Column[] {
  return fields.map((f) => ({ name: f.name, type: f.dataTypeID, parse: parsers[f.dataTypeID] }));
}

/** An ErrorResponse, as PGlite reports it: the message, and the fields Sluice reads (code, constraint, detail, …). */
export class DatabaseError extends Error {
  // As PGlite's (node-postgres's) DatabaseError: Sluice's error handling reads these fields.
  override name = "error";
  declare severity?: string;
  declare code?: string;
  declare detail?: string;
  declare hint?: string;
  declare position?: string;
  declare internalPosition?: string;
  declare internalQuery?: string;
  declare where?: string;
  declare schema?: string;
  declare table?: string;
  declare column?: string;
  declare dataType?: string;
  declare constraint?: string;
  declare file?: string;
  declare line?: string;
  declare routine?: string;
}

/** ErrorResponse field codes → DatabaseError's property names (the names node-postgres and PGlite use). */
const ERROR_FIELDS: Record<string, keyof DatabaseError> = {
  S: "severity",
  C: "code",
  D: "detail",
  H: "hint",
  P: "position",
  p: "internalPosition",
  q: "internalQuery",
  W: "where",
  s: "schema",
  t: "table",
  c: "column",
  d: "dataType",
  n: "constraint",
  F: "file",
  L: "line",
  R: "routine",
};

export interface WireAnswer {
  /** The rows of statement `rowsOf` (counted by CommandComplete), parsed. */
  rows: Record<string, unknown>[];
  /** Each CommandComplete's tag, in order ("BEGIN", "INSERT 0 1", "COMMIT", "ROLLBACK", …). */
  tags: string[];
}

/**
 * Reads `bytes`, one exchange's answer: the rows of the statement numbered `rowsOf` (0-based, by
 * the CommandCompletes before it) in the shape of `columns`; every tag. Throws the first
 * ErrorResponse as a DatabaseError once the answer has been read.
 */
export function readAnswer(bytes: Uint8Array, rowsOf: number, columns: readonly Column[] | null): WireAnswer {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rows: Record<string, unknown>[] = [];
  const tags: string[] = [];
  let error: DatabaseError | null = null;
  for (let at = 0; at + 5 <= buf.length;) {
    const kind = buf[at]!;
    const end = at + 1 + buf.readInt32BE(at + 1);
    let p = at + 5;
    if (kind === 0x44 /* D: DataRow */) {
      if (tags.length === rowsOf && columns) {
        const n = buf.readInt16BE(p);
        p += 2;
        const row: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) {
          const len = buf.readInt32BE(p);
          p += 4;
          const col = columns[i]!;
          if (len < 0) row[col.name] = null;
          else {
            const text = buf.toString("utf8", p, p + len);
            p += len;
            row[col.name] = col.parse ? col.parse(text, col.type) : text;
          }
        }
        rows.push(row);
      }
    } else if (kind === 0x43 /* C: CommandComplete */) {
      tags.push(buf.toString("utf8", p, end - 1));
    } else if (kind === 0x45 /* E: ErrorResponse */ && error === null) {
      const fields: Record<string, string> = {};
      while (p < end && buf[p] !== 0) {
        const code = String.fromCharCode(buf[p]!);
        const zero = buf.indexOf(0, p + 1);
        fields[code] = buf.toString("utf8", p + 1, zero);
        p = zero + 1;
      }
      error = new DatabaseError(fields.M ?? "unknown error");
      for (const [code, key] of Object.entries(ERROR_FIELDS)) if (fields[code] !== undefined) Object.assign(error, { [key]: fields[code] });
    }
    at = end;
  }
  if (error) throw error;
  return { rows, tags };
}

/**
 * Bind (unnamed portal, statement `name`, every value and result as text; null for NULL) and
 * Execute of all its rows, as one buffer. PGlite's serializer measures and writes a string one
 * character at a time in JavaScript — for a publish's batch, hundreds of kilobytes of JSON per
 * statement; Buffer's byteLength and write are native.
 */
export function bindExecute(name: string, values: readonly (string | null)[]): Uint8Array {
  let size = 1 + 4 + 1 + Buffer.byteLength(name) + 1 + 2 + 2 + 2 + 1 + 4 + 1 + 4;
  const lengths = values.map((v) => (v === null ? -1 : Buffer.byteLength(v)));
  for (const n of lengths) size += 4 + Math.max(0, n);
  const buf = Buffer.allocUnsafe(size);
  let at = buf.writeUInt8(0x42 /* B */, 0);
  const bindEnd = size - 10;
  at = buf.writeInt32BE(bindEnd - 1, at);
  at = buf.writeUInt8(0, at); // the unnamed portal
  at += buf.write(name, at);
  at = buf.writeUInt8(0, at);
  at = buf.writeInt16BE(0, at); // no parameter format codes: all text
  at = buf.writeInt16BE(values.length, at);
  values.forEach((v, i) => {
    at = buf.writeInt32BE(lengths[i]!, at);
    if (v !== null) at += buf.write(v, at);
  });
  at = buf.writeInt16BE(0, at); // no result format codes: all text
  at = buf.writeUInt8(0x45 /* E */, at);
  at = buf.writeInt32BE(9, at);
  at = buf.writeUInt8(0, at); // the unnamed portal
  buf.writeInt32BE(0, at); // every row
  return buf;
}

/** Messages (or an answer's chunks) as one buffer, in order. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of parts) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
