import { test } from "node:test";
import assert from "node:assert/strict";
import { toWire } from "../../src/db/embedded-thread.js";

// What an error thrown on the embedded store's thread says once it has crossed to Sluice's
// (src/db/embedded-thread.ts toWire). The operator reads it in "store still unreachable".

test("an Error keeps its message and its own plain fields (a Postgres error's code)", () => {
  const err = Object.assign(new Error("duplicate key"), { code: "23505", detail: { nested: true } });
  assert.deepEqual(toWire(err), { message: "duplicate key", fields: { code: "23505" } });
});

test("PGlite's file system throws a plain object (Emscripten's ErrnoError): its name and errno, not [object Object]", () => {
  class ErrnoError {
    name = "ErrnoError";
    constructor(readonly errno: number) {}
  }
  assert.equal(toWire(new ErrnoError(44)).message, "ErrnoError (errno 44)");
  assert.equal(toWire({ message: "thrown as a plain object" }).message, "thrown as a plain object");
  assert.equal(toWire({}).message, "Object");
  assert.equal(toWire("a string").message, "a string");
  assert.equal(toWire(undefined).message, "undefined");
});
