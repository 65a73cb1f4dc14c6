// The HTTP request of one delivery attempt. Every outcome — an HTTP status or a network failure —
// comes back as data (SendResult); send() does not throw for anything the destination does.
import { performance } from "node:perf_hooks";
import { Agent, type Dispatcher } from "undici";
import { BlockedAddressError, checkLiteralHost, guardedLookup, type NetworkPolicy } from "./network-guard.js";
import { signatureHeader } from "./sign.js";
import type { TraceContext } from "../policy/trace-context.js";

export interface SendRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** Total budget: connect + request + response headers + response body. */
  timeoutMs: number;
}

export type ErrorClass = "timeout" | "connection" | "dns" | "tls" | "blocked" | "invalid_response";

export interface SendResult {
  statusCode: number | null;
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  /** The raw Retry-After header, for the policy layer to interpret (seconds or HTTP-date). */
  retryAfter: string | null;
  /** At most maxResponseBytes bytes of the response body as UTF-8. */
  responseBody: string;
  latencyMs: number;
}

export interface SenderOptions {
  network: NetworkPolicy;
  userAgent: string;
  /** Bytes of response body kept for the attempt log; default 1024 (the API promises at most 1 KiB). */
  maxResponseBytes?: number;
  /**
   * Most sockets to one origin (default 512, the default worker concurrency). Requests beyond it
   * wait in the pool, behind other destinations' requests to the same host: a worker sizes it to
   * its concurrency so that never happens.
   */
  maxSocketsPerOrigin?: number;
  /** Nameservers for destination names (resolve.ts); empty or absent: the system's. */
  dnsServers?: readonly string[];
}

// Bodies up to this size are drained so the keep-alive connection can be reused; past it the
// connection is dropped rather than spending bandwidth on a response nobody reads.
const MAX_READ_BYTES = 64 * 1024;
// Bounds sockets left connecting after their request timed out; shorter than the total budget only
// when timeout_seconds > 10, and then the attempt still ends as a "timeout".
const CONNECT_TIMEOUT_MS = 10_000;
const TARGET_CACHE_MAX = 10_000;

interface Target {
  origin: string;
  path: string;
  authorization: string | null;
  /** Set when the URL itself cannot be delivered to (bad scheme, refused IP literal). */
  refusal: { errorClass: ErrorClass; error: Error } | null;
}

/**
 * A request's headers: the destination's custom ones first, then Sluice's own. The names custom
 * headers may not use (policy/custom-headers.ts) include every one set here, so none is overridden.
 */
export function buildDeliveryHeaders(args: {
  msgId: string;
  timestampSeconds: number;
  body: string;
  secrets: string[];
  userAgent: string;
  custom?: Record<string, string>;
}): Record<string, string> {
  return {
    ...args.custom,
    "content-type": "application/json",
    "user-agent": args.userAgent,
    "webhook-id": args.msgId,
    "webhook-timestamp": String(args.timestampSeconds),
    "webhook-signature": signatureHeader(args.secrets, args.msgId, args.timestampSeconds, args.body),
  };
}

/** What signing needs of a destination: its URL, secrets, custom headers and timeout. */
export interface SigningDestination {
  url: string;
  secrets: { secret: string; expires_at: string | null }[];
  headers: Record<string, string>;
  timeout_seconds: number;
}

/**
 * The signed request for one message to `dest` (a delivery or a probe), made at `nowMs`: signed
 * with every secret that has not expired, so a receiver mid-rotation verifies with either.
 */
export function signedRequest(
  dest: SigningDestination,
  msgId: string,
  body: string,
  nowMs: number,
  userAgent: string,
  trace: TraceContext | null = null,
): SendRequest {
  const secrets = dest.secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs).map((s) => s.secret);
  const headers = buildDeliveryHeaders({
    msgId,
    timestampSeconds: Math.floor(nowMs / 1000),
    body,
    secrets,
    userAgent,
    custom: dest.headers,
  });
  // W3C Trace Context (docs/tracing.md); the signature covers the body, not these headers. The
  // event's context replaces a custom traceparent and tracestate (in any case), as a pair.
  if (trace) {
    for (const name in dest.headers) {
      const lower = name.toLowerCase();
      if (lower === "traceparent" || lower === "tracestate") delete headers[name];
    }
    headers.traceparent = trace.traceparent;
    if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate;
  }
  return { url: dest.url, body, headers, timeoutMs: dest.timeout_seconds * 1000 };
}

export class Sender {
  private readonly agent: Agent;
  private readonly policy: NetworkPolicy;
  private readonly userAgent: string;
  private readonly maxResponseBytes: number;
  // Destinations are few and their URLs repeat: parse and vet each URL once.
  private readonly targets = new Map<string, Target>();

  constructor(opts: SenderOptions) {
    this.policy = opts.network;
    this.userAgent = opts.userAgent;
    this.maxResponseBytes = Math.min(opts.maxResponseBytes ?? 1024, MAX_READ_BYTES);
    this.agent = new Agent({
      connect: {
        lookup: guardedLookup(opts.network, opts.dnsServers),
        timeout: CONNECT_TIMEOUT_MS,
      },
      // The per-request timer owns the whole budget; undici's own timers would only add work.
      headersTimeout: 0,
      bodyTimeout: 0,
      pipelining: 1,
      // Sockets per origin, shared by the destinations on that host. Without a cap the pool opens
      // more sockets than requests in flight (a busy socket's successor opens before it frees).
      connections: opts.maxSocketsPerOrigin ?? 512,
    });
  }

  async send(req: SendRequest): Promise<SendResult> {
    const started = performance.now();
    const target = this.targetOf(req.url);
    if (target.refusal !== null) {
      return failure(target.refusal.errorClass, target.refusal.error.message, started);
    }

    let headers = req.headers;
    // A custom Authorization header (any case) wins over credentials in the URL.
    if (target.authorization !== null && !Object.keys(headers).some((k) => k.toLowerCase() === "authorization")) {
      headers = { ...headers, authorization: target.authorization };
    }
    if (headers["user-agent"] === undefined && headers["User-Agent"] === undefined) {
      headers = { ...headers, "user-agent": this.userAgent };
    }

    return new Promise<SendResult>((resolve) => {
      const exchange = new Exchange(resolve, started, req.timeoutMs, this.maxResponseBytes);
      try {
        this.agent.dispatch({ origin: target.origin, path: target.path, method: "POST", headers, body: req.body }, exchange);
      } catch (err) {
        exchange.onError(err as Error);
      }
    });
  }

  /** Waits for in-flight requests, then closes every connection. */
  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Aborts whatever is still in flight (its leases were released) and closes every connection. */
  async destroy(): Promise<void> {
    await this.agent.destroy();
  }

  private targetOf(url: string): Target {
    let target = this.targets.get(url);
    if (target === undefined) {
      target = parseTarget(url, this.policy);
      if (this.targets.size >= TARGET_CACHE_MAX) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }
}

function parseTarget(url: string, policy: NetworkPolicy): Target {
  const none = { origin: "", path: "", authorization: null };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ...none, refusal: { errorClass: "connection", error: new Error(`invalid URL '${url}'`) } };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return {
      ...none,
      refusal: { errorClass: "connection", error: new Error(`unsupported URL scheme '${parsed.protocol}' (use http or https)`) },
    };
  }
  try {
    // The WHATWG parser already turned 127.1 / 0x7f000001 / 2130706433 into 127.0.0.1.
    checkLiteralHost(parsed.hostname, policy);
  } catch (err) {
    return { ...none, refusal: { errorClass: "blocked", error: err as Error } };
  }
  let authorization: string | null = null;
  if (parsed.username !== "" || parsed.password !== "") {
    // https://user:pass@host is how webhook providers conventionally carry basic auth.
    const creds = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
    authorization = `Basic ${Buffer.from(creds).toString("base64")}`;
  }
  return { origin: parsed.origin, path: parsed.pathname + parsed.search, authorization, refusal: null };
}

/**
 * One request's exchange, as the handler of undici's dispatch API (not request(): no response
 * stream, AbortController or async iteration per request — the bytes come to these methods). It
 * owns the whole time budget (connect, request, response headers and body) and settles exactly once.
 */
class Exchange implements Dispatcher.DispatchHandler {
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  private readBytes = 0;
  private truncated = false;
  private statusCode: number | null = null;
  private retryAfter: string | null = null;
  private abort: ((err: Error) => void) | null = null;
  private timedOut = false;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolve: (r: SendResult) => void,
    private readonly started: number,
    private readonly timeoutMs: number,
    private readonly maxBytes: number,
  ) {
    this.timer = setTimeout(onTimeout, timeoutMs, this);
    this.timer.unref();
  }

  /**
   * The budget ran out. Sent: abort now. Not yet on a socket (connecting, or waiting for one):
   * the attempt ends now as a timeout, and the request is aborted before it is written, when
   * undici hands it a connection — the budget holds even for a request that never got one.
   */
  expire(): void {
    this.timedOut = true;
    if (this.abort !== null) this.abort(new Error(this.timeoutMessage()));
    else this.settle(failure("timeout", this.timeoutMessage(), this.started));
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.timedOut) abort(new Error(this.timeoutMessage()));
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: the final answer is still to come
    this.statusCode = statusCode;
    this.retryAfter = rawHeader(rawHeaders, "retry-after");
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.readBytes += chunk.length;
    if (this.keptBytes < this.maxBytes) {
      const part = chunk.length + this.keptBytes > this.maxBytes ? chunk.subarray(0, this.maxBytes - this.keptBytes) : chunk;
      this.kept.push(part);
      this.keptBytes += part.length;
    }
    if (this.keptBytes < this.readBytes) this.truncated = true;
    if (this.readBytes < MAX_READ_BYTES) return true;
    // Past the read limit the connection is dropped rather than drained. Paused here (false) and
    // aborted once this callback has returned: undici must not be re-entered from inside it.
    this.settle(this.answered(null));
    const abort = this.abort;
    if (abort !== null) queueMicrotask(() => abort(new Error("response body past the read limit: connection closed")));
    return false;
  }

  onComplete(): void {
    this.settle(this.answered(null));
  }

  onError(err: Error): void {
    if (this.statusCode !== null) {
      // The status already arrived, so it stands (a 2xx was processed); the body problem is only noted.
      this.settle(this.answered(`reading response body: ${this.timedOut ? this.timeoutMessage() : messageOf(err)}`));
      return;
    }
    this.settle(
      this.timedOut ? failure("timeout", this.timeoutMessage(), this.started) : failure(classifyError(err), messageOf(err), this.started),
    );
  }

  private answered(bodyError: string | null): SendResult {
    return {
      statusCode: this.statusCode,
      errorClass: null,
      errorMessage: bodyError,
      retryAfter: this.retryAfter,
      responseBody: decodeCapped(this.kept, this.keptBytes, this.maxBytes, this.truncated),
      latencyMs: elapsed(this.started),
    };
  }

  private settle(r: SendResult): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    this.resolve(r);
  }

  private timeoutMessage(): string {
    return `timed out after ${this.timeoutMs} ms`;
  }
}

function onTimeout(exchange: Exchange): void {
  exchange.expire();
}

/** The first value of header `name` (lower case) in undici's raw [name, value, …] list. */
function rawHeader(raw: Buffer[], name: string): string | null {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!;
    if (k.length === name.length && k.toString("latin1").toLowerCase() === name) return raw[i + 1]!.toString("latin1");
  }
  return null;
}

function failure(errorClass: ErrorClass, message: string, started: number): SendResult {
  return { statusCode: null, errorClass, errorMessage: message, retryAfter: null, responseBody: "", latencyMs: elapsed(started) };
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

// A name that does not resolve. EAI_AGAIN (the resolver could not answer right now) is not here:
// it heals by itself, so it counts as a connection failure, not one that pauses at once.
const DNS_CODES = new Set(["ENOTFOUND", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL"]);
const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT", "ABORT_ERR"]);
const TLS_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "HOSTNAME_MISMATCH",
  "EPROTO",
]);
const INVALID_RESPONSE_CODES = new Set(["UND_ERR_RES_CONTENT_LENGTH_MISMATCH", "UND_ERR_RES_EXCEEDED_MAX_SIZE", "UND_ERR_INFO"]);

function classifyCode(code: string): ErrorClass | null {
  if (DNS_CODES.has(code)) return "dns";
  if (TIMEOUT_CODES.has(code)) return "timeout";
  if (TLS_CODES.has(code) || code.startsWith("ERR_TLS_") || code.startsWith("ERR_SSL_") || code.startsWith("CERT_")) return "tls";
  if (code.startsWith("HPE_") || INVALID_RESPONSE_CODES.has(code)) return "invalid_response";
  return null;
}

/** Maps a request failure to its class, looking through `cause` and AggregateError wrappers. */
export function classifyError(err: unknown): ErrorClass {
  const queue: unknown[] = [err];
  let found: ErrorClass | null = null;
  for (let i = 0; i < queue.length && i < 16; i++) {
    const e = queue[i];
    if (e instanceof BlockedAddressError) return "blocked";
    if (typeof e !== "object" || e === null) continue;
    const { code, name, cause, errors } = e as { code?: unknown; name?: unknown; cause?: unknown; errors?: unknown };
    if (found === null) {
      if (typeof code === "string") found = classifyCode(code);
      if (found === null && (name === "AbortError" || name === "TimeoutError")) found = "timeout";
      // undici's parser errors do not always carry an HPE_ code.
      if (found === null && name === "HTTPParserError") found = "invalid_response";
    }
    if (cause !== undefined) queue.push(cause);
    if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
  }
  return found ?? "connection";
}

function messageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error && cause.message !== "" && !err.message.includes(cause.message)) {
    return `${err.message}: ${cause.message}`;
  }
  return err.message;
}

/**
 * UTF-8 text of the kept bytes, never more than `max` bytes once re-encoded: a character cut by
 * truncation is dropped, and NUL (which Postgres text columns reject) becomes U+FFFD.
 */
function decodeCapped(chunks: Buffer[], length: number, max: number, truncated: boolean): string {
  if (length === 0) return "";
  const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  let text = buf.toString("utf8", 0, truncated ? utf8Boundary(buf, length) : length);
  if (text.includes("\u0000")) text = text.replaceAll("\u0000", "\uFFFD");
  // Invalid input bytes decode to U+FFFD (3 bytes each), so the text can outgrow its source.
  if (Buffer.byteLength(text) > max) {
    const again = Buffer.from(text);
    text = again.toString("utf8", 0, utf8Boundary(again, max));
  }
  return text;
}

/** The largest end ≤ `end` that does not split a UTF-8 sequence of `buf`. */
function utf8Boundary(buf: Buffer, end: number): number {
  let i = end - 1;
  // Walk back over at most 3 continuation bytes (10xxxxxx) to the lead byte.
  while (i >= 0 && end - i <= 3 && (buf[i]! & 0xc0) === 0x80) i--;
  if (i < 0) return end;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return i + need > end ? i : end;
}
