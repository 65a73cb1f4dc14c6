import type { FastifyInstance, FastifyReply } from "fastify";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { PACKAGE_ROOT } from "../package-root.js";
import type { ApiContext } from "./context.js";

// The dashboard (/) and the consumer portal (/portal): one static page and its bundle, built
// into dist/ui by scripts/build-ui.mjs and held in memory here. Everything the page shows comes
// from the public /v1 API, with the caller's key or portal token sent by the page itself.

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The built files of dist/ui, by name; empty when the dashboard was not built. */
export function loadUiAssets(dir = path.join(PACKAGE_ROOT, "dist", "ui")): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const body = readFileSync(path.join(dir, name));
    assets.set(name, { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` });
  }
  return assets;
}

/** The Content-Security-Policy of a page: nothing but Sluice itself, and who may frame it. */
export function pagePolicy(frameAncestors: string[] | "none"): string {
  const ancestors = frameAncestors === "none" ? "'none'" : ["'self'", ...frameAncestors].join(" ");
  return [
    "default-src 'self'",
    "script-src 'self'",
    // Preact sets element styles through the CSSOM; charts set widths inline.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${ancestors}`,
  ].join("; ");
}

export function uiRoutes(ctx: ApiContext, assets = loadUiAssets()) {
  return async (app: FastifyInstance) => {
    const send = (reply: FastifyReply, asset: Asset, ifNoneMatch: string | undefined) => {
      void reply.header("cache-control", "no-cache").header("etag", asset.etag).header("x-content-type-options", "nosniff");
      if (ifNoneMatch === asset.etag) return reply.status(304).send();
      return reply.type(asset.type).send(asset.body);
    };

    const page = (frameAncestors: string[] | "none") => async (req: { headers: Record<string, unknown> }, reply: FastifyReply) => {
      const index = assets.get("index.html");
      void reply.header("content-security-policy", pagePolicy(frameAncestors)).header("referrer-policy", "no-referrer");
      if (!index) {
        return reply
          .status(503)
          .type("text/html; charset=utf-8")
          .send(
            "<!doctype html><title>Sluice</title><p>The dashboard is not built. Run <code>npm run build</code> " +
              "(or <code>node scripts/build-ui.mjs</code>) and start Sluice again. The API works meanwhile: see <a href=/docs>/docs</a>.</p>",
          );
      }
      return send(reply, index, req.headers["if-none-match"] as string | undefined);
    };

    // The dashboard is never framed; the portal may be, by the origins SLUICE_PORTAL_FRAME_ANCESTORS names.
    app.get("/", { schema: { hide: true } }, page("none"));
    app.get("/portal", { schema: { hide: true } }, page(ctx.config.portalFrameAncestors));
    app.get<{ Params: { file: string } }>("/ui/:file", { schema: { hide: true } }, async (req, reply) => {
      const asset = assets.get(req.params.file);
      if (!asset || req.params.file === "index.html") return reply.callNotFound();
      return send(reply, asset, req.headers["if-none-match"]);
    });
  };
}
