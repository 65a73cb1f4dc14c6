import { EventEmitter } from "node:events";
import { mkdirSync } from "node:fs";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";

// One small interface over both stores. Everything above it writes one SQL dialect; the two
// implementations differ only in how they connect, run transactions and pass notifications.

export interface Queryable {
  /** Runs one statement with `$n` parameters and returns its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: "embedded" | "server";
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** Signals listeners in every process sharing this store (call after commit). */
  notify(channel: string, payload?: string): Promise<void>;
  /** Subscribes to a channel; the returned function unsubscribes. */
  listen(channel: string, cb: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** Postgres error codes that mean "try the transaction again". */
const RETRYABLE = new Set(["40001", "40P01"]);

export function isRetryableDbError(err: unknown): boolean {
  return typeof err === "object" && err !== null && RETRYABLE.has((err as { code?: string }).code ?? "");
}

// Postgres int8 and numeric arrive as strings from node-postgres; Sluice casts counts to int in
// SQL instead, so both drivers return the same JS types.

class ServerDb implements Db {
  readonly kind = "server" as const;
  private listener: pg.Client | null = null;
  private readonly emitter = new EventEmitter();
  private readonly listening = new Set<string>();
  private closed = false;

  constructor(private readonly pool: pg.Pool, private readonly url: string) {
    this.emitter.setMaxListeners(0);
  }

  async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    const res = await this.pool.query(sql, params as unknown[]);
    return res.rows as R[];
  }

  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      const q: Queryable = {
        query: async <R>(sql: string, params: unknown[] = []) => (await client.query(sql, params as unknown[])).rows as R[],
        exec: async (sql: string) => {
          await client.query(sql);
        },
      };
      const out = await fn(q);
      await client.query("COMMIT");
      return out;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  async exec(sql: string): Promise<void> {
    await this.pool.query(sql);
  }

  async notify(channel: string, payload = ""): Promise<void> {
    await this.pool.query("SELECT pg_notify($1, $2)", [channel, payload]);
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
   * their own. When it drops, it is re-made with back-off; until then the dispatcher's capped
   * idle sleep keeps work moving, only later.
   */
  private async connectListener(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on("notification", (n) => this.emitter.emit(n.channel, n.payload ?? ""));
    const lost = () => {
      if (this.listener !== client || this.closed) return;
      this.listener = null;
      const retry = (delayMs: number) =>
        setTimeout(() => {
          if (this.closed || this.listener) return;
          this.connectListener().catch(() => retry(Math.min(delayMs * 2, 30_000)));
        }, delayMs).unref();
      retry(500);
    };
    client.on("error", lost);
    client.on("end", lost);
    await client.connect();
    for (const ch of this.listening) await client.query(`LISTEN "${ch.replace(/"/g, "")}"`);
    this.listener = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.listener) await this.listener.end().catch(() => undefined);
    await this.pool.end();
  }
}

class EmbeddedDb implements Db {
  readonly kind = "embedded" as const;
  // PGlite is one in-process session, so notifications are an in-process signal.
  private readonly emitter = new EventEmitter();

  constructor(private readonly pglite: PGlite) {
    this.emitter.setMaxListeners(0);
  }

  async query<R>(sql: string, params: unknown[] = []): Promise<R[]> {
    const res = await this.pglite.query<R>(sql, params as unknown[]);
    return res.rows;
  }

  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.pglite.transaction(async (t) => {
      const q: Queryable = {
        query: async <R>(sql: string, params: unknown[] = []) => (await t.query<R>(sql, params as unknown[])).rows,
        exec: async (sql: string) => {
          await t.exec(sql);
        },
      };
      return fn(q);
    });
  }

  async exec(sql: string): Promise<void> {
    await this.pglite.exec(sql);
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
    await this.pglite.close();
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
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.poolSize ?? 10 });
    pool.on("error", () => undefined); // an idle client's error must not crash the process
    await pool.query("SELECT 1"); // fail fast with a clear connection error
    return new ServerDb(pool, opts.databaseUrl);
  }
  const dir = opts.dataDir ?? "./.sluice";
  if (!dir.startsWith("memory://")) mkdirSync(dir, { recursive: true });
  const pglite = await PGlite.create(dir.startsWith("memory://") ? undefined : dir);
  return new EmbeddedDb(pglite);
}

/** Runs `fn` in a transaction, retrying on serialization failures and deadlocks. */
export async function withRetry<T>(db: Db, fn: (q: Queryable) => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await db.tx(fn);
    } catch (err) {
      if (i >= attempts || !isRetryableDbError(err)) throw err;
      await new Promise((r) => setTimeout(r, 5 * i + Math.random() * 10));
    }
  }
}
