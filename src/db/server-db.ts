import { EventEmitter } from "node:events";
import pg from "pg";
import { StoreUnavailableError } from "../errors.js";
import { StatementNames, againIfReshaped, isStaleShape } from "./statements.js";
import { afterCommit, BEGIN_GENERIC, BEGIN_GENERIC_CITUS, type Db, type TxOptions, type TxQueryable } from "./store.js";
import { Availability, describeServer, isStoreUnavailable } from "./store-errors.js";
import type { ConnectionTarget } from "./hosts.js";
import { cellChannel, cellOfUrl } from "./cell-url.js";

// The Postgres server driver: a node-postgres pool (pipelined), one LISTEN connection, and the
// store-unavailable handling of a server that can go away and come back.

/** A connection attempt that takes longer than this fails (and the store counts as unreachable). */
export const CONNECT_TIMEOUT_MS = 5_000;
/** Longest wait between attempts to re-make the LISTEN connection: delivery resumes within about this of the store's return. */
const LISTEN_RETRY_MAX_MS = 1_000;

// Postgres int8 and numeric arrive as strings from node-postgres; Sluice casts counts to int in
// SQL instead, so both drivers return the same JS types.

export class ServerDb implements Db {
  readonly kind = "server" as const;
  readonly notifiesFromSql: boolean;
  readonly citus: boolean;
  readonly where: string;
  /** The cell this store is (its URL's search_path), whose notification channels are its own. */
  private readonly cell: string | null;
  private listener: pg.Client | null = null;
  private readonly emitter = new EventEmitter();
  private readonly listening = new Set<string>();
  private readonly availability = new Availability();
  private readonly statements: StatementNames;
  private closed = false;

  /**
   * `listen`: where the LISTEN session connects (DATABASE_URL, or a direct URL beside a pooled
   * one), with the Client class that picks among several hosts, if any; `pooled`: the pool goes
   * through a transaction pooler, so no statement is named; `citus`: the server is a Citus
   * coordinator (docs/citus.md says what that changes); `cell`: the cell the URL reaches, when
   * its options do not say (a role per cell).
   */
  constructor(
    private readonly pool: pg.Pool,
    url: string,
    private readonly opts: { listen: ConnectionTarget; pooled: boolean; citus?: boolean; cell?: string | undefined } = {
      listen: { connectionString: url },
      pooled: false,
    },
  ) {
    this.citus = opts.citus ?? false;
    this.cell = opts.cell ?? cellOfUrl(url);
    // Citus runs a statement routed to a node there, pg_notify included: its notification goes to
    // that node's listeners, not to the coordinator's where Sluice listens, and no error says so.
    this.notifiesFromSql = !this.citus;
    this.statements = new StatementNames(opts.pooled ? 0 : undefined);
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

  /**
   * `run` on one connection of the pool. As the pool's own query() does: the connection dying
   * meanwhile is this statement's failure (not an unhandled 'error' event), and a connection that
   * failed is closed, not returned to the pool.
   */
  private async onOneClient<T>(run: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.checkout();
    let failed = false;
    const onError = () => (failed = true);
    client.on("error", onError);
    try {
      return await run(client);
    } catch (err) {
      failed = true;
      this.retireIfReshaped(client, err);
      throw err;
    } finally {
      client.removeListener("error", onError);
      client.release(failed);
    }
  }

  query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    return this.guard(() =>
      againIfReshaped(() => this.onOneClient(async (client) => (await client.query(this.statements.config(sql, params))).rows as R[])),
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
    let unavailable = false;
    // Not awaited: the first statement goes out right behind it (the client is pipelined). Every
    // statement's answer comes after BEGIN's, and each waits for it too, so a failed BEGIN shows.
    const begun = client.query(opts.genericPlans ? (this.citus ? BEGIN_GENERIC_CITUS : BEGIN_GENERIC) : "BEGIN");
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
      unavailable = isStoreUnavailable(err);
      if (!broken && !ended && !unavailable) await client.query("ROLLBACK").catch(() => undefined);
      this.retireIfReshaped(client, err);
      throw this.failed(err, committing);
    } finally {
      client.removeListener("error", onError);
      // A client whose connection broke is destroyed, not returned to the pool, nor is one retired
      // above, nor one the store refused as unavailable while it stayed connected (a write on a
      // read-only host, 25006): its replacement goes to whichever host now takes writes.
      client.release(broken ?? (unavailable || this.generationOf.get(client) !== this.generation ? true : undefined));
    }
  }

  exec(sql: string): Promise<void> {
    return this.guard(async () => {
      await this.pool.query(sql);
    });
  }

  execMaintenance(sql: string): Promise<void> {
    if (this.opts.pooled) return this.exec(sql);
    // A statement that fails closes its connection (onOneClient): the setting never outlives it.
    return this.guard(() =>
      this.onOneClient(async (client) => {
        await client.query("SET max_parallel_maintenance_workers = 0");
        await client.query(sql);
        await client.query("RESET max_parallel_maintenance_workers");
      }),
    );
  }

  channel(name: string): string {
    return cellChannel(name, this.cell);
  }

  notify(name: string, payload = ""): Promise<void> {
    return this.guard(async () => {
      await this.pool.query("SELECT pg_notify($1, $2)", [this.channel(name), payload]);
    });
  }

  async listen(name: string, cb: (payload: string) => void): Promise<() => Promise<void>> {
    const channel = this.channel(name);
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
    const { connectionString, Client = pg.Client } = this.opts.listen;
    const client = new Client({ connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
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
