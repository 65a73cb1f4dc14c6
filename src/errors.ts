// Errors with stable codes (SLUICE_<AREA>_<WHAT>). A code, once shipped, never changes meaning:
// clients branch on it. Its message is a template defined beside it: the fixed part says what is
// wrong and how to mend it; only the facts that vary (an id, a host, a reason) are {placeholders},
// and the compiler checks that every throw fills each one.

export interface FieldError {
  field: string;
  message: string;
}

/**
 * Every code Sluice answers or exits with, defined here once: its HTTP status (`status`; the
 * start-up codes, which no request meets, have none), where it is documented (`docs`: the API
 * codes in docs/api.md, the start-up ones in docs/configuration.md — test/unit/errors.test.ts keeps
 * both lists exact, and the API codes' messages too), when it happens, and its `message` template.
 * Each template is one string literal, never joined with +: a joined one is typed `string`, and
 * its placeholders would go unchecked (test/unit/errors.test.ts refuses that too).
 */
export const ERROR_CATALOGUE = {
  SLUICE_REQUEST_MALFORMED_JSON: {
    status: 400,
    docs: "api",
    when: "the body is not valid JSON",
    message: "The body is not valid JSON ({reason}). Check quoting and trailing commas.",
  },
  SLUICE_REQUEST_EMPTY_BODY: {
    status: 400,
    docs: "api",
    when: "Content-Type says JSON but the body is empty",
    message: "The body is empty but Content-Type says JSON; send a JSON object.",
  },
  SLUICE_REQUEST_INVALID: {
    status: 400,
    docs: "api",
    when: "a request Fastify refuses for another reason (the message says which)",
    message: "The request was refused: {reason}. Nothing was done; GET /openapi.json describes what each route takes.",
  },
  SLUICE_AUTH_TENANT_REQUIRED: {
    status: 400,
    docs: "api",
    when: "the admin key on a tenant's route without a Sluice-Tenant header",
    message:
      "The admin key acts for one tenant at a time: send the header 'Sluice-Tenant: ten_…' naming the tenant (GET /v1/tenants lists them), or call with that tenant's API key.",
  },
  SLUICE_AUTH_INVALID_KEY: {
    status: 401,
    docs: "api",
    when: "missing or unknown API key",
    message:
      "{problem}. Send the header 'Authorization: Bearer <api key>' with a key printed at Sluice's first start or returned by POST /v1/tenants or POST /v1/api-keys; POST /v1/tenants takes the admin key (SLUICE_ADMIN_KEY) as its Bearer token instead.",
  },
  SLUICE_PORTAL_LINK_INVALID: {
    status: 401,
    docs: "api",
    when: "a portal token that expired, was revoked or is not known",
    message: "This portal link {problem}; ask whoever gave it to you for a new one.",
  },
  SLUICE_AUTH_ADMIN_DISABLED: {
    status: 403,
    docs: "api",
    when: "POST or GET /v1/tenants without SLUICE_ADMIN_KEY configured",
    message: "Creating and listing tenants needs an admin key: start Sluice with SLUICE_ADMIN_KEY set.",
  },
  SLUICE_AUTH_ADMIN_REQUIRED: {
    status: 403,
    docs: "api",
    when: "GET /v1/tenants, or a Sluice-Tenant header naming another tenant, with a key that is not the admin key",
    message: "{what} takes the admin key (SLUICE_ADMIN_KEY) as its Bearer token, not a tenant's API key or a portal link.",
  },
  SLUICE_PORTAL_FORBIDDEN: {
    status: 403,
    docs: "api",
    when: "a portal link on a route portals may not use",
    message:
      "Portal links can only read their destinations, deliveries and attempts and, unless read-only, pause, resume, retry and edit those destinations; {method} {path} needs the tenant's API key.",
  },
  SLUICE_PORTAL_READ_ONLY: {
    status: 403,
    docs: "api",
    when: "a read-only portal link on a route that changes something (or reads a secret)",
    message:
      "This portal link is read-only: it can view its destinations, deliveries and attempts, but not {method} {path}. Ask for a portal link made without read_only.",
  },
  SLUICE_PORTAL_SESSION_REQUIRED: {
    status: 403,
    docs: "api",
    when: "GET /v1/portal-session with an API key or the admin key",
    message:
      "GET /v1/portal-session describes the portal link it is called with: send the portal token (sp_…) as the Bearer token, not an API key or the admin key.",
  },
  SLUICE_DESTINATION_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such destination for this key",
    message: "No destination with id '{id}' exists for this API key. Check the id, and that you use the key of the tenant that owns it.",
  },
  SLUICE_DELIVERY_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such delivery for this key",
    message: "No delivery with id '{id}' exists for this API key. Check the id, and that you use the key of the tenant that owns it.",
  },
  SLUICE_EVENT_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such event for this key",
    message: "No event with id '{id}' exists for this API key. Check the id, and that you use the key of the tenant that owns it.",
  },
  SLUICE_API_KEY_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such API key id in this key's tenant",
    message:
      "No API key with id '{id}' exists for this tenant. GET /v1/api-keys lists this tenant's keys; another tenant's keys can only be deleted with that tenant's key.",
  },
  SLUICE_RECOVERY_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such recovery of this destination for this key",
    message: "No recovery with id '{id}' exists for this API key. Check the id, and that you use the key of the tenant that owns it.",
  },
  SLUICE_TENANT_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "the Sluice-Tenant header names no tenant",
    message: "No tenant with id '{id}' exists. Check the Sluice-Tenant header; GET /v1/tenants (admin key) lists the tenants.",
  },
  SLUICE_CELL_NOT_SERVED: {
    status: 404,
    docs: "api",
    when: "an API process serving cells gets a request for a cell it does not serve",
    message:
      "{what} is in cell '{cell}', which this API process does not serve (it serves {served}). Send the request to a process whose SLUICE_CELLS lists that cell.",
  },
  SLUICE_PORTAL_SESSION_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such portal session in this key's tenant",
    message:
      "No portal session with id '{id}' exists for this tenant (a revoked one is gone). Use the id (pst_…) that POST /v1/portal-sessions returned, not the token.",
  },
  SLUICE_ROUTE_NOT_FOUND: {
    status: 404,
    docs: "api",
    when: "no such route",
    message: "No route {method} {path}; see GET /openapi.json for the API.",
  },
  SLUICE_IDEMPOTENCY_KEY_REUSED: {
    status: 409,
    docs: "api",
    when: "an Idempotency-Key reused with a different body",
    message: "Idempotency-Key '{key}' was used in the last 24 hours with a different body. Use a new key for a new request.",
  },
  SLUICE_DELIVERY_NOT_RETRYABLE: {
    status: 409,
    docs: "api",
    when: "retrying a delivery that is not dead or discarded",
    message: "Delivery '{id}' is {status}; only dead or discarded deliveries can be retried.",
  },
  SLUICE_DESTINATION_CONFIG_INVALID: {
    status: 409,
    docs: "api",
    when: "resuming a destination whose stored config is outside what the API admits",
    message:
      "Destination '{id}' cannot be resumed: its stored config is outside what Sluice admits ({problem}). Correct it with PATCH first, then resume.",
  },
  SLUICE_API_KEY_LAST: {
    status: 409,
    docs: "api",
    when: "deleting the tenant's last API key (create another first)",
    message:
      "API key '{id}' is this tenant's last key; deleting it would lock the tenant out for good. Create another key first (POST /v1/api-keys), then delete this one.",
  },
  SLUICE_EVENT_PAYLOAD_TOO_LARGE: {
    status: 413,
    docs: "api",
    when: "an event payload over SLUICE_MAX_PAYLOAD_BYTES",
    message:
      "{field} is {bytes} bytes; at most {limit} are allowed (SLUICE_MAX_PAYLOAD_BYTES). Send a reference (an id or URL) instead of the whole document.",
  },
  SLUICE_EVENT_FANOUT_TOO_LARGE: {
    status: 413,
    docs: "api",
    when: "a publish that would create more deliveries than SLUICE_MAX_DELIVERIES_PER_REQUEST",
    message:
      "This request would create {deliveries} deliveries (its events times the destinations each reaches); at most {limit} are created by one request (SLUICE_MAX_DELIVERIES_PER_REQUEST). Publish the events in smaller batches.",
  },
  SLUICE_REQUEST_TOO_LARGE: {
    status: 413,
    docs: "api",
    when: "a request body over the limit",
    message:
      "The request body is larger than allowed. An event payload may be at most SLUICE_MAX_PAYLOAD_BYTES (default 1 MiB); split large batches.",
  },
  SLUICE_REQUEST_TIMEOUT: {
    status: 408,
    docs: "api",
    when: "a request that did not arrive whole within two minutes",
    message: "The request did not arrive whole within two minutes. Send it again; split a large batch into smaller ones on a slow link.",
  },
  SLUICE_REQUEST_HEADERS_TOO_LARGE: {
    status: 431,
    docs: "api",
    when: "a request line and headers over 16 KiB",
    message:
      "The request line and headers are larger than 16 KiB. Put fewer or shorter values in the query string, and send large inputs in a JSON body.",
  },
  SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    docs: "api",
    when: "a body that is not application/json",
    message: "The API takes JSON bodies only. Send JSON with 'Content-Type: application/json'.",
  },
  SLUICE_VALIDATION_FAILED: {
    status: 422,
    docs: "api",
    when: "invalid fields; details names each",
    // Each problem is "<field> <what it must be>"; details lists them one by one.
    message: "Invalid {subject}: {problems}",
  },
  SLUICE_INTERNAL: {
    status: 500,
    docs: "api",
    when: "a bug in Sluice (logged); retrying is safe",
    message: "Sluice hit an internal error; it is logged. Retrying is safe.",
  },
  SLUICE_STORE_UNAVAILABLE: {
    status: 503,
    docs: "api",
    when: "the store cannot be reached right now",
    message:
      "Sluice lost touch with its store ({store}): {problem}. Retry after a few seconds: Sluice reconnects by itself. Send an Idempotency-Key with events, so that a repeat is answered with the first result instead of publishing twice.",
  },
  // Not an answer: the error of an attempt refused by the network policy (its class is "blocked").
  SLUICE_DELIVERY_BLOCKED_ADDRESS: {
    status: null,
    docs: "api",
    when: "an attempt's address is refused by the network policy",
    message:
      "Refused to connect to {target}: {reason}, which this Sluice does not deliver to. Set SLUICE_ALLOW_PRIVATE_NETWORKS=1 or add it to SLUICE_ALLOWED_CIDRS (e.g. {cidr}) to allow it.",
  },
  SLUICE_CONFIG_INVALID: {
    status: null,
    docs: "configuration",
    when: "a setting has a bad value",
    // One problem a line; each names the setting and what it takes.
    message: "Invalid configuration:\n  - {problems}",
  },
  SLUICE_LISTEN_FAILED: {
    status: null,
    docs: "configuration",
    when: "the API or metrics port cannot be opened",
    message:
      "Cannot serve {what} on {address}: {problem}.\nFor the port: stop the process that holds it, or choose another with {portFlags}. For the host: set --host / SLUICE_HOST to an address of this machine (0.0.0.0 for all).",
  },
  SLUICE_STORE_LOCKED: {
    status: null,
    docs: "configuration",
    when: "the embedded store is in use by another process",
    message:
      "The embedded store in {dir} is in use by {holder}.\nThe embedded store takes one process at a time: stop that process first, or use another --data-dir (SLUICE_DATA_DIR).\nIf it is a running Sluice, it applies migrations itself when it starts, so there is nothing to migrate (to migrate anyway, stop it first); for an audit, read the attempts through the running API (GET /v1/destinations/ID/attempts), or stop that process and run the audit again.",
  },
  SLUICE_STORE_UNREACHABLE: {
    status: null,
    docs: "configuration",
    when: "the Postgres server did not answer within SLUICE_DB_CONNECT_WAIT_SECONDS",
    message:
      "Cannot reach {store} after trying for {seconds} s ({reason}).\nCheck that the server is running and that the host and port in DATABASE_URL are right; SLUICE_DB_CONNECT_WAIT_SECONDS sets how long to wait for it.",
  },
  SLUICE_STORE_AUTH_FAILED: {
    status: null,
    docs: "configuration",
    when: "the Postgres server refused the login",
    message:
      "{store} refused the login in DATABASE_URL: {reason}.\nCheck the user name and password (special characters in them must be percent-encoded).",
  },
  SLUICE_STORE_NO_DATABASE: {
    status: null,
    docs: "configuration",
    when: "the database in DATABASE_URL does not exist",
    message: "{store} has no such database: {reason}.\nCreate it (createdb NAME) or correct the database name at the end of DATABASE_URL.",
  },
  SLUICE_CELL_UNKNOWN: {
    status: null,
    docs: "configuration",
    when: "SLUICE_CELLS names a cell the database's cell directory does not list",
    message:
      "{store} has no cell {cells}.\nCreate it with `sluice cells create NAME` (same DATABASE_URL), or correct SLUICE_CELLS; `sluice cells list` shows the cells there are.",
  },
  SLUICE_STORE_SCHEMA_NEWER: {
    status: null,
    docs: "configuration",
    when: "the database was migrated by a newer Sluice",
    // {unknown}: "migration 0009_x.sql" or "migrations 0009_x.sql, 0010_y.sql".
    message:
      "The database was migrated by a newer Sluice: it has {unknown}, which this version does not know (its latest is {latest}).\nUpgrade Sluice to the version that migrated it (or newer); an older Sluice cannot run against a newer schema.",
  },
} as const satisfies Record<`SLUICE_${string}`, { status: number | null; docs: "api" | "configuration"; when: string; message: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
type ApiErrorCode = { [C in ErrorCode]: (typeof ERROR_CATALOGUE)[C]["status"] extends number ? C : never }[ErrorCode];
type StartupErrorCode = Exclude<ErrorCode, ApiErrorCode>;

/** The names of a template's {placeholders}: "No {kind} with id '{id}'" → "kind" | "id". */
export type Placeholders<S extends string> = S extends `${string}{${infer P}}${infer R}` ? P | Placeholders<R> : never;

type PlaceholdersOf<C extends ErrorCode> = Placeholders<(typeof ERROR_CATALOGUE)[C]["message"]>;

/**
 * What a code's message needs: one value per placeholder, no more, no fewer (a misspelt one is
 * both missing and unknown, so it fails to compile). A code without placeholders takes none.
 */
export type MessageParams<C extends ErrorCode> = [PlaceholdersOf<C>] extends [never]
  ? Record<string, never>
  : { readonly [K in PlaceholdersOf<C>]: string | number };

export interface SluiceErrorOptions {
  details?: unknown;
  cause?: unknown;
}

/** The arguments after the code: its params (optional when it has no placeholders), then options. */
export type SluiceErrorArgs<C extends ErrorCode> = [PlaceholdersOf<C>] extends [never]
  ? [params?: MessageParams<C>, opts?: SluiceErrorOptions]
  : [params: MessageParams<C>, opts?: SluiceErrorOptions];

const PLACEHOLDER = /\{(\w+)\}/g;

/** The code's message template with each {placeholder} replaced by its value (in one pass). */
export function renderMessage<C extends ErrorCode>(code: C, params: MessageParams<C>): string {
  const values = params as Readonly<Record<string, string | number>>;
  return ERROR_CATALOGUE[code].message.replace(PLACEHOLDER, (whole, name: string) =>
    Object.hasOwn(values, name) ? String(values[name]) : whole,
  );
}

/** The HTTP status of an error code (500 for codes that are not HTTP answers). */
export function statusOf(code: ErrorCode): number {
  return ERROR_CATALOGUE[code].status ?? 500;
}

/**
 * An error with a catalogue code; its message is the code's template filled with `params`:
 * `new SluiceError("SLUICE_DELIVERY_NOT_RETRYABLE", { id, status })`. The one way to make one —
 * the classes below only name the params a caller would otherwise repeat.
 */
export class SluiceError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: unknown;

  constructor(code: C, ...args: SluiceErrorArgs<C>) {
    const [params, opts = {}] = args as [MessageParams<C> | undefined, SluiceErrorOptions | undefined];
    super(renderMessage(code, params ?? ({} as MessageParams<C>)), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SluiceError";
    this.code = code;
    this.statusCode = statusOf(code);
    this.details = opts.details;
  }
}

/** 422: one or more fields are invalid; `details` names each, and the message lists them. */
export class ValidationError extends SluiceError<"SLUICE_VALIDATION_FAILED"> {
  constructor(subject: "request" | "destination" | "event" | "recovery", fields: FieldError[]) {
    const problems = fields.map((f) => `${f.field} ${f.message}`).join("; ");
    super("SLUICE_VALIDATION_FAILED", { subject, problems }, { details: fields });
    this.name = "ValidationError";
  }
}

const NOT_FOUND = {
  destination: "SLUICE_DESTINATION_NOT_FOUND",
  delivery: "SLUICE_DELIVERY_NOT_FOUND",
  event: "SLUICE_EVENT_NOT_FOUND",
  recovery: "SLUICE_RECOVERY_NOT_FOUND",
} as const;

/** 404: no object of `kind` with this id for this key (another tenant's id is 404 too). */
export class NotFoundError extends SluiceError<(typeof NOT_FOUND)[keyof typeof NOT_FOUND]> {
  constructor(kind: keyof typeof NOT_FOUND, id: string) {
    super(NOT_FOUND[kind], { id });
    this.name = "NotFoundError";
  }
}

/** A settings problem found at startup; lists every problem at once. */
export class ConfigError extends SluiceError<"SLUICE_CONFIG_INVALID"> {
  constructor(problems: string[]) {
    super("SLUICE_CONFIG_INVALID", { problems: problems.join("\n  - ") });
    this.name = "ConfigError";
  }
}

/**
 * 503: the store (Postgres) cannot be reached right now. Nothing about the request is wrong; the
 * caller retries after `retryAfterSeconds`. Sluice reconnects by itself.
 */
export class StoreUnavailableError extends SluiceError<"SLUICE_STORE_UNAVAILABLE"> {
  readonly retryAfterSeconds: number;

  constructor(where: string, opts: { cause?: unknown; duringCommit?: boolean; retryAfterSeconds?: number } = {}) {
    // Whether the change happened is what the caller needs to know: unknown only during a commit.
    const problem = opts.duringCommit
      ? "the connection dropped while the change was being committed, so it may or may not have taken effect"
      : "it cannot be reached right now, so nothing was read or written";
    super("SLUICE_STORE_UNAVAILABLE", { store: where, problem }, { cause: opts.cause });
    this.name = "StoreUnavailableError";
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 2;
  }
}

/**
 * Sluice cannot start: the port is taken, the store is locked or unreachable, … The message says
 * what is wrong and how to mend it, in a line or two; the CLI prints it without a stack trace.
 */
export class StartupError<C extends StartupErrorCode = StartupErrorCode> extends SluiceError<C> {
  constructor(code: C, ...args: SluiceErrorArgs<C>) {
    super(code, ...args);
    this.name = "StartupError";
  }
}
