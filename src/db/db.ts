import { EventEmitter } from "node:events";
import { mkdirSync } from "node:fs";
import pg from "pg";
import { StoreUnavailableError } from "../errors.js";
import { openSessionThread, ThreadStoppedError, type SessionThread } from "./embedded-thread.js";
import { GENERIC_SETTINGS, StatementNames, againIfReshaped, isStaleShape, type TxStep } from "./statements.js";

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
const afterCommit = (): Error => new Error("a statement after queryAndCommit: the transaction is already over");

export interface TxOptions {
  /**
   * Plan each statement once per connection and reuse the plan whatever the parameters
   * (plan_cache_mode = force_generic_plan for this transaction). For the claim and write-back,
   * whose statements take ~0.4–1 ms to plan and well under 0.1 ms to run on a small batch: with
   * custom plans Postgres never settles on the generic one, since a one-row custom plan always
   * looks cheaper. Only for statements whose best plan does not depend on the values.
   *
   * Hash and merge joins are off too: these statements join a small batch (a claim's grants, a
   * write-back's results) to big tables by key, where looking each row up by index is always
   * right — but a generic plan cannot see how small the batch is. Once the tables had statistics
   * it guessed 10 % of a destination's backlog per grant, and hashed all of `deliveries` (35 ms
   * at 85,000 rows, growing with the table) to update a dozen rows (1 ms by index).
   *
   * Sequential scans are off as well, for `leases`: small and volatile, it may hold nothing when a
   * connection plans these statements (an idle start; vacuum truncates it) and thousands of rows
   * under load, while the plans stay cached for the connection's life. Planned as a one-row
   * table, every lookup in it would be a scan of it. (No statement here wants a sequential scan.)
   *
   * And JIT compilation is off. Postgres compiles a statement whose estimated cost passes
   * `jit_above_cost` (100,000 by default), and a generic plan's estimate can pass it for a claim
   * that reads a few rows: at 100,000 destinations, once `leases` (a row in and out per delivery)
   * had been analyzed bloated, the claim's state read was estimated at 167,000 and spent 39 ms of
   * its 77 ms compiling (`npm run bench:scale`, session 32). Most likely that is what once
   * turned the last 0.1 % of a million deliveries into a minute-long trickle. These statements
   * run in well under a millisecond: compiling never pays. (PGlite has no JIT; nothing changes there.)
   */
  genericPlans?: boolean;
}

/** BEGIN for TxOptions.genericPlans: the settings ride along, in the same round trip. */
export const BEGIN_GENERIC = ["BEGIN", ...GENERIC_SETTINGS.map(([k, v]) => `SET LOCAL ${k} = ${v}`)].join("; ");

export interface Db extends Queryable {
  readonly kind: "embedded" | "server";
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
  /** Runs `fn` in one transaction; commits when it resolves (or at q.queryAndCommit), rolls back when it throws. */
  tx<T>(fn: (q: TxQueryable) => Promise<T>, opts?: TxOptions): Promise<T>;
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

/** Postgres error codes that mean "try the transaction again". */
const RETRYABLE = new Set(["40001", "40P01"]);

export function isRetryableDbError(err: unknown): boolean {
  return typeof err === "object" && err !== null && RETRYABLE.has((err as { code?: string }).code ?? "");
}

// "The store cannot be reached now", as opposed to "this statement is wrong": network failures,
// the server shutting down or starting up (57P0x), connection exceptions (class 08), too many
// connections (53300), and node-postgres's own messages for a connection that died or never came.
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
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300)$/;
const UNAVAILABLE_MESSAGE =
  /Connection terminated|timeout exceeded when trying to connect|is not queryable|Connection ended unexpectedly|connection timeout/i;

/** True when `err` means the store is unreachable (a retry later may succeed), not that the statement is wrong. */
export function isStoreUnavailable(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (typeof err !== "object" || err === null) return false;
  const { code, message, errors } = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === "string" && (UNAVAILABLE_NET_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code))) return true;
  if (typeof message === "string" && UNAVAILABLE_MESSAGE.test(message)) return true;
  // A connect to a name with several addresses fails with an AggregateError of each attempt.
  return Array.isArray(errors) && errors.length > 0 && errors.every(isStoreUnavailable);
}

/** "Postgres at host:port/db" — never the user or password. */
export function describeServer(url: string): string {
  try {
    const u = new URL(url);
    return `Postgres at ${u.hostname}:${u.port || "5432"}${u.pathname.length > 1 ? u.pathname : ""}`;
  } catch {
    return "the Postgres server named by DATABASE_URL";
  }
}

/** Tracks whether the store answers, and tells subscribers when that changes. */
class Availability {
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

// Postgres int8 and numeric arrive as strings from node-postgres; Sluice casts counts to int in
// SQL instead, so both drivers return the same JS types.

class ServerDb implements Db {
  readonly kind = "server" as const;
  readonly notifiesFromSql = true;
  readonly where: string;
  private listener: pg.Client | null = null;
  private readonly emitter = new EventEmitter();
  private readonly listening = new Set<string>();
  private readonly availability = new Availability();
  private readonly statements = new StatementNames();
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {
    this.emitter.setMaxListeners(0);
    this.where = describeServer(url);
    // An idle client whose connection dies: the pool drops it; the next checkout makes a new one.
    pool.on("error", (err) => this.failed(err));
    pool.on("connect", (client) => this.generationOf.set(client, this.generation));
  }

  get available(): boolean {
    return this.availability.available;
  }

  onAvailability(cb: (available: boolean, err?: StoreUnavailableError) => void): () => void {
    return this.availability.subscribe(cb);
  }

  /** Turns a failure to reach the store into StoreUnavailableError (and notes the outage); other errors pass. */
  private failed(err: unknown, duringCommit = false): unknown {
    if (!isStoreUnavailable(err)) return err;
    const e = err instanceof StoreUnavailableError ? err : new StoreUnavailableError(this.where, { cause: err, duringCommit });
    this.availability.down(e);
    return e;
  }

  private async guard<T>(run: () => Promise<T>): Promise<T> {
    try {
      const out = await run();
      this.availability.up();
      return out;
    } catch (err) {
      throw this.failed(err);
    }
  }

  /**
   * A connection that prepared a statement whose rows then changed shape (a migration, see
   * isStaleShape) fails that statement until it is prepared again, and so may every connection
   * opened before the change: each is tagged with the generation it was opened in, and a
   * connection of an older generation than the last such failure's is closed instead of used.
   */
  private generation = 0;
  private readonly generationOf = new WeakMap<pg.Client, number>();

  /** A connection from the pool, of the current generation. */
  private async checkout(): Promise<pg.PoolClient> {
    for (;;) {
      const client = await this.pool.connect();
      if (this.generationOf.get(client) === this.generation) return client;
      client.release(true); // closed: the pool opens a new one in its place
    }
  }

  /** After `err` on `client`: a stale shape retires every connection as old as it. */
  private retireIfReshaped(client: pg.PoolClient, err: unknown): void {
    if (isStaleShape(err)) this.generation = Math.max(this.generation, (this.generationOf.get(client) ?? 0) + 1);
  }

  query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    return this.guard(() =>
      againIfReshaped(async () => {
        const client = await this.checkout();
        // As the pool's own query() does: the connection dying meanwhile is this statement's
        // failure (not an unhandled 'error' event), and a connection that failed is closed.
        let failed = false;
        const onError = () => (failed = true);
        client.on("error", onError);
        try {
          return (await client.query(this.statements.config(sql, params))).rows as R[];
        } catch (err) {
          failed = true;
          this.retireIfReshaped(client, err);
          throw err;
        } finally {
          client.removeListener("error", onError);
          client.release(failed);
        }
      }),
    );
  }

  tx<T>(fn: (q: TxQueryable) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    return againIfReshaped(() => this.txOnce(fn, opts));
  }

  private async txOnce<T>(fn: (q: TxQueryable) => Promise<T>, opts: TxOptions): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.checkout();
    } catch (err) {
      throw this.failed(err);
    }
    // The pool stops listening for a client's errors while it is checked out: without a listener
    // of our own, a connection dying between two statements is an unhandled 'error' event.
    let broken: Error | null = null;
    const onError = (err: Error) => {
      broken = err;
    };
    client.on("error", onError);
    /** COMMIT sent (the outcome is unknown should the connection die now); ended: the transaction is over. */
    let committing = false;
    let ended = false;
    // Not awaited: the first statement goes out right behind it (the client is pipelined). Every
    // statement's answer comes after BEGIN's, and each waits for it too, so a failed BEGIN shows.
    const begun = client.query(opts.genericPlans ? BEGIN_GENERIC : "BEGIN");
    begun.catch(() => undefined);
    const send = async (query: string | pg.QueryConfig): Promise<pg.QueryResult> => {
      if (committing) throw afterCommit();
      const [res] = await Promise.all([client.query(query), begun]);
      return res;
    };
    const run = async <R>(sql: string, params: unknown[]): Promise<R[]> => (await send(this.statements.config(sql, params))).rows as R[];
    try {
      const q: TxQueryable = {
        query: run,
        exec: async (sql: string) => {
          await send(sql);
        },
        queryAndCommit: async <R>(sql: string, params: unknown[] = []) => {
          const statement = run<R>(sql, params);
          committing = true;
          const commit = client.query("COMMIT");
          // A failed statement aborts the transaction, and COMMIT then ends it as a rollback.
          const [rows, done] = await Promise.allSettled([statement, commit]);
          ended = true;
          if (rows.status === "rejected") throw rows.reason;
          if (done.status === "rejected") throw done.reason;
          return rows.value;
        },
      };
      const out = await fn(q);
      if (!ended) {
        committing = true;
        await client.query("COMMIT");
      }
      this.availability.up();
      return out;
    } catch (err) {
      if (!broken && !ended && !isStoreUnavailable(err)) await client.query("ROLLBACK").catch(() => undefined);
      this.retireIfReshaped(client, err);
      throw this.failed(err, committing);
    } finally {
      client.removeListener("error", onError);
      // A client whose connection broke is destroyed, not returned to the pool (nor is one retired above).
      client.release(broken ?? (this.generationOf.get(client) === this.generation ? undefined : true));
    }
  }

  exec(sql: string): Promise<void> {
    return this.guard(async () => {
      await this.pool.query(sql);
    });
  }

  notify(channel: string, payload = ""): Promise<void> {
    return this.guard(async () => {
      await this.pool.query("SELECT pg_notify($1, $2)", [channel, payload]);
    });
  }

  async listen(channel: string, cb: (payload: string) => void): Promise<() => Promise<void>> {
    this.emitter.on(channel, cb);
    if (!this.listening.has(channel)) {
      this.listening.add(channel);
      if (this.listener) await this.listener.query(`LISTEN "${channel.replace(/"/g, "")}"`);
      else await this.connectListener();
    }
    return async () => {
      this.emitter.off(channel, cb);
    };
  }

  /**
   * LISTEN is per session, and pooled clients come and go, so notifications get a connection of
   * their own. When it drops it is re-made every LISTEN_RETRY_MAX_MS at most, and once it is
   * back every subscriber is woken: notifications sent while it was away are lost, so they look.
   */
  private async connectListener(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
    client.on("notification", (n) => this.emitter.emit(n.channel, n.payload ?? ""));
    const lost = (err?: unknown) => {
      if (this.listener !== client || this.closed) return;
      this.listener = null;
      if (err !== undefined) this.failed(err);
      const retry = (delayMs: number) =>
        setTimeout(() => {
          if (this.closed || this.listener) return;
          this.connectListener().then(
            () => {
              this.availability.up();
              for (const ch of this.listening) this.emitter.emit(ch, "");
            },
            () => retry(Math.min(delayMs * 2, LISTEN_RETRY_MAX_MS)),
          );
        }, delayMs).unref();
      retry(100);
    };
    client.on("error", lost);
    client.on("end", () => lost(new Error("Connection terminated unexpectedly")));
    try {
      await client.connect();
      for (const ch of this.listening) await client.query(`LISTEN "${ch.replace(/"/g, "")}"`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw this.failed(err);
    }
    this.listener = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.listener) await this.listener.end().catch(() => undefined);
    await this.pool.end();
  }
}

/** A connection attempt that takes longer than this fails (and the store counts as unreachable). */
const CONNECT_TIMEOUT_MS = 5_000;
/** Longest wait between attempts to re-make the LISTEN connection: delivery resumes within about this of the store's return. */
const LISTEN_RETRY_MAX_MS = 1_000;

/** The wait before attempt `i` (0-based) to open the folder again after the thread crashed: 0.1 s doubling to 10 s. */
const reopenDelayMs = (i: number): number => Math.min(100 * 2 ** i, 10_000);

export class EmbeddedDb implements Db {
  readonly kind = "embedded" as const;
  readonly notifiesFromSql = false;
  readonly where: string;
  // PGlite is one in-process session, so notifications are an in-process signal.
  private readonly emitter = new EventEmitter();
  /** The session's holder (a transaction, or a statement on its own): one at a time, in turn. */
  private turn: Promise<void> = Promise.resolve();
  /**
   * In process, the store cannot become unreachable — but its thread can crash (PGlite out of
   * memory, a trap in its WebAssembly). Until the folder is open again the store is unavailable,
   * as a server is during an outage: the API answers 503, delivery waits, results are kept.
   */
  private readonly availability = new Availability();
  /** The one Postgres session (embedded-session.ts), on a thread of its own (embedded-thread.ts). */
  private session!: SessionThread;
  private closed = false;
  private reopening: Promise<void> | null = null;
  /** Cuts short the wait before the next attempt to reopen (close() does not wait it out). */
  private stopWaiting: (() => void) | null = null;

  private constructor(private readonly dir: string) {
    this.emitter.setMaxListeners(0);
    this.where = this.inMemory ? "embedded Postgres in memory" : `embedded Postgres in ${dir}`;
  }

  /** Opens the store in `dir` (`memory://…`: in memory). */
  static async open(dir: string): Promise<EmbeddedDb> {
    const db = new EmbeddedDb(dir);
    db.session = await db.start();
    return db;
  }

  private get inMemory(): boolean {
    return this.dir.startsWith("memory://");
  }

  /** The store's system identifier (made by initdb, in its control file): which store the folder holds. */
  private identity: string | null = null;

  /**
   * A session on the folder, on a new thread. The first records which store the folder holds; a
   * later one (`existing`: reopening) must find that same store, or it is closed and refused.
   */
  private async start(opts: { existing?: boolean } = {}): Promise<SessionThread> {
    const session = await openSessionThread(this.dir, (err) => this.crashed(err), opts);
    try {
      const rows = (await session.query("SELECT system_identifier::text AS id FROM pg_control_system()", [])) as { id: string }[];
      const id = rows[0]!.id;
      this.identity ??= id;
      if (id !== this.identity) throw new Error(`${this.dir} holds another store now (system identifier ${id}, was ${this.identity})`);
      return session;
    } catch (err) {
      await session.close().catch(() => undefined);
      throw err;
    }
  }

  /** The thread stopped by itself: the store is down until a new thread has opened the folder. */
  private crashed(err: ThreadStoppedError): void {
    if (this.closed) return;
    const why = this.inMemory
      ? new ThreadStoppedError(`${err.message}; a store in memory is lost with it and cannot be reopened`, { cause: err })
      : err;
    this.availability.down(new StoreUnavailableError(this.where, { cause: why }));
    // In memory, what the store held went with the thread: an empty store would be worse than none.
    if (!this.inMemory) this.reopening ??= this.reopen().finally(() => (this.reopening = null));
  }

  /** Opens the folder on a new thread (Postgres recovers it from its WAL), trying until it opens or the store is closed. */
  private async reopen(): Promise<void> {
    for (let i = 0; !this.closed; i++) {
      await new Promise<void>((r) => {
        this.stopWaiting = r;
        setTimeout(r, reopenDelayMs(i)).unref();
      });
      if (this.closed) return;
      let session: SessionThread;
      try {
        // The folder must still hold this store: never a new, empty one made in its place (a
        // folder deleted or a volume unmounted meanwhile), where every statement would fail.
        session = await this.start({ existing: true });
      } catch (err) {
        // Still down; the next attempt waits longer.
        const why = new Error(`the folder did not open again: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        this.availability.stillDown(new StoreUnavailableError(this.where, { cause: why }));
        continue;
      }
      if (this.closed) return void (await session.close().catch(() => undefined));
      this.session = session;
      this.availability.up();
      return;
    }
  }

  get available(): boolean {
    return this.availability.available;
  }

  onAvailability(cb: (available: boolean, err?: StoreUnavailableError) => void): () => void {
    return this.availability.subscribe(cb);
  }

  /** A call that failed because the thread stopped, as StoreUnavailableError; other errors pass. */
  private failed(err: unknown, duringCommit = false): unknown {
    return err instanceof ThreadStoppedError ? new StoreUnavailableError(this.where, { cause: err, duringCommit }) : err;
  }

  /**
   * Runs `fn` with the session to itself: once everything before it has gone out to the session's
   * thread, or been handed on. The thread runs calls in the order sent, so `fn` may call
   * `handOff` once it has sent its last call (a COMMIT, a statement on its own): the next holder
   * sends its calls right behind, and the thread, finishing one, finds the next waiting instead
   * of idling while the answer travels back and Sluice's thread gets round to it (PGlite's thread
   * was idle a quarter of the time under load).
   */
  private async exclusive<T>(fn: (handOff: () => void) => Promise<T>): Promise<T> {
    const before = this.turn;
    let release!: () => void;
    this.turn = new Promise((r) => (release = r));
    await before;
    try {
      return await fn(release);
    } finally {
      release();
    }
  }

  /** One call on the session outside a transaction, a crashed thread's failure turned into StoreUnavailableError. */
  private async guard<T>(call: (session: SessionThread) => Promise<T>): Promise<T> {
    try {
      return await call(this.session);
    } catch (err) {
      throw this.failed(err);
    }
  }

  query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    return this.exclusive((handOff) => {
      const done = this.guard((s) => s.query(sql, params) as Promise<R[]>);
      handOff();
      return done;
    });
  }

  tx<T>(fn: (q: TxQueryable) => Promise<T>, opts: TxOptions = {}): Promise<T> {
    // A statement whose rows changed shape has been prepared anew (embedded-session.ts): again.
    return againIfReshaped(() => this.txOnce(fn, opts));
  }

  private txOnce<T>(fn: (q: TxQueryable) => Promise<T>, opts: TxOptions): Promise<T> {
    return this.exclusive(async (handOff) => {
      // The session the transaction began on, throughout: should its thread crash, the rest of
      // the transaction fails there rather than run on the next thread, outside any transaction.
      const session = this.session;
      /** COMMIT sent: should the thread crash now, whether it took effect is unknown. */
      let committing = false;
      /** BEGIN (and the generic-plan settings), until it goes out with the first statement. */
      let opening: TxStep[] | null = opts.genericPlans ? ["BEGIN", "GENERIC"] : ["BEGIN"];
      const begin = (): TxStep[] => {
        const steps = opening ?? [];
        opening = null;
        return steps;
      };
      /** Over: committed or rolled back (by queryAndCommit), nothing more may run. */
      let over = false;
      // Statements issued together go out at once, and run one after the other in the order
      // issued (one behind a failed one fails too: the transaction is aborted), as on a server.
      let last: Promise<unknown> = Promise.resolve();
      const inTurn = <X>(step: () => Promise<X>): Promise<X> => {
        if (over) return Promise.reject(afterCommit());
        const next = step();
        last = Promise.all([last, next.catch(() => undefined)]);
        return next;
      };
      // COMMIT of a transaction a failed statement aborted ends it as a rollback.
      const settled = (tag: string | null): void => {
        if (tag === "ROLLBACK") throw new Error("the transaction was rolled back: a statement in it failed");
      };
      const rollback = async (): Promise<void> => {
        over = true;
        await last;
        if (opening === null) await session.steps(["ROLLBACK"]);
      };
      const q: TxQueryable = {
        query: <R>(sql: string, params: unknown[] = []) => inTurn(async () => (await session.run(sql, params, begin(), false)).rows as R[]),
        exec: (sql: string) =>
          inTurn(async () => {
            const steps = begin();
            await Promise.all([steps.length > 0 ? session.steps(steps) : null, session.script(sql)]);
          }),
        // One exchange with the thread, as one round trip on a server, and the same outcome.
        queryAndCommit: async <R>(sql: string, params: unknown[] = []) => {
          const statement = inTurn(() => session.run(sql, params, begin(), true));
          over = true;
          committing = true;
          // The thread ends the transaction whatever happens (a failed statement: it rolls back,
          // embedded-worker.ts): the next holder's calls may go out behind it.
          handOff();
          const done = await statement;
          settled(done.tag);
          return done.rows as R[];
        },
      };
      try {
        const out = await fn(q);
        if (!over) {
          over = true;
          committing = true;
          if (opening === null) {
            const commit = session.steps(["COMMIT"]);
            // Handled from now on: it can only fail after the statements before it, but should it
            // fail while `last` is still being awaited, that is no unhandled rejection.
            commit.catch(() => undefined);
            handOff();
            await last;
            settled(await commit);
          }
        }
        return out;
      } catch (err) {
        if (!over) await rollback().catch(() => undefined);
        throw this.failed(err, committing);
      }
    });
  }

  exec(sql: string): Promise<void> {
    return this.exclusive(() => this.guard((s) => s.script(sql)));
  }

  async notify(channel: string, payload = ""): Promise<void> {
    this.emitter.emit(channel, payload);
  }

  async listen(channel: string, cb: (payload: string) => void): Promise<() => Promise<void>> {
    this.emitter.on(channel, cb);
    return async () => {
      this.emitter.off(channel, cb);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopWaiting?.();
    await this.reopening;
    await this.exclusive(async () => {
      try {
        await this.session.close();
      } catch (err) {
        // A thread that crashed is already gone: closing it is done.
        if (!(err instanceof ThreadStoppedError)) throw err;
      }
    });
  }

  /** Ends the store's thread at once, as a crash would (tests: the store must open itself again). */
  async killThread(): Promise<void> {
    await this.session.kill();
  }
}

export interface OpenOptions {
  /** Postgres server URL; when absent the embedded store in `dataDir` is used. */
  databaseUrl?: string | undefined;
  /** Folder of the embedded store; `memory://` keeps it in memory (tests). */
  dataDir?: string;
  poolSize?: number;
}

export async function openDb(opts: OpenOptions): Promise<Db> {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: opts.poolSize ?? 10,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      // Statements issued without waiting go out together (TxQueryable); one at a time, as
      // everywhere else, nothing changes.
      pipeline: true,
    });
    const db = new ServerDb(pool, opts.databaseUrl);
    try {
      await db.query("SELECT 1"); // fail fast with a clear connection error
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
    return db;
  }
  const dir = opts.dataDir ?? "./.sluice";
  if (!dir.startsWith("memory://")) mkdirSync(dir, { recursive: true });
  return EmbeddedDb.open(dir);
}

/** Runs `fn` in a transaction, retrying on serialization failures and deadlocks. */
export async function withRetry<T>(db: Db, fn: (q: TxQueryable) => Promise<T>, opts: TxOptions & { attempts?: number } = {}): Promise<T> {
  return retrying(() => db.tx(fn, opts), opts.attempts);
}

/** A transaction Postgres aborted (deadlock or serialization failure), and whether it runs again. */
export interface AbortedTransaction {
  reason: "deadlock" | "serialization";
  /** Postgres's own account: which processes waited for what. */
  detail: string | null;
  attempt: number;
  retried: boolean;
}

const abortListeners = new Set<(a: AbortedTransaction) => void>();

/**
 * Calls `cb` each time Postgres aborts one of this process's transactions by a deadlock or a
 * serialization failure (a warning and a metric, app.ts: invisible otherwise, since it is run
 * again). Returns the function that unsubscribes.
 */
export function onAbortedTransaction(cb: (a: AbortedTransaction) => void): () => void {
  abortListeners.add(cb);
  return () => abortListeners.delete(cb);
}

/** Runs `fn` again (up to `attempts` times) while it fails with a serialization failure or deadlock. */
export async function retrying<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isRetryableDbError(err)) throw err;
      const { code, detail } = err as { code?: string; detail?: string };
      const aborted: AbortedTransaction = {
        reason: code === "40P01" ? "deadlock" : "serialization",
        detail: detail ?? null,
        attempt: i,
        retried: i < attempts,
      };
      for (const cb of abortListeners) cb(aborted);
      if (i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 5 * i + Math.random() * 10));
    }
  }
}
