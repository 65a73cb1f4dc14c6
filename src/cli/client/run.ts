import { Sluice, SluiceApiError } from "../../../sdk/src/index.js";
import { CommandFailed, UsageError, type ClientCommandPath, type Values } from "../commands.js";
import type { ClientContext, Handler } from "./context.js";
import { deliveryCommands } from "./deliveries.js";
import { destinationCommands } from "./destinations.js";
import { eventCommands } from "./events.js";
import { keyCommands } from "./keys.js";
import { Options } from "./options.js";

// The API commands: a client of a running Sluice, built on the SDK (sdk/src), so every path,
// parameter and answer is typed against the API's OpenAPI document. Whatever goes wrong becomes a
// line or two on stderr and an exit code: 1 when the API refused or could not be reached, 2 for a
// mistake on the command line. Never a stack trace.

const HANDLERS = { ...destinationCommands, ...eventCommands, ...deliveryCommands, ...keyCommands } satisfies Record<
  ClientCommandPath,
  Handler
>;

export const DEFAULT_URL = "http://127.0.0.1:3000";
/** Longer than any answer of a healthy Sluice; a hung connection must not hang a script. */
const REQUEST_TIMEOUT_MS = 60_000;

// Why a request never got an answer, by the error code Node gives (undici's fetch puts it on `cause`).
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: "connection refused: nothing listens there",
  ENOTFOUND: "the host name does not resolve",
  EAI_AGAIN: "the host name does not resolve (DNS did not answer)",
  ECONNRESET: "the connection was reset",
  EHOSTUNREACH: "the host is unreachable",
  ENETUNREACH: "the network is unreachable",
  ETIMEDOUT: "the connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "the connection timed out",
  UND_ERR_SOCKET: "the connection closed before an answer",
  EPROTO: "TLS failed (an https URL for a plain http port?)",
};

interface Target {
  url: string;
  /** Where the URL came from, for the error that says how to change it. */
  from: string;
}

function target(opts: Options): Target {
  const flag = opts.text("api-url");
  const env = process.env.SLUICE_URL;
  const t = flag ? { url: flag, from: "--api-url" } : env ? { url: env, from: "SLUICE_URL" } : { url: DEFAULT_URL, from: "the default" };
  let parsed: URL;
  try {
    parsed = new URL(t.url);
  } catch {
    throw new UsageError(`${t.from} must be the URL of Sluice's API, e.g. ${DEFAULT_URL}, not '${t.url}'`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new UsageError(`${t.from} must be an http:// or https:// URL, e.g. ${DEFAULT_URL}, not '${t.url}'`);
  }
  return t;
}

/** The lines that say what went wrong, as a CommandFailed (exit 1); anything else is rethrown. */
function failure(err: unknown, t: Target): unknown {
  const fix = `set SLUICE_URL (or --api-url) to where Sluice's API listens, e.g. export SLUICE_URL=${DEFAULT_URL}`;
  if (err instanceof SluiceApiError) {
    // No error document: whatever answered is not Sluice's API.
    if (err.message === `Sluice answered HTTP ${err.status}`) {
      return new CommandFailed(
        `sluice: ${t.url} (${t.from}) answered HTTP ${err.status} without Sluice's error body: is it Sluice's API?\n  ${fix}`,
      );
    }
    const lines = [`sluice: ${err.code} (HTTP ${err.status}): ${err.message}`];
    for (const f of err.fields) lines.push(`  ${f.field}: ${f.message}`);
    if (err.status === 401)
      lines.push("  the key is SLUICE_API_KEY (or --api-key): one Sluice printed on its first start, or from sluice keys create");
    if (err.retryAfter !== null) lines.push(`  retry in ${err.retryAfter} s`);
    return new CommandFailed(lines.join("\n"));
  }
  const e = err as Error & { cause?: { code?: string } };
  if (e?.name === "TimeoutError") {
    return new CommandFailed(`sluice: ${t.url} (${t.from}) did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
  }
  if (e instanceof TypeError && e.message === "fetch failed") {
    const code = e.cause?.code ?? "";
    const why = UNREACHABLE[code] ?? (code || (e.cause as Error | undefined)?.message || "no answer");
    return new CommandFailed(`sluice: could not reach Sluice at ${t.url} (${t.from}): ${why}\n  is it running? ${fix}`);
  }
  if (e instanceof SyntaxError) {
    return new CommandFailed(`sluice: ${t.url} (${t.from}) answered with something that is not JSON: is it Sluice's API?\n  ${fix}`);
  }
  return err;
}

export async function runClient(path: ClientCommandPath, args: string[], values: Values): Promise<number> {
  const opts = new Options(values);
  const t = target(opts);
  const apiKey = opts.text("api-key") ?? process.env.SLUICE_API_KEY;
  if (!apiKey) {
    throw new UsageError(
      "no API key: set SLUICE_API_KEY (or pass --api-key KEY) to the key Sluice printed on its first start, or one from sluice keys create",
    );
  }
  const sluice = new Sluice({
    baseUrl: t.url,
    apiKey,
    fetch: (request) => fetch(request, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }),
  });
  // `sluice events list | head`: a reader that stopped reading is not an error worth a stack trace.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(0);
    throw err;
  });
  const ctx: ClientContext = {
    sluice,
    opts,
    args,
    json: opts.flag("json"),
    print: (text) => process.stdout.write(`${text}\n`),
    note: (text) => process.stderr.write(`${text}\n`),
  };
  try {
    await HANDLERS[path](ctx);
  } catch (err) {
    throw failure(err, t);
  }
  return 0;
}
