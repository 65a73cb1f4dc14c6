import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import SwaggerParser from "@apidevtools/swagger-parser";
import { startSluice, type TestSluice } from "../helpers/sluice.js";

// The served OpenAPI document is valid OpenAPI 3.1 (checked by a real validator) and complete
// enough to generate a typed client from: every operation is named, summarised and tagged, says
// what each success answer holds and that every error answer is the error body.

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string }[];
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  maxItems?: number;
  maxLength?: number;
  formatMinimum?: string;
  formatMaximum?: string;
  pattern?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
}

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
}

describe("OpenAPI document", () => {
  let s: TestSluice;
  let doc: OpenApiDocument;
  before(async () => {
    s = await startSluice("embedded", { worker: false });
    doc = (await s.api<OpenApiDocument>("GET", "/openapi.json", undefined, { key: null })).body;
  });
  after(async () => s?.stop());

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op })),
    );

  test("is valid OpenAPI 3.1 for @apidevtools/swagger-parser", async () => {
    assert.equal(doc.openapi, "3.1.0");
    await SwaggerParser.validate(structuredClone(doc) as never); // throws, naming every problem
  });

  test("every operation has an operationId, a summary, a tag and typed answers", () => {
    const ids = new Set<string>();
    assert.ok(operations().length >= 20, `only ${operations().length} operations`);
    for (const { where, op } of operations()) {
      assert.ok(op.operationId, `${where}: no operationId`);
      assert.ok(!ids.has(op.operationId), `${where}: operationId ${op.operationId} used twice`);
      ids.add(op.operationId);
      assert.ok(op.summary, `${where}: no summary`);
      assert.ok(op.tags?.length, `${where}: no tag`);
      const codes = Object.keys(op.responses);
      const ok = codes.filter((c) => c.startsWith("2"));
      assert.equal(ok.length, 1, `${where}: success answers ${ok.join(",")}`);
      if (ok[0] !== "204") assert.ok(op.responses[ok[0]!]!.content?.["application/json"]?.schema, `${where}: ${ok[0]} has no schema`);
      for (const c of ["400", "401", "422", "503"]) assert.ok(codes.includes(c), `${where}: no ${c} answer`);
      for (const c of codes.filter((c) => /^[45]/.test(c))) {
        assert.deepEqual(op.responses[c]!.content?.["application/json"]?.schema, { $ref: "#/components/schemas/Error" }, `${where} ${c}`);
      }
    }
    assert.ok(doc.components.schemas.Destination && doc.components.schemas.Delivery && doc.components.schemas.Event);
  });

  test("publishing documents the Idempotency-Key header", () => {
    for (const path of ["/v1/events", "/v1/events/batch"]) {
      const params = doc.paths[path]!.post!.parameters ?? [];
      assert.ok(
        params.some((p) => p.in === "header" && p.name === "idempotency-key"),
        `${path}: ${JSON.stringify(params)}`,
      );
    }
  });

  test("answers carry only the fields their schema declares", async () => {
    // Read as a plain object, not as Destination: the test is whether it holds more than declared.
    const r = await s.api<Record<string, unknown>>("POST", "/v1/destinations", { url: "http://127.0.0.1:9/hooks", event_types: ["x.y"] });
    assert.equal(r.status, 201);
    const declared = Object.keys((doc.components.schemas.Destination as { properties: object }).properties);
    for (const k of Object.keys(r.body)) assert.ok(declared.includes(k), `undeclared field ${k}`);
  });

  test("every number, list, string and instant a request takes has both ends declared", () => {
    // docs/api.md "Bounds": what the API takes is bounded, so every figure derived from it is finite.
    const unbounded: string[] = [];
    const refs = doc.components.schemas as Record<string, Schema>;
    const walk = (x: Schema | undefined, where: string, seen: Set<string>): void => {
      if (!x || typeof x !== "object") return;
      if (x.$ref) {
        const name = x.$ref.split("/").pop()!;
        if (!seen.has(name)) walk(refs[name], where, new Set([...seen, name]));
        return;
      }
      for (const sub of [...(x.anyOf ?? []), ...(x.oneOf ?? []), ...(x.allOf ?? [])]) walk(sub, where, seen);
      const type = x.type;
      if (type === "number" || type === "integer") {
        if (x.minimum === undefined && x.exclusiveMinimum === undefined) unbounded.push(`${where}: no minimum`);
        if (x.maximum === undefined && x.exclusiveMaximum === undefined) unbounded.push(`${where}: no maximum`);
      }
      if (type === "array" && x.maxItems === undefined) unbounded.push(`${where}: no maxItems`);
      if (type === "string" && x.format === "date-time" && (x.formatMinimum === undefined || x.formatMaximum === undefined)) {
        unbounded.push(`${where}: an instant without formatMinimum/formatMaximum`);
      }
      if (type === "string" && x.format !== "date-time" && x.maxLength === undefined && !x.enum && !x.pattern?.endsWith("$")) {
        unbounded.push(`${where}: a string with no maxLength, enum or anchored pattern`);
      }
      for (const [k, v] of Object.entries(x.properties ?? {})) walk(v, `${where}.${k}`, seen);
      if (typeof x.additionalProperties === "object") walk(x.additionalProperties, `${where}.*`, seen);
      if (x.items) walk(x.items, `${where}[]`, seen);
    };
    for (const { where, op } of operations()) {
      const o = op as Operation & { requestBody?: { content?: Record<string, { schema?: Schema }> } };
      for (const p of (o.parameters ?? []) as { name: string; in: string; schema?: Schema }[]) {
        walk(p.schema, `${where} ${p.in}.${p.name}`, new Set());
      }
      for (const c of Object.values(o.requestBody?.content ?? {})) walk(c.schema, `${where} body`, new Set());
    }
    // payload is any JSON by design: its size and nesting are bounded when the body is read.
    const allowed = (u: string) => /body(\.events\[\])?\.payload/.test(u);
    assert.deepEqual(
      unbounded.filter((u) => !allowed(u)),
      [],
    );
  });

  test("the API reference is served at /docs, with its script from Sluice itself", async () => {
    const page = await fetch(`${s.url}/docs/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /openapi\.json/);
    assert.doesNotMatch(html, /cdn\.jsdelivr|unpkg\.com/);
    const js = await fetch(`${s.url}/docs/js/scalar.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /javascript/);
  });
});
