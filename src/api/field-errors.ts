import { Ajv } from "ajv";
import addFormats, { type FormatOptions } from "ajv-formats";
import type { FieldError } from "../errors.js";
import { formatNumber } from "../policy/bounds.js";
import { TIME_OF_DAY, EVENT_TYPE, EVENT_TYPE_PATTERN, URL_PATTERN, SECRET_PATTERN } from "../schemas/common.js";
import { CSS_COLOUR, FONT_FAMILY } from "../schemas/portal-sessions.js";

// Ajv's errors turned into the contract's {field, message}: each message says what the field
// takes, so a reader can mend the value without opening the schema ("must be >= 1" names one end
// of a range; "must be a whole number between 1 and 60" names both). The ajv instances run with
// `verbose: true`, which gives each error the schema it failed (`parentSchema`) and the value.

// Bodies are validated strictly (no type coercion: "5" is not 5; unknown fields refused);
// query strings and path params are strings on the wire, so those coerce. `verbose` gives each
// error the schema it failed, so that a message can name both ends of a range.
export function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes: coerce, useDefaults: true, removeAdditional: false, strict: false, verbose: true });
  // keywords: formatMinimum / formatMaximum, which bound the instants a request names.
  (addFormats as unknown as (a: Ajv, opts: FormatOptions) => void)(ajv, { keywords: true });
  const dateTime = (addFormats as unknown as { get: (f: string) => { validate: (s: string) => boolean } }).get("date-time");
  // An RFC 3339 time Sluice can hold: a leap second (:60) or an hour-only offset ("+01") passes
  // ajv-formats' check, but a JavaScript Date reads neither (and a deliver_at of :60 became "now").
  const readable = (s: string) => dateTime.validate(s) && Number.isFinite(Date.parse(s));
  ajv.addFormat("date-time", { type: "string", validate: readable, compare: compareInstants });
  return ajv;
}

/**
 * Orders two RFC 3339 instants (undefined when either cannot be read). ajv-formats' own compare
 * treats the instant 0 as unreadable, which switched a formatMinimum of 1970-01-01T00:00:00Z off
 * altogether, and cannot read a "+01" offset or a leap second, which it let through.
 */
export function compareInstants(a: string, b: string): number | undefined {
  const ms = (s: string) => Date.parse(s.replace(/:60(?=(\.\d+)?([zZ]|[+-]\d\d(:?\d\d)?)$)/, ":59").replace(/([+-]\d\d)$/, "$1:00"));
  const x = ms(a);
  const y = ms(b);
  return Number.isNaN(x) || Number.isNaN(y) ? undefined : x - y;
}

/** The part of an ajv error this file reads. */
export interface AjvLikeError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
  parentSchema?: Record<string, unknown>;
  data?: unknown;
}

/**
 * A nullable object that fails inside reports "must be null" and "must match a schema in anyOf"
 * beside the real problem; keep only the real one when there is one.
 */
export function usefulErrors(errors: AjvLikeError[]): AjvLikeError[] {
  const noise = (e: AjvLikeError) => e.keyword === "anyOf" || (e.keyword === "type" && e.params.type === "null");
  const useful = errors.filter((e) => !noise(e));
  return useful.length ? useful : errors.filter((e) => e.keyword !== "anyOf");
}

export function dedupe(list: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return list.filter((f) => {
    const k = `${f.field}\u0000${f.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

// Regular expressions mean little to a reader: say what the field takes instead.
const PATTERN_HINTS: Record<string, string> = {
  [TIME_OF_DAY]: "must be a 24-hour time HH:MM or HH:MM:SS, e.g. 22:00 or 06:30:15",
  [EVENT_TYPE]: "must be 1–200 characters of letters, digits and . _ : / - (no spaces or *), e.g. order.created",
  [EVENT_TYPE_PATTERN]: "must be an event type, optionally ending in * to match a prefix (e.g. order.*)",
  [URL_PATTERN]: "must be an http:// or https:// URL",
  [SECRET_PATTERN]: "must be a Standard Webhooks secret: whsec_ followed by base64 (omit it to have one generated)",
  [CSS_COLOUR]: "must be a CSS colour #rgb or #rrggbb, e.g. #4f46e5",
  [FONT_FAMILY]: "must be a CSS font-family list of letters, digits, spaces, commas, hyphens and quotes, e.g. Inter, sans-serif",
};

const FORMATS: Record<string, { what: string; example: string }> = {
  // Seconds to 59 and a full offset: what a JavaScript Date reads (see makeAjv).
  "date-time": { what: "an RFC 3339 time (seconds 00–59, offset Z or ±hh:mm)", example: "2024-05-01T12:00:00Z" },
  email: { what: "an email address", example: "ops@example.com" },
};

const TYPE_NAMES: Record<string, string> = {
  integer: "a whole number",
  number: "a number",
  string: "a string",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  null: "null",
};

/** An end of a range: its value as the schema gives it, and whether the value itself is allowed. */
interface End {
  value: string;
  inclusive: boolean;
}

const num = (v: unknown): string | undefined => (typeof v === "number" ? formatNumber(v) : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function end(
  schema: Record<string, unknown>,
  inclusiveKey: string,
  exclusiveKey: string,
  read: (v: unknown) => string | undefined,
): End | null {
  const inclusive = read(schema[inclusiveKey]);
  if (inclusive !== undefined) return { value: inclusive, inclusive: true };
  const exclusive = read(schema[exclusiveKey]);
  return exclusive === undefined ? null : { value: exclusive, inclusive: false };
}

/**
 * "between 1 and 60", "at least 1", "more than 0 and at most 60", …; null when neither end is set.
 * Both ends are named whenever the schema has both.
 */
export function rangeText(lo: End | null, hi: End | null): string | null {
  if (lo && hi) {
    if (lo.inclusive && hi.inclusive) return `between ${lo.value} and ${hi.value}`;
    return `${lo.inclusive ? "at least" : "more than"} ${lo.value} and ${hi.inclusive ? "at most" : "less than"} ${hi.value}`;
  }
  if (lo) return `${lo.inclusive ? "at least" : "more than"} ${lo.value}`;
  if (hi) return `${hi.inclusive ? "at most" : "less than"} ${hi.value}`;
  return null;
}

/** What a number schema takes: "a whole number between 1 and 60", "a number at least 0.001". */
function numberTaken(schema: Record<string, unknown>, type: string): string {
  const range = rangeText(end(schema, "minimum", "exclusiveMinimum", num), end(schema, "maximum", "exclusiveMaximum", num));
  const what = type === "integer" ? "a whole number" : "a number";
  return range ? `${what} ${range}` : what;
}

/** "between 1 and 200 characters long", "at most 1000 items"; null when the schema sets no length. */
function sizeText(schema: Record<string, unknown>, min: string, max: string, unit: string): string | null {
  const range = rangeText(end(schema, min, min, num), end(schema, max, max, num));
  return range ? `${range} ${unit}` : null;
}

/** "a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z" for a bounded date-time. */
function instantText(schema: Record<string, unknown>): string | null {
  const range = rangeText(
    end(schema, "formatMinimum", "formatExclusiveMinimum", str),
    end(schema, "formatMaximum", "formatExclusiveMaximum", str),
  );
  if (!range) return null;
  return `${schema.format === "date" ? "a date" : "a time"} ${range}`;
}

/** "must be an RFC 3339 time with a zone between …, e.g. …" for a string of a known format. */
function formatMessage(schema: Record<string, unknown>): string | undefined {
  const f = FORMATS[String(schema.format)];
  if (!f) return undefined;
  const range = rangeText(
    end(schema, "formatMinimum", "formatExclusiveMinimum", str),
    end(schema, "formatMaximum", "formatExclusiveMaximum", str),
  );
  return `must be ${f.what}${range ? ` ${range}` : ""}, e.g. ${f.example}`;
}

/** The schema's type when it names one ("integer"), else undefined. */
function typeOf(schema: Record<string, unknown>): string | undefined {
  return typeof schema.type === "string" ? schema.type : undefined;
}

/**
 * The message for a value outside what its schema takes, naming the whole range; undefined when
 * the error is not about a range (the caller then says something else).
 */
export function rangeMessage(v: AjvLikeError): string | undefined {
  const schema = v.parentSchema;
  if (!schema) return undefined;
  const type = typeOf(schema);
  switch (v.keyword) {
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return `must be ${numberTaken(schema, type ?? "number")}`;
    case "minItems":
    case "maxItems": {
      const size = sizeText(schema, "minItems", "maxItems", "items");
      return size ? `must have ${size}` : undefined;
    }
    case "minLength":
    case "maxLength": {
      const size = sizeText(schema, "minLength", "maxLength", "characters long");
      return size ? `must be ${size}` : undefined;
    }
    case "formatMinimum":
    case "formatMaximum":
    case "formatExclusiveMinimum":
    case "formatExclusiveMaximum": {
      const instant = instantText(schema);
      return instant ? `must be ${instant}` : undefined;
    }
    case "format":
      return formatMessage(schema);
    case "type":
      return typeMessage(v, schema);
    default:
      return undefined;
  }
}

/** A wrong type, saying what the field takes, with its range when it has one. */
function typeMessage(v: AjvLikeError, schema: Record<string, unknown>): string | undefined {
  const expected = String(v.params.type);
  // Fastify validates an absent body as null.
  if (v.instancePath === "" && (v.data === undefined || v.data === null)) {
    return "is required: send a JSON object with 'Content-Type: application/json'";
  }
  if (expected === "integer" || expected === "number") return `must be ${numberTaken(schema, expected)}`;
  if (expected === "string") {
    const size = sizeText(schema, "minLength", "maxLength", "characters long");
    return formatMessage(schema) ?? (size ? `must be a string ${size}` : "must be a string");
  }
  if (expected === "array") {
    const size = sizeText(schema, "minItems", "maxItems", "items");
    return size ? `must be an array of ${size}` : "must be an array";
  }
  const names = expected.split(",").map((t) => TYPE_NAMES[t] ?? t);
  return `must be ${names.join(" or ")}`;
}

/** The dotted path of the failing value ("rate_limit.max_per_second", "events[1].type"). */
export function fieldPath(instancePath: string): string {
  return instancePath
    .replace(/^\//, "")
    .split("/")
    .filter(Boolean)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((s) => (/^\d+$/.test(s) ? `[${s}]` : s))
    .join(".")
    .replace(/\.\[/g, "[");
}

/** One ajv error as the contract's {field, message}; `part` is where it failed (body, querystring, …). */
export function fieldError(v: AjvLikeError, part?: string): FieldError {
  const path = fieldPath(v.instancePath);
  const prefix = part && part !== "body" ? `${part === "querystring" ? "query" : part}.` : "";
  const field = prefix + (path || "body");
  if (v.keyword === "required") {
    const f = String(v.params.missingProperty);
    return { field: prefix + (path ? `${path}.${f}` : f), message: "is required" };
  }
  if (v.keyword === "additionalProperties") {
    const f = String(v.params.additionalProperty);
    return { field: prefix + (path ? `${path}.${f}` : f), message: "is not a known field; check its spelling against the API reference" };
  }
  if (v.keyword === "enum") {
    const allowed = (v.params.allowedValues as unknown[]).map(String).join(", ");
    return { field, message: `must be one of: ${allowed}` };
  }
  if (v.keyword === "minProperties") return { field, message: "must set at least one field" };
  if (v.keyword === "pattern") {
    const hint = PATTERN_HINTS[String(v.params.pattern)];
    if (hint) return { field, message: hint };
  }
  const range = rangeMessage(v);
  if (range) return { field, message: range };
  return { field, message: v.message ?? "is invalid" };
}

/**
 * Most field errors one answer lists. A body with 100,000 wrong items made 100,000 of them: a
 * 17 MB answer that took seconds to build. The first ones say what is wrong with all of them.
 */
export const MAX_FIELD_ERRORS = 50;
