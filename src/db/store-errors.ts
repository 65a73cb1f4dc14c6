import { StoreUnavailableError } from "../errors.js";
import { describeHosts, hasHostList, HostRoleError, parsePostgresUrl } from "./hosts.js";

// What a store's errors mean (try again, or the store is away), and whether it answers now:
// shared by both drivers.

/**
 * Error codes that mean "try the transaction again": a serialization failure, a deadlock, and
 * Citus's "could not find the intermediate result file" (CIINF), which a statement Citus runs in
 * steps meets when the cell it works on moves to another node between two of its steps.
 */
const RETRYABLE = new Set(["40001", "40P01", "CIINF"]);

export function isRetryableDbError(err: unknown): boolean {
  return typeof err === "object" && err !== null && RETRYABLE.has((err as { code?: string }).code ?? "");
}

// "The store cannot be reached now", as opposed to "this statement is wrong": network failures,
// the server shutting down or starting up (57P0x), connection exceptions (class 08), too many
// connections (53300), a write refused as read-only (25006: the session is on a standby, or on a
// primary being switched over, and the next connection may find the new one), and
// node-postgres's own messages for a connection that died or never came.
const UNAVAILABLE_NET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300|25006)$/;
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|is not queryable|Connection ended unexpectedly|connection timeout/i;

/** True when `err` means the store is unreachable (a retry later may succeed), not that the statement is wrong. */
export function isStoreUnavailable(err: unknown): boolean {
  if (err instanceof StoreUnavailableError || err instanceof HostRoleError) return true;
  if (typeof err !== "object" || err === null) return false;
  const { code, message, errors } = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === "string" && (UNAVAILABLE_NET_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
  if (typeof message === "string" && UNAVAILABLE_MESSAGE.test(message)) return true;
  // A connect to a name with several addresses, or to a list of hosts, fails with an
  // AggregateError of each attempt.
  return Array.isArray(errors) && errors.length > 0 && errors.every(isStoreUnavailable);
}

/** "Postgres at host:port/db" (or "h1:5432,h2:5432/db" for a host list) — never the user or password. */
export function describeServer(url: string): string {
  try {
    if (hasHostList(url)) {
      const { hosts, baseUrl } = parsePostgresUrl(url);
      const path = new URL(baseUrl).pathname;
      return `Postgres at ${describeHosts(hosts)}${path.length > 1 ? path : ""}`;
    }
    const u = new URL(url);
    return `Postgres at ${u.hostname}:${u.port || "5432"}${u.pathname.length > 1 ? u.pathname : ""}`;
  } catch {
    return "the Postgres server named by DATABASE_URL";
  }
}

/** Tracks whether the store answers, and tells subscribers when that changes. */
export class Availability {
  available = true;
  private readonly subscribers = new Set<(available: boolean, err?: StoreUnavailableError) => void>();

  subscribe(cb: (available: boolean, err?: StoreUnavailableError) => void): () => void {
    this.subscribers.add(cb);
    return () => this.subscribers.delete(cb);
  }

  up(): void {
    if (this.available) return;
    this.available = true;
    for (const cb of this.subscribers) cb(true);
  }

  down(err: StoreUnavailableError): void {
    if (!this.available) return;
    this.available = false;
    for (const cb of this.subscribers) cb(false, err);
  }

  /** A try to bring it back failed (the embedded store's folder did not open): subscribers hear why. */
  stillDown(err: StoreUnavailableError): void {
    if (this.available) return;
    for (const cb of this.subscribers) cb(false, err);
  }
}
