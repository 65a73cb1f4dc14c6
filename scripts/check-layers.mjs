// Fails when a file in src/ imports from a higher layer: dependencies run one way,
// policy ← db ← dispatch/delivery/alerts/events ← api ← app/cli. Type-only imports count too
// (a type that a lower layer needs belongs at that layer). Cycles inside one layer are
// madge's job (npm run cycles). Plain Node, no dependencies.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src");

// Most specific first; a file may import from its own layer or any lower one.
const LAYERS = [
  ["errors.ts", 0],
  ["ids.ts", 0],
  ["package-root.ts", 0],
  ["sleep.ts", 0],
  ["releasers.ts", 0],
  ["policy/", 0],
  ["schemas/", 0],
  ["config.ts", 1],
  ["logger.ts", 1],
  ["tracing/", 1],
  ["db/", 2],
  ["metrics.ts", 3],
  ["dispatch/", 4],
  ["delivery/", 4],
  ["alerts/", 4],
  ["events/", 4],
  ["bootstrap.ts", 4],
  ["api/", 5],
  ["app.ts", 6],
  ["cli/", 6],
];
const NAMES = [
  "policy, schemas, errors, ids, package-root, sleep, releasers",
  "config, logger, tracing",
  "db",
  "metrics",
  "dispatch, delivery, alerts, events, bootstrap",
  "api",
  "app, cli",
];

function layerOf(rel) {
  const hit = LAYERS.find(([prefix]) => (prefix.endsWith("/") ? rel.startsWith(prefix) : rel === prefix));
  if (!hit) throw new Error(`scripts/check-layers.mjs: src/${rel} is in no layer; add it to LAYERS`);
  return hit[1];
}

function* walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

// import … from "x", export … from "x", import "x", import("x"): relative specifiers only.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g;

const problems = [];
for (const file of walk(src)) {
  const rel = path.relative(src, file).split(path.sep).join("/");
  const own = layerOf(rel);
  const text = readFileSync(file, "utf8");
  for (const m of text.matchAll(SPECIFIER)) {
    const target = path
      .relative(src, path.resolve(path.dirname(file), m[1]))
      .split(path.sep)
      .join("/")
      .replace(/\.js$/, ".ts");
    if (target.startsWith("..")) continue; // outside src (package.json and the like)
    const theirs = layerOf(target);
    if (theirs > own) {
      const line = text.slice(0, m.index).split("\n").length;
      problems.push(`src/${rel}:${line} (${NAMES[own]}) imports src/${target} (${NAMES[theirs]}), a higher layer`);
    }
  }
}

if (problems.length) {
  console.error(`${problems.length} import(s) against the layering:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log("layers: every import in src/ points to its own layer or a lower one");
