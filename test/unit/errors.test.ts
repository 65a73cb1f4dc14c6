import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { ERROR_CATALOGUE, statusOf, type ErrorCode } from "../../src/errors.js";
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
