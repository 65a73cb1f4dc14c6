// Requests for the API fuzz: the operations of an OpenAPI document, a request drafted for one,
// and the mutations that turn a valid draft into a hostile one (fuzz.ts drafts, sends and checks).
// A body mutation aims at one spot of the body, chosen with the schema that describes it; a
// request mutation changes the content type, the query, the path, the credentials, the method.
import { gzipSync } from "node:zlib";
import {
  Raw,
  bounds,
  isObject,
  jsonTypeOf,
  nextDown,
  nextUp,
  schemaFor,
  toJsonText,
  typesOf,
  type Generator,
  type Json,
  type JsonObject,
  type Resolve,
  type Rng,
  type Schema,
} from "./fuzz-gen.js";
import {
  CONTENT_TYPES,
  DATE_TEXTS,
  NASTY_STRINGS,
  NUMBER_TEXTS,
  QUERY_NASTIES,
  WRONG_TYPES,
  deepText,
  garbageId,
  hugeContainer,
  hugeString,
  randomJson,
} from "./fuzz-values.js";

// ---------------------------------------------------------------------------------------------
// The operations of an OpenAPI document.

export interface Param {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required: boolean;
  schema: Schema;
}

export interface Operation {
  method: string;
  /** As in the document: /v1/destinations/{id}. */
  path: string;
  id: string;
  summary: string;
  params: Param[];
  body?: { schema: Schema; required: boolean; mediaTypes: string[] };
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

export function operationsOf(doc: unknown): Operation[] {
  const paths = (doc as { paths?: Record<string, Record<string, unknown>> }).paths ?? {};
  const ops: Operation[] = [];
  for (const [p, item] of Object.entries(paths)) {
    const shared = (item.parameters as Param[] | undefined) ?? [];
    for (const method of METHODS) {
      const raw = item[method] as
        | {
            operationId?: string;
            summary?: string;
            parameters?: Param[];
            requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
          }
        | undefined;
      if (!raw) continue;
      const params = [...shared, ...(raw.parameters ?? [])].map((x) => ({
        ...x,
        required: x.required ?? x.in === "path",
        schema: x.schema ?? {},
      }));
      const content = raw.requestBody?.content ?? {};
      const mediaTypes = Object.keys(content);
      const jsonType = mediaTypes.find((m) => m.includes("json")) ?? mediaTypes[0];
      ops.push({
        method: method.toUpperCase(),
        path: p,
        id: raw.operationId ?? `${method} ${p}`,
        summary: raw.summary ?? "",
        params,
        ...(jsonType !== undefined
          ? { body: { schema: content[jsonType]?.schema ?? {}, required: raw.requestBody?.required ?? false, mediaTypes } }
          : {}),
      });
    }
  }
  return ops;
}

export const opName = (op: { method: string; path: string }) => `${op.method} ${op.path}`;

// ---------------------------------------------------------------------------------------------
// A request, drafted.

export interface Draft {
  /** The request's number in the run: its seed is seedFor(run seed, n). */
  n: number;
  op: Operation;
  /** The operation's, unless a mutation changed it. */
  method: string;
  /** Each path parameter as it goes into the URL (already encoded, or deliberately not). */
  pathParams: Record<string, string>;
  /** Encoded name and value; a null value is sent as the bare name. */
  query: [string, string | null][];
  headers: Record<string, string>;
  /** The JSON body; undefined: none. */
  body: Holder | undefined;
  /** Exact bytes (malformed JSON, another charset): sent instead of `body`. */
  bytes?: Buffer;
  /** null: no content-type header. */
  contentType: string | null;
  /** Whose Authorization (and Sluice-Tenant) it carries: a-key, a-admin, admin, a-portal, none, garbage, tenant-header. */
  credential: string;
  /** What was done to it, for the report. */
  labels: string[];
}

// ---------------------------------------------------------------------------------------------
// Where in a body a mutation lands.

export interface Holder {
  value: Json;
}

interface Loc {
  path: string;
  /** The property name (or the array's name for its items): what hints and id mixing go by. */
  name: string;
  value: Json;
  schema: Schema | undefined;
  set(v: Json): void;
}

function locations(holder: Holder, schema: Schema | undefined, resolve: Resolve): Loc[] {
  const out: Loc[] = [];
  const walk = (value: Json, s: Schema | undefined, path: string, name: string, set: (v: Json) => void) => {
    if (value instanceof Raw) return;
    const here = schemaFor(s, value, resolve);
    out.push({ path, name, value, schema: here, set });
    if (Array.isArray(value)) {
      value.forEach((item, k) => walk(item, here?.items, `${path}[${k}]`, name, (v) => (value[k] = v)));
    } else if (isObject(value)) {
      for (const key of Object.keys(value)) {
        const sub = here?.properties?.[key] ?? (typeof here?.additionalProperties === "object" ? here.additionalProperties : undefined);
        walk(value[key]!, sub, path ? `${path}.${key}` : key, key, (v) => (value[key] = v));
      }
    }
  };
  walk(holder.value, schema, "", "", (v) => (holder.value = v));
  return out;
}

function mapStrings(v: Json, f: (s: string) => string, keysToo: boolean): Json {
  if (typeof v === "string") return f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f, keysToo));
  if (isObject(v)) {
    const o: JsonObject = Object.create(null) as JsonObject;
    for (const k of Object.keys(v)) o[keysToo ? f(k) : k] = mapStrings(v[k]!, f, keysToo);
    return o;
  }
  return v;
}

/** What mutations use beyond the draft: the generator, and ids and credentials of both tenants. */
export interface MutationContext {
  gen: Generator;
  rng: Rng;
  /** An id for a field or parameter of this name (destination_ids → dst_…): A's, or with probability pB B's. */
  idFor: (name: string, pB: number) => string;
  /** Sets Authorization (and Sluice-Tenant) for `d.credential`. */
  applyCredential: (d: Draft) => void;
  /** A valid value of a query parameter, URL-encoded. */
  queryValue: (p: Param) => string;
}

type BodyMutation = (holder: Holder, schema: Schema | undefined, ctx: MutationContext) => string | undefined;
type Mutation = (d: Draft, ctx: MutationContext) => string | undefined;

/** Breaks exactly one rule of a schema: one past a bound, a duplicate, an enum near-miss, a pattern-breaking character. */
function offByOne(s: Schema, current: Json, rng: Rng, gen: Generator): Json | undefined {
  const options: (() => Json)[] = [];
  const b = bounds(s);
  const types = typesOf(s);
  if (types.includes("integer") || types.includes("number")) {
    if (b.hi !== undefined)
      options.push(
        () => b.hi! + 1,
        () => nextUp(b.hi!),
        () => b.hi!,
      );
    if (b.lo !== undefined)
      options.push(
        () => b.lo! - 1,
        () => nextDown(b.lo!),
        () => b.lo!,
      );
    if (b.exLo !== undefined) options.push(() => b.exLo!);
    if (b.exHi !== undefined) options.push(() => b.exHi!);
    if (types.includes("integer")) options.push(() => (typeof current === "number" ? current + 0.5 : 0.5));
  }
  if (types.includes("string")) {
    if (s.maxLength !== undefined)
      options.push(
        () => "a".repeat(s.maxLength! + 1),
        () => "😀".repeat(s.maxLength!),
      );
    if ((s.minLength ?? 0) > 0) options.push(() => "a".repeat(s.minLength! - 1));
    if (s.pattern !== undefined && typeof current === "string") {
      options.push(
        () => `${current} `,
        () => ` ${current}`,
        () => `${current}*`,
        () => `${current}\n`,
        () => current.toUpperCase(),
      );
    }
    if (s.format === "date-time") options.push(() => rng.pick(DATE_TEXTS));
  }
  if (s.enum?.length) {
    const e = String(rng.pick(s.enum));
    options.push(
      () => e.toUpperCase(),
      () => `${e} `,
      () => `${e}\u0000`,
      () => e.slice(0, -1),
    );
  }
  if (types.includes("array") && Array.isArray(current)) {
    if (s.maxItems !== undefined) {
      options.push(() => {
        const items: Json[] = [];
        for (let k = 0; k <= s.maxItems!; k++) items.push(s.items ? gen.valid(s.items, rng) : k);
        return items;
      });
    }
    if ((s.minItems ?? 0) > 0) options.push(() => current.slice(0, s.minItems! - 1));
    if (s.uniqueItems && current.length) options.push(() => [...current, current[0]!]);
  }
  if (types.includes("object") && isObject(current)) {
    if (s.additionalProperties === false) options.push(() => ({ ...current, zz_not_a_field: 1 }));
    if (s.maxProperties !== undefined) {
      options.push(() => {
        const o: JsonObject = { ...current };
        for (let k = 0; Object.keys(o).length <= s.maxProperties!; k++) o[`x-fz-extra-${k}`] = "v";
        return o;
      });
    }
    if (s.required?.length || s.minProperties) options.push(() => ({}));
  }
  return options.length ? rng.pick(options)() : undefined;
}

const pickLoc = (locs: Loc[], rng: Rng, prefer?: (l: Loc) => boolean): Loc | undefined => {
  const preferred = prefer ? locs.filter(prefer) : [];
  if (preferred.length && rng.chance(0.8)) return rng.pick(preferred);
  return locs.length ? rng.pick(locs) : undefined;
};
const isNumeric = (l: Loc) =>
  typeof l.value === "number" || (l.schema !== undefined && typeof (l.schema.minimum ?? l.schema.maximum) === "number");
const isString = (l: Loc) => typeof l.value === "string";
const isObj = (l: Loc) => isObject(l.value);
/** Inside a value the schema leaves open (an event's payload): what passes validation and reaches the code behind it. */
const isOpen = (l: Loc) => l.path !== "" && (l.schema === undefined || typesOf(l.schema).length === 0);

const withKey = (o: JsonObject, key: string, value: Json): JsonObject => {
  const copy = Object.assign(Object.create(null) as JsonObject, o);
  copy[key] = value; // an own key even for "__proto__", on a null-prototype object
  return copy;
};

/** Each mutates the body in place (or replaces it through the holder) and returns a label for the report. */
const BODY_MUTATIONS: Record<string, BodyMutation> = {
  "wrong-type"(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng);
    if (!loc) return undefined;
    const v = rng.pick(WRONG_TYPES.filter((w) => jsonTypeOf(w) !== jsonTypeOf(loc.value)));
    loc.set(structuredClone(v));
    return `${loc.path || "<root>"} = ${toJsonText(v)}`;
  },
  number(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, isNumeric);
    if (!loc) return undefined;
    const text = rng.pick(NUMBER_TEXTS);
    loc.set(new Raw(text, text));
    return `${loc.path || "<root>"} = ${text.length > 40 ? `${text.slice(0, 20)}…(${text.length} chars)` : text}`;
  },
  "off-by-one"(h, s, { gen, rng }) {
    const locs = locations(h, s, gen.resolve).filter((l) => l.schema);
    for (let tries = 0; tries < 4 && locs.length; tries++) {
      const loc = rng.pick(locs);
      const v = offByOne(loc.schema!, loc.value, rng, gen);
      if (v === undefined) continue;
      loc.set(v);
      const text = toJsonText(v);
      return `${loc.path || "<root>"} = ${text.length > 60 ? `${text.slice(0, 40)}…(${text.length} chars)` : text}`;
    }
    return undefined;
  },
  string(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, isString);
    if (!loc) return undefined;
    const nasty = rng.pick(NASTY_STRINGS);
    const v = typeof loc.value === "string" && rng.chance(0.5) ? loc.value + nasty : nasty;
    loc.set(v);
    return `${loc.path || "<root>"} = ${JSON.stringify(v)}`;
  },
  huge(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, (l) => isOpen(l) || isString(l));
    if (!loc) return undefined;
    const v = rng.chance(0.7) ? hugeString(rng) : hugeContainer(rng);
    loc.set(v);
    return `${loc.path || "<root>"} = ${v instanceof Raw ? v.label : "?"}`;
  },
  deep(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, isOpen);
    if (!loc) return undefined;
    const v = deepText(rng.pick([10, 100, 1000, 5000, 20_000]), rng.pick(["array", "object", "mixed"] as const));
    loc.set(v);
    return `${loc.path || "<root>"} = ${v.label}`;
  },
  date(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, (l) => l.schema?.format === "date-time");
    if (!loc) return undefined;
    const v = rng.pick(DATE_TEXTS);
    loc.set(v);
    return `${loc.path || "<root>"} = ${JSON.stringify(v)}`;
  },
  "nul-everywhere"(h, _s, { rng }) {
    const keysToo = rng.chance(0.3);
    h.value = mapStrings(
      h.value,
      (str) => {
        const at = rng.int(0, str.length);
        return `${str.slice(0, at)}\u0000${str.slice(at)}`;
      },
      keysToo,
    );
    return keysToo ? "NUL in every string and key" : "NUL in every string";
  },
  "unicode-everywhere"(h, _s, { rng }) {
    const u = rng.pick(["\ud800", "\udfff", "😀", "\u202e", "e\u0301\u0301", "\ufeff", "\u2028", "مرحبا", "\uffff"]);
    h.value = mapStrings(h.value, (str) => (rng.chance(0.5) ? str + u : u + str), false);
    return `${JSON.stringify(u)} in every string`;
  },
  proto(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, isObj);
    if (!loc || !isObject(loc.value)) return undefined;
    const key = rng.pick(["__proto__", "constructor", "prototype"]);
    const polluted = withKey({}, "polluted", true);
    const value = rng.pick<Json>([polluted, withKey({}, "__proto__", polluted), {}, null, "x", [], { prototype: polluted }]);
    loc.set(withKey(loc.value, key, value));
    return `${loc.path || "<root>"}.${key} = ${toJsonText(value)}`;
  },
  "extra-field"(h, s, { gen, rng, idFor }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, isObj);
    if (!loc || !isObject(loc.value)) return undefined;
    const key = rng.pick([
      "zz_unknown",
      "",
      " ",
      "💥",
      "\u0000",
      "toString",
      "hasOwnProperty",
      "$ref",
      "id",
      "tenant_id",
      "status",
      "created_at",
      "a".repeat(10_000),
    ]);
    // Another tenant's id only where the schema is closed: in a free-form payload it would be
    // stored as A's own data and echoed later, which is no leak.
    const value: Json = (key === "tenant_id" || key === "id") && loc.schema?.properties ? idFor(key, 0.5) : randomJson(rng);
    loc.set(withKey(loc.value, key, value));
    return `${loc.path || "<root>"}[${JSON.stringify(key.length > 20 ? `${key.slice(0, 10)}…` : key)}] = ${toJsonText(value).slice(0, 60)}`;
  },
  "drop-required"(h, s, { gen, rng }) {
    const locs = locations(h, s, gen.resolve).filter((l) => isObject(l.value) && Object.keys(l.value).length);
    const withRequired = locs.filter((l) => l.schema?.required?.some((k) => isObject(l.value) && k in l.value));
    const loc = withRequired.length ? rng.pick(withRequired) : locs.length ? rng.pick(locs) : undefined;
    if (!loc || !isObject(loc.value)) return undefined;
    const keys = loc.schema?.required?.filter((k) => isObject(loc.value) && k in loc.value) ?? Object.keys(loc.value);
    const key = rng.pick(keys.length ? keys : Object.keys(loc.value));
    delete loc.value[key];
    return `without ${loc.path ? `${loc.path}.` : ""}${key}`;
  },
  "duplicate-key"(h, s, { gen, rng }) {
    const loc = pickLoc(locations(h, s, gen.resolve), rng, (l) => isObject(l.value) && Object.keys(l.value).length > 0);
    if (!loc || !isObject(loc.value) || !Object.keys(loc.value).length) return undefined;
    const key = rng.pick(Object.keys(loc.value));
    const again = rng.pick(WRONG_TYPES);
    const text = toJsonText(loc.value);
    loc.set(new Raw(`${text.slice(0, -1)},${JSON.stringify(key)}:${toJsonText(again)}}`, "duplicate key"));
    return `${loc.path || "<root>"}: ${key} twice, then ${toJsonText(again)}`;
  },
  root(h, _s, { rng }) {
    const text = toJsonText(h.value);
    const v = rng.pick([
      new Raw("[]", "[]"),
      new Raw('"x"', '"x"'),
      new Raw("0", "0"),
      new Raw("null", "null"),
      new Raw("true", "true"),
      new Raw(`[${text}]`, "[body]"),
    ]);
    h.value = v;
    return `body = ${v.label}`;
  },
  ids(h, s, { gen, rng, idFor }) {
    const locs = locations(h, s, gen.resolve).filter((l) => l.schema && /(^|_)ids?$/.test(l.name) && typeof l.value === "string");
    if (!locs.length) return undefined;
    const loc = rng.pick(locs);
    const id = idFor(loc.name, 0.5);
    loc.set(id);
    return `${loc.path} = ${id}`;
  },
};

const REQUEST_MUTATIONS: Record<string, Mutation> = {
  "content-type"(d, { rng }) {
    if (!d.body && !rng.chance(0.3)) return undefined;
    d.contentType = rng.pick(CONTENT_TYPES);
    return d.contentType === null ? "no content-type" : `content-type: ${d.contentType}`;
  },
  "no-body"(d, { rng }) {
    if (!d.body) return undefined;
    d.body = undefined;
    if (rng.chance(0.5)) d.contentType = null;
    return d.contentType === null ? "no body, no content-type" : "no body";
  },
  "body-on-bodyless"(d, { gen, rng }) {
    if (d.op.body) return undefined;
    d.body = { value: rng.chance(0.5) ? { reason: "x", zz: [1, 2] } : gen.valid({}, rng) };
    d.contentType = "application/json";
    return "a JSON body where none is taken";
  },
  malformed(d, { rng }) {
    if (!d.body) return undefined;
    const text = toJsonText(d.body.value);
    const cut = rng.int(0, Math.max(0, text.length - 1));
    const choices: [string, () => Buffer][] = [
      ["truncated", () => Buffer.from(text.slice(0, cut))],
      ["trailing comma", () => Buffer.from(text.replace(/([}\]])$/, ",$1"))],
      ["BOM first", () => Buffer.from(`\ufeff${text}`)],
      ["single quotes", () => Buffer.from(text.replace(/"/g, "'"))],
      ["comment", () => Buffer.from(`/*c*/${text}`)],
      ["NaN literal", () => Buffer.from(text.replace(/^\{/, '{"zz":NaN,'))],
      ["garbage after", () => Buffer.from(`${text}}}`)],
      ["whitespace only", () => Buffer.from("  \n ")],
      ["empty", () => Buffer.alloc(0)],
      [
        "invalid UTF-8",
        () =>
          Buffer.concat([Buffer.from(text.slice(0, cut)), Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xe2, 0x82]), Buffer.from(text.slice(cut))]),
      ],
      ["raw NUL byte in a string", () => Buffer.from(text.replace(/"([^"]*)"/, '"$1\u0000"'))],
      ["raw newline in a string", () => Buffer.from(text.replace(/"([^"]*)"/, '"$1\n"'))],
      ["UTF-16LE", () => Buffer.from(text, "utf16le")],
    ];
    const [label, make] = rng.pick(choices);
    d.bytes = make();
    return `malformed body: ${label}`;
  },
  query(d, { rng, idFor, queryValue }) {
    const qs = d.op.params.filter((p) => p.in === "query");
    const choice = rng.int(0, 4);
    if (choice === 0 || !qs.length) {
      d.query.push([
        rng.pick(["zz", "limit[]", "__proto__", "constructor[prototype][x]", "a".repeat(3000), "%00", "cursor"]),
        rng.pick(QUERY_NASTIES),
      ]);
      return `query: unknown ${d.query[d.query.length - 1]![0].slice(0, 30)}`;
    }
    const p = rng.pick(qs);
    d.query = d.query.filter(([k]) => k !== p.name);
    if (choice === 1) {
      d.query.push([p.name, queryValue(p)], [p.name, rng.pick(QUERY_NASTIES)]);
      return `query: ${p.name} twice`;
    }
    if (choice === 2) {
      d.query.push([p.name, rng.pick(["x".repeat(100_000), "9".repeat(5_000), encodeURIComponent("😀".repeat(2_000))])]);
      return `query: ${p.name} very long`;
    }
    if (choice === 3) {
      d.query.push([p.name, null]);
      return `query: ${p.name} without =`;
    }
    const id = /(^|_)id$/.test(p.name) && rng.chance(0.4) ? idFor(p.name, 0.3) : undefined;
    const v =
      id !== undefined ? encodeURIComponent(id) + rng.pick(["%00", "%20", "%0A", "%ED%A0%80", "%FF", "0"]) : rng.pick(QUERY_NASTIES);
    d.query.push([p.name, v]);
    return `query: ${p.name}=${v.slice(0, 40)}`;
  },
  "nul-in-params"(d, { rng }) {
    return alterParams(d, rng, () => "%00", "NUL");
  },
  "unicode-in-params"(d, { rng }) {
    const u = rng.pick(["%F0%9F%98%80", "%E2%80%AE", "%EF%BB%BF", "%CC%81%CC%81", "%ED%A0%80", "%C0%80", "%FF", "%E2%80%A8"]);
    return alterParams(d, rng, () => u, u);
  },
  path(d, { rng }) {
    const ps = d.op.params.filter((p) => p.in === "path");
    if (!ps.length) return undefined;
    const p = rng.pick(ps);
    d.pathParams[p.name] = garbageId(rng, undefined);
    return `path ${p.name} = ${d.pathParams[p.name]!.slice(0, 30)}${d.pathParams[p.name]!.length > 30 ? `…(${d.pathParams[p.name]!.length})` : ""}`;
  },
  auth(d, { rng, applyCredential }) {
    d.credential = rng.pick(["none", "garbage", "garbage", "tenant-header", "admin", "a-portal"]);
    applyCredential(d);
    return `credential ${d.credential}`;
  },
  idempotency(d, { rng }) {
    d.headers["idempotency-key"] = rng.pick([
      "",
      " ",
      "a".repeat(255),
      "a".repeat(256),
      "k".repeat(10_000),
      "\u00ff\u00fe",
      "same-key",
      "%00",
    ]);
    return `idempotency-key (${d.headers["idempotency-key"].length} chars)`;
  },
  encoding(d, { rng }) {
    const enc = rng.pick(["gzip", "deflate", "br", "identity", "x-unknown", "gzip, gzip"]);
    d.headers["content-encoding"] = enc;
    if (enc === "gzip" && d.body && rng.chance(0.5)) {
      d.bytes = gzipSync(Buffer.from(toJsonText(d.body.value)));
      return "content-encoding: gzip (gzipped)";
    }
    return `content-encoding: ${enc}`;
  },
  method(d, { rng }) {
    d.method = rng.pick(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"].filter((m) => m !== d.method));
    return `method ${d.method}`;
  },
};

/** Puts `what()` at the start or end of every query value and (each half the time) path parameter. */
function alterParams(d: Draft, rng: Rng, what: () => string, label: string): string | undefined {
  const paths = Object.keys(d.pathParams).filter(() => rng.chance(0.5));
  if (!d.query.length && !paths.length) return undefined;
  const alter = (v: string) => (rng.chance(0.7) ? v + what() : what() + v);
  d.query = d.query.map(([k, v]) => [k, alter(v ?? "")]);
  for (const name of paths) d.pathParams[name] = alter(d.pathParams[name]!);
  return `${label} in ${[...d.query.map(([k]) => `query ${k}`), ...paths.map((n) => `path ${n}`)].join(", ")}`;
}

/** How often each mutation is drawn. */
export const MUTATION_WEIGHTS: readonly (readonly [string, number])[] = [
  ["wrong-type", 6],
  ["number", 8],
  ["off-by-one", 8],
  ["string", 7],
  ["huge", 3],
  ["deep", 4],
  ["date", 4],
  ["nul-everywhere", 4],
  ["unicode-everywhere", 4],
  ["proto", 3],
  ["extra-field", 3],
  ["drop-required", 3],
  ["duplicate-key", 2],
  ["root", 2],
  ["ids", 4],
  ["content-type", 5],
  ["no-body", 2],
  ["body-on-bodyless", 2],
  ["malformed", 4],
  ["query", 6],
  ["nul-in-params", 3],
  ["unicode-in-params", 2],
  ["path", 5],
  ["auth", 2],
  ["idempotency", 2],
  ["encoding", 1],
  ["method", 1],
];

/**
 * Applies `count` mutations drawn by `weights` (one that does not fit the draft, like a body
 * mutation on a GET, is drawn again) and records their labels on the draft.
 */
export function mutate(d: Draft, ctx: MutationContext, count: number, weights: readonly (readonly [string, number])[]): void {
  for (let done = 0, tries = 0; done < count && tries < count * 4; tries++) {
    const name = ctx.rng.weighted(weights);
    const body = BODY_MUTATIONS[name];
    // Once the body is exact bytes (malformed, gzipped), the JSON tree is no longer what is sent.
    const label = body ? (d.body && !d.bytes ? body(d.body, d.op.body?.schema, ctx) : undefined) : REQUEST_MUTATIONS[name]?.(d, ctx);
    if (label === undefined) continue;
    d.labels.push(`${name}: ${label}`);
    done++;
  }
}
