// The API fuzz's source of valid values (fuzz.ts runs it): a seeded PRNG, strings that match a
// schema's pattern, and values a JSON Schema (the OpenAPI document's) accepts, biased to the
// edges of what it allows.
//
// Bodies are JSON trees that may hold `Raw` nodes: text sent verbatim, for what JSON.stringify
// cannot write (nesting 20000 deep, "-0", 1e400, duplicate keys) or would rewrite.

import { nextDown, nextUp } from "./admitted.js";

export class Raw {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
}

export type Json = null | boolean | number | string | Json[] | JsonObject | Raw;
export interface JsonObject {
  [key: string]: Json;
}

/** JSON text of a tree; own keys only, so a null-prototype object's "__proto__" key is written. */
export function toJsonText(v: Json): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${toJsonText(v[k]!)}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

export const isObject = (v: Json | undefined): v is JsonObject =>
  v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Raw);

/** mulberry32: small, fast, and the same sequence for the same seed on every platform. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** In [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick: nothing to pick from");
    return items[Math.floor(this.next() * items.length)]!;
  }
  weighted<T>(items: readonly (readonly [T, number])[]): T {
    const total = items.reduce((sum, [, w]) => sum + w, 0);
    let r = this.next() * total;
    for (const [item, w] of items) {
      r -= w;
      if (r < 0) return item;
    }
    return items[items.length - 1]![0];
  }
}

/** The seed of request n of a run: each request is generated alone, so one can be replayed alone. */
export function seedFor(seed: number, n: number): number {
  let h = (seed ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// Strings matching a pattern: the regular expressions JSON Schemas use (classes, groups,
// alternation, quantifiers). A result is checked against the real RegExp; undefined if none fits.

type RNode =
  | { kind: "seq"; items: RNode[] }
  | { kind: "alt"; options: RNode[] }
  | { kind: "chars"; chars: string[] }
  | { kind: "rep"; node: RNode; min: number; max: number };

const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
const range = (a: string, b: string) =>
  Array.from({ length: b.charCodeAt(0) - a.charCodeAt(0) + 1 }, (_, i) => String.fromCharCode(a.charCodeAt(0) + i));
const DIGITS = range("0", "9");
const WORD = [...range("a", "z"), ...range("A", "Z"), ...DIGITS, "_"];

function escapeChars(c: string): string[] {
  switch (c) {
    case "d":
      return DIGITS;
    case "w":
      return WORD;
    case "s":
      return [" "];
    case "D":
      return PRINTABLE.filter((ch) => !DIGITS.includes(ch));
    case "W":
      return PRINTABLE.filter((ch) => !WORD.includes(ch));
    case "S":
      return PRINTABLE.filter((ch) => ch !== " ");
    case "n":
      return ["\n"];
    case "t":
      return ["\t"];
    default:
      return [c];
  }
}

function parsePattern(src: string): RNode {
  let i = 0;
  const alt = (): RNode => {
    const options = [seq()];
    while (src[i] === "|") {
      i++;
      options.push(seq());
    }
    return options.length === 1 ? options[0]! : { kind: "alt", options };
  };
  const seq = (): RNode => {
    const items: RNode[] = [];
    while (i < src.length && src[i] !== "|" && src[i] !== ")") {
      const atom = parseAtom();
      if (atom) items.push(quantified(atom));
    }
    return { kind: "seq", items };
  };
  const parseAtom = (): RNode | null => {
    const c = src[i++]!;
    if (c === "^" || c === "$") return null;
    if (c === "(") {
      if (src.startsWith("?:", i)) i += 2;
      const inner = alt();
      i++; // ")"
      return inner;
    }
    if (c === "[") return charClass();
    if (c === ".") return { kind: "chars", chars: PRINTABLE };
    if (c === "\\") return { kind: "chars", chars: escapeChars(src[i++] ?? "\\") };
    return { kind: "chars", chars: [c] };
  };
  const quantified = (node: RNode): RNode => {
    let min: number;
    let max: number;
    const c = src[i];
    if (c === "?") [min, max] = [0, 1];
    else if (c === "*") [min, max] = [0, Infinity];
    else if (c === "+") [min, max] = [1, Infinity];
    else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i));
      if (!m) return node;
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
      i += m[0].length - 1;
    } else return node;
    i++;
    if (src[i] === "?") i++; // lazy: same strings
    return { kind: "rep", node, min, max };
  };
  const charClass = (): RNode => {
    const negate = src[i] === "^";
    if (negate) i++;
    const chars = new Set<string>();
    while (i < src.length && src[i] !== "]") {
      const c = src[i++]!;
      const set = c === "\\" ? escapeChars(src[i++] ?? "\\") : [c];
      if (set.length === 1 && src[i] === "-" && src[i + 1] !== undefined && src[i + 1] !== "]") {
        i++;
        let to = src[i++]!;
        if (to === "\\") to = escapeChars(src[i++] ?? "\\")[0]!;
        for (const ch of range(set[0]!, to)) chars.add(ch);
      } else for (const ch of set) chars.add(ch);
    }
    i++; // "]"
    return { kind: "chars", chars: negate ? PRINTABLE.filter((ch) => !chars.has(ch)) : [...chars] };
  };
  return alt();
}

function emit(node: RNode, rng: Rng, out: string[]): void {
  switch (node.kind) {
    case "chars":
      if (node.chars.length) out.push(rng.pick(node.chars));
      return;
    case "seq":
      for (const item of node.items) emit(item, rng, out);
      return;
    case "alt":
      emit(rng.pick(node.options), rng, out);
      return;
    case "rep": {
      // Mostly short; now and then exactly the longest the pattern allows (a valid edge).
      let n = rng.int(node.min, Math.min(node.max, node.min + 8));
      if (Number.isFinite(node.max) && node.max <= 300 && rng.chance(0.08)) n = node.max;
      for (let k = 0; k < n; k++) emit(node.node, rng, out);
    }
  }
}

const patternCache = new Map<string, { tree: RNode; re: RegExp } | null>();

function patternEntry(pattern: string): { tree: RNode; re: RegExp } | null {
  let entry = patternCache.get(pattern);
  if (entry === undefined) {
    try {
      let re: RegExp;
      try {
        re = new RegExp(pattern, "u"); // as ajv compiles them
      } catch {
        re = new RegExp(pattern);
      }
      entry = { tree: parsePattern(pattern), re };
    } catch {
      entry = null;
    }
    patternCache.set(pattern, entry);
  }
  return entry;
}

export function fromPattern(pattern: string, rng: Rng): string | undefined {
  const entry = patternEntry(pattern);
  if (!entry) return undefined;
  for (let attempt = 0; attempt < 6; attempt++) {
    const out: string[] = [];
    emit(entry.tree, rng, out);
    const s = out.join("");
    if (entry.re.test(s)) return s;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// JSON Schema (the subset OpenAPI 3.1 documents use).

export interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  nullable?: boolean;
}

export type Resolve = (s: Schema) => Schema;

/** Follows local $refs (#/components/schemas/X) and merges allOf. */
export function makeResolver(doc: unknown): Resolve {
  const lookup = (ref: string): Schema => {
    if (!ref.startsWith("#/")) throw new Error(`fuzz: only local $refs are resolved, not ${ref}`);
    let cur: unknown = doc;
    for (const part of ref.slice(2).split("/")) {
      const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
      cur = cur !== null && typeof cur === "object" ? (cur as Record<string, unknown>)[key] : undefined;
    }
    if (cur === undefined || cur === null || typeof cur !== "object") throw new Error(`fuzz: $ref ${ref} resolves to nothing`);
    return cur;
  };
  const resolve = (s: Schema): Schema => {
    let cur = s;
    for (let hops = 0; cur.$ref !== undefined; hops++) {
      if (hops > 32) throw new Error(`fuzz: $ref cycle at ${cur.$ref}`);
      const { $ref, ...rest } = cur;
      cur = { ...lookup($ref), ...rest };
    }
    if (cur.allOf) {
      const { allOf, ...rest } = cur;
      let merged: Schema = rest;
      for (const part of allOf.map(resolve)) {
        merged = {
          ...merged,
          ...part,
          properties: { ...merged.properties, ...part.properties },
          required: [...(merged.required ?? []), ...(part.required ?? [])],
        };
      }
      cur = merged;
    }
    return cur;
  };
  return resolve;
}

type JsonType = "object" | "array" | "string" | "integer" | "number" | "boolean" | "null";

/** The JSON types a schema allows; [] when it allows anything. */
export function typesOf(s: Schema): JsonType[] {
  let types: string[];
  if (s.type !== undefined) types = Array.isArray(s.type) ? s.type : [s.type];
  else if (s.enum) types = [...new Set(s.enum.map((v) => jsonTypeOf(v as Json)))];
  else if (s.properties || s.additionalProperties !== undefined) types = ["object"];
  else if (s.items) types = ["array"];
  else if (s.pattern !== undefined || s.format !== undefined || s.minLength !== undefined || s.maxLength !== undefined) types = ["string"];
  else if (s.minimum !== undefined || s.maximum !== undefined) types = ["number"];
  else types = [];
  if (s.nullable && types.length) types.push("null");
  return types as JsonType[];
}

export function jsonTypeOf(v: Json): JsonType {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "object") return "object";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v as "string" | "boolean";
}

/** The branch of a schema (through anyOf/oneOf) that describes `v`, if any. */
export function schemaFor(s: Schema | undefined, v: Json, resolve: Resolve): Schema | undefined {
  if (!s) return undefined;
  const r = resolve(s);
  const branches = r.anyOf ?? r.oneOf;
  if (!branches) return r;
  const t = jsonTypeOf(v);
  for (const b of branches) {
    const rb = resolve(b);
    const types = typesOf(rb);
    if (types.length === 0 || types.includes(t) || (t === "integer" && types.includes("number"))) return schemaFor(rb, v, resolve);
  }
  return undefined;
}

export { nextUp, nextDown };

export function bounds(s: Schema): { lo?: number; hi?: number; exLo?: number; exHi?: number } {
  const exLo = typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : s.exclusiveMinimum === true ? s.minimum : undefined;
  const exHi = typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum : s.exclusiveMaximum === true ? s.maximum : undefined;
  return {
    ...(exLo === undefined && s.minimum !== undefined ? { lo: s.minimum } : {}),
    ...(exHi === undefined && s.maximum !== undefined ? { hi: s.maximum } : {}),
    ...(exLo !== undefined ? { exLo } : {}),
    ...(exHi !== undefined ? { exHi } : {}),
  };
}

/** A valid number, biased to the edges of its range (the smallest double above an exclusive 0 included). */
function validNumber(s: Schema, integer: boolean, rng: Rng): number {
  const b = bounds(s);
  let lo = b.lo ?? (b.exLo !== undefined ? (integer ? Math.floor(b.exLo) + 1 : nextUp(b.exLo)) : -1000);
  let hi = b.hi ?? (b.exHi !== undefined ? (integer ? Math.ceil(b.exHi) - 1 : nextDown(b.exHi)) : 1000);
  if (integer) [lo, hi] = [Math.ceil(lo), Math.floor(hi)];
  if (hi < lo) return lo;
  const span = Math.min(hi, lo + 100);
  const candidates = [lo, hi, rng.next() * (span - lo) + lo, rng.next() * (hi - lo) + lo, Math.min(hi, lo + 1)];
  if (!integer) candidates.push(Math.min(hi, Math.max(lo, 1e-320)), Math.min(hi, Math.max(lo, 0.5)));
  const v = rng.pick(candidates);
  return integer ? Math.min(hi, Math.max(lo, Math.round(v))) : v;
}

const ALNUM = [...range("a", "z"), ...DIGITS];

export function plainString(s: Schema, rng: Rng): string {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? min + 24;
  let n = rng.int(Math.max(min, Math.min(max, 1)), Math.min(max, min + 12));
  if (max <= 5000 && rng.chance(0.06)) n = max;
  let out = "";
  for (let k = 0; k < n; k++) out += rng.pick(ALNUM);
  return out;
}

export function isoNear(rng: Rng, nowMs = Date.now()): string {
  const spanMs = rng.chance(0.85) ? 3_600_000 : 365 * 86_400_000;
  return new Date(nowMs + Math.round((rng.next() * 2 - 1) * spanMs)).toISOString();
}

/** Semantic values by field name (URLs at a local receiver, real ids, IANA zones…): undefined = use the schema. */
export type Hint = (name: string, schema: Schema, rng: Rng) => Json | undefined;

/** A value for a schema that allows anything (an event's payload). */
export type AnyValue = (rng: Rng, depth: number) => Json;

export class Generator {
  constructor(
    readonly resolve: Resolve,
    private readonly hint: Hint,
    private readonly anyValue: AnyValue,
  ) {}

  /** A value the schema accepts (as far as a schema can say: ids may not exist, a zone may be odd). */
  valid(schema: Schema, rng: Rng, name = "", depth = 0): Json {
    const s = this.resolve(schema);
    if (s.const !== undefined) return s.const as Json;
    if (s.enum?.length) return rng.pick(s.enum) as Json;
    const branches = s.anyOf ?? s.oneOf;
    if (branches?.length) {
      const nonNull = branches.filter((b) => !typesOf(this.resolve(b)).every((t) => t === "null"));
      const branch = nonNull.length && rng.chance(0.8) ? rng.pick(nonNull) : rng.pick(branches);
      return this.valid(branch, rng, name, depth);
    }
    const hinted = this.hint(name, s, rng);
    if (hinted !== undefined) return hinted;
    const types = typesOf(s);
    const nonNull = types.filter((t) => t !== "null");
    const type = types.length === 0 ? "any" : nonNull.length && !rng.chance(0.1) ? rng.pick(nonNull) : rng.pick(types);
    switch (type) {
      case "object":
        return this.object(s, rng, name, depth);
      case "array":
        return this.array(s, rng, name, depth);
      case "string":
        return this.string(s, rng);
      case "integer":
        return validNumber(s, true, rng);
      case "number":
        return validNumber(s, false, rng);
      case "boolean":
        return rng.chance(0.5);
      case "null":
        return null;
      default:
        return this.anyValue(rng, depth);
    }
  }

  private object(s: Schema, rng: Rng, name: string, depth: number): JsonObject {
    const out: JsonObject = {};
    const required = new Set(s.required ?? []);
    const props = Object.entries(s.properties ?? {});
    for (const [key, sub] of props) {
      if (required.has(key) || rng.chance(0.5)) out[key] = this.valid(sub, rng, key, depth + 1);
    }
    const extra = typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;
    if (extra) {
      const n = rng.int(0, Math.min(3, s.maxProperties ?? 3));
      for (let k = 0; k < n; k++) out[`x-fz-${rng.int(0, 99)}`] = this.valid(extra, rng, `${name}.*`, depth + 1);
    }
    for (const [key, sub] of props) {
      if (Object.keys(out).length >= (s.minProperties ?? 0)) break;
      if (!(key in out)) out[key] = this.valid(sub, rng, key, depth + 1);
    }
    return out;
  }

  private array(s: Schema, rng: Rng, name: string, depth: number): Json[] {
    const min = s.minItems ?? 0;
    const n = rng.int(min, Math.min(s.maxItems ?? min + 3, min + 3));
    const out: Json[] = [];
    const seen = new Set<string>();
    for (let tries = 0; out.length < n && tries < n * 4 + 4; tries++) {
      const v = s.items ? this.valid(s.items, rng, name, depth + 1) : this.anyValue(rng, depth + 1);
      const text = toJsonText(v);
      if (s.uniqueItems && seen.has(text)) continue;
      seen.add(text);
      out.push(v);
    }
    return out;
  }

  private string(s: Schema, rng: Rng): string {
    switch (s.format) {
      case "date-time":
        return isoNear(rng);
      case "date":
        return isoNear(rng).slice(0, 10);
      case "email":
        return `fz${rng.int(0, 9999)}@example.test`;
      case "uuid":
        return "4b0b7f5e-8d4a-4c7e-9a53-0d3c2f6a1e21";
    }
    if (s.pattern !== undefined) {
      const m = fromPattern(s.pattern, rng);
      if (m !== undefined) return m;
    }
    return plainString(s, rng);
  }
}
