import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { SluiceError, ValidationError, type FieldError } from "../errors.js";
import { BOUNDS } from "../policy/bounds.js";
import { jsonDepth } from "../policy/json-depth.js";

// Every request body goes through this one parser, whatever its Content-Type: JSON is read, bounded
// and checked here once for every route; anything else is 415. Three promises rest on it:
//
// - A refusal reaches the client. A client that sends its whole body before it reads (most do)
//   sees a connection reset, not the answer, when the server closes with the body unread. So a
//   body over the limit is read to its end and dropped before the 413 goes out, up to a bound
//   (drainLimitBytes): past that, or when Content-Length already says more, the 413 is sent and
//   the connection closed, so no client can keep the server reading.
// - Nothing Postgres refuses reaches it: text and jsonb hold neither NUL (\u0000) nor half of a
//   UTF-16 surrogate pair, and nesting deeper than BOUNDS.body_depth is refused before JSON.parse
//   (JSON.stringify overflows the stack at ~5,000 levels; the embedded store's parser hangs at
//   ~12,000).
// - No key rewires a prototype: "__proto__" (and "constructor" holding "prototype") are refused,
//   as Fastify's secure-json-parse would, but as a 422 that names the field.

const MIB = 1_048_576;

/**
 * How much of a too-large body is read (and dropped) so that its client gets the 413: twice the
 * limit, at least 16 MiB. A client that overshoots a little gets its answer; one that streams
 * without end is cut off there.
 */
export function drainLimitBytes(bodyLimitBytes: number): number {
  return Math.max(2 * bodyLimitBytes, 16 * MIB);
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's body may be absent; it is then validated as {}. */
    optionalBody?: boolean;
  }
}

type Done = (err: Error | null, body?: unknown) => void;

/** Requests whose body was given up on past the drain bound: their connection closes. */
const abandoned = new WeakSet<IncomingMessage>();

/** Replaces Fastify's parsers (JSON, and text/plain taken as a string) with parseBody for every type. */
export function registerBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (req: FastifyRequest, payload: IncomingMessage, done: Done) => parseBody(req, payload, done));
  // An answer sent before its body was read (401, 404, 415 for a malformed Content-Type): Node
  // reads and drops the rest so the connection can serve the next request, for as long as the
  // client sends. Bound that too.
  app.addHook("onSend", (req, _reply, payload, done) => {
    if (!req.raw.complete) drainAtMost(req.raw, drainLimitBytes(req.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? MIB));
    done(null, payload);
  });
}

/** "application/json" from "Application/JSON; charset=utf-8"; "" when absent. */
function mediaType(header: string | undefined): string {
  return (header ?? "").split(";", 1)[0]!.trim().toLowerCase();
}

function parseBody(req: FastifyRequest, payload: IncomingMessage, done: Done): void {
  // No route: the 404 answers whatever the body; Node drops it (bounded by the onSend hook).
  if (req.is404) return done(null, undefined);
  const limit = req.routeOptions.bodyLimit;
  const drain = drainLimitBytes(limit);
  const declared = Number(req.headers["content-length"]);
  if (declared > drain) {
    abandoned.add(req.raw);
    return done(new SluiceError("SLUICE_REQUEST_TOO_LARGE"));
  }
  // JSON is UTF-8 (RFC 8259): a body declared in another charset would be read wrongly.
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers["content-type"] ?? "")?.[1]?.toLowerCase();
  const isJson =
    mediaType(req.headers["content-type"]) === "application/json" && (charset === undefined || charset === "utf-8" || charset === "utf8");
  readBody(payload, isJson ? limit : 0, drain, (read) => {
    if (read.error) {
      return done(new SluiceError("SLUICE_REQUEST_INVALID", { reason: "the connection closed before the whole body arrived" }));
    }
    if (!read.complete) {
      abandoned.add(req.raw);
      return done(new SluiceError("SLUICE_REQUEST_TOO_LARGE"));
    }
    if (read.bytes === 0) {
      // No body on a route that needs none (DELETE, pause with no options, …) is fine whatever
      // the Content-Type says: fetch() labels even an empty string text/plain.
      const bodyOptional = req.routeOptions.config.optionalBody === true || req.routeOptions.schema?.body === undefined;
      if (bodyOptional) return done(null, undefined);
      return done(new SluiceError(isJson ? "SLUICE_REQUEST_EMPTY_BODY" : "SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE"));
    }
    if (!isJson) return done(new SluiceError("SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE"));
    if (read.bytes > limit) return done(new SluiceError("SLUICE_REQUEST_TOO_LARGE"));
    try {
      done(null, parseJson(read.body!.toString("utf8")));
    } catch (err) {
      done(err as Error);
    }
  });
}

/**
 * The body's JSON value, or a SluiceError: 400 when it is not JSON, 422 when it nests deeper than
 * BOUNDS.body_depth or holds a string (or key) Postgres cannot store, or a prototype key.
 */
export function parseJson(raw: string): unknown {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw; // a byte order mark is not JSON
  const maxDepth = BOUNDS.body_depth.max;
  // Each level of valid JSON takes an opening and a closing bracket, so a shorter valid text
  // cannot be too deep (and JSON.parse refuses a short invalid one at no cost).
  if (text.length > 2 * maxDepth) {
    const depth = jsonDepth(text);
    if (depth > maxDepth) {
      throw new ValidationError("request", [
        {
          field: "body",
          message: `nests ${depth} levels of objects and arrays; at most ${maxDepth} are taken. Flatten it, or send the deep part as a string`,
        },
      ]);
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new SluiceError("SLUICE_REQUEST_MALFORMED_JSON", { reason: (err as Error).message });
  }
  // NUL and surrogates only arrive escaped (raw, they are invalid JSON or invalid UTF-8, which
  // decodes to U+FFFD), so a text without "\u" holds neither: the walk is paid only then.
  if (text.includes("\\u") || text.includes("__proto__") || text.includes("constructor")) {
    const problems = refusedStrings(value);
    if (problems.length) throw new ValidationError("request", problems);
  }
  return value;
}

const MOST_PROBLEMS = 20;
// NUL is the very character looked for.
// eslint-disable-next-line no-control-regex
const BAD_CHARACTER = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const BAD_CHARACTERS = new RegExp(BAD_CHARACTER.source, "g");

/** NUL or a lone surrogate: what Postgres text and jsonb refuse. */
const unstorable = (s: string): boolean => BAD_CHARACTER.test(s);

/** The character as its JSON escape, for messages: "\u0000", "\ud800". */
const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** What is wrong with `s` (its first unstorable character) and, for a value, how to mend it. */
function whatIsWrong(s: string): { what: string; mend: string } {
  const c = BAD_CHARACTER.exec(s)?.[0] ?? "\u0000";
  if (c === "\u0000") return { what: "the NUL character (\\u0000)", mend: "remove it, or send the value encoded (e.g. as base64)" };
  return {
    what: `an unpaired UTF-16 surrogate (${escaped(c)}, half of a character)`,
    mend: "send the whole character (both halves of the pair), remove it, or send the value encoded (e.g. as base64)",
  };
}

/** A key as it can appear in a field path: unstorable characters written as escapes. */
const printable = (key: string) => key.replace(BAD_CHARACTERS, escaped);

/** ["payload", "items", 2, "name"] → "payload.items[2].name". */
function pathText(path: (string | number)[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${printable(p)}` : printable(p);
  return out || "body";
}

/**
 * Every string (and key) Postgres cannot store, and every prototype key, in `value`, as field
 * errors naming the path ("payload.items[2].name"); at most MOST_PROBLEMS. The path is kept as a
 * stack and spelt out only for a problem. Recursion is safe: the depth was bounded before parsing.
 */
export function refusedStrings(value: unknown): FieldError[] {
  const out: FieldError[] = [];
  const path: (string | number)[] = [];
  const visit = (v: unknown): void => {
    if (out.length >= MOST_PROBLEMS) return;
    if (typeof v === "string") {
      if (unstorable(v)) {
        const { what, mend } = whatIsWrong(v);
        out.push({ field: pathText(path), message: `contains ${what}, which cannot be stored; ${mend}` });
      }
      return;
    }
    if (v === null || typeof v !== "object") return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        visit(v[i]);
        path.pop();
      }
      return;
    }
    for (const key of Object.keys(v)) {
      const child = (v as Record<string, unknown>)[key];
      path.push(key);
      if (unstorable(key)) {
        out.push({
          field: pathText(path),
          message: `is a field name with ${whatIsWrong(key).what} in it, which cannot be stored; rename the field`,
        });
      } else if (key === "__proto__") {
        out.push({
          field: pathText(path),
          message: "is not taken as a field name (JavaScript reads it as the object's prototype); rename the field",
        });
      } else if (key === "constructor" && isPrototypeHolder(child)) {
        out.push({
          field: `${pathText(path)}.prototype`,
          message: "is not taken as a field name inside 'constructor' (JavaScript reads it as a class's prototype); rename either field",
        });
      } else {
        visit(child);
      }
      path.pop();
    }
  };
  visit(value);
  return out;
}

function isPrototypeHolder(v: unknown): boolean {
  return v !== null && typeof v === "object" && Object.hasOwn(v, "prototype");
}

interface BodyRead {
  /** The body, when it was kept (at most keepBytes). */
  body: Buffer | null;
  bytes: number;
  /** False when reading stopped at readBytes before the body's end. */
  complete: boolean;
  error?: Error;
}

/**
 * Reads `stream` to its end, keeping it while it is at most `keepBytes` and dropping it after;
 * stops (pausing the stream) once more than `readBytes` came. Calls `cb` once.
 */
function readBody(stream: IncomingMessage, keepBytes: number, readBytes: number, cb: (r: BodyRead) => void): void {
  let chunks: Buffer[] | null = [];
  let bytes = 0;
  const finish = (r: BodyRead) => {
    stream.off("data", onData);
    stream.off("end", onEnd);
    stream.off("error", onError);
    stream.off("close", onClose);
    cb(r);
  };
  const onData = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > keepBytes) chunks = null;
    else chunks?.push(chunk);
    if (bytes > readBytes) {
      stream.pause();
      finish({ body: null, bytes, complete: false });
    }
  };
  const onEnd = () => finish({ body: chunks ? Buffer.concat(chunks, bytes) : null, bytes, complete: true });
  const onError = (error: Error) => finish({ body: null, bytes, complete: false, error });
  // Closed before its end: the client went away mid-body.
  const onClose = () => onError(new Error("closed before the end of the body"));
  stream.on("data", onData);
  stream.on("end", onEnd);
  stream.on("error", onError);
  stream.on("close", onClose);
  stream.resume();
}

/**
 * After an answer, reads and drops what is left of its request's body, up to `maxBytes` more,
 * then closes the connection (a client may keep sending for ever).
 */
function drainAtMost(raw: IncomingMessage, maxBytes: number): void {
  if (raw.complete || raw.destroyed || abandoned.has(raw) || raw.listenerCount("data") > 0) return;
  let bytes = 0;
  raw.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > maxBytes) raw.socket.destroy();
  });
  raw.resume();
}
