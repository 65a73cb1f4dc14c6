import http from "node:http";
import type { AddressInfo } from "node:net";
import { verifyWebhook } from "../../sdk/src/webhooks.js";
import { SECRET_PATTERN } from "../schemas/common.js";
import { CommandFailed, UsageError, type Values } from "./commands.js";
import { Options } from "./client/options.js";

// `sluice listen`: a receiver for trying Sluice on one machine. It checks each delivery's signature
// with the destination's secret (the SDK's verifyWebhook, as a real receiver would), prints one
// line per request — time, type, webhook-id, verified or why not, the body — and answers --status,
// so 429s and 500s can be answered on purpose to watch Sluice hold back and retry.

export interface ListenOptions {
  host: string;
  port: number;
  secret: string | undefined;
  status: number;
  retryAfterSeconds: number | undefined;
  /** Pretty JSON bodies over several lines (a person at a terminal), else one compact line each. */
  pretty: boolean;
  out: (text: string) => void;
}

function readOptions(values: Values): ListenOptions {
  const o = new Options(values);
  const secret = o.text("secret") ?? (process.env.SLUICE_LISTEN_SECRET || undefined);
  if (secret !== undefined && !new RegExp(SECRET_PATTERN).test(secret)) {
    throw new UsageError("the secret must be a destination's signing secret, whsec_<base64> (sluice destinations create prints it)");
  }
  return {
    host: o.text("host") ?? "127.0.0.1",
    port: o.int("port", 0, 65535) ?? 4000,
    secret,
    status: o.int("status", 200, 599) ?? 200,
    retryAfterSeconds: o.int("retry-after", 0, 86_400),
    pretty: process.stdout.isTTY === true,
    out: (text) => process.stdout.write(`${text}\n`),
  };
}

function clock(at: Date): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}.${pad(at.getMilliseconds(), 3)}`;
}

/** The line (or, pretty, lines) one request is shown as. */
export function describeRequest(req: http.IncomingMessage, body: string, opts: Pick<ListenOptions, "secret" | "pretty">, at: Date): string {
  let parsed: unknown;
  let isJson = false;
  try {
    parsed = JSON.parse(body);
    isJson = true;
  } catch {
    /* shown as text */
  }
  let type = (parsed as { type?: unknown } | undefined)?.type;
  let verdict: string;
  if (opts.secret === undefined) {
    verdict = "NOT verified (no secret: pass --secret whsec_… or set SLUICE_LISTEN_SECRET)";
  } else {
    try {
      type = verifyWebhook({ secret: opts.secret, body, headers: req.headers }).type;
      verdict = "verified";
    } catch (err) {
      verdict = `NOT verified (${(err as Error).message})`;
    }
  }
  const id = req.headers["webhook-id"] ?? "-";
  const what = req.method === "POST" ? "" : `${req.method} ${req.url}  `;
  const shown = isJson ? JSON.stringify(parsed, null, opts.pretty ? 2 : undefined) : body.trim() || "(empty body)";
  const head = `${clock(at)}  ${what}${typeof type === "string" ? type : "-"}  ${String(id)}  ${verdict}`;
  return opts.pretty ? `${head}\n${shown.replace(/^/gm, "  ")}` : `${head}  ${shown}`;
}

/** Serves until SIGINT or SIGTERM; `onListening` gets the address (tests, and the start-up note). */
export async function serve(opts: ListenOptions, onListening: (url: string) => void): Promise<void> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      opts.out(describeRequest(req, Buffer.concat(chunks).toString("utf8"), opts, new Date()));
      const headers = opts.retryAfterSeconds === undefined ? {} : { "retry-after": String(opts.retryAfterSeconds) };
      res.writeHead(opts.status, headers).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      const where = `${opts.host}:${opts.port}`;
      if (err.code === "EADDRINUSE") reject(new CommandFailed(`sluice: ${where} is in use: choose another port with --port`));
      else if (err.code === "EACCES")
        reject(new CommandFailed(`sluice: not allowed to listen on ${where}: choose a port above 1023 with --port`));
      else if (err.code === "EADDRNOTAVAIL" || err.code === "ENOTFOUND")
        reject(new CommandFailed(`sluice: cannot listen on ${opts.host}: no such local address (--host)`));
      else reject(err);
    });
    server.listen(opts.port, opts.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  onListening(`http://${host}:${address.port}`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      server.close(() => resolve());
      server.closeAllConnections();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}

export async function listen(values: Values): Promise<number> {
  const opts = readOptions(values);
  await serve(opts, (url) => {
    const verifying = opts.secret ? "verifying signatures with the given secret" : "NOT verifying signatures (no --secret)";
    const retry = opts.retryAfterSeconds === undefined ? "" : ` with Retry-After: ${opts.retryAfterSeconds}`;
    process.stderr.write(
      `sluice listen: receiving webhooks on ${url}, answering ${opts.status}${retry}, ${verifying}\n` +
        `  send it deliveries: sluice destinations create --url ${url}  (Sluice delivers to this machine when started with SLUICE_ALLOW_PRIVATE_NETWORKS=1)\n`,
    );
  });
  return 0;
}
