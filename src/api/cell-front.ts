import http from "node:http";
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Db } from "../db/db.js";
import { hashKey } from "../db/queries/api-keys.js";
import { cellOfTenant, cellTenantCounts, tokenKnown } from "../db/queries/cell-directory.js";
import { SluiceError, StoreUnavailableError } from "../errors.js";
import { TENANT_HEADER } from "./auth.js";
import { answerClientError, toErrorBody } from "./server.js";

// One port for an API process that serves several cells (docs/citus.md): each cell has an API of
// its own (buildApi on the cell's store, never listening), and this front hands each request to
// the cell its tenant lives in. It reads no body and answers nothing itself but /healthz and the
// errors of a request no served cell can take; everything else is the cell's API's, exactly as
// with one store.
//
// Which cell: a tenant's API key or portal token is looked up in every served cell at once on
// its first use, and remembered (a key never changes cell); the admin key names its tenant
// (Sluice-Tenant), whose cell the directory holds, or a cell (Sluice-Cell); a new tenant goes
// to the cell Sluice-Cell names, else to the served cell with the fewest tenants. Anything else
// (no key, the dashboard's files, /metrics, /openapi.json) goes to the first cell.

/** The header with which the admin key names a cell: where POST /v1/tenants creates the tenant, or which cell's tenants GET /v1/tenants lists. */
export const CELL_HEADER = "sluice-cell";

export interface CellApi {
  cell: string;
  db: Db;
  app: FastifyInstance;
}

/** Tokens remembered per front: bounded, so a stream of unknown tokens cannot grow it. */
const MAX_REMEMBERED = 10_000;

export function cellFront(cells: CellApi[], opts: { adminKey: string | undefined; log: Logger }): http.Server {
  const home = cells[0];
  if (!home) throw new Error("cellFront needs at least one cell");
  const byName = new Map(cells.map((c) => [c.cell, c]));
  const adminHash = opts.adminKey === undefined ? null : Buffer.from(hashKey(opts.adminKey), "hex");
  const isAdmin = (tokenHash: string) => adminHash !== null && timingSafeEqual(Buffer.from(tokenHash, "hex"), adminHash);
  // Token hash → its cell; tenant id → its cell. A miss is not remembered: a key made a moment
  // ago must be found on its first use.
  const tokenCells = new Map<string, CellApi>();
  const tenantCells = new Map<string, string>();
  const remember = <V>(map: Map<string, V>, key: string, value: V) => {
    if (map.size >= MAX_REMEMBERED) map.delete(map.keys().next().value!);
    map.set(key, value);
  };

  const served = (name: string, what: string): CellApi => {
    const cell = byName.get(name);
    if (!cell) throw new SluiceError("SLUICE_CELL_NOT_SERVED", { what, cell: name, served: [...byName.keys()].join(", ") });
    return cell;
  };

  async function pick(req: http.IncomingMessage): Promise<CellApi> {
    const url = req.url ?? "/";
    if (!url.startsWith("/v1/")) return home!;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
    if (!m) return home!; // it answers 401
    const token = m[1]!;
    const tokenHash = hashKey(token);
    if (isAdmin(tokenHash)) {
      const tenant = header(req, TENANT_HEADER);
      if (tenant !== undefined) {
        let cell = tenantCells.get(tenant) ?? null;
        if (cell === null) {
          cell = await cellOfTenant(home!.db, tenant);
          if (cell === null) return home!; // it answers 404: no such tenant
          remember(tenantCells, tenant, cell);
        }
        return served(cell, `tenant ${tenant}`);
      }
      const named = header(req, CELL_HEADER);
      if (named !== undefined) return served(named, `the ${CELL_HEADER} header`);
      if (req.method === "POST" && url.split("?")[0] === "/v1/tenants") {
        const counts = await cellTenantCounts(home!.db, [...byName.keys()]);
        return cells.reduce((best, c) => ((counts.get(c.cell) ?? 0) < (counts.get(best.cell) ?? 0) ? c : best));
      }
      return home!;
    }
    const known = tokenCells.get(tokenHash);
    if (known) return known;
    const owners = await Promise.all(cells.map(async (c) => ((await tokenKnown(c.db, tokenHash)) ? c : null)));
    const owner = owners.find((c) => c !== null);
    if (!owner) return home!; // it answers 401
    remember(tokenCells, tokenHash, owner);
    return owner;
  }

  /** 200 when every served cell's store answers; else the first failing cell's answer. */
  async function healthz(res: http.ServerResponse): Promise<void> {
    const answers = await Promise.all(
      cells.map(async (c) => ({ cell: c.cell, res: await c.app.inject({ method: "GET", url: "/healthz" }) })),
    );
    const failed = answers.find((a) => a.res.statusCode !== 200);
    const headers: http.OutgoingHttpHeaders = { "content-type": "application/json; charset=utf-8" };
    if (failed) {
      const retry = failed.res.headers["retry-after"];
      if (retry !== undefined) headers["retry-after"] = retry;
      res.writeHead(failed.res.statusCode, headers);
      res.end(JSON.stringify({ ...failed.res.json<object>(), cell: failed.cell }));
      return;
    }
    res.writeHead(200, headers);
    res.end(JSON.stringify({ status: "ok", cells: answers.map((a) => a.cell) }));
  }

  const server = http.createServer((req, res) => {
    if ((req.url ?? "").split("?")[0] === "/healthz" && req.method === "GET") {
      healthz(res).catch((err: unknown) => fail(res, err));
      return;
    }
    pick(req).then(
      (cell) => cell.app.routing(req, res),
      (err: unknown) => fail(res, err),
    );
  });
  // What Fastify sets on a server of its own (server.ts): two minutes for a whole request, and the
  // contract's error body for what Node's parser refuses.
  server.requestTimeout = 120_000;
  server.on("clientError", (err, socket) => answerClientError(err, socket));

  function fail(res: http.ServerResponse, err: unknown): void {
    const { status, body } = toErrorBody(err as Error);
    if (status >= 500 && !(err instanceof StoreUnavailableError)) opts.log.error({ err }, "request failed");
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const headers: http.OutgoingHttpHeaders = { "content-type": "application/json; charset=utf-8" };
    if (err instanceof StoreUnavailableError) headers["retry-after"] = String(err.retryAfterSeconds);
    res.writeHead(status, headers);
    res.end(JSON.stringify(body));
  }

  return server;
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}
