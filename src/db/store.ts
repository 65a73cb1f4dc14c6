import type { StoreUnavailableError } from "../errors.js";
import { GENERIC_SETTINGS } from "./statements.js";

// One small interface over both stores. Everything above it writes one SQL dialect; the two
// implementations differ only in how they connect, run transactions and pass notifications.

export interface Queryable {
  /** Runs one statement with `$n` parameters and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * What a transaction's function (Db.tx) runs its statements through. On the server store the
 * connection is pipelined: statements issued without waiting for the one before go out at once,
 * one round trip for all (Postgres still runs them one after the other, each with a snapshot of
 * its own). Await them together (Promise.all), so that a failure of one never goes unhandled; a
 * statement behind a failed one fails too (the transaction is aborted). BEGIN rides along with
 * the first statement in the same way.
 */
export interface TxQueryable extends Queryable {
  /**
   * Runs the transaction's last statement and commits: on the server store the COMMIT goes out
   * right behind it, in the same round trip. Nothing may run in the transaction after it.
   */
  queryAndCommit<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

/**
 * `q` for a function that runs the transaction's last statement: its one statement commits the
 * transaction as it runs (TxQueryable.queryAndCommit). A function that runs no statement leaves
 * the commit to Db.tx, as usual.
 */
export function lastStatement(q: TxQueryable): Queryable {
  return {
    query: (sql, params) => q.queryAndCommit(sql, params),
    exec: () => Promise.reject(new Error("exec cannot be a transaction's last statement: use query")),
  };
}

/** A transaction's function ran a statement after queryAndCommit: a bug in that function. */
export const afterCommit = (): Error => new Error("a statement after queryAndCommit: the transaction is already over");

export interface TxOptions {
  /**
   * For the claim and the write-back, whose statements join a small batch to big tables by key:
   * plan each once per connection whatever the parameters (force_generic_plan), with hash and
   * merge joins, sequential scans and JIT off for the transaction (GENERIC_SETTINGS). A generic
   * plan cannot see how small the batch is, nor how many rows the volatile `leases` holds, and a
   * cost estimate past jit_above_cost would compile for longer than these statements run.
   * docs/architecture.md ("Round trips and plans") says more; CHANGELOG.md (Claim) what each setting measured.
   */
  genericPlans?: boolean;
}

/** BEGIN for TxOptions.genericPlans: the settings ride along, in the same round trip. */
export const BEGIN_GENERIC = ["BEGIN", ...GENERIC_SETTINGS.map(([k, v]) => `SET LOCAL ${k} = ${v}`)].join("; ");
/**
 * BEGIN_GENERIC on a Citus coordinator: without forced generic plans, for which Citus answers
 * "could not create distributed plan". Citus plans a cell's statements as router queries, the
 * node holding the cell each statement's own plan.
 */
export const BEGIN_GENERIC_CITUS = [
  "BEGIN",
  ...GENERIC_SETTINGS.filter(([k]) => k !== "plan_cache_mode").map(([k, v]) => `SET LOCAL ${k} = ${v}`),
].join("; ");

export interface Db extends Queryable {
  readonly kind: "embedded" | "server";
  /**
   * The server is a Citus coordinator and this store is a cell of it (docs/citus.md): a few
   * statements take the form Citus runs, and the janitor leaves vacuum and index rebuilds to the
   * node holding the cell.
   */
  readonly citus: boolean;
  /** Where the store is, for messages: "Postgres at host:5432" or "embedded Postgres in ./.sluice". */
  readonly where: string;
  /** False from a failure to reach the store until the next statement that succeeds. */
  readonly available: boolean;
  /**
   * Called with the new value each time `available` changes — and with false again, and why, each
   * time a try to bring the store back fails (the embedded store reopening its folder). The
   * returned function unsubscribes.
   */
  onAvailability(cb: (available: boolean, err?: StoreUnavailableError) => void): () => void;
  /**
   * A maintenance statement (the janitor's REINDEX) outside any transaction, on one core: Postgres would
   * give it parallel workers, which on a small server take the cores that deliveries need (in a
   * scratch run, a REINDEX CONCURRENTLY of a 1.5-million-row primary key raised small commits' p99
   * from about 1 ms to 3.2–4.2 with its worker, to 1.5–1.6 built alone, in 2.2–2.4 s, not 1.7).
   * Behind a transaction pooler it runs as exec() does: a session setting there would outlive the
   * statement on whichever server connection took it. The embedded store has no parallel workers.
   */
  execMaintenance(sql: string): Promise<void>;
  /** Runs `fn` in one transaction; commits when it resolves (or at q.queryAndCommit), rolls back when it throws. */
  tx<T>(fn: (q: TxQueryable) => Promise<T>, opts?: TxOptions): Promise<T>;
  /**
   * The channel name notifications on `name` travel under in this store: `name`, or for a cell
   * (cells.ts) a name of its own, since channels belong to the database that cells share. A
   * statement that notifies itself (notifiesFromSql) must use it; notify() and listen() do.
   */
  channel(name: string): string;
  /** Signals listeners in every process sharing this store (call after commit). */
  notify(channel: string, payload?: string): Promise<void>;
  /**
   * True when `pg_notify` inside a statement reaches this store's listeners as the statement
   * commits (server). False for the embedded store, whose listeners are signalled in process
   * by notify().
   */
  readonly notifiesFromSql: boolean;
  /** Subscribes to a channel; the returned function unsubscribes. */
  listen(channel: string, cb: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
