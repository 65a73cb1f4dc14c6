// Errors with stable codes (SLUICE_<AREA>_<WHAT>). A code, once shipped, never changes meaning:
// clients branch on it. The message says what is wrong and how to mend it.

export interface FieldError {
  field: string;
  message: string;
}

/**
 * Every code Sluice answers or exits with, defined here once: its HTTP status (`status`; the
 * start-up codes, which no request meets, have none), where it is documented (`docs`: the API
 * codes in docs/api.md, the start-up ones in docs/configuration.md — test/unit/errors.test.ts keeps
 * both lists exact) and when it happens.
 */
export const ERROR_CATALOGUE = {
  SLUICE_REQUEST_MALFORMED_JSON: { status: 400, docs: "api", when: "the body is not valid JSON" },
  SLUICE_REQUEST_EMPTY_BODY: { status: 400, docs: "api", when: "Content-Type says JSON but the body is empty" },
  SLUICE_REQUEST_INVALID: { status: 400, docs: "api", when: "a request Fastify refuses for another reason (the message says which)" },
  SLUICE_AUTH_INVALID_KEY: { status: 401, docs: "api", when: "missing or unknown API key" },
  SLUICE_AUTH_ADMIN_DISABLED: { status: 403, docs: "api", when: "POST /v1/tenants without SLUICE_ADMIN_KEY configured" },
  SLUICE_DESTINATION_NOT_FOUND: { status: 404, docs: "api", when: "no such destination for this key" },
  SLUICE_DELIVERY_NOT_FOUND: { status: 404, docs: "api", when: "no such delivery for this key" },
  SLUICE_EVENT_NOT_FOUND: { status: 404, docs: "api", when: "no such event for this key" },
  SLUICE_ROUTE_NOT_FOUND: { status: 404, docs: "api", when: "no such route" },
  SLUICE_IDEMPOTENCY_KEY_REUSED: { status: 409, docs: "api", when: "an Idempotency-Key reused with a different body" },
  SLUICE_DELIVERY_NOT_RETRYABLE: { status: 409, docs: "api", when: "retrying a delivery that is not dead or discarded" },
  SLUICE_EVENT_PAYLOAD_TOO_LARGE: { status: 413, docs: "api", when: "an event payload over SLUICE_MAX_PAYLOAD_BYTES" },
  SLUICE_REQUEST_TOO_LARGE: { status: 413, docs: "api", when: "a request body over the limit" },
  SLUICE_REQUEST_UNSUPPORTED_MEDIA_TYPE: { status: 415, docs: "api", when: "a body that is not application/json" },
  SLUICE_VALIDATION_FAILED: { status: 422, docs: "api", when: "invalid fields; details names each" },
  SLUICE_INTERNAL: { status: 500, docs: "api", when: "a bug in Sluice (logged); retrying is safe" },
  SLUICE_STORE_UNAVAILABLE: { status: 503, docs: "api", when: "the store cannot be reached right now" },
  // Not an answer: the error of an attempt refused by the network policy (its class is "blocked").
  SLUICE_DELIVERY_BLOCKED_ADDRESS: { status: null, docs: "api", when: "an attempt's address is refused by the network policy" },
  SLUICE_CONFIG_INVALID: { status: null, docs: "configuration", when: "a setting has a bad value" },
  SLUICE_LISTEN_FAILED: { status: null, docs: "configuration", when: "the API or metrics port cannot be opened" },
  SLUICE_STORE_LOCKED: { status: null, docs: "configuration", when: "the embedded store is in use by another process" },
  SLUICE_STORE_UNREACHABLE: {
    status: null,
    docs: "configuration",
    when: "the Postgres server did not answer within SLUICE_DB_CONNECT_WAIT_SECONDS",
  },
  SLUICE_STORE_AUTH_FAILED: { status: null, docs: "configuration", when: "the Postgres server refused the login" },
  SLUICE_STORE_NO_DATABASE: { status: null, docs: "configuration", when: "the database in DATABASE_URL does not exist" },
  SLUICE_STORE_SCHEMA_NEWER: { status: null, docs: "configuration", when: "the database was migrated by a newer Sluice" },
} as const satisfies Record<`SLUICE_${string}`, { status: number | null; docs: "api" | "configuration"; when: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
type ApiErrorCode = { [C in ErrorCode]: (typeof ERROR_CATALOGUE)[C]["status"] extends number ? C : never }[ErrorCode];
type StartupErrorCode = Exclude<ErrorCode, ApiErrorCode>;

/** The HTTP status of an error code (500 for codes that are not HTTP answers). */
export function statusOf(code: ErrorCode): number {
  return ERROR_CATALOGUE[code].status ?? 500;
}

export class SluiceError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, opts: { details?: unknown; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SluiceError";
    this.code = code;
    this.statusCode = statusOf(code);
    this.details = opts.details;
  }
}

/** 422: one or more fields are invalid; `details` names each. */
export class ValidationError extends SluiceError {
  constructor(message: string, fields: FieldError[]) {
    super("SLUICE_VALIDATION_FAILED", message, { details: fields });
    this.name = "ValidationError";
  }
}

const NOT_FOUND = {
  destination: "SLUICE_DESTINATION_NOT_FOUND",
  delivery: "SLUICE_DELIVERY_NOT_FOUND",
  event: "SLUICE_EVENT_NOT_FOUND",
} as const;

export class NotFoundError extends SluiceError {
  constructor(kind: keyof typeof NOT_FOUND, id: string) {
    super(
      NOT_FOUND[kind],
      `No ${kind} with id '${id}' exists for this API key. Check the id, and that you use the key of the tenant that owns it.`,
    );
    this.name = "NotFoundError";
  }
}

export class ConflictError extends SluiceError {
  constructor(code: "SLUICE_IDEMPOTENCY_KEY_REUSED" | "SLUICE_DELIVERY_NOT_RETRYABLE", message: string) {
    super(code, message);
    this.name = "ConflictError";
  }
}

/** A settings problem found at startup; lists every problem at once. */
export class ConfigError extends SluiceError {
  constructor(problems: string[]) {
    super("SLUICE_CONFIG_INVALID", `Invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

/**
 * 503: the store (Postgres) cannot be reached right now. Nothing about the request is wrong; the
 * caller retries after `retryAfterSeconds`. Sluice reconnects by itself.
 */
export class StoreUnavailableError extends SluiceError {
  readonly retryAfterSeconds: number;

  constructor(where: string, opts: { cause?: unknown; duringCommit?: boolean; retryAfterSeconds?: number } = {}) {
    const what = opts.duringCommit
      ? `The connection to Sluice's store (${where}) dropped while the change was being committed, so it may or may not have taken effect. ` +
        "Retry after a few seconds; send an Idempotency-Key with events so a repeat is answered with the first result instead of publishing twice."
      : `Sluice cannot reach its store (${where}) right now, so nothing was read or written. Retry after a few seconds: Sluice reconnects by itself.`;
    super("SLUICE_STORE_UNAVAILABLE", what, { cause: opts.cause });
    this.name = "StoreUnavailableError";
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 2;
  }
}

/**
 * Sluice cannot start: the port is taken, the store is locked or unreachable, … The message says
 * what is wrong and how to mend it, in a line or two; the CLI prints it without a stack trace.
 */
export class StartupError extends SluiceError {
  constructor(code: StartupErrorCode, message: string, opts: { cause?: unknown } = {}) {
    super(code, message, opts);
    this.name = "StartupError";
  }
}
