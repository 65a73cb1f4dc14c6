import { EventEmitter } from "node:events";
import { StoreUnavailableError } from "../errors.js";
import { openSessionThread, ThreadStoppedError, type SessionThread } from "./embedded-thread.js";
import { againIfReshaped, type TxStep } from "./statements.js";
import { afterCommit, type Db, type TxOptions, type TxQueryable } from "./store.js";
import { Availability } from "./store-errors.js";

// The embedded driver: PGlite, one Postgres session on a thread of its own (embedded-thread.ts),
// taken in turn by transactions and statements; its crashes are outages it recovers from.

/** The wait before attempt `i` (0-based) to open the folder again after the thread crashed: 0.1 s doubling to 10 s. */
const reopenDelayMs = (i: number): number => Math.min(100 * 2 ** i, 10_000);

export class EmbeddedDb implements Db {
  readonly kind = "embedded" as const;
  readonly notifiesFromSql = false;
  readonly citus = false;
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

  execMaintenance(sql: string): Promise<void> {
    return this.exec(sql); // single-user mode: no parallel workers to keep it from
  }

  channel(name: string): string {
    return name;
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
