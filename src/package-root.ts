import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Where the package's own files are (package.json, migrations/), from wherever this module runs:
// src/ under tsx, dist/src/ once compiled, node_modules/sluice/dist/src/ when installed. Found by
// walking up to Sluice's package.json rather than by a fixed "../..", which differs between those.

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "sluice") return dir;
    if (path.dirname(dir) === dir) throw new Error(`sluice: no package.json of Sluice's above ${from}; the installation is incomplete`);
  }
}

/** The folder holding Sluice's package.json and migrations/. */
export const PACKAGE_ROOT = findRoot(path.dirname(fileURLToPath(import.meta.url)));

export const VERSION: string = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }).version;
