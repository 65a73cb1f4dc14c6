import { CloneType, Type, type TSchema } from "@sinclair/typebox";
import { ERROR_CATALOGUE, type ErrorCode } from "../errors.js";
import { BOUNDS, EARLIEST_INSTANT, LATEST_INSTANT, type BoundName } from "../policy/bounds.js";

// Shapes shared by every part of the API. The schemas in src/schemas/ are the one source of each
// shape: they validate requests (ajv), serialize responses (fast-json-stringify: a field not in
// the schema is never sent), generate the OpenAPI document at /openapi.json (and from it the SDK
// in sdk/), and give the TypeScript types (`Static<typeof X>`) the rest of the code uses.
// A schema with an `$id` is registered once and appears under components/schemas by that name.

/** A string of a fixed set (JSON Schema `enum`: one line in OpenAPI, a string union in TypeScript). */
export const Enum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: "string", enum: [...values], ...(description ? { description } : {}) });

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Timestamp = (description?: string) => Type.String({ format: "date-time", ...(description ? { description } : {}) });
/**
 * A number the API takes, with its range from policy/bounds.ts: the one table the schemas, the
 * stored-state check and docs/api.md share.
 */
export const Bounded = (name: BoundName, options: { description?: string; default?: number } = {}) => {
  const b = BOUNDS[name];
  const schema = { minimum: b.min, maximum: b.max, ...options };
  return b.integer ? Type.Integer(schema) : Type.Number(schema);
};

// What a request may send is narrower than what an answer may show: a row stored before a bound
// existed (or written by hand) is shown as it is, so its owner can see what to mend — the
// serializer picks a nullable's branch by validating it, and an out-of-range value would fail.
const REQUEST_ONLY = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "pattern",
  "uniqueItems",
  "formatMinimum",
  "formatMaximum",
  "maxProperties",
];

/** `t` for answers: the same shape, without the ranges, lengths and patterns only requests are held to. */
export function Loose<T extends TSchema>(t: T): T {
  const copy = CloneType(t);
  // `names`: a map of property names (`properties`), whose keys are names, not keywords.
  const strip = (node: unknown, names = false): void => {
    if (Array.isArray(node)) return node.forEach((n) => strip(n));
    if (typeof node !== "object" || node === null) return;
    const o = node as Record<string, unknown>;
    if (!names) for (const k of REQUEST_ONLY) delete o[k];
    for (const [k, v] of Object.entries(o)) strip(v, !names && k === "properties");
  };
  strip(copy);
  return copy;
}

/**
 * An instant a request names (occurred_at, deliver_at, a range's since/until): a date-time inside
 * what both a Postgres timestamptz and a JavaScript Date hold (ajv-formats' formatMinimum and
 * formatMaximum keywords).
 */
export const InstantIn = (description?: string) =>
  Type.String({
    format: "date-time",
    formatMinimum: EARLIEST_INSTANT,
    formatMaximum: LATEST_INSTANT,
    ...(description ? { description } : {}),
  });

export const TIME_OF_DAY = "^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$";
// Event types: no spaces, no `*` (reserved for patterns).
export const EVENT_TYPE = "^[A-Za-z0-9_.:/\\-]{1,200}$";
export const EVENT_TYPE_PATTERN = "^[A-Za-z0-9_.:/\\-]{0,200}\\*?$";
export const URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://";
export const SECRET_PATTERN = "^whsec_[A-Za-z0-9+/=]{16,200}$";

export const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

const Limit = Bounded("page_limit", { default: 100, description: "page size" });
const Cursor = Type.String({ maxLength: 200, description: "the next_cursor of the previous page" });

/** The query of a list endpoint: limit and cursor, and the filters given. */
export const ListQueryWith = <P extends Record<string, TSchema>>(filters: P) =>
  Type.Object({ limit: Type.Optional(Limit), cursor: Type.Optional(Cursor), ...filters }, { additionalProperties: false });

export const ListQuery = ListQueryWith({});

/** A page of a list: `next_cursor` is null on the last page. */
export const Page = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Nullable(Type.String({ description: "pass as `cursor` for the next page" })) });

/** The codes an answer can carry (the catalogue's codes with an HTTP status). */
const API_ERROR_CODES = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).filter((c) => ERROR_CATALOGUE[c].status !== null);

export const ErrorBody = Type.Object(
  {
    error: Type.Object({
      code: Enum(API_ERROR_CODES, "stable code: branch on it (docs/api.md says when each happens)"),
      message: Type.String({ description: "what is wrong and how to mend it" }),
      details: Type.Optional(Type.Unknown({ description: "for 422: one {field, message} per invalid field" })),
    }),
  },
  { $id: "Error", description: "Every error answer" },
);
