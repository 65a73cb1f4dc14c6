#!/usr/bin/env node
// Entry point: the compiled CLI (npm install runs `prepare`, which builds dist/). dist/ mirrors the
// checkout (dist/src/, dist/sdk/src/): the CLI's API commands are built on the SDK in sdk/src.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const compiled = fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url));
if (!existsSync(compiled)) {
  console.error("sluice: dist/ is missing — run `npm install` (or `npm run build`) in the checkout first.");
  process.exit(1);
}
await import(compiled);
