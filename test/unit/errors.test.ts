import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  ERROR_CATALOGUE,
  NotFoundError,
  SluiceError,
  StartupError,
  renderMessage,
  statusOf,
  type ErrorCode,
  type MessageParams,
} from "../../src/errors.js";
import { SETTINGS } from "../../src/config.js";

// The error catalogue and the docs name exactly the same codes: a code added in code but not
// documented (or documented but gone) fails here.

const settingNames = new Set<string>(SETTINGS.map((s) => s.env));

function codesIn(doc: string): Set<string> {
  const text = readFileSync(new URL(`../../docs/${doc}`, import.meta.url), "utf8");
  const found = text.match(/\bSLUICE_[A-Z_]*[A-Z]\b/g) ?? [];
  // Setting names and the harness prefixes are not error codes.
  return new Set(found.filter((c) => !settingNames.has(c) && !/^SLUICE_(TEST|BENCH)$|^SLUICE_PG_FSYNC$|^SLUICE_PORTT$/.test(c)));
}

const expected = (docs: "api" | "configuration") =>
  new Set((Object.keys(ERROR_CATALOGUE) as ErrorCode[]).filter((c) => ERROR_CATALOGUE[c].docs === docs));

test("docs/api.md lists exactly the catalogue's API codes", () => {
  assert.deepEqual([...codesIn("api.md")].sort(), [...expected("api")].sort());
});

test("docs/configuration.md lists exactly the catalogue's start-up codes", () => {
  assert.deepEqual([...codesIn("configuration.md")].sort(), [...expected("configuration")].sort());
});

test("every API code has a 4xx or 5xx status; start-up codes have none", () => {
  for (const [code, e] of Object.entries(ERROR_CATALOGUE)) {
    if (e.status === null) assert.equal(statusOf(code as ErrorCode), 500);
    else assert.ok(e.status >= 400 && e.status < 600, code);
  }
});

test("no code is built at run time", () => {
  // Every SluiceError takes an ErrorCode, so the compiler refuses an unknown one; this also
  // refuses template-built codes that a cast could sneak past it.
  const src = ["src/errors.ts", "src/api/server.ts", "src/api/auth.ts"]
    .map((f) => readFileSync(new URL(`../../${f}`, import.meta.url), "utf8"))
    .join("\n");
  // (The catalogue's own key type, `SLUICE_${string}`, is a type, not a code.)
  assert.doesNotMatch(src.replace("Record<`SLUICE_${string}`", ""), /`SLUICE_\$\{/);
});

// Message templates: the fixed text lives in the catalogue; a throw site passes only the facts.

const placeholdersOf = (template: string): string[] => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

test("every template's braces are {placeholder}s, and rendering fills each one", () => {
  for (const [code, e] of Object.entries(ERROR_CATALOGUE) as [ErrorCode, (typeof ERROR_CATALOGUE)[ErrorCode]][]) {
    // A stray brace would be a placeholder the type check cannot see (or a typo in one).
    assert.doesNotMatch(e.message.replace(/\{\w+\}/g, ""), /[{}]/, `${code}: a brace outside a {placeholder}`);
    const names = placeholdersOf(e.message);
    const params = Object.fromEntries(names.map((n) => [n, `<${n} value>`]));
    const message = renderMessage(code, params as MessageParams<typeof code>);
    assert.doesNotMatch(message, /\{\w*\}/, `${code}: ${message}`);
    for (const n of names) assert.ok(message.includes(`<${n} value>`), `${code}: {${n}} not filled in ${message}`);
  }
});

test("a value is put in as it is, even one that looks like a placeholder", () => {
  const err = new SluiceError("SLUICE_DELIVERY_NOT_RETRYABLE", { id: "{status}", status: "queued" });
  assert.equal(err.message, "Delivery '{status}' is queued; only dead or discarded deliveries can be retried.");
  assert.equal(err.statusCode, 409);
  assert.equal(new NotFoundError("event", "evt_1").code, "SLUICE_EVENT_NOT_FOUND");
  assert.match(new NotFoundError("event", "evt_1").message, /^No event with id 'evt_1' exists for this API key\. Check the id/);
});

test("placeholders are type-checked: a missing, misspelt or extra one does not compile", () => {
  // Each line below must fail to compile (tsc -p tsconfig.json covers test/); they run only to
  // show that the render itself never throws.
  const made = [
    // @ts-expect-error: {status} is missing
    new SluiceError("SLUICE_DELIVERY_NOT_RETRYABLE", { id: "dlv_1" }),
    // @ts-expect-error: {id} misspelt
    new SluiceError("SLUICE_API_KEY_LAST", { idd: "key_1" }),
    // @ts-expect-error: SLUICE_INTERNAL has no placeholder
    new SluiceError("SLUICE_INTERNAL", { reason: "x" }),
    // @ts-expect-error: params are required when the template has placeholders
    new SluiceError("SLUICE_ROUTE_NOT_FOUND"),
    // @ts-expect-error: a message of one's own is no longer accepted
    new SluiceError("SLUICE_ROUTE_NOT_FOUND", "No route GET /x"),
    // @ts-expect-error: a start-up error takes only start-up codes
    new StartupError("SLUICE_INTERNAL"),
  ];
  assert.equal(made.length, 6);
});

// A template built with + is typed `string`, so its placeholders would go unchecked: every
// message must be one string literal.
type UncheckedTemplate = { [C in ErrorCode]: string extends (typeof ERROR_CATALOGUE)[C]["message"] ? C : never }[ErrorCode];
const everyTemplateIsLiteral: [UncheckedTemplate] extends [never] ? true : UncheckedTemplate = true;

test("every template is typed as its literal text", () => {
  assert.equal(everyTemplateIsLiteral, true);
});

test("docs/api.md shows each API code's message template", () => {
  const text = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
  for (const code of expected("api")) {
    const row = `| \`${code}\` | \`${ERROR_CATALOGUE[code].message}\` |`;
    assert.ok(text.includes(row), `docs/api.md lacks the row\n${row}`);
  }
});
