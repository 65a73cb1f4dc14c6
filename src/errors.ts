// Errors with stable codes (SLUICE_<AREA>_<WHAT>). A code, once shipped, never changes meaning:
// clients branch on it. The message says what is wrong and how to mend it.

export interface FieldError {
  field: string;
  message: string;
}

export class SluiceError extends Error {
  readonly code: string;
  readonly statusCode: number;
  readonly details: unknown;

  constructor(code: string, message: string, opts: { statusCode?: number; details?: unknown; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "SluiceError";
    this.code = code;
    this.statusCode = opts.statusCode ?? 500;
    this.details = opts.details;
  }
}

/** 422: one or more fields are invalid; `details` names each. */
export class ValidationError extends SluiceError {
  constructor(message: string, fields: FieldError[], code = "SLUICE_VALIDATION_FAILED") {
    super(code, message, { statusCode: 422, details: fields });
    this.name = "ValidationError";
  }
}

export class NotFoundError extends SluiceError {
  constructor(kind: string, id: string) {
    super(`SLUICE_${kind.toUpperCase()}_NOT_FOUND`, `No ${kind} with id '${id}' exists for this API key. Check the id, and that you use the key of the tenant that owns it.`, { statusCode: 404 });
    this.name = "NotFoundError";
  }
}

export class ConflictError extends SluiceError {
  constructor(code: string, message: string) {
    super(code, message, { statusCode: 409 });
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
    super("SLUICE_STORE_UNAVAILABLE", what, { statusCode: 503, cause: opts.cause });
    this.name = "StoreUnavailableError";
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 2;
  }
}

/**
 * Sluice cannot start: the port is taken, the store is locked or unreachable, … The message says
 * what is wrong and how to mend it, in a line or two; the CLI prints it without a stack trace.
 */
export class StartupError extends SluiceError {
  constructor(code: string, message: string, opts: { cause?: unknown } = {}) {
    super(code, message, opts);
    this.name = "StartupError";
  }
}
