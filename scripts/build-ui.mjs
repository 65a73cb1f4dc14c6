// Bundles the dashboard (ui/) into dist/ui/: app.js (Preact + the SDK, minified), app.css and
// index.html. Run by `npm run build` and before the tests; the server serves dist/ui as is, so
// nothing is fetched from a CDN at run time. `--watch` rebuilds on change while developing.
import { build, context } from "esbuild";
import { copyFileSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const out = path.join(root, "dist", "ui");

const options = {
  entryPoints: { app: path.join(root, "ui", "src", "main.tsx"), styles: path.join(root, "ui", "styles.css") },
  outdir: out,
  bundle: true,
  minify: true,
  sourcemap: "linked",
  format: "esm",
  target: ["chrome110", "firefox110", "safari16"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "linked",
  logLevel: "warning",
};

mkdirSync(out, { recursive: true });
copyFileSync(path.join(root, "ui", "index.html"), path.join(out, "index.html"));
if (process.argv.includes("--watch")) {
  const ctx = await context(options);
  await ctx.watch();
  console.error("build-ui: watching ui/ (Ctrl-C to stop)");
} else {
  await build(options);
  const kb = (f) => (statSync(path.join(out, f)).size / 1024).toFixed(1);
  console.error(`build-ui: dist/ui/app.js ${kb("app.js")} KiB, styles.css ${kb("styles.css")} KiB`);
}
